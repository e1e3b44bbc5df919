/* status.c - build the status reply: the supervisor, every service, the
 * lock counters (stripes and groups folded per lock name), channels, the
 * buffer cache and the journal.
 * Called with sv->mtx held, so the arena cannot be swapped underneath. The
 * reply is packed after sv->mtx is released, while the main thread may
 * discard the arena (a group restart) or rewrite a reason: every string it
 * names from the arena or from a field under sv->mtx is its own copy
 * (sv_dup), freed by sv_status_free. The
 * journal is read without its locks (status must never wait on, or be
 * stopped by, a service's critical section): every field may be a moment
 * old and indexes read from it are checked before they are followed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bcache.h"
#include "chan.h"
#include "internal.h"
#include "journal.h"
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

/* A copy the reply owns; the empty string if there is no memory for it. */
static char *sv_dup(const char *s, size_t max)
{
	char *d = strndup(s, max);

	return d ? d : (char *)protobuf_c_empty_string;
}

static void sv_undup(char *s)
{
	if (s != protobuf_c_empty_string)
		free(s);
}

/* The instance's state as a client sees it: a group that is up but has a
 * service restarting or stalled is degraded or stalled, with the reason.
 * A service of policy never that exited 0 is done, not missing; a mount
 * service is missed only while the instance has a mount point. */
