/*
 * transaction.c - handles on the running transaction: start (making a new
 * running transaction when there is none), stop, extend, restart, joining a
 * handle from a second process, commit requests and waits, commit
 * callbacks and abort (journal.h). Buffer access is in access.c.
 *
 * start_this_handle follows JBD: under j_state_lock it finds or makes the
 * running transaction, waits while that is LOCKED, asks for a commit when
 * the transaction cannot take the credits and for a checkpoint when the log
 * cannot, and raises t_updates under t_handle_lock before j_state_lock is
 * dropped, so that a commit that locks the transaction next sees it.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "runtime.h"

#define JBD_WAIT_MS 100           /* re-check the arena and the journal this often */
#define JBD_MIN_LOG_RESERVED 32   /* log blocks kept back, as JBD */

/* The handle this thread has open (nesting), and how deep its joins go. */
static __thread jbd_handle *jbd_current;
static __thread int jbd_join_depth;

static bool jbd_arena_gone(jbd_ctx *jc)
{
	return atomic_load(&jc->a->hdr->state) != CM_ARENA_LIVE;
}

int jbd_sleep(jbd_ctx *jc, cm_event *ev, uint32_t seq)
{
	cm_event_wait(ev, seq, JBD_WAIT_MS);
	return jbd_arena_gone(jc) ? -ESTALE : 0;
}

/* JBD's __log_space_left: free log blocks less a reserve and an eighth. */
static int64_t jbd_log_space_left(const jbd_journal *j)
{
	int64_t left = (int64_t)j->j_free - JBD_MIN_LOG_RESERVED;

	return left <= 0 ? 0 : left - (left >> 3);
}

/* Asks journald-svc to commit transaction tid. Called with j_state_lock. */
static void __jbd_request_commit(jbd_ctx *jc, uint32_t tid)
{
	jbd_journal *j = jc->j;

	if ((int32_t)(tid - j->j_commit_request) > 0)
		j->j_commit_request = tid;
	cm_event_signal(&j->j_wait_commit);
}

/* Called with t_handle_lock held: whether t, running, takes nblocks more
 * credits: within the largest transaction, and not full of revoke records
 * (JBD_REVOKES_PER_TRANSACTION; a full one is committed instead). */
static bool jbd_room_for(const jbd_journal *j, jbd_transaction *t, int nblocks)
{
	return t->t_outstanding_credits + nblocks <= (int64_t)j->j_max_transaction_buffers &&
	       atomic_load(&t->t_revoke_records) < JBD_REVOKES_PER_TRANSACTION;
}

/* One attempt to put h on the running transaction with nblocks credits.
 * Returns 0 when attached, 1 after sleeping (the caller retries), or an
 * error. */
static int jbd_try_start(jbd_ctx *jc, jbd_handle *h, int nblocks)
{
	jbd_journal *j = jc->j;
	jbd_transaction *t, *ct;
	cm_event *ev = NULL;
	uint32_t seq = 0;
	int64_t needed;
	int r;

	r = jbd_lock(jc, jbd_state_lock(jc));
	if (r < 0)
		return r;
	if (j->j_flags & JBD_F_ABORTED) {
		jbd_unlock(jc, jbd_state_lock(jc));
		return -EROFS;
	}
	t = jbd_t(jc, j->j_running);
	if (!t) {
		t = __jbd_new_transaction(jc);
		if (!t) {
			/* Every transaction object waits for checkpoint. */
			ev = &j->j_wait_space;
			seq = cm_event_prepare(ev);
			j->j_space_request = j->j_max_transaction_buffers;
			cm_event_signal(&j->j_wait_commit);
			goto sleep;
		}
		j->j_running = jbd_tidx(jc, t);
		JBD_CHECK_LOCKED(jc, t);
	}
	if (atomic_load(&t->t_state) != JBD_T_RUNNING) {
		ev = &j->j_wait_transaction_locked;
		seq = cm_event_prepare(ev);
		goto sleep;
	}
	r = jbd_lock(jc, &t->t_handle_lock);
	if (r < 0)
		goto out;
	if (!jbd_room_for(j, t, nblocks)) {
		jbd_unlock(jc, &t->t_handle_lock);
		ev = &j->j_wait_transaction_locked;
		seq = cm_event_prepare(ev);
		__jbd_request_commit(jc, t->t_tid);
		goto sleep;
	}
	needed = j->j_max_transaction_buffers;
	ct = jbd_t(jc, j->j_committing);
	if (ct)
		needed += ct->t_outstanding_credits; /* fixed once it is committing */
	if (jbd_log_space_left(j) < needed) {
		jbd_unlock(jc, &t->t_handle_lock);
		ev = &j->j_wait_space;
		seq = cm_event_prepare(ev);
		j->j_space_request = (uint32_t)needed;
		cm_event_signal(&j->j_wait_commit);
		atomic_fetch_add(&j->stats.space_waits, 1);
		goto sleep;
	}
	t->t_outstanding_credits += nblocks;
	t->t_updates++;
	t->t_handle_count++;
	jbd_unlock(jc, &t->t_handle_lock);
	h->h_transaction = jbd_tidx(jc, t);
	h->h_tid = t->t_tid;
	h->h_buffer_credits = nblocks;
out:
	jbd_unlock(jc, jbd_state_lock(jc));
	return r;
sleep:
	jbd_unlock(jc, jbd_state_lock(jc));
	r = jbd_sleep(jc, ev, seq);
	return r < 0 ? r : 1;
}

