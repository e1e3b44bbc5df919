/*
 * checkpoint.c - giving log space back (journald-svc's commit thread): the
 * buffers of FINISHED transactions written home, the device flushed, then
 * the log tail moved past every transaction that no longer needs the log,
 * in the journal superblock first (flushed) and in memory after, so a
 * crash never finds s_start naming blocks that a later commit reused.
 * Starters waiting for space are woken. Also the clean shutdown.
 */
#include <errno.h>
#include <stdlib.h>

#include "bwq.h"
#include "commit.h"
#include "runtime.h"

/* ---- j_checkpoint_transactions: circular, the head names the oldest ---- */

void __jbd_cp_link_transaction(jbd_ctx *jc, jbd_transaction *t)
{
	jbd_journal *j = jc->j;
	uint32_t ti = jbd_tidx(jc, t);
	jbd_transaction *first = jbd_t(jc, j->j_checkpoint_transactions);

	if (!first) {
		t->t_cpnext = t->t_cpprev = ti;
		j->j_checkpoint_transactions = ti;
		return;
	}
	t->t_cpnext = j->j_checkpoint_transactions;
	t->t_cpprev = first->t_cpprev;
	jbd_t(jc, first->t_cpprev)->t_cpnext = ti;
	first->t_cpprev = ti;
}

/* FINISHED -> (freed): t's checkpoint list is empty. Caller holds
 * j_list_lock. */
static void jbd_checkpoint_drop(jbd_ctx *jc, jbd_transaction *t)
{
	jbd_journal *j = jc->j;
	uint32_t ti = jbd_tidx(jc, t);

	if (t->t_cpnext == ti) {
		j->j_checkpoint_transactions = 0;
	} else {
		jbd_t(jc, t->t_cpprev)->t_cpnext = t->t_cpnext;
		jbd_t(jc, t->t_cpnext)->t_cpprev = t->t_cpprev;
		if (j->j_checkpoint_transactions == ti)
			j->j_checkpoint_transactions = t->t_cpnext;
	}
	t->t_cpnext = t->t_cpprev = 0;
	jbd_free_transaction(jc, t);
}

bool jbd_checkpoint_wanted(jbd_ctx *jc)
{
	jbd_journal *j = jc->j;
	bool want = false;

	if (jbd_state_enter(jc) == 0) {
		want = !(j->j_flags & JBD_F_ABORTED) &&
		       (j->j_space_request ||
			j->j_last - j->j_first - j->j_free > (j->j_last - j->j_first) / 2);
		jbd_state_leave(jc);
	}
	return want;
}

/* Calls fn on every journal head of every checkpoint list that no later
 * transaction owns (those wait for that one's commit), oldest first,
 * under j_list_lock; fn returns false to stop. */
static int jbd_cp_walk(jbd_ctx *jc, bool (*fn)(jbd_ctx *jc, jbd_jh *jh, void *ctx), void *ctx)
{
	uint32_t ti, first;
	int r;

	if ((r = jbd_enter(jc)) < 0)
		return r;
	if ((r = jbd_lock(jc, jbd_list_lock(jc))) < 0) {
		jbd_leave(jc);
		return r;
	}
	first = jc->j->j_checkpoint_transactions;
	ti = first;
	for (bool more = true; ti && more;) {
		jbd_transaction *t = jbd_t(jc, ti);
		uint32_t ji = t->t_checkpoint_list, n = 0;

		/* Counted first: fn may take the one it is given off the list. */
		for (uint32_t k = ji; k && n <= jc->j->njheads;) {
			n++;
			if ((k = jbd_jh_at(jc, k)->b_cpnext) == ji)
				break;
		}
		for (; n && more; n--) {
			jbd_jh *jh = jbd_jh_at(jc, ji);

			ji = jh->b_cpnext;
			if (!jh->b_transaction)
				more = fn(jc, jh, ctx);
		}
		if ((ti = t->t_cpnext) == first)
			break;
	}
	jbd_unlock(jc, jbd_list_lock(jc));
	jbd_leave(jc);
	return 0;
}

struct jbd_cp_batch {
	cm_bh **bhs;
	jbd_jh **jhs;
	uint32_t n, max;
	int err;
};