static const char *sv_state_seen(sv_super *sv, const char **reason)
{
	const char *name = sv_state_names[sv->state];

	*reason = sv->reason;
	if (sv->state != SV_READY)
		return name;
	for (int i = 0; i < sv->nsvcs; i++) {
		sv_service *s = &sv->svcs[i];
		if (s->state == CM_SVC_READY || (s->mount_svc && !sv->mount[0]) ||
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
		if (strncmp(f->locks[i].name, m->name, CM_LOCK_NAME_MAX) == 0)
			ls = &f->locks[i];
	if (!ls) {
		if (f->n == f->cap)
			return;
		ls = &f->locks[f->n++];
		ext3d__lock_status__init(ls);
		ls->name = sv_dup(m->name, CM_LOCK_NAME_MAX - 1);
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

static const char *const sv_data_modes[] = {
	[JBD_DATA_ORDERED] = "ordered", [JBD_DATA_JOURNAL] = "journal",
	[JBD_DATA_WRITEBACK] = "writeback",
};

static const char *const sv_tstates[] = {
	[JBD_T_RUNNING] = "running", [JBD_T_LOCKED] = "locked", [JBD_T_FLUSH] = "flush",
	[JBD_T_COMMIT] = "commit", [JBD_T_FINISHED] = "finished",
};

/* Transaction ti (index + 1) of the journal's pool, or NULL. */
static jbd_transaction *sv_journal_trans(cm_arena *a, const jbd_journal *j, uint32_t ti)
{
	cm_pool *p = cm_arena_ptr(a, j->transactions, sizeof(*p));

	return p && ti ? cm_pool_obj(a, p, ti - 1) : NULL;
}

static void sv_journal_stats(const jbd_journal *j, Ext3d__JournalStatus *js)
{
	const jbd_stats *s = &j->stats;

	js->commits = atomic_load(&s->commits);
	js->handles = atomic_load(&s->handles);
	js->blocks = atomic_load(&s->blocks);
	js->log_blocks = atomic_load(&s->log_blocks);
	js->commit_ns = atomic_load(&s->commit_ns);
	js->average_commit_ns = j->j_average_commit_ns;
	if (!js->average_commit_ns && js->commits)
		js->average_commit_ns = js->commit_ns / js->commits;
	js->checkpoints = atomic_load(&s->checkpoints);
	js->checkpoint_blocks = atomic_load(&s->checkpoint_blocks);
	js->revokes = atomic_load(&s->revokes);
	js->frozen = atomic_load(&s->frozen);
	js->escaped = atomic_load(&s->escaped);
	js->space_waits = atomic_load(&s->space_waits);
	js->handle_starts = atomic_load(&s->handle_starts);
	js->locked_wait_ns = atomic_load(&s->locked_wait_ns);
}

/* The journal's own locks, folded as in the instance-wide list. */
static void sv_journal_locks(cm_layout *l, jbd_transaction *running, Ext3d__JournalStatus *js)
{
	struct sv_lock_fold f = {.cap = 8};
	cm_lockset *ls = &l->locks;

	f.locks = calloc(f.cap, sizeof(*f.locks));
	js->locks = calloc(f.cap, sizeof(*js->locks));
	if (!f.locks || !js->locks) {
		free(f.locks);
		free(js->locks);
		js->locks = NULL;
		return;
	}
	if (ls->mode == CM_LOCKING_BIG)
		sv_lock_add(&ls->big_lock, &f);
	sv_lock_add(&ls->j_state_lock, &f);
	sv_lock_add(&ls->j_list_lock, &f);
	sv_lock_add(&ls->j_revoke_lock, &f);
	for (int i = 0; i < CM_BH_STRIPES; i++)
		sv_lock_add(&ls->bh_state[i], &f);
	for (int i = 0; i < CM_BH_STRIPES; i++)
		sv_lock_add(&ls->journal_head[i], &f);
	if (running)
		sv_lock_add(&running->t_handle_lock, &f);
	for (size_t i = 0; i < f.n; i++)
		js->locks[i] = &f.locks[i];
	js->n_locks = f.n;
}

/* The journal section, once journald-svc has made the journal. */
static void sv_status_journal(sv_super *sv, cm_layout *l, Ext3d__StatusReply *st)
{
	cm_off off = atomic_load(&l->journal);
	jbd_journal *j = off ? cm_arena_ptr(sv->arena, off, sizeof(*j)) : NULL;
	jbd_transaction *run, *com;
	Ext3d__JournalStatus *js;
	uint32_t state;

	if (!j || j->magic != JBD_MAGIC || j->version != JBD_VERSION)
		return;
	js = calloc(1, sizeof(*js));
	if (!js)
		return;
	ext3d__journal_status__init(js);
	js->data_mode = (char *)(j->data_mode >= JBD_DATA_ORDERED &&
				 j->data_mode <= JBD_DATA_WRITEBACK ? sv_data_modes[j->data_mode] : "?");
	js->commit_interval_ms = j->commit_interval_ms;
	js->block_size = j->block_size;
	run = sv_journal_trans(sv->arena, j, j->j_running);
	com = sv_journal_trans(sv->arena, j, j->j_committing);
	if (run) {
		js->running_tid = run->t_tid;
		js->running_updates = (uint32_t)(run->t_updates > 0 ? run->t_updates : 0);
		js->running_handles = run->t_handle_count;
	}
	if (com) {
		state = atomic_load(&com->t_state);
		js->committing_tid = com->t_tid;
		js->committing_state = (char *)(state >= JBD_T_RUNNING && state <= JBD_T_FINISHED
						? sv_tstates[state] : "?");
	}
	js->commit_sequence = atomic_load(&j->j_commit_sequence);
	js->next_tid = j->j_transaction_sequence;
	js->log_first = j->j_first;
	js->log_size = j->j_last - j->j_first;
	js->head = j->j_head;
	js->tail = j->j_tail;
	js->free = j->j_free;
	js->aborted = (j->j_flags & JBD_F_ABORTED) != 0;
	js->abort_errno = j->j_errno;
	sv_journal_stats(j, js);
	sv_journal_locks(l, run, js);
	st->journal = js;
}

static const char *const sv_recovery_passes[] = {
	[CM_RECOVERY_SCAN] = "scan", [CM_RECOVERY_REVOKE] = "revoke",
	[CM_RECOVERY_REPLAY] = "replay", [CM_RECOVERY_DONE] = "done",
};

/* journald-svc's replay at start, when it had one to do. */
static void sv_status_recovery(const cm_layout *l, Ext3d__StatusReply *st)
{
	const cm_recovery *rec = &l->recovery;
	uint32_t state = atomic_load(&rec->state);
	Ext3d__RecoveryStatus *rs;

	if (state < CM_RECOVERY_SCAN || state > CM_RECOVERY_DONE)
		return;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return;
	ext3d__recovery_status__init(rs);
	rs->pass = (char *)sv_recovery_passes[state];
	rs->done = atomic_load(&rec->done);
	rs->total = atomic_load(&rec->total);
	rs->blocks_written = atomic_load(&rec->blocks_written);
	st->recovery = rs;
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
	sv_status_journal(sv, l, st);
	sv_status_recovery(l, st);
	sv_status_device(l, st);
	for (size_t i = 0; i < f.n; i++)
		st->locks[i] = &f.locks[i];
	st->n_locks = f.n;
	st->dead_owner_reports = atomic_load(&l->dead.reports);
	st->fs_errors = atomic_load(&l->fs_errors.count);
	st->read_only = atomic_load(&l->fs_errors.read_only) != 0;
	if (st->fs_errors)
		st->fs_error = sv_dup(l->fs_errors.last, CM_FS_ERROR_MAX - 1);
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
	const char *reason;

	st->services = calloc((size_t)sv->nsvcs, sizeof(*st->services));
	if (!svcs || !st->services) {
		free(svcs);
		return -1;
	}
	st->instance = sv->cfg.instance;
	st->supervisor_pid = getpid();
	st->state = (char *)sv_state_seen(sv, &reason);
	st->reason = sv_dup(reason, sizeof(sv_reason));
	st->watchdog_ms = sv->cfg.watchdog_ms;
	st->generation = sv->generation;
	for (int i = 0; i < sv->nsvcs; i++) {
		sv_service *s = &sv->svcs[i];
		ext3d__service_status__init(&svcs[i]);
		svcs[i].name = s->name;
		svcs[i].pid = s->pid;
		svcs[i].state = (char *)sv_svc_state_names[s->state];
		if (s->mount_svc && !sv->mount[0] && s->state != CM_SVC_FAILED)
			svcs[i].state = "unmounted";
		svcs[i].mount = (char *)protobuf_c_empty_string;
		svcs[i].mount_options = (char *)protobuf_c_empty_string;
		if (s->mount_svc) {
			svcs[i].mount = sv_dup(sv->mount, sizeof(sv->mount));
			svcs[i].mount_options = sv_dup(sv->mount_opts, sizeof(sv->mount_opts));
		}
		svcs[i].restarts = s->restarts;
		svcs[i].restart_policy = (char *)sv_policy_name(s->policy);
		svcs[i].last_exit_status = s->last_status;
		svcs[i].last_exit_signal = s->last_signal;
		svcs[i].stalls = s->stalls;
		svcs[i].last_exit = sv_dup(s->why, sizeof(s->why));
		st->services[i] = &svcs[i];
	}
	st->n_services = (size_t)sv->nsvcs;
	return sv->arena ? sv_status_locks(sv, st) : 0;
}

/* A folded lock list: its names, then the array they were folded in. */
static void sv_locks_free(Ext3d__LockStatus **locks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sv_undup(locks[i]->name);
	if (n)
		free(locks[0]);
	free(locks);
}

void sv_status_free(Ext3d__StatusReply *st)
{
	sv_undup(st->reason);
	for (size_t i = 0; i < st->n_services; i++) {
		sv_undup(st->services[i]->mount);
		sv_undup(st->services[i]->mount_options);
		sv_undup(st->services[i]->last_exit);
	}
	if (st->n_services)
		free(st->services[0]);
	free(st->services);
	sv_locks_free(st->locks, st->n_locks);
	free(st->cache);
	free(st->recovery);
	sv_status_device_free(st->device);
	sv_undup(st->fs_error);
	if (st->journal) {
		sv_locks_free(st->journal->locks, st->journal->n_locks);
		free(st->journal);
	}
}
