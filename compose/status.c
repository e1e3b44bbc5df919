/* status.c - build the status reply: the supervisor, every service, the
 * lock counters (stripes and groups folded per lock name), channels and
 * the buffer cache.
 * Called with sv->mtx held, so the arena cannot be swapped underneath. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bcache.h"
#include "chan.h"
#include "internal.h"
#include "supervisor.pb-c.h"

static const char *const sv_state_names[] = {
	[SV_STARTING] = "starting", [SV_READY] = "ready", [SV_RESTARTING] = "restarting",
	[SV_FAILED] = "failed", [SV_STOPPING] = "stopping",
};

static const char *const sv_svc_state_names[] = {
	[CM_SVC_EMPTY] = "none", [CM_SVC_STARTING] = "starting", [CM_SVC_READY] = "ready",
	[CM_SVC_STOPPING] = "stopping", [CM_SVC_EXITED] = "exited", [CM_SVC_FAILED] = "failed",
	[CM_SVC_RESTARTING] = "restarting", [CM_SVC_STALLED] = "stalled",
};

static char sv_reason[SV_REASON_MAX + CM_SVC_NAME_MAX + 32]; /* [mtx] */

/* The instance's state as a client sees it: a group that is up but has a
 * service restarting or stalled is degraded or stalled, with the reason.
 * A service of policy never that exited 0 is done, not missing. */
static const char *sv_state_seen(sv_super *sv, const char **reason)
{
	const char *name = sv_state_names[sv->state];

	*reason = sv->reason;
	if (sv->state != SV_READY)
		return name;
	for (int i = 0; i < sv->nsvcs; i++) {
		sv_service *s = &sv->svcs[i];
		if (s->state == CM_SVC_READY ||
		    (s->policy == SV_RESTART_NEVER && s->state == CM_SVC_EXITED && s->last_status == 0))
			continue;
		snprintf(sv_reason, sizeof(sv_reason), "%s %s%s%s", s->name,
			 sv_svc_state_names[s->state], *s->why ? " after it " : "", s->why);
		*reason = sv_reason;
		if (s->state == CM_SVC_STALLED)
			return "stalled";
		name = "degraded";
	}
	return name;
}

struct sv_lock_fold {
	Ext3d__LockStatus *locks;
	size_t n, cap;
};

static void sv_lock_add(cm_mutex *m, void *ctx)
{
	struct sv_lock_fold *f = ctx;
	Ext3d__LockStatus *ls = NULL;

	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->locks[i].name, m->name) == 0)
			ls = &f->locks[i];
	if (!ls) {
		if (f->n == f->cap)
			return;
		ls = &f->locks[f->n++];
		ext3d__lock_status__init(ls);
		ls->name = m->name;
	}
	ls->instances++;
	ls->acquisitions += atomic_load(&m->acquisitions);
	ls->contended += atomic_load(&m->contended);
	ls->wait_ns += atomic_load(&m->wait_ns);
}

/* The buffer cache's stripe locks and counters, once a service made it. */
static void sv_status_cache(sv_super *sv, cm_layout *l, Ext3d__StatusReply *st,
			    struct sv_lock_fold *f)
{
	cm_off off = atomic_load(&l->bcache);
	Ext3d__CacheStatus *cs;
	cm_bcache_stats stats;
	cm_bcache *c;

	if (!off || cm_bcache_attach(sv->arena, off, &c) < 0)
		return;
	cs = calloc(1, sizeof(*cs));
	if (cs) {
		ext3d__cache_status__init(cs);
		cm_bcache_stats_read(c, &stats);
		cs->buffers = stats.nbufs;
		cs->block_size = stats.block_size;
		cs->hits = stats.hits;
		cs->misses = stats.misses;
		cs->evictions = stats.evictions;
		cs->reads = stats.reads;
		cs->writes = stats.writes;
		cs->errors = stats.errors;
		st->cache = cs;
	}
	cm_bcache_foreach_lock(c, sv_lock_add, f);
	cm_bcache_detach(c);
}

static int sv_status_locks(sv_super *sv, Ext3d__StatusReply *st)
{
	struct sv_lock_fold f = {.cap = 16};
	cm_layout *l = cm_layout_get(sv->arena);

	f.locks = calloc(f.cap, sizeof(*f.locks));
	st->locks = calloc(f.cap, sizeof(*st->locks));
	if (!f.locks || !st->locks) {
		free(f.locks);
		return -1;
	}
	cm_lockset_foreach(&l->locks, sv_lock_add, &f);
	sv_status_cache(sv, l, st, &f);
	for (size_t i = 0; i < f.n; i++)
		st->locks[i] = &f.locks[i];
	st->n_locks = f.n;
	st->dead_owner_reports = atomic_load(&l->dead.reports);
	st->locking = l->locks.mode == CM_LOCKING_BIG ? "big" : "fine";
	for (uint32_t i = 0; i < l->nchans; i++) {
		cm_chan *ch = cm_chan_at(l, sv->arena, i);
		if (atomic_load(&ch->state) == CM_CHAN_OPEN)
			st->channels_open++;
		st->channel_requests += atomic_load(&ch->requests);
	}
	return 0;
}

int sv_status_fill(sv_super *sv, Ext3d__StatusReply *st)
{
	Ext3d__ServiceStatus *svcs = calloc((size_t)sv->nsvcs, sizeof(*svcs));

	st->services = calloc((size_t)sv->nsvcs, sizeof(*st->services));
	if (!svcs || !st->services) {
		free(svcs);
		return -1;
	}
	st->instance = sv->cfg.instance;
	st->supervisor_pid = getpid();
	st->state = (char *)sv_state_seen(sv, (const char **)&st->reason);
	st->watchdog_ms = sv->cfg.watchdog_ms;
	st->generation = sv->generation;
	for (int i = 0; i < sv->nsvcs; i++) {
		sv_service *s = &sv->svcs[i];
		ext3d__service_status__init(&svcs[i]);
		svcs[i].name = s->name;
		svcs[i].pid = s->pid;
		svcs[i].state = (char *)sv_svc_state_names[s->state];
		svcs[i].restarts = s->restarts;
		svcs[i].restart_policy = (char *)sv_policy_name(s->policy);
		svcs[i].last_exit_status = s->last_status;
		svcs[i].last_exit_signal = s->last_signal;
		svcs[i].stalls = s->stalls;
		svcs[i].last_exit = s->why;
		st->services[i] = &svcs[i];
	}
	st->n_services = (size_t)sv->nsvcs;
	return sv->arena ? sv_status_locks(sv, st) : 0;
}

void sv_status_free(Ext3d__StatusReply *st)
{
	if (st->n_services)
		free(st->services[0]);
	free(st->services);
	if (st->n_locks)
		free(st->locks[0]);
	free(st->locks);
	free(st->cache);
}
