/*
 * commit.c - committing the running transaction in journald-svc's commit
 * thread, as JBD's journal_commit_transaction does: lock it and wait out
 * its handles, switch to a new running transaction at once, write the log
 * (logwrite.c), write the commit block (JBD2, with the commit time) and
 * flush, then hand the logged buffers to the checkpoint, wake commit
 * waiters and deliver commit callbacks. No journal lock is held while
 * waiting for handles or I/O.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "byteorder.h"
#include "commit.h"
#include "jbd2_disk.h"
#include "runtime.h"

bool jbd_commit_aborted(jbd_ctx *jc)
{
	bool ab;

	if (jbd_state_enter(jc) < 0)
		return true;
	ab = jc->j->j_flags & JBD_F_ABORTED;
	jbd_state_leave(jc);
	return ab;
}

/* A buffer no transaction owns any more: what it owes the journal
 * (JBDDIRTY) becomes an ordinary dirty bit, for its home write. Callers
 * hold bh_state. */
static void jbd_restore_dirty(jbd_ctx *jc, jbd_jh *jh)
{
	if (!jh->b_transaction && (jh->b_jflags & JBD_JF_JBDDIRTY)) {
		jh->b_jflags &= ~(uint32_t)JBD_JF_JBDDIRTY;
		cm_bh_mark_dirty(jbd_bh_of(jc, jh));
	}
}

int jbd_commit_lock(jbd_ctx *jc, jbd_transaction **ret)
{
	jbd_journal *j = jc->j;
	jbd_transaction *t;
	int r;

	*ret = NULL;
	if ((r = jbd_state_enter(jc)) < 0)
		return r;
	t = jbd_t(jc, j->j_running);
	if (t && atomic_load(&t->t_state) == JBD_T_RUNNING) {
		atomic_store(&t->t_state, JBD_T_LOCKED);
		JBD_CHECK_LOCKED(jc, t);
	}
	jbd_state_leave(jc);
	if (!t)
		return 0;
	for (;;) {
		uint32_t seq = cm_event_prepare(&j->j_wait_updates);
		int32_t updates;

		if ((r = jbd_enter(jc)) < 0) {
			cm_event_cancel(&j->j_wait_updates);
			return r;
		}
		if ((r = jbd_lock(jc, &t->t_handle_lock)) < 0) {
			jbd_leave(jc);
			cm_event_cancel(&j->j_wait_updates);
			return r;
		}
		updates = t->t_updates;
		jbd_unlock(jc, &t->t_handle_lock);
		jbd_leave(jc);
		if (updates == 0) {
			cm_event_cancel(&j->j_wait_updates);
			break;
		}
		if (jbd_commit_aborted(jc)) {
			cm_event_cancel(&j->j_wait_updates);
			return -EROFS;
		}
		cm_event_wait(&j->j_wait_updates, seq, 1000);
	}
	*ret = t;
	return 0;
}

int jbd_commit_switch(jbd_ctx *jc, jbd_transaction *t)
{
	jbd_journal *j = jc->j;
	jbd_jh *jh;
	int r;

	if ((r = jbd_enter(jc)) < 0)
		return r;
	/* Write access taken but never used: the buffer goes back. */
	while ((jh = jbd_lock_first(jc, t, JBD_RESERVED, &r))) {
		uint64_t blk = jh->b_blocknr;
		jbd_jh *held;

		if ((r = jbd_jh_get(jc, jbd_bh_of(jc, jh), &held)) < 0) {
			jbd_unlock_jh(jc, blk);
			break;
		}
		jbd_copy_free(jc, jh->b_committed_data);
		jh->b_committed_data = 0;
		__jbd_refile_buffer(jc, jh);
		jbd_restore_dirty(jc, jh);
		jbd_unlock_jh(jc, blk);
		jbd_jh_put(jc, jh);
	}
	jbd_leave(jc);
	if (r < 0)
		return r;
	/* Nobody revokes meanwhile: starters still wait for LOCKED to end. */
	if ((r = jbd_enter(jc)) < 0)
		return r;
	jbd_switch_revoke_table(jc);
	jbd_leave(jc);
	if ((r = jbd_state_enter(jc)) < 0)
		return r;
	atomic_store(&t->t_state, JBD_T_FLUSH);
	j->j_committing = jbd_tidx(jc, t);
	j->j_running = 0;
	t->t_log_start = j->j_head;
	if (!j->j_tail) {
		j->j_tail = j->j_head;
		j->j_tail_sequence = t->t_tid;
	}
	JBD_CHECK_LOCKED(jc, t);
	jbd_state_leave(jc);
	cm_event_signal(&j->j_wait_transaction_locked);
	return 0;
}