/* The fast path, taking t_handle_lock alone (JBD2 takes j_state_lock only
 * for reading here): when a running transaction exists, fits the credits,
 * and the log has room for two whole transactions, no starter needs
 * j_state_lock. A commit sets LOCKED before it reads t_updates under
 * t_handle_lock, so either it sees this update or this starter sees
 * LOCKED. Returns 0 when attached, 1 for the slow path, or an error. */
static int jbd_try_start_fast(jbd_ctx *jc, jbd_handle *h, int nblocks)
{
	jbd_journal *j = jc->j;
	uint32_t ti = atomic_load(&j->j_running);
	jbd_transaction *t = jbd_t(jc, ti);
	int r, slow = 1;

	if (!t || (atomic_load(&j->j_flags) & JBD_F_ABORTED) ||
	    jbd_log_space_left(j) < 2 * (int64_t)j->j_max_transaction_buffers)
		return 1;
	r = jbd_lock(jc, &t->t_handle_lock);
	if (r < 0)
		return r;
	if (atomic_load(&t->t_state) == JBD_T_RUNNING && atomic_load(&j->j_running) == ti &&
	    jbd_room_for(j, t, nblocks)) {
		t->t_outstanding_credits += nblocks;
		t->t_updates++;
		t->t_handle_count++;
		h->h_transaction = ti;
		h->h_tid = t->t_tid;
		h->h_buffer_credits = nblocks;
		slow = 0;
	}
	jbd_unlock(jc, &t->t_handle_lock);
	return slow;
}

static int jbd_start_this_handle(jbd_ctx *jc, jbd_handle *h, int nblocks)
{
	uint64_t t0 = 0;
	int r;

	r = jbd_try_start_fast(jc, h, nblocks);
	if (r <= 0)
		return r;
	while ((r = jbd_try_start(jc, h, nblocks)) == 1)
		if (!t0)
			t0 = cm_now_ns();
	if (t0)
		atomic_fetch_add(&jc->j->stats.locked_wait_ns, cm_now_ns() - t0);
	return r;
}

#define JBD_STARTS_BATCH 64
static __thread uint32_t jbd_starts_pending;

static void jbd_free_handle(jbd_ctx *jc, jbd_handle *h)
{
	uint32_t idx = cm_pool_idx(jc->a, jc->hpool, h), none = 0;

	h->h_transaction = 0;
	atomic_store(&h->h_pid, 0);
	if (!atomic_compare_exchange_strong(&jc->spare, &none, idx + 1))
		cm_pool_put(jc->a, jc->hpool, idx);
}

/* A free handle: this process's spare, else one from the shared pool. */
static jbd_handle *jbd_alloc_handle(jbd_ctx *jc)
{
	uint32_t spare = atomic_exchange(&jc->spare, 0);
	uint32_t idx = spare ? spare - 1 : cm_pool_get(jc->a, jc->hpool);
	jbd_handle *h;

	if (idx == CM_POOL_NONE)
		return NULL;
	h = cm_pool_obj(jc->a, jc->hpool, idx);
	memset(h, 0, sizeof(*h));
	return h;
}

