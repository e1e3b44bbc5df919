/* policy.c - what the supervisor does when a service dies or stalls: tell
 * a death from outside (a signal it did not raise itself, or a clean exit
 * as on SIGTERM) from a crash of its own making (a fault signal, a
 * non-zero exit, a start that hung), restart after a delay that doubles
 * while deaths come quickly, mark the instance failed on a crash loop, and
 * kill a ready service whose heartbeat stopped. Children are reaped while
 * a service starts too (sv_reap_starting), so that a death during a start
 * is seen at once and not when the start ends. A death restarts the group
 * instead of one service when the dead process held arena state (group.c,
 * sv_group_held_by) or died executing a call that must not run twice. See
 * internal.h for the numbers.
 * Runs on the main thread. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "chan.h"
#include "futex.h"
#include "internal.h"
#include "log.h"

#define SV_MS(ns) ((ns) / 1000000ULL)

/* The services whose calls may be executed twice: a restart alone
 * resubmits the call one of them died executing (chan.h). */
static const char *const sv_idempotent[] = {"blockdev-svc"};

/* Why the death of s (pid) must restart the group whatever its policy, in
 * why; false if a restart of s alone is safe. Called before its channels
 * are released. */
static bool sv_needs_group(sv_super *sv, sv_service *s, pid_t pid, char *why, size_t len)
{
	cm_layout *l = sv->arena ? cm_layout_get(sv->arena) : NULL;
	char what[96];
	uint32_t chan;

	if (s->mount_svc) /* outside the arena: it holds nothing there */
		return false;
	if (sv_group_held_by(sv, pid, what, sizeof(what))) {
		/* Whatever its policy: the state behind it is lost. */
		snprintf(why, len, "%s died holding %s", s->name, what);
		return true;
	}
	for (size_t i = 0; i < sizeof(sv_idempotent) / sizeof(sv_idempotent[0]); i++)
		if (strcmp(s->name, sv_idempotent[i]) == 0)
			return false;
	if (l && cm_chan_server_busy(l, sv->arena, (uint32_t)(s - sv->svcs), &chan)) {
		snprintf(why, len, "%s died executing a request on channel %u, which must "
			 "not run twice", s->name, chan);
		return true;
	}
	return false;
}

const int sv_fault_signals[SV_NFAULT_SIGNALS] = {
	SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGSYS, SIGFPE, SIGTRAP,
};

static bool sv_fault_signal(int sig)
{
	for (int i = 0; i < SV_NFAULT_SIGNALS; i++)
		if (sig == sv_fault_signals[i])
			return true;
	return false;
}

/* Gives up on the instance: stops what still runs, keeps serving status. */
static void sv_fail(sv_super *sv, const char *why)
{
	char note[SV_REASON_MAX + CM_PATH_MAX];

	cm_err("instance %s failed: %s", sv->cfg.instance, why);
	sv->group_restart_at = 0;
	if (sv_mount_stop(sv, note, sizeof(note)) < 0 || *note)
		cm_warn("%s", note);
	sv_group_kill(sv, SIGTERM, 2000);
	for (int i = 0; i < sv->nsvcs; i++)
		sv->svcs[i].restart_at = 0;
	/* Failed only once the peers are gone: whoever sees "failed" in the
	 * status may count on no service of the instance running. */
	pthread_mutex_lock(&sv->mtx);
	sv->state = SV_FAILED;
	snprintf(sv->reason, sizeof(sv->reason), "%s", why);
	pthread_mutex_unlock(&sv->mtx);
}

/* The delay before the next restart of s: doubles while s dies before it
 * was ready for SV_STABLE_MS, from SV_BACKOFF_MIN_MS up to the cap. */
static uint32_t sv_backoff(sv_super *sv, sv_service *s, uint64_t now)
{
	uint32_t cap = sv->cfg.backoff_max_ms;

	if (s->ready_ns && now - s->ready_ns >= SV_STABLE_MS * 1000000ULL)
		s->backoff_ms = 0;
	s->backoff_ms = !s->backoff_ms ? SV_BACKOFF_MIN_MS
		       : s->backoff_ms * 2 > cap ? cap : s->backoff_ms * 2;
	return s->backoff_ms;
}