/* A buffer the journal still owes home: held for writing. */
static bool jbd_cp_collect(jbd_ctx *jc, jbd_jh *jh, void *ctx)
{
	struct jbd_cp_batch *b = ctx;
	cm_bh *bh = jbd_bh_of(jc, jh);

	if (cm_bh_test(bh, CM_BH_DIRTY | CM_BH_LOCKED)) {
		cm_bh_hold(bh);
		b->bhs[b->n++] = bh;
	}
	return b->n < b->max;
}

/* A buffer that is home (clean and not under I/O, and durable: the device
 * was flushed since): leaves the checkpoint list; held so that the caller
 * can detach its journal head after dropping j_list_lock. */
static bool jbd_cp_clean(jbd_ctx *jc, jbd_jh *jh, void *ctx)
{
	struct jbd_cp_batch *b = ctx;
	jbd_jh *held;
	int r;

	if (cm_bh_test(jbd_bh_of(jc, jh), CM_BH_DIRTY | CM_BH_LOCKED))
		return true;
	if ((r = jbd_jh_get(jc, jbd_bh_of(jc, jh), &held)) < 0) {
		b->err = r;
		return false;
	}
	__jbd_cp_remove(jc, jh);
	b->jhs[b->n++] = jh;
	return b->n < b->max;
}

static int jbd_cp_by_block(const void *a, const void *b)
{
	uint64_t x = cm_bh_blocknr(*(cm_bh *const *)a), y = cm_bh_blocknr(*(cm_bh *const *)b);

	return (x > y) - (x < y);
}

/* Writes home those of bhs[0..n) that are DIRTY, in block order, so that
 * neighbours go in one gathering write (bwq.h). Each is LOCKED from its
 * DIRTY test until its write is reaped (a failed write leaves it DIRTY).
 * No lock is held; a thread holding LOCKED never waits for another
 * buffer's, so taking one while holding others cannot deadlock. Returns
 * the first error. */
static int jbd_cp_write(jbd_ctx *jc, cm_bdev *bd, cm_bh **bhs, uint32_t n, uint32_t *written)
{
	cm_bwq q;
	int first = 0, r;

	if (n > 1)
		qsort(bhs, n, sizeof(*bhs), jbd_cp_by_block);
	cm_bwq_init(&q, jc->cache, bd, NULL, NULL);
	for (uint32_t i = 0; i < n; i++) {
		if ((r = cm_bh_lock(jc->cache, bhs[i])) < 0) {
			first = first ? first : r;
			continue;
		}
		if (!cm_bh_test(bhs[i], CM_BH_DIRTY)) {
			cm_bh_unlock(jc->cache, bhs[i]);
			continue;
		}
		cm_bh_clear_dirty(bhs[i]);
		cm_bwq_add(&q, bhs[i], NULL);
		(*written)++;
	}
	r = cm_bwq_finish(&q);
	return first ? first : r;
}

/* Frees every FINISHED transaction with nothing left to checkpoint and
 * moves the tail to the oldest one left (else the committing one, else
 * the head): superblock first, then j_tail and j_free. Returns the log
 * blocks freed. */
static int jbd_cleanup_tail(jbd_ctx *jc, cm_bdev *bd)
{
	jbd_journal *j = jc->j;
	uint32_t tail, seq, len = j->j_last - j->j_first, ti, n = 0;
	jbd_transaction *t;
	int r;

	if ((r = jbd_state_enter(jc)) < 0)
		return r;
	if ((r = jbd_lock(jc, jbd_list_lock(jc))) < 0) {
		jbd_state_leave(jc);
		return r;
	}
	ti = j->j_checkpoint_transactions;
	for (uint32_t k = ti; k && n < JBD_MAX_TRANSACTIONS;) {
		n++;
		if ((k = jbd_t(jc, k)->t_cpnext) == ti)
			break;
	}
	for (; n; n--) {
		t = jbd_t(jc, ti);
		ti = t->t_cpnext;
		if (!t->t_checkpoint_list)
			jbd_checkpoint_drop(jc, t);
	}
	if ((t = jbd_t(jc, j->j_checkpoint_transactions)) || (t = jbd_t(jc, j->j_committing))) {
		tail = t->t_log_start;
		seq = t->t_tid;
	} else {
		tail = j->j_head;
		seq = (t = jbd_t(jc, j->j_running)) ? t->t_tid : j->j_transaction_sequence;
	}
	jbd_unlock(jc, jbd_list_lock(jc));
	JBD_CHECK_LOCKED(jc, NULL);
	if (!j->j_tail || tail == j->j_tail) {
		jbd_state_leave(jc);
		return 0;
	}
	jbd_state_leave(jc);
	/* Only the commit thread moves the tail or writes the log: tail and
	 * seq stay right while the lock is dropped for the write. */
	if ((r = jbd_jsb_write(jc, bd, tail, seq)) < 0)
		return r;
	if ((r = jbd_state_enter(jc)) < 0)
		return r;
	n = (tail + len - j->j_tail) % len;
	j->j_free += n;
	j->j_tail = tail;
	j->j_tail_sequence = seq;
	jbd_state_leave(jc);
	return (int)n;
}

