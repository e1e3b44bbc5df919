/* group.c - the supervisor's process group: create the arena, start the
 * services in compose order and wait for each to be ready, discard the
 * arena on a group restart, stop them in reverse order (policy.c decides
 * when), and find what a dead process still held in the arena (a lock of
 * the set, a cache stripe, a LOCKED buffer, an open journal handle), which
 * makes its death a group restart. Runs on the main thread; takes sv->mtx
 * around every change the control thread can see. */
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

#include "bcache.h"
#include "chan.h"
#include "futex.h"
#include "internal.h"
#include "jbd/journal.h"
#include "log.h"
#include "sandbox.h"

#define SV_DATA_ZONE(size) ((size) / 2)

sv_service *sv_find(sv_super *sv, const char *name)
{
	for (int i = 0; i < sv->nsvcs; i++)
		if (strcmp(sv->svcs[i].name, name) == 0)
			return &sv->svcs[i];
	return NULL;
}

void sv_child_exec(sv_super *sv, sv_service *s, int slot)
{
	char fdarg[32], slotarg[32];
	char *argv[SV_MAX_ARGS + 3];
	sigset_t none;
	int n = 0;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (s->mount_svc) {
		/* Outside the arena: no descriptor, no slot, confined here. */
		int r = cm_sandbox_fuse_exec();
		if (r < 0) {
			cm_log_errno(r, "%s: sandbox: %m", s->name);
			_exit(127);
		}
		execv(s->argv[0], s->argv);
		cm_log_errno(-errno, "exec %s: %m", s->argv[0]);
		_exit(127);
	}
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

/* While the group starts, the reason in status says which service it waits
 * for, after what cause, and (late) for how long: a start that cannot
 * finish is seen for what it is before its deadline. */
static void sv_note_waiting(sv_super *sv, sv_service *s, pid_t pid, uint64_t waited_ms)
{
	char late[48] = "";

	if (waited_ms)
		snprintf(late, sizeof(late), ", not ready after %llu ms",
			 (unsigned long long)waited_ms);
	pthread_mutex_lock(&sv->mtx);
	if (sv->state != SV_READY)
		snprintf(sv->reason, sizeof(sv->reason), "%.160s%swaiting for %s (pid %d)%s",
			 sv->cause, *sv->cause ? "; " : "", s->name, (int)pid, late);
	pthread_mutex_unlock(&sv->mtx);
}

/* Waits until s (pid) is ready: 0, or as sv_service_start. Halfway to the
 * deadline the log and status say that it is late and when it is killed. */
static int sv_wait_ready(sv_super *sv, sv_service *s, pid_t pid, int *status, bool *hung)
{
	cm_svc_slot *as = &cm_layout_get(sv->arena)->svcs[s - sv->svcs];
	uint64_t start = cm_now_ns(), half = start + SV_READY_TIMEOUT_MS * 500000ULL;
	uint64_t deadline = start + SV_READY_TIMEOUT_MS * 1000000ULL;

	sv_note_waiting(sv, s, pid, 0);
	while (atomic_load(&as->state) != CM_SVC_READY) {
		int r = sv_reap_starting(sv, s, pid, status);
		if (r < 0)
			return r;
		if (half && cm_now_ns() > half) {
			half = 0;
			cm_warn("%s (pid %d) is not ready after %d ms; it is killed at %d ms",
				s->name, (int)pid, SV_READY_TIMEOUT_MS / 2, SV_READY_TIMEOUT_MS);
			sv_note_waiting(sv, s, pid, SV_READY_TIMEOUT_MS / 2);
		}
		if (cm_now_ns() > deadline) {
			cm_err("%s was not ready in %d ms: killing it", s->name,
			       SV_READY_TIMEOUT_MS);
			kill(pid, SIGKILL);
			(void)waitpid(pid, status, 0);
			*hung = true;
			return -ECHILD;
		}
		usleep(2000);
	}
	return 0;
}

int sv_service_start(sv_super *sv, int slot, int *status, bool *hung)
{
	sv_service *s = &sv->svcs[slot];
	cm_svc_slot *as = &cm_layout_get(sv->arena)->svcs[slot];
	pid_t pid;
	int r;

	if (s->mount_svc)
		return sv_mount_service_start(sv, slot, status, hung);
	*hung = false;
	atomic_store(&as->state, CM_SVC_STARTING);
	s->started_ns = cm_now_ns();
	s->ready_ns = 0;
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
	r = sv_wait_ready(sv, s, pid, status, hung);
	if (r < 0)
		return r;
	pthread_mutex_lock(&sv->mtx);
	s->state = CM_SVC_READY;
	pthread_mutex_unlock(&sv->mtx);
	s->ready_ns = cm_now_ns();
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
	sv_errseq_seed(sv, l);
	pthread_mutex_lock(&sv->mtx);
	sv->arena = a;
	pthread_mutex_unlock(&sv->mtx);
	sv->dead_seen = 0;
	return 0;
}

int sv_group_start(sv_super *sv)
{
	int r = sv_arena_new(sv), status = 0;
	bool hung = false;
	int i;

	if (r < 0)
		return r;
	/* Mount services are not part of the group: started on their own. */
	for (i = 0; r == 0 && i < sv->nsvcs; i++)
		if (!sv->svcs[i].mount_svc)
			r = sv_service_start(sv, i, &status, &hung);
	if (r == -ECHILD) {
		sv_service_died(sv, &sv->svcs[i - 1], status, hung, true);
		return r;
	}
	if (r < 0)
		return r;
	pthread_mutex_lock(&sv->mtx);
	sv->state = SV_READY;
	sv->reason[0] = '\0';
	pthread_mutex_unlock(&sv->mtx);
	cm_info("instance %s ready (generation %llu)", sv->cfg.instance,
		(unsigned long long)sv->generation);
	return 0;
}

int sv_service_kill(sv_super *sv, sv_service *s, int sig, uint64_t deadline)
{
	int status = 0;
	pid_t p;

	kill(s->pid, sig);
	while ((p = waitpid(s->pid, &status, WNOHANG)) == 0 && cm_now_ns() < deadline)
		usleep(2000);
	if (p == 0) {
		/* SIGKILL before the wait that blocks: a service that does not
		 * act on sig (stopped, or waiting on a stopped peer) would
		 * keep that wait, and the supervisor, forever. */
		if (sig != SIGKILL)
			cm_warn("%s (pid %d) still runs at its deadline: killing it", s->name,
				(int)s->pid);
		kill(s->pid, SIGKILL);
		while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	pthread_mutex_lock(&sv->mtx);
	s->pid = 0;
	s->state = CM_SVC_EXITED;
	pthread_mutex_unlock(&sv->mtx);
	return status;
}

/* Signals every running service but the mount services, last started
 * first, and reaps them; each one still alive grace_ms after its signal
 * gets SIGKILL. The grace is each service's own: journald-svc's clean
 * shutdown must not lose it to an inode-svc that was slow to exit. */
void sv_group_kill(sv_super *sv, int sig, int grace_ms)
{
	for (int i = sv->nsvcs - 1; i >= 0; i--) {
		sv_service *s = &sv->svcs[i];
		if (s->pid && !s->mount_svc)
			(void)sv_service_kill(sv, s, sig,
					      cm_now_ns() + (uint64_t)grace_ms * 1000000ULL);
	}
}

/* A stop must leave a clean image, and journald-svc writes back through
 * blockdev-svc as it goes: a service of policy alone that is down when the
 * stop comes (dead and not reaped yet, or waiting out its restart delay)
 * is started again first, while the rest of its group runs. */
static void sv_stop_restore(sv_super *sv, enum sv_state was)
{
	int status, r;
	bool hung;

	sv_reap(sv);
	if (was != SV_READY || !sv->arena)
		return;
	for (int i = 0; i < sv->nsvcs; i++) {
		sv_service *s = &sv->svcs[i];
		if (s->mount_svc || s->pid || s->policy != SV_RESTART_ALONE)
			continue;
		s->restart_at = 0;
		cm_info("starting %s again for the stop", s->name);
		r = sv_service_start(sv, i, &status, &hung);
		/* Reaped already: recorded as dead, its pid is not signalled
		 * again (by then it may be another process's). */
		if (r == -ECHILD)
			sv_service_died(sv, s, status, hung, false);
		if (r < 0)
			cm_warn("%s did not start again: its peers stop without it", s->name);
	}
}

void sv_group_stop(sv_super *sv)
{
	char note[SV_REASON_MAX + CM_PATH_MAX];
	enum sv_state was;

	pthread_mutex_lock(&sv->mtx);
	was = sv->state;
	sv->state = SV_STOPPING;
	pthread_cond_broadcast(&sv->mcond);
	pthread_mutex_unlock(&sv->mtx);
	sv_stop_restore(sv, was);
	if (sv_mount_stop(sv, note, sizeof(note)) < 0 || *note)
		cm_warn("%s", note);
	sv_group_kill(sv, SIGTERM, 5000);
}

void sv_group_restart(sv_super *sv, const char *why, uint32_t delay_ms)
{
	cm_warn("group restart in %u ms: %s", delay_ms, why);
	snprintf(sv->cause, sizeof(sv->cause), "%s", why);
	pthread_mutex_lock(&sv->mtx);
	sv->state = SV_RESTARTING;
	snprintf(sv->reason, sizeof(sv->reason), "%s", why);
	pthread_mutex_unlock(&sv->mtx);
	if (sv->arena)
		atomic_store(&sv->arena->hdr->state, CM_ARENA_DISCARDED);
	sv_group_kill(sv, SIGKILL, 0);
	sv_errseq_carry(sv);
	pthread_mutex_lock(&sv->mtx);
	sv->arena = cm_arena_free(sv->arena);
	sv->generation++;
	for (int i = 0; i < sv->nsvcs; i++) {
		if (sv->svcs[i].mount_svc)
			continue;
		sv->svcs[i].restarts++;
		sv->svcs[i].state = CM_SVC_RESTARTING;
		sv->svcs[i].restart_at = 0;
	}
	pthread_mutex_unlock(&sv->mtx);
	sv->group_restart_at = cm_now_ns() + (uint64_t)delay_ms * 1000000ULL;
}

/* The journal's handle pool, read-only, or NULL before journald-svc made it. */
static cm_pool *sv_handle_pool(sv_super *sv, cm_layout *l)
{
	cm_off off = atomic_load(&l->journal);
	jbd_journal *j = off ? cm_arena_ptr(sv->arena, off, sizeof(*j)) : NULL;
	cm_pool *p;

	if (!j || j->magic != JBD_MAGIC || j->version != JBD_VERSION)
		return NULL;
	p = cm_arena_ptr(sv->arena, j->handles, sizeof(*p));
	return p && p->objsize >= sizeof(jbd_handle) ? p : NULL;
}

/* A process that is not a service (a tool or a benchmark attached to the
 * arena) and died with a journal handle open leaves a transaction that can
 * never commit: its pid, or 0 if every open handle's owner lives. */
static pid_t sv_dead_handle_owner(sv_super *sv, cm_layout *l)
{
	cm_pool *p = sv_handle_pool(sv, l);
	pid_t alive = 0; /* the last pid found alive: a process's handles share it */

	for (uint32_t i = 0; p && i < p->nobj && i < JBD_MAX_HANDLES; i++) {
		jbd_handle *h = cm_pool_obj(sv->arena, p, i);
		pid_t pids[2];

		if (!h || !__atomic_load_n(&h->h_transaction, __ATOMIC_RELAXED))
			continue;
		pids[0] = atomic_load(&h->h_pid);
		pids[1] = atomic_load(&h->h_join_pid);
		for (int k = 0; k < 2; k++) {
			if (!pids[k] || pids[k] == alive)
				continue;
			if (!cm_pid_alive(pids[k]))
				return pids[k];
			alive = pids[k];
		}
	}
	return 0;
}

void sv_group_check_dead_owners(sv_super *sv)
{
	cm_dead_box *box;
	uint32_t reports;
	char why[SV_REASON_MAX];
	pid_t pid;

	if (!sv->arena || sv->state != SV_READY)
		return;
	pid = sv_dead_handle_owner(sv, cm_layout_get(sv->arena));
	if (pid) {
		snprintf(why, sizeof(why), "pid %d died holding a journal handle", (int)pid);
		sv_group_restart(sv, why, SV_BACKOFF_MIN_MS);
		return;
	}
	box = &cm_layout_get(sv->arena)->dead;
	reports = atomic_load(&box->reports);
	if (reports == sv->dead_seen)
		return;
	sv->dead_seen = reports;
	snprintf(why, sizeof(why), "lock %.*s lost its owner (pid %d)", CM_LOCK_NAME_MAX,
		 box->lock, (int)atomic_load(&box->pid));
	sv_group_restart(sv, why, SV_BACKOFF_MIN_MS);
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

/* A buffer-cache stripe or a LOCKED buffer held by pid. */
static bool sv_held_in_cache(sv_super *sv, cm_layout *l, pid_t pid, char *what, size_t len)
{
	struct sv_owner_scan scan = {.pid = pid};
	cm_off off = atomic_load(&l->bcache);
	cm_bcache *c;
	uint64_t blocknr = 0;
	uint32_t n;

	if (!off || cm_bcache_attach(sv->arena, off, &c) < 0)
		return false;
	cm_bcache_foreach_lock(c, sv_owner_check, &scan);
	n = cm_bcache_locked_by(c, pid, &blocknr);
	cm_bcache_detach(c);
	if (scan.held)
		snprintf(what, len, "a %s stripe", scan.held);
	else if (n)
		snprintf(what, len, "%u LOCKED buffer%s (block %llu)", n, n > 1 ? "s" : "",
			 (unsigned long long)blocknr);
	return scan.held || n;
}

/* An open journal handle (h_transaction set) that pid owns or has joined.
 * Read-only: the supervisor takes no journal lock. */
static bool sv_held_handle(sv_super *sv, cm_layout *l, pid_t pid, char *what, size_t len)
{
	cm_pool *p = sv_handle_pool(sv, l);

	for (uint32_t i = 0; p && i < p->nobj && i < JBD_MAX_HANDLES; i++) {
		jbd_handle *h = cm_pool_obj(sv->arena, p, i);
		uint32_t t = h ? __atomic_load_n(&h->h_transaction, __ATOMIC_RELAXED) : 0;
		if (t == 0)
			continue;
		if (atomic_load(&h->h_pid) == pid || atomic_load(&h->h_join_pid) == pid) {
			snprintf(what, len, "a journal handle");
			return true;
		}
	}
	return false;
}

bool sv_group_held_by(sv_super *sv, pid_t pid, char *what, size_t len)
{
	struct sv_owner_scan scan = {.pid = pid};
	cm_layout *l = sv->arena ? cm_layout_get(sv->arena) : NULL;

	if (!l || pid <= 0)
		return false;
	cm_lockset_foreach(&l->locks, sv_owner_check, &scan);
	if (scan.held) {
		snprintf(what, len, "%s", scan.held);
		return true;
	}
	return sv_held_in_cache(sv, l, pid, what, len) || sv_held_handle(sv, l, pid, what, len);
}