static void sv_describe(sv_service *s, int status, bool hung, char *buf, size_t len)
{
	if (s->stalled)
		snprintf(buf, len, "stalled (no heartbeat), killed");
	else if (hung)
		snprintf(buf, len, "was not ready in %d ms, killed", SV_READY_TIMEOUT_MS);
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

void sv_service_died(sv_super *sv, sv_service *s, int status, bool hung, bool in_start)
{
	cm_layout *l = sv->arena ? cm_layout_get(sv->arena) : NULL;
	int slot = (int)(s - sv->svcs);
	pid_t pid = s->pid;
	uint64_t now = cm_now_ns();
	char what[96], why[SV_REASON_MAX], held[SV_REASON_MAX];
	const char *during;
	bool own, group;
	uint32_t delay;

	group = sv_needs_group(sv, s, pid, held, sizeof(held));
	sv_describe(s, status, hung, what, sizeof(what));
	/* Exit 0 is what a service does on SIGTERM: not a crash. */
	own = !s->stalled && (hung || (WIFEXITED(status) && WEXITSTATUS(status) != 0) ||
			      (WIFSIGNALED(status) && sv_fault_signal(WTERMSIG(status))));
	pthread_mutex_lock(&sv->mtx);
	s->pid = 0;
	s->state = CM_SVC_EXITED;
	s->last_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	s->last_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	snprintf(s->why, sizeof(s->why), "%s", what);
	pthread_mutex_unlock(&sv->mtx);
	s->stalled = false;
	during = !in_start ? "" : s->ready_ns ? " while the group was starting"
				    : " before it was ready";
	if (in_start)
		s->ready_ns = 0;
	if (l && !s->mount_svc) {
		atomic_store(&l->svcs[slot].pid, 0);
		atomic_store(&l->svcs[slot].state, CM_SVC_EXITED);
		cm_chan_release_owner(l, sv->arena, pid);
		cm_chan_server_gone(l, sv->arena, (uint32_t)slot);
	}
	cm_warn("%s (pid %d) %s%s", s->name, (int)pid, what, during);
	if (sv->state == SV_STOPPING || sv->state == SV_FAILED)
		return;
	if (s->mount_svc && (!sv->mount[0] || sv_mount_gone(sv, s, status))) /* unmounted on purpose */
		return;
	if (own && now - s->started_ns < SV_CRASH_WINDOW_MS * 1000000ULL)
		s->crashes++;
	else
		s->crashes = 0;
	if (s->crashes >= SV_CRASH_LOOP) {
		snprintf(why, sizeof(why), "%s crashed %d times within %d ms of starting (last: %s)",
			 s->name, SV_CRASH_LOOP, SV_CRASH_WINDOW_MS, what);
		if (s->mount_svc) {
			sv_mount_give_up(sv, s, why);
			return;
		}
		pthread_mutex_lock(&sv->mtx);
		s->state = CM_SVC_FAILED;
		pthread_mutex_unlock(&sv->mtx);
		sv_fail(sv, why);
		return;
	}
	delay = sv_backoff(sv, s, now);
	snprintf(why, sizeof(why), "%s %s", s->name, what);
	if (group) {
		sv_group_restart(sv, held, delay);
	} else if (in_start || s->policy == SV_RESTART_GROUP) {
		sv_group_restart(sv, why, delay);
	} else if (s->policy == SV_RESTART_ALONE) {
		cm_info("restarting %s in %u ms", s->name, delay);
		pthread_mutex_lock(&sv->mtx);
		s->state = CM_SVC_RESTARTING;
		pthread_mutex_unlock(&sv->mtx);
		s->restart_at = now + (uint64_t)delay * 1000000ULL;
	}
}

static sv_service *sv_by_pid(sv_super *sv, pid_t pid)
{
	for (int i = 0; i < sv->nsvcs; i++)
		if (sv->svcs[i].pid == pid)
			return &sv->svcs[i];
	return NULL;
}

void sv_reap(sv_super *sv)
{
	sv_service *s;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		if ((s = sv_by_pid(sv, pid)))
			sv_service_died(sv, s, status, false, false);
}

int sv_reap_starting(sv_super *sv, sv_service *s, pid_t pid, int *status)
{
	sv_service *o;
	int st;
	pid_t p;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == pid) {
			*status = st;
			return -ECHILD;
		}
		o = sv_by_pid(sv, p);
		if (!o)
			continue;
		/* Outside READY the group is starting: the death aborts it. */
		sv_service_died(sv, o, st, false, !o->mount_svc && sv->state != SV_READY);
		if (s->pid != pid)
			return -ECANCELED;
	}
	return 0;
}

void sv_watchdog(sv_super *sv)
{
	cm_layout *l = sv->arena ? cm_layout_get(sv->arena) : NULL;
	uint64_t now = cm_now_ns(), limit = (uint64_t)sv->cfg.watchdog_ms * 1000000ULL;

	for (int i = 0; l && i < sv->nsvcs; i++) {
		sv_service *s = &sv->svcs[i];
		uint64_t beat = atomic_load(&l->svcs[i].heartbeat_ns);
		if (!s->pid || s->mount_svc || s->state != CM_SVC_READY || s->stalled || now < beat ||
		    now - beat <= limit)
			continue;
		cm_warn("%s (pid %d) stalled: no heartbeat for %llu ms (deadline %u ms); killing it",
			s->name, (int)s->pid, (unsigned long long)SV_MS(now - beat),
			sv->cfg.watchdog_ms);
		pthread_mutex_lock(&sv->mtx);
		s->state = CM_SVC_STALLED;
		s->stalls++;
		pthread_mutex_unlock(&sv->mtx);
		s->stalled = true;
		kill(s->pid, SIGKILL);
	}
}

/* Restarts one service of policy alone whose delay is over. */
static void sv_restart_alone(sv_super *sv, int slot)
{
	sv_service *s = &sv->svcs[slot];
	int status = 0;
	bool hung;

	s->restart_at = 0;
	pthread_mutex_lock(&sv->mtx);
	s->restarts++;
	pthread_mutex_unlock(&sv->mtx);
	if (sv_service_start(sv, slot, &status, &hung) == -ECHILD)
		sv_service_died(sv, s, status, hung, false);
}

int sv_tick(sv_super *sv)
{
	uint64_t now = cm_now_ns(), next = UINT64_MAX;

	if (sv->state == SV_STOPPING || sv->state == SV_FAILED)
		return -1;
	if (sv->group_restart_at && now >= sv->group_restart_at) {
		sv->group_restart_at = 0;
		if (sv_group_start(sv) < 0 && sv->state != SV_FAILED && !sv->group_restart_at)
			sv_group_restart(sv, "the group could not be started", sv->cfg.backoff_max_ms);
		now = cm_now_ns();
	}
	for (int i = 0; sv->state == SV_READY && i < sv->nsvcs; i++)
		if (sv->svcs[i].restart_at && now >= sv->svcs[i].restart_at)
			sv_restart_alone(sv, i);
	if (sv->group_restart_at)
		next = sv->group_restart_at;
	for (int i = 0; i < sv->nsvcs; i++)
		if (sv->svcs[i].restart_at && sv->svcs[i].restart_at < next)
			next = sv->svcs[i].restart_at;
	now = cm_now_ns();
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)SV_MS(next - now) + 1;
}