int jbd_checkpoint(jbd_ctx *jc, cm_bdev *bd, uint32_t need)
{
	jbd_journal *j = jc->j;
	struct jbd_cp_batch b = {.max = j->njheads};
	uint32_t written = 0;
	int r, first = 0;

	(void)need; /* every FINISHED transaction is written: at most a quarter
		     * of the log each, and checkpoints come at half use */
	b.bhs = malloc(b.max * sizeof(*b.bhs));
	b.jhs = malloc(b.max * sizeof(*b.jhs));
	if (!b.bhs || !b.jhs) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = jbd_cp_walk(jc, jbd_cp_collect, &b)) < 0)
		goto out;
	first = jbd_cp_write(jc, bd, b.bhs, b.n, &written);
	for (uint32_t i = 0; i < b.n; i++)
		cm_bcache_put(jc->cache, b.bhs[i]);
	atomic_fetch_add(&j->stats.checkpoint_blocks, written);
	atomic_fetch_add(&j->stats.checkpoints, 1);
	/* Home writes durable before the tail moves past them. */
	if ((r = first) < 0 || (r = cm_bdev_flush(bd)) < 0)
		goto out;
	b.n = 0;
	r = jbd_cp_walk(jc, jbd_cp_clean, &b);
	if (b.n && jbd_enter(jc) == 0) {
		for (uint32_t i = 0; i < b.n; i++)
			jbd_jh_put(jc, b.jhs[i]);
		jbd_leave(jc);
	}
	if (r == 0)
		r = b.err;
	if (r == 0)
		r = jbd_cleanup_tail(jc, bd);
out:
	free(b.bhs);
	free(b.jhs);
	if (jbd_state_enter(jc) == 0) {
		j->j_space_request = 0;
		jbd_state_leave(jc);
	}
	cm_event_signal(&j->j_wait_space);
	if (r < 0 && r != -EOWNERDEAD && r != -EROFS) {
		jbd_abort(jc, r);
		return -EIO;
	}
	return r;
}

int jbd_shutdown(jbd_ctx *jc, cm_bdev *bd)
{
	jbd_journal *j = jc->j;
	jbd_transaction *t;
	uint32_t seq, left;
	int32_t handles = 0;
	bool flushed;
	int r;

	if ((r = jbd_state_enter(jc)) < 0)
		return r;
	j->j_flags |= JBD_F_UNMOUNT;
	t = jbd_t(jc, j->j_running);
	if (t && jbd_lock(jc, &t->t_handle_lock) == 0) {
		handles = (int32_t)t->t_handle_count;
		jbd_unlock(jc, &t->t_handle_lock);
	}
	jbd_state_leave(jc);
	if (handles && (r = jbd_commit(jc, bd)) < 0)
		return r;
	if ((r = jbd_checkpoint(jc, bd, 0)) < 0)
		return r;
	if ((r = jbd_state_enter(jc)) < 0)
		return r;
	left = j->j_checkpoint_transactions | j->j_committing;
	seq = j->j_transaction_sequence;
	flushed = j->j_flags & JBD_F_FLUSHED;
	jbd_state_leave(jc);
	if (left)
		return -EBUSY;
	/* Nothing logged since the log was last empty on disk: s_start is 0
	 * there already, and the superblock stays as recovery left it. */
	if (!flushed && (r = jbd_jsb_write(jc, bd, 0, seq)) < 0)
		return r;
	if ((r = jbd_state_enter(jc)) < 0)
		return r;
	j->j_tail = 0;
	j->j_tail_sequence = seq;
	j->j_free = j->j_last - j->j_first;
	j->j_flags |= JBD_F_FLUSHED;
	jbd_state_leave(jc);
	return jbd_jsb_clear_recover(jc, bd);
}
