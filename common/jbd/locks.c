/*
 * locks.c - the journal's lock wrappers (runtime.h): in --locking=big mode
 * the journal locks are not taken and the public calls hold the big lock
 * instead (jbd_enter), as the BKL was held around a whole ext3 operation
 * in Linux 2.5.72; in fine mode jbd_enter is free and each lock is a
 * cm_mutex of the lock set. Also the compound steps every file takes:
 * j_state_lock inside jbd_enter, and the first head of a buffer list with
 * its bh_state stripe and j_list_lock, taken in rank order; and a buffer's
 * bh_state for the services (journal.h).
 */
#include "runtime.h"

int jbd_lock(jbd_ctx *jc, cm_mutex *m)
{
	return jc->big ? 0 : cm_mutex_lock(m);
}

void jbd_unlock(jbd_ctx *jc, cm_mutex *m)
{
	if (!jc->big)
		cm_mutex_unlock(m);
}

int jbd_enter(jbd_ctx *jc)
{
	return jc->big ? cm_big_enter(&jc->ls->big_lock) : 0;
}

void jbd_leave(jbd_ctx *jc)
{
	if (jc->big)
		cm_big_leave();
}

int jbd_state_enter(jbd_ctx *jc)
{
	int r = jbd_enter(jc);

	if (r < 0)
		return r;
	r = jbd_lock(jc, jbd_state_lock(jc));
	if (r < 0)
		jbd_leave(jc);
	return r;
}

void jbd_state_leave(jbd_ctx *jc)
{
	jbd_unlock(jc, jbd_state_lock(jc));
	jbd_leave(jc);
}

/* In --locking=big mode the big lock stands in for the stripe: entered
 * (a depth count), since the caller usually holds it already, through
 * its handle or its join. */
int jbd_lock_bh_state(jbd_ctx *jc, cm_bh *bh)
{
	return jc->big ? jbd_enter(jc) : cm_mutex_lock(jbd_bh_state(jc, cm_bh_blocknr(bh)));
}

void jbd_unlock_bh_state(jbd_ctx *jc, cm_bh *bh)
{
	if (jc->big)
		jbd_leave(jc);
	else
		cm_mutex_unlock(jbd_bh_state(jc, cm_bh_blocknr(bh)));
}

/* The first journal head on list jlist of t, returned with its bh_state
 * stripe and j_list_lock held (the ranks want bh_state first, so the list
 * is peeked under j_list_lock alone, then both are taken and the head
 * checked again), or NULL holding neither (*err set on a lock error). The
 * caller is inside jbd_enter. */
jbd_jh *jbd_lock_first(jbd_ctx *jc, jbd_transaction *t, enum jbd_jlist jlist, int *err)
{
	for (;;) {
		jbd_jh *jh;
		uint64_t blk;

		if ((*err = jbd_lock(jc, jbd_list_lock(jc))) < 0)
			return NULL;
		jh = __jbd_list_first(jc, t, jlist);
		blk = jh ? jh->b_blocknr : 0;
		jbd_unlock(jc, jbd_list_lock(jc));
		if (!jh)
			return NULL;
		if ((*err = jbd_lock(jc, jbd_bh_state(jc, blk))) < 0)
			return NULL;
		if ((*err = jbd_lock(jc, jbd_list_lock(jc))) < 0) {
			jbd_unlock(jc, jbd_bh_state(jc, blk));
			return NULL;
		}
		if (__jbd_list_first(jc, t, jlist) == jh && jh->b_blocknr == blk)
			return jh;
		jbd_unlock(jc, jbd_list_lock(jc));
		jbd_unlock(jc, jbd_bh_state(jc, blk));
	}
}

void jbd_unlock_jh(jbd_ctx *jc, uint64_t blk)
{
	jbd_unlock(jc, jbd_list_lock(jc));
	jbd_unlock(jc, jbd_bh_state(jc, blk));
}