int jbd_next_log_block(jbd_ctx *jc, uint32_t *lblk)
{
	jbd_journal *j = jc->j;
	int r = jbd_state_enter(jc);

	if (r < 0)
		return r;
	if (j->j_free == 0) {
		jbd_state_leave(jc);
		return -ENOSPC;
	}
	*lblk = j->j_head;
	j->j_head = j->j_head + 1 >= j->j_last ? j->j_first : j->j_head + 1;
	j->j_free--;
	jbd_state_leave(jc);
	atomic_fetch_add(&j->stats.log_blocks, 1);
	return 0;
}

void jbd_header(void *b, uint32_t type, uint32_t tid)
{
	journal_header_t *h = b;

	cm_set_be32(&h->h_magic, JBD2_MAGIC_NUMBER);
	cm_set_be32(&h->h_blocktype, type);
	cm_set_be32(&h->h_sequence, tid);
}

/* Hands the callbacks of t to their services' queues and rings their
 * doorbells. A full queue loses the cookie (the service polls its
 * transaction's tid as well). */
static void jbd_deliver_callbacks(jbd_ctx *jc, jbd_transaction *t)
{
	jbd_journal *j = jc->j;
	uint32_t rung = 0, ci;

	if (jbd_enter(jc) < 0)
		return;
	if (jbd_lock(jc, &t->t_jcb_lock) < 0) {
		jbd_leave(jc);
		return;
	}
	ci = t->t_jcb;
	t->t_jcb = 0;
	jbd_unlock(jc, &t->t_jcb_lock);
	jbd_leave(jc);
	while (ci) {
		jbd_callback *cb = cm_pool_obj(jc->a, jc->cbpool, ci - 1);
		uint32_t next = cb->next, slot = cb->slot;

		if (slot < CM_MAX_SVCS) {
			uint32_t tail = atomic_load(&j->cbq[slot].tail);

			if (tail - atomic_load(&j->cbq[slot].head) < JBD_CBQ_LEN) {
				j->cbq[slot].cookie[tail % JBD_CBQ_LEN] = cb->cookie;
				atomic_store_explicit(&j->cbq[slot].tail, tail + 1, memory_order_release);
			}
			rung |= 1u << slot;
		}
		cm_pool_put(jc->a, jc->cbpool, ci - 1);
		ci = next;
	}
	for (uint32_t s = 0; s < CM_MAX_SVCS; s++)
		if (rung & 1u << s)
			cm_event_signal(&jc->l->svcs[s].doorbell);
}

/* Writes the commit block (JBD2: with the commit time) in one request
 * that first flushes everything the commit wrote before it (ordered data
 * and the log) and then makes the commit block durable: the kernel's
 * REQ_PREFLUSH | REQ_FUA, one round trip instead of flush, write, flush. */
static int jbd_write_commit_block(jbd_ctx *jc, cm_bdev *bd, jbd_transaction *t)
{
	struct commit_header *ch;
	struct timespec now;
	uint32_t ci = jbd_copy_alloc(jc), lblk;
	int r;

	if (!ci)
		return -ENOMEM;
	ch = jbd_copy_ptr(jc, ci);
	memset(ch, 0, jc->j->block_size);
	jbd_header(ch, JBD2_COMMIT_BLOCK, t->t_tid);
	clock_gettime(CLOCK_REALTIME, &now);
	cm_set_be64(&ch->h_commit_sec, (uint64_t)now.tv_sec);
	cm_set_be32(&ch->h_commit_nsec, (uint32_t)now.tv_nsec);
	r = jbd_next_log_block(jc, &lblk);
	if (r == 0)
		r = jbd_log_write(jc, bd, lblk, ci, CM_BD_PREFLUSH | CM_BD_FUA);
	jbd_copy_free(jc, ci);
	return r;
}

/* Each logged buffer: its frozen copy becomes the committed one (or goes),
 * it leaves an older transaction's checkpoint list for t's if the journal
 * still owes it a home write, and moves to the running transaction that
 * waits for it, or to no transaction. */