int jbd_start(jbd_ctx *jc, int nblocks, jbd_handle **ret)
{
	jbd_handle *h;
	int r;

	if (jbd_current) {
		jbd_current->h_ref++;
		*ret = jbd_current;
		return 0;
	}
	if (nblocks <= 0 || (uint32_t)nblocks > jc->j->j_max_transaction_buffers)
		return -ENOSPC;
	h = jbd_alloc_handle(jc);
	if (!h)
		return -ENOMEM;
	h->h_ref = 1;
	atomic_store(&h->h_pid, cm_self_pid());
	/* In big mode the handle keeps the big lock until jbd_stop. */
	r = jbd_enter(jc);
	if (r == 0) {
		r = jbd_start_this_handle(jc, h, nblocks);
		if (r < 0)
			jbd_leave(jc);
	}
	if (r < 0) {
		jbd_free_handle(jc, h);
		return r;
	}
	if (++jbd_starts_pending == JBD_STARTS_BATCH) {
		atomic_fetch_add(&jc->j->stats.handle_starts, JBD_STARTS_BATCH);
		jbd_starts_pending = 0;
	}
	jbd_current = h;
	*ret = h;
	return 0;
}

/* Takes h off its transaction, returning its unused credits; 1 if it was
 * the last update (the commit may go on), 0 if not, or an error. *full
 * says whether the transaction holds more than it should. */
static int jbd_drop_update(jbd_ctx *jc, jbd_handle *h, bool *full)
{
	jbd_transaction *t = jbd_t(jc, h->h_transaction);
	bool last;
	int r;

	r = jbd_lock(jc, &t->t_handle_lock);
	if (r < 0)
		return r;
	t->t_outstanding_credits -= h->h_buffer_credits;
	*full = t->t_outstanding_credits > (int32_t)jc->j->j_max_transaction_buffers;
	last = --t->t_updates == 0;
	jbd_unlock(jc, &t->t_handle_lock);
	h->h_buffer_credits = 0;
	if (last)
		cm_event_signal(&jc->j->j_wait_updates);
	return last;
}

/* Asks for the commit of t if the handle wants it synchronously or t holds
 * more than a transaction should (full); j_state_lock is taken only then.
 * A transaction past its commit interval is journald-svc's to notice: its
 * commit thread checks t_expires_ns, so no stop reads the clock. */
static int jbd_maybe_commit(jbd_ctx *jc, jbd_handle *h, bool full)
{
	int r;

	if (!h->h_sync && !full)
		return 0;
	r = jbd_lock(jc, jbd_state_lock(jc));
	if (r < 0)
		return r;
	__jbd_request_commit(jc, h->h_tid);
	jbd_unlock(jc, jbd_state_lock(jc));
	return 0;
}

int jbd_stop(jbd_ctx *jc, jbd_handle *h)
{
	jbd_transaction *t;
	uint32_t tid = h->h_tid;
	bool sync = h->h_sync, full = false;
	int r, err;

	if (jbd_join_depth > 0 && atomic_load(&h->h_join_pid) == cm_self_pid()) {
		h->h_ref--;
		if (--jbd_join_depth == 0) {
			atomic_store(&h->h_join_pid, 0);
			jbd_current = NULL;
			jbd_leave(jc); /* the join's hold of the big lock */
		}
		return 0;
	}
	if (h->h_ref > 1) {
		h->h_ref--;
		return 0;
	}
	err = h->h_err;
	t = jbd_t(jc, h->h_transaction);
	r = jbd_enter(jc);
	if (r == 0) {
		if (t) {
			r = jbd_drop_update(jc, h, &full);
			if (r >= 0)
				r = jbd_maybe_commit(jc, h, full);
		}
		jbd_leave(jc);
	}
	jbd_leave(jc); /* the handle's hold of the big lock, from jbd_start */
	jbd_current = NULL;
	jbd_free_handle(jc, h);
	if (r < 0)
		return r;
	if (sync && !err)
		err = jbd_wait_commit(jc, tid);
	return err;
}

