/* group.c - the supervisor's process group: create the arena, start the
 * services in compose order and wait for each to be ready, reap them,
 * restart by policy, discard the arena on a group restart, stop them in
 * reverse order. Runs on the main thread; takes sv->mtx around every change
 * the control thread can see. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chan.h"
#include "futex.h"
#include "internal.h"
#include "log.h"

#define SV_DATA_ZONE(size) ((size) / 2)

sv_service *sv_find(sv_super *sv, const char *name)
{
	for (int i = 0; i < sv->nsvcs; i++)
		if (strcmp(sv->svcs[i].name, name) == 0)
			return &sv->svcs[i];
	return NULL;
}

static void sv_child_exec(sv_super *sv, sv_service *s, int slot)
{
	char fdarg[32], slotarg[32];
	char *argv[SV_MAX_ARGS + 3];
	sigset_t none;
	int n = 0;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (fcntl(sv->arena->fd, F_SETFD, 0) < 0)
		_exit(127);
	snprintf(fdarg, sizeof(fdarg), "--arena-fd=%d", sv->arena->fd);
	snprintf(slotarg, sizeof(slotarg), "--slot=%d", slot);
	while (s->argv[n]) {
		argv[n] = s->argv[n];
		n++;
	}
	argv[n++] = fdarg;
	argv[n++] = slotarg;
	argv[n] = NULL;
	execv(argv[0], argv);
	cm_log_errno(-errno, "exec %s: %m", argv[0]);
	_exit(127);
}

/* Starts one service and waits until it reports ready or dies. */
static int sv_service_start(sv_super *sv, int slot)
{
	sv_service *s = &sv->svcs[slot];
	cm_svc_slot *as = &cm_layout_get(sv->arena)->svcs[slot];
	uint64_t deadline = cm_now_ns() + SV_READY_TIMEOUT_MS * 1000000ULL;
	pid_t pid;

	atomic_store(&as->state, CM_SVC_STARTING);
	pid = fork();
	if (pid < 0)
		return cm_log_errno(-errno, "fork for %s: %m", s->name);
	if (pid == 0)
		sv_child_exec(sv, s, slot);
	pthread_mutex_lock(&sv->mtx);
	s->pid = pid;
	s->state = CM_SVC_STARTING;
	pthread_mutex_unlock(&sv->mtx);
	atomic_store(&as->pid, pid);
	while (atomic_load(&as->state) != CM_SVC_READY) {
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			pthread_mutex_lock(&sv->mtx);
			s->pid = 0;
			s->state = CM_SVC_EXITED;
			s->last_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			s->last_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
			pthread_mutex_unlock(&sv->mtx);
			atomic_store(&as->pid, 0);
			return cm_log_errno(-ECHILD, "%s exited before it was ready", s->name);
		}
		if (cm_now_ns() > deadline) {
			kill(pid, SIGKILL);
			return cm_log_errno(-ETIMEDOUT, "%s was not ready in %d ms", s->name,
					    SV_READY_TIMEOUT_MS);
		}
		usleep(2000);
	}
	pthread_mutex_lock(&sv->mtx);
	s->state = CM_SVC_READY;
	pthread_mutex_unlock(&sv->mtx);
	cm_info("%s ready, pid %d", s->name, (int)pid);
	return 0;
}

static int sv_arena_new(sv_super *sv)
{
	cm_arena *a;
	cm_layout *l;
	int r;

	r = cm_arena_create(sv->cfg.arena_size, SV_DATA_ZONE(sv->cfg.arena_size),
			    sv->generation, &a);
	if (r < 0)
		return cm_log_errno(r, "arena of %llu bytes: %m",
				    (unsigned long long)sv->cfg.arena_size);
	r = cm_layout_init(a, sv->cfg.locking);
	if (r < 0) {
		cm_arena_free(a);
		return cm_log_errno(r, "arena layout: %m");
	}
	l = cm_layout_get(a);
	for (int i = 0; i < sv->nsvcs; i++)
		snprintf(l->svcs[i].name, CM_SVC_NAME_MAX, "%s", sv->svcs[i].name);
	pthread_mutex_lock(&sv->mtx);
	sv->arena = a;
	pthread_mutex_unlock(&sv->mtx);
	sv->dead_seen = 0;
	return 0;
}

int sv_group_start(sv_super *sv)
{
	int r = sv_arena_new(sv);

	for (int i = 0; r == 0 && i < sv->nsvcs; i++)
		r = sv_service_start(sv, i);
	if (r == 0) {
		pthread_mutex_lock(&sv->mtx);
		sv->state = SV_READY;
		pthread_mutex_unlock(&sv->mtx);
		cm_info("instance %s ready (generation %llu)", sv->cfg.instance,
			(unsigned long long)sv->generation);
	}
	return r;
}

/* Signals every running service, last started first, and reaps them; those
 * still alive after grace_ms get SIGKILL. */