static int jbd_forget_list(jbd_ctx *jc, jbd_transaction *t, bool aborted)
{
	jbd_jh *jh, *held;
	int r;

	if ((r = jbd_enter(jc)) < 0)
		return r;
	while ((jh = jbd_lock_first(jc, t, JBD_FORGET, &r))) {
		uint64_t blk = jh->b_blocknr;

		if ((r = jbd_jh_get(jc, jbd_bh_of(jc, jh), &held)) < 0) {
			jbd_unlock_jh(jc, blk);
			break;
		}
		if (jh->b_committed_data) {
			jbd_copy_free(jc, jh->b_committed_data);
			jh->b_committed_data = jh->b_frozen_data;
		} else {
			jbd_copy_free(jc, jh->b_frozen_data);
		}
		jh->b_frozen_data = 0;
		__jbd_cp_remove(jc, jh);
		if ((jh->b_jflags & JBD_JF_FREED) && !jh->b_next_transaction)
			jh->b_jflags &= ~(uint32_t)(JBD_JF_FREED | JBD_JF_JBDDIRTY);
		if (aborted)
			jh->b_jflags &= ~(uint32_t)JBD_JF_JBDDIRTY;
		if (jh->b_jflags & JBD_JF_JBDDIRTY)
			__jbd_cp_insert(jc, jh, t);
		__jbd_refile_buffer(jc, jh);
		jbd_restore_dirty(jc, jh);
		jbd_unlock_jh(jc, blk);
		jbd_jh_put(jc, jh);
	}
	jbd_leave(jc);
	return r;
}

int jbd_commit_finish(jbd_ctx *jc, cm_bdev *bd, jbd_transaction *t)
{
	jbd_journal *j = jc->j;
	int r = jbd_write_commit_block(jc, bd, t);

	if (r < 0) {
		if (r != -EOWNERDEAD)
			jbd_abort(jc, r);
		return r == -EOWNERDEAD ? r : -EIO;
	}
	/* Data that writeback mode left dirty is not durable yet: inode-svc
	 * says so once an fsync or sync has flushed it. */
	if (j->data_mode != JBD_DATA_WRITEBACK)
		cm_errseq_durable(&jc->l->errseq, t->t_tid);
	if ((r = jbd_forget_list(jc, t, jbd_commit_aborted(jc))) < 0)
		return r;
	if ((r = jbd_state_enter(jc)) < 0)
		return r;
	if ((r = jbd_lock(jc, jbd_list_lock(jc))) < 0) {
		jbd_state_leave(jc);
		return r;
	}
	atomic_store(&t->t_state, JBD_T_FINISHED);
	__jbd_cp_link_transaction(jc, t);
	jbd_unlock(jc, jbd_list_lock(jc));
	j->j_committing = 0;
	atomic_store(&j->j_commit_sequence, t->t_tid);
	JBD_CHECK_LOCKED(jc, t);
	jbd_state_leave(jc);
	atomic_fetch_add(&j->stats.commits, 1);
	atomic_fetch_add(&j->stats.handles, t->t_handle_count);
	cm_event_signal(&j->j_wait_done_commit);
	jbd_deliver_callbacks(jc, t);
	return 0;
}

int jbd_commit(jbd_ctx *jc, cm_bdev *bd)
{
	jbd_journal *j = jc->j;
	uint64_t t0 = cm_now_ns(), ns;
	jbd_transaction *t;
	int r;

	if ((r = jbd_commit_lock(jc, &t)) < 0 || !t)
		return r;
	/* A hook that cannot run (no handle free) costs what it would have
	 * written to this commit, not the commit. */
	(void)jbd_run_precommit(jc, t);
	if ((r = jbd_commit_switch(jc, t)) < 0 || (r = jbd_commit_write_log(jc, bd, t)) < 0 ||
	    (r = jbd_commit_finish(jc, bd, t)) < 0)
		return r;
	ns = cm_now_ns() - t0;
	atomic_fetch_add(&j->stats.commit_ns, ns);
	if (jbd_state_enter(jc) == 0) {
		j->j_average_commit_ns = j->j_average_commit_ns
					 ? (j->j_average_commit_ns * 3 + ns) / 4 : ns;
		jbd_state_leave(jc);
	}
	return 1;
}

void jbd_set_precommit(jbd_ctx *jc, jbd_precommit_fn *fn, void *ctx)
{
	jc->precommit = fn;
	jc->precommit_ctx = ctx;
}

bool jbd_commit_wanted(jbd_ctx *jc)
{
	jbd_journal *j = jc->j;
	jbd_transaction *t;
	bool want = false;

	if (jbd_state_enter(jc) < 0)
		return false;
	t = jbd_t(jc, j->j_running);
	if (t && !(j->j_flags & JBD_F_ABORTED) && atomic_load(&t->t_state) == JBD_T_RUNNING) {
		want = (j->j_flags & JBD_F_UNMOUNT) ||
		       (int32_t)(j->j_commit_request - atomic_load(&j->j_commit_sequence)) > 0;
		/* A starter short of log space: what the running transaction
		 * logged again may be what holds the tail. */
		if (!want && (j->j_space_request || cm_now_ns() >= t->t_expires_ns) &&
		    jbd_lock(jc, &t->t_handle_lock) == 0) {
			want = t->t_handle_count > 0;
			jbd_unlock(jc, &t->t_handle_lock);
		}
	}
	jbd_state_leave(jc);
	return want;
}
