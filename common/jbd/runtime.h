/*
 * runtime.h - the one internal header of the run-time journal: what its
 * files share (journal.c, locks.c, transaction.c, access.c, revoke.c,
 * check.c, and the commit thread's commit.c, logwrite.c, checkpoint.c and
 * jsb.c): index <-> pointer conversions, the lock wrappers that honour
 * --locking=big, journal heads, the buffer lists, block copies and the
 * log. A name starting with `__` expects its caller to hold the locks it
 * names, as in JBD.
 */
#ifndef JD_RUNTIME_H
#define JD_RUNTIME_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "bdclient.h"
#include "journal.h"

/* ---- indexes (index + 1, 0 = none) ---- */
static inline jbd_transaction *jbd_t(jbd_ctx *jc, uint32_t ti)
{
	return ti ? cm_pool_obj(jc->a, jc->tpool, ti - 1) : NULL;
}

static inline uint32_t jbd_tidx(jbd_ctx *jc, const jbd_transaction *t)
{
	return t ? cm_pool_idx(jc->a, jc->tpool, t) + 1 : 0;
}

static inline jbd_jh *jbd_jh_at(jbd_ctx *jc, uint32_t ji)
{
	return ji && ji <= jc->j->njheads ? &jc->jheads[ji - 1] : NULL;
}

static inline uint32_t jbd_jhidx(jbd_ctx *jc, const jbd_jh *jh)
{
	return (uint32_t)(jh - jc->jheads) + 1;
}

/* The journal head slot of a buffer (attached or not). */
static inline jbd_jh *jbd_jh_of(jbd_ctx *jc, const cm_bh *bh)
{
	return &jc->jheads[bh->b_index];
}

static inline cm_bh *jbd_bh_of(jbd_ctx *jc, const jbd_jh *jh)
{
	return cm_bcache_bh(jc->cache, (uint32_t)(jh - jc->jheads));
}

/* Records r as the handle's first error (jbd_stop returns it); returns r. */
static inline int jbd_handle_error(jbd_handle *h, int r)
{
	if (r < 0 && !h->h_err)
		h->h_err = r;
	return r;
}

/* ---- locks (locks.c): no-ops in --locking=big mode, where the public
 * entry points hold the big lock instead (jbd_enter/jbd_leave), and a
 * handle holds it from start to stop, as the BKL was held around a whole
 * ext3 operation in Linux 2.5.72; it is given up while the thread sleeps
 * (lock.h) ---- */
int jbd_lock(jbd_ctx *jc, cm_mutex *m);
void jbd_unlock(jbd_ctx *jc, cm_mutex *m);
/* Around every public call: takes the big lock in big mode (again, if the
 * thread holds it already: a depth count). */
int jbd_enter(jbd_ctx *jc);
void jbd_leave(jbd_ctx *jc);
/* jbd_enter, then j_state_lock; and back. */
int jbd_state_enter(jbd_ctx *jc);
void jbd_state_leave(jbd_ctx *jc);
/* The first journal head on list jlist of t with its bh_state stripe and
 * j_list_lock held, or NULL holding neither (*err set on a lock error);
 * jbd_unlock_jh(jc, its b_blocknr) drops both. Inside jbd_enter. */
jbd_jh *jbd_lock_first(jbd_ctx *jc, jbd_transaction *t, enum jbd_jlist jlist, int *err);
void jbd_unlock_jh(jbd_ctx *jc, uint64_t blk);
/* Waits on ev (prepared as seq, with every lock but the big one dropped;
 * the wait gives that up) for at most a short while: 0, -ESTALE when the
 * arena was discarded. The caller re-checks its condition and loops
 * (transaction.c). */
int jbd_sleep(jbd_ctx *jc, cm_event *ev, uint32_t seq);

static inline cm_mutex *jbd_state_lock(jbd_ctx *jc)
{
	return &jc->ls->j_state_lock;
}

static inline cm_mutex *jbd_list_lock(jbd_ctx *jc)
{
	return &jc->ls->j_list_lock;
}

static inline cm_mutex *jbd_revoke_lock(jbd_ctx *jc)
{
	return &jc->ls->j_revoke_lock;
}

static inline cm_mutex *jbd_bh_state(jbd_ctx *jc, uint64_t blocknr)
{
	return cm_bh_state_lock(jc->ls, blocknr);
}

static inline cm_mutex *jbd_jh_lock(jbd_ctx *jc, uint64_t blocknr)
{
	return cm_bh_jh_lock(jc->ls, blocknr);
}

/* ---- journal heads (journal.c) ----
 * jbd_jh_get attaches the journal head of bh if needed (taking a buffer
 * reference that the attachment keeps) and raises b_jcount; jbd_jh_put
 * lowers it and detaches the head when nothing uses it any more: b_jcount
 * 0 and no b_transaction, b_next_transaction or b_cp_transaction. Both take
 * the journal_head stripe; -EOWNERDEAD if its holder died. */
int jbd_jh_get(jbd_ctx *jc, cm_bh *bh, jbd_jh **ret);
void jbd_jh_put(jbd_ctx *jc, jbd_jh *jh);