int jbd_extend(jbd_ctx *jc, jbd_handle *h, int nblocks)
{
	jbd_journal *j = jc->j;
	jbd_transaction *t = jbd_t(jc, h->h_transaction);
	int r, result = 1;

	if (nblocks <= 0)
		return 0;
	r = jbd_enter(jc);
	if (r < 0)
		return r;
	r = jbd_lock(jc, jbd_state_lock(jc));
	if (r < 0)
		goto leave;
	if (atomic_load(&t->t_state) != JBD_T_RUNNING || (j->j_flags & JBD_F_ABORTED))
		goto unlock;
	r = jbd_lock(jc, &t->t_handle_lock);
	if (r < 0)
		goto unlock;
	if (jbd_room_for(j, t, nblocks) &&
	    jbd_log_space_left(j) >= t->t_outstanding_credits + nblocks) {
		t->t_outstanding_credits += nblocks;
		h->h_buffer_credits += nblocks;
		result = 0;
	}
	jbd_unlock(jc, &t->t_handle_lock);
unlock:
	jbd_unlock(jc, jbd_state_lock(jc));
leave:
	jbd_leave(jc);
	return r < 0 ? r : result;
}

int jbd_restart(jbd_ctx *jc, jbd_handle *h, int nblocks)
{
	bool full;
	int r;

	if (nblocks <= 0 || (uint32_t)nblocks > jc->j->j_max_transaction_buffers)
		return -ENOSPC;
	r = jbd_enter(jc);
	if (r < 0)
		return r;
	r = jbd_drop_update(jc, h, &full);
	if (r >= 0) {
		r = jbd_lock(jc, jbd_state_lock(jc));
		if (r == 0) {
			__jbd_request_commit(jc, h->h_tid);
			jbd_unlock(jc, jbd_state_lock(jc));
			h->h_transaction = 0;
			r = jbd_start_this_handle(jc, h, nblocks);
		}
	}
	jbd_leave(jc);
	return r;
}

void jbd_handle_set_sync(jbd_handle *h)
{
	h->h_sync = 1;
}

uint32_t jbd_handle_tid(const jbd_handle *h)
{
	return h->h_tid;
}

cm_off jbd_handle_token(jbd_ctx *jc, const jbd_handle *h)
{
	return cm_arena_off(jc->a, h);
}

int jbd_join(jbd_ctx *jc, cm_off token, jbd_handle **ret)
{
	const cm_pool *p = jc->hpool;
	jbd_handle *h;

	if (token < p->objs || token >= p->objs + (uint64_t)p->nobj * p->objsize ||
	    (token - p->objs) % p->objsize)
		return -EINVAL;
	h = cm_arena_ptr(jc->a, token, sizeof(*h));
	if (!h || !h->h_transaction || !atomic_load(&h->h_pid))
		return -EINVAL;
	if (jbd_current && jbd_current != h)
		return -EBUSY;
	if (jbd_join_depth == 0) {
		/* In big mode the join keeps the big lock until its stop; the
		 * owner gave it up while it waits for this process. */
		int r = jbd_enter(jc);

		if (r < 0)
			return r;
	}
	h->h_ref++;
	atomic_store(&h->h_join_pid, cm_self_pid());
	jbd_join_depth++;
	jbd_current = h;
	*ret = h;
	return 0;
}

/* Moves n credits between t and the precommit handle h (n < 0: back). */
static int jbd_precommit_credits(jbd_ctx *jc, jbd_transaction *t, jbd_handle *h, int n)
{
	int r = jbd_enter(jc);

	if (r < 0)
		return r;
	r = jbd_lock(jc, &t->t_handle_lock);
	if (r == 0) {
		t->t_outstanding_credits += n;
		h->h_buffer_credits += n;
		jbd_unlock(jc, &t->t_handle_lock);
	}
	jbd_leave(jc);
	return r;
}

int jbd_run_precommit(jbd_ctx *jc, jbd_transaction *t)
{
	jbd_handle *h;
	int r;

	if (!jc->precommit)
		return 0;
	h = jbd_alloc_handle(jc);
	if (!h)
		return -ENOMEM;
	h->h_transaction = jbd_tidx(jc, t);
	h->h_tid = t->t_tid;
	h->h_ref = 1;
	atomic_store(&h->h_pid, cm_self_pid());
	r = jbd_precommit_credits(jc, t, h, JBD_PRECOMMIT_CREDITS);
	if (r == 0) {
		jc->precommit(jc->precommit_ctx, jc, h);
		r = jbd_precommit_credits(jc, t, h, -h->h_buffer_credits);
	}
	jbd_free_handle(jc, h);
	return r;
}