static void sv_group_kill(sv_super *sv, int sig, int grace_ms)
{
	uint64_t deadline = cm_now_ns() + (uint64_t)grace_ms * 1000000ULL;

	for (int i = sv->nsvcs - 1; i >= 0; i--) {
		sv_service *s = &sv->svcs[i];
		if (!s->pid)
			continue;
		kill(s->pid, sig);
		for (;;) {
			int status;
			pid_t p = waitpid(s->pid, &status, cm_now_ns() < deadline ? WNOHANG : 0);
			if (p == s->pid || (p < 0 && errno != EINTR))
				break;
			if (cm_now_ns() >= deadline)
				kill(s->pid, SIGKILL);
			usleep(2000);
		}
		pthread_mutex_lock(&sv->mtx);
		s->pid = 0;
		s->state = CM_SVC_EXITED;
		pthread_mutex_unlock(&sv->mtx);
	}
}

void sv_group_stop(sv_super *sv)
{
	pthread_mutex_lock(&sv->mtx);
	sv->state = SV_STOPPING;
	pthread_mutex_unlock(&sv->mtx);
	sv_group_kill(sv, SIGTERM, 5000);
}

int sv_group_restart(sv_super *sv, const char *why)
{
	cm_warn("group restart: %s", why);
	pthread_mutex_lock(&sv->mtx);
	sv->state = SV_RESTARTING;
	pthread_mutex_unlock(&sv->mtx);
	atomic_store(&sv->arena->hdr->state, CM_ARENA_DISCARDED);
	sv_group_kill(sv, SIGKILL, 0);
	pthread_mutex_lock(&sv->mtx);
	sv->arena = cm_arena_free(sv->arena);
	sv->generation++;
	for (int i = 0; i < sv->nsvcs; i++)
		sv->svcs[i].restarts++;
	pthread_mutex_unlock(&sv->mtx);
	return sv_group_start(sv);
}

struct sv_owner_scan {
	pid_t pid;
	const char *held;
};

static void sv_owner_check(cm_mutex *m, void *ctx)
{
	struct sv_owner_scan *scan = ctx;

	if (atomic_load(&m->owner) == scan->pid)
		scan->held = m->name;
}

/* True if the restart window allows one more restart of s. */
static bool sv_restart_allowed(sv_service *s)
{
	uint64_t now = cm_now_ns();

	if (now - s->burst_start > SV_RESTART_WINDOW_S * 1000000000ULL) {
		s->burst_start = now;
		s->burst = 0;
	}
	return ++s->burst <= SV_RESTART_BURST;
}

static int sv_service_died(sv_super *sv, sv_service *s, int status)
{
	struct sv_owner_scan scan = {.pid = s->pid};
	cm_layout *l = cm_layout_get(sv->arena);
	int slot = (int)(s - sv->svcs);
	char why[128];

	cm_lockset_foreach(&l->locks, sv_owner_check, &scan);
	pthread_mutex_lock(&sv->mtx);
	s->pid = 0;
	s->state = CM_SVC_EXITED;
	s->last_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	s->last_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	pthread_mutex_unlock(&sv->mtx);
	atomic_store(&l->svcs[slot].pid, 0);
	atomic_store(&l->svcs[slot].state, CM_SVC_EXITED);
	cm_chan_release_owner(l, sv->arena, scan.pid);
	cm_chan_server_gone(l, sv->arena, (uint32_t)slot);
	cm_warn("%s (pid %d) %s %d", s->name, (int)scan.pid,
		s->last_signal ? "killed by signal" : "exited with status",
		s->last_signal ? s->last_signal : s->last_status);
	if (sv->state == SV_STOPPING)
		return 0;
	if (scan.held) {
		/* Whatever its policy: the state behind the lock is lost. */
		snprintf(why, sizeof(why), "%s died holding %s", s->name, scan.held);
		return sv_group_restart(sv, why);
	}
	if (s->policy == SV_RESTART_NEVER)
		return 0;
	if (!sv_restart_allowed(s)) {
		cm_err("%s restarted %d times in %d s: giving up on it", s->name,
		       SV_RESTART_BURST, SV_RESTART_WINDOW_S);
		pthread_mutex_lock(&sv->mtx);
		s->state = CM_SVC_FAILED;
		pthread_mutex_unlock(&sv->mtx);
		return 0;
	}
	if (s->policy == SV_RESTART_GROUP) {
		snprintf(why, sizeof(why), "%s died", s->name);
		return sv_group_restart(sv, why);
	}
	pthread_mutex_lock(&sv->mtx);
	s->restarts++;
	pthread_mutex_unlock(&sv->mtx);
	return sv_service_start(sv, slot);
}

int sv_group_reap(sv_super *sv)
{
	int status, r = 0;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < sv->nsvcs; i++) {
			if (sv->svcs[i].pid == pid) {
				r = sv_service_died(sv, &sv->svcs[i], status);
				break;
			}
		}
		if (r < 0)
			break;
	}
	return r;
}

int sv_group_check_dead_owners(sv_super *sv)
{
	cm_dead_box *box = &cm_layout_get(sv->arena)->dead;
	uint32_t reports = atomic_load(&box->reports);
	char why[128];

	if (reports == sv->dead_seen)
		return 0;
	sv->dead_seen = reports;
	snprintf(why, sizeof(why), "lock %.*s lost its owner (pid %d)", CM_LOCK_NAME_MAX,
		 box->lock, (int)atomic_load(&box->pid));
	return sv_group_restart(sv, why);
}