/* ---- buffer lists (journal.c); callers hold bh_state and j_list_lock ----
 * __jbd_file_buffer moves jh onto list jlist of t (unfiling it from where
 * it was); __jbd_unfile_buffer takes it off its transaction;
 * __jbd_temp_unlink takes it off its list but leaves b_transaction set;
 * __jbd_refile_buffer, at the end of a commit, moves a buffer that the
 * running transaction waits for (b_next_transaction) to it, or unfiles it. */
void __jbd_file_buffer(jbd_ctx *jc, jbd_jh *jh, jbd_transaction *t, enum jbd_jlist jlist);
void __jbd_unfile_buffer(jbd_ctx *jc, jbd_jh *jh);
void __jbd_temp_unlink(jbd_ctx *jc, jbd_jh *jh);
void __jbd_refile_buffer(jbd_ctx *jc, jbd_jh *jh);
/* The first journal head on list jlist of t, or NULL. */
jbd_jh *__jbd_list_first(jbd_ctx *jc, jbd_transaction *t, enum jbd_jlist jlist);

/* ---- checkpoint lists (journal.c); callers hold j_list_lock ---- */
void __jbd_cp_insert(jbd_ctx *jc, jbd_jh *jh, jbd_transaction *t);
void __jbd_cp_remove(jbd_ctx *jc, jbd_jh *jh);

/* ---- block copies (frozen, committed, escaped), block_size bytes each,
 * in the data zone so blockdev-svc can write them directly ---- */
uint32_t jbd_copy_alloc(jbd_ctx *jc);      /* index + 1, 0 when none is free */
void jbd_copy_free(jbd_ctx *jc, uint32_t ci);
void *jbd_copy_ptr(jbd_ctx *jc, uint32_t ci);
cm_off jbd_copy_off(jbd_ctx *jc, uint32_t ci);

/* ---- the pre-commit hook (transaction.c): runs jc->precommit, if set,
 * on the LOCKED transaction t whose handles have all stopped ---- */
int jbd_run_precommit(jbd_ctx *jc, jbd_transaction *t);

/* ---- transactions (journal.c) ----
 * A new RUNNING transaction with the next tid; the caller holds
 * j_state_lock and makes it j_running. NULL when the pool is empty. */
jbd_transaction *__jbd_new_transaction(jbd_ctx *jc);
void jbd_free_transaction(jbd_ctx *jc, jbd_transaction *t);

/* ---- revoke tables (revoke.c) ---- */
/* During commit: the table of the committing transaction is made the
 * other one; the running transaction's revokes go to a fresh table. */
void jbd_switch_revoke_table(jbd_ctx *jc);
/* Calls fn for every record of the table not in use by the running
 * transaction (the committing one's), then empties it. fn runs under
 * j_revoke_lock: it must not wait or lock; it returns 0 or an error, and
 * the first error is returned (the table is emptied all the same). */
int jbd_drain_revokes(jbd_ctx *jc, int (*fn)(void *ctx, uint64_t blocknr), void *ctx);
/* Cancels a revoke of bh's block by the running transaction (write access
 * to a revoked block). */
int jbd_cancel_revoke(jbd_ctx *jc, jbd_handle *h, jbd_jh *jh);

/* ---- invariants (check.c) ----
 * jbd_check at a state change of t (or, t NULL, after one was freed):
 * called with j_state_lock held (the big lock in big mode) and no lock of
 * a higher rank; takes t's t_handle_lock, then j_list_lock, to read what
 * they guard. Lockdep builds run it at every change and abort on a broken
 * invariant, as they do on a lock taken out of order. */
bool jbd_check_locked(jbd_ctx *jc, jbd_transaction *t);
#ifdef CM_LOCKDEP
#define JBD_CHECK_LOCKED(jc, t) assert(jbd_check_locked(jc, t))
#else
#define JBD_CHECK_LOCKED(jc, t) ((void)0)
#endif

/* ---- the commit thread's files (commit.h) ---- */
/* JBD_F_ABORTED, read under j_state_lock (true if that lock is lost;
 * commit.c). */
bool jbd_commit_aborted(jbd_ctx *jc);
/* Takes the log block at j_head (j_free--, wrapping at j_last; commit.c). */
int jbd_next_log_block(jbd_ctx *jc, uint32_t *lblk);
/* Fills a JBD2 block header (commit.c). */
void jbd_header(void *b, uint32_t type, uint32_t tid);
/* A FINISHED transaction joins j_checkpoint_transactions at the tail
 * (checkpoint.c); the caller holds j_list_lock. */
void __jbd_cp_link_transaction(jbd_ctx *jc, jbd_transaction *t);
/* Reads log block lblk into block copy ci, or writes ci there with
 * CM_BD_* write flags, and waits (jsb.c). */
int jbd_log_read(jbd_ctx *jc, cm_bdev *bd, uint32_t lblk, uint32_t ci);
int jbd_log_write(jbd_ctx *jc, cm_bdev *bd, uint32_t lblk, uint32_t ci, uint32_t flags);

#endif /* JD_RUNTIME_H */