int jbd_force_commit(jbd_ctx *jc, uint32_t *tid)
{
	jbd_journal *j = jc->j;
	jbd_transaction *t;
	int r;

	r = jbd_enter(jc);
	if (r < 0)
		return r;
	r = jbd_lock(jc, jbd_state_lock(jc));
	if (r == 0) {
		if ((t = jbd_t(jc, j->j_running))) {
			*tid = t->t_tid;
			__jbd_request_commit(jc, t->t_tid);
		} else if ((t = jbd_t(jc, j->j_committing))) {
			*tid = t->t_tid;
		} else {
			*tid = atomic_load(&j->j_commit_sequence);
		}
		jbd_unlock(jc, jbd_state_lock(jc));
	}
	jbd_leave(jc);
	return r;
}

int jbd_commit_tid(jbd_ctx *jc, uint32_t tid)
{
	jbd_journal *j = jc->j;
	int r;

	if ((int32_t)(atomic_load(&j->j_commit_sequence) - tid) >= 0)
		return 0;
	r = jbd_enter(jc);
	if (r < 0)
		return r;
	r = jbd_lock(jc, jbd_state_lock(jc));
	if (r == 0) {
		if ((int32_t)(atomic_load(&j->j_commit_sequence) - tid) < 0)
			__jbd_request_commit(jc, tid);
		jbd_unlock(jc, jbd_state_lock(jc));
	}
	jbd_leave(jc);
	return r;
}

int jbd_wait_commit(jbd_ctx *jc, uint32_t tid)
{
	jbd_journal *j = jc->j;
	uint32_t seq;

	for (;;) {
		seq = cm_event_prepare(&j->j_wait_done_commit);
		if ((int32_t)(atomic_load(&j->j_commit_sequence) - tid) >= 0) {
			cm_event_cancel(&j->j_wait_done_commit);
			return 0;
		}
		if (atomic_load_explicit(&j->j_flags, memory_order_relaxed) & JBD_F_ABORTED) {
			cm_event_cancel(&j->j_wait_done_commit);
			return -EIO;
		}
		cm_event_wait(&j->j_wait_done_commit, seq, JBD_WAIT_MS);
		if (jbd_arena_gone(jc))
			return -ESTALE;
	}
}

void jbd_abort(jbd_ctx *jc, int err)
{
	jbd_journal *j = jc->j;

	if (jbd_enter(jc) == 0) {
		if (jbd_lock(jc, jbd_state_lock(jc)) == 0) {
			if (!(j->j_flags & JBD_F_ABORTED))
				j->j_errno = err;
			j->j_flags |= JBD_F_ABORTED;
			jbd_unlock(jc, jbd_state_lock(jc));
		}
		jbd_leave(jc);
	}
	cm_event_signal(&j->j_wait_transaction_locked);
	cm_event_signal(&j->j_wait_done_commit);
	cm_event_signal(&j->j_wait_space);
	cm_event_signal(&j->j_wait_unshadow);
	cm_event_signal(&j->j_wait_commit);
}

int jbd_add_callback(jbd_ctx *jc, jbd_handle *h, uint64_t cookie)
{
	jbd_transaction *t = jbd_t(jc, h->h_transaction);
	uint32_t idx = cm_pool_get(jc->a, jc->cbpool);
	jbd_callback *cb;
	int r;

	if (idx == CM_POOL_NONE)
		return -ENOMEM;
	cb = cm_pool_obj(jc->a, jc->cbpool, idx);
	cb->cookie = cookie;
	cb->slot = jc->slot;
	r = jbd_lock(jc, &t->t_jcb_lock);
	if (r < 0) {
		cm_pool_put(jc->a, jc->cbpool, idx);
		return r;
	}
	cb->next = t->t_jcb;
	t->t_jcb = idx + 1;
	jbd_unlock(jc, &t->t_jcb_lock);
	return 0;
}

int jbd_take_callbacks(jbd_ctx *jc, uint64_t *cookies, int n)
{
	typeof(jc->j->cbq[0]) *q = &jc->j->cbq[jc->slot % CM_MAX_SVCS];
	uint32_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
	int got = 0;

	while (got < n && head != tail)
		cookies[got++] = q->cookie[head++ % JBD_CBQ_LEN];
	atomic_store_explicit(&q->head, head, memory_order_release);
	return got;
}
