/*
 * access.c - what a handle does to buffers (journal.h): write, create and
 * undo access, dirtying metadata and ordered data, forgetting, and the
 * committed copies of bitmaps. The logic is JBD's do_get_write_access and
 * friends: a buffer belongs to at most one transaction (b_transaction); a
 * buffer the committing transaction still owns is taken over by the
 * running one through b_next_transaction, with a frozen copy of what the
 * commit must log unless the commit already writes it (JBD_SHADOW: wait)
 * or no longer needs it (JBD_FORGET).
 *
 * Locks: the buffer's LOCKED bit (no arena lock held), then bh_state, then
 * j_list_lock to move it between lists.
 */
#include <errno.h>
#include <string.h>

#include "runtime.h"

static jbd_transaction *jbd_handle_trans(jbd_ctx *jc, jbd_handle *h)
{
	return jbd_t(jc, h->h_transaction);
}

/* Under bh_state: makes the copy at *slot (index + 1) hold bh's data. */
static int jbd_copy_into(jbd_ctx *jc, cm_bh *bh, uint32_t *slot)
{
	uint32_t ci = jbd_copy_alloc(jc);

	if (!ci)
		return -ENOMEM;
	memcpy(jbd_copy_ptr(jc, ci), cm_bh_data(jc->cache, bh), jc->j->block_size);
	*slot = ci;
	return 0;
}

/* The common start of a call on one buffer: enters the journal (the big
 * lock in big mode), attaches bh's journal head and takes its bh_state
 * stripe. 0 with all three held, or an error with none. */
static int jbd_bh_begin(jbd_ctx *jc, cm_bh *bh, jbd_jh **jh)
{
	int r = jbd_enter(jc);

	if (r < 0)
		return r;
	r = jbd_jh_get(jc, bh, jh);
	if (r == 0) {
		r = jbd_lock(jc, jbd_bh_state(jc, (*jh)->b_blocknr));
		if (r == 0)
			return 0;
		jbd_jh_put(jc, *jh);
	}
	jbd_leave(jc);
	return r;
}

/* Its end, after the caller dropped bh_state: the journal head's use and
 * the journal. Records a failure as the handle's first error. */
static int jbd_bh_end(jbd_ctx *jc, jbd_handle *h, jbd_jh *jh, int r)
{
	jbd_jh_put(jc, jh);
	jbd_leave(jc);
	return jbd_handle_error(h, r);
}

/* One attempt at write access: 0 done, 1 to retry after the buffer left
 * JBD_SHADOW, or an error. The buffer's LOCKED bit is held throughout, as
 * JBD holds the buffer lock: a write-back in flight is waited out, and its
 * DIRTY bit becomes JBDDIRTY, so that no write-back can start and send home
 * contents that no transaction has committed. */
static int jbd_try_write_access(jbd_ctx *jc, jbd_handle *h, cm_bh *bh, jbd_jh *jh, bool undo)
{
	jbd_transaction *t = jbd_handle_trans(jc, h);
	uint32_t ti = jbd_tidx(jc, t), seq = 0;
	cm_mutex *bs = jbd_bh_state(jc, jh->b_blocknr);
	bool jbddirty = false, shadow = false;
	int r;

	r = cm_bh_lock(jc->cache, bh);
	if (r < 0)
		return r;
	r = jbd_lock(jc, bs);
	if (r < 0) {
		cm_bh_unlock(jc->cache, bh);
		return r;
	}
	jbddirty = cm_bh_test(bh, CM_BH_DIRTY);
	cm_bh_clear_dirty(bh);
	if (jbddirty)
		jh->b_jflags |= JBD_JF_JBDDIRTY;
	if (jh->b_transaction == ti || jh->b_next_transaction == ti)
		goto copies;
	jh->b_modified = 0;
	if (jh->b_frozen_data) {
		jh->b_next_transaction = ti;
		goto copies;
	}
	if (jh->b_transaction) {
		/* The committing transaction owns it. */
		if (jh->b_jlist == JBD_SHADOW) {
			seq = cm_event_prepare(&jc->j->j_wait_unshadow);
			shadow = true;
			goto unlock;
		}
		if (jh->b_jlist != JBD_FORGET) {
			r = jbd_copy_into(jc, bh, &jh->b_frozen_data);
			if (r < 0)
				goto unlock;
			atomic_fetch_add(&jc->j->stats.frozen, 1);
		}
		jh->b_next_transaction = ti;
	} else {
		r = jbd_lock(jc, jbd_list_lock(jc));
		if (r < 0)
			goto unlock;
		__jbd_file_buffer(jc, jh, t, JBD_RESERVED);
		jbd_unlock(jc, jbd_list_lock(jc));
	}
copies:
	if (undo && !jh->b_committed_data)
		r = jbd_copy_into(jc, bh, &jh->b_committed_data);
unlock:
	jbd_unlock(jc, bs);
	cm_bh_unlock(jc->cache, bh);
	if (shadow) {
		r = jbd_sleep(jc, &jc->j->j_wait_unshadow, seq);
		return r < 0 ? r : 1;
	}
	if (r < 0)
		return r;
	return jbd_cancel_revoke(jc, h, jh);
}

/* Reads a journal-head field that bh_state guards, without it. */
#define JBD_PEEK(field) __atomic_load_n(&(field), __ATOMIC_ACQUIRE)

/* Write access this transaction already has: the buffer is filed on it
 * (or waits for it), so its journal head cannot go away and no write-back
 * can touch it; not forgotten (a reuse must cancel its revoke). While the
 * transaction runs, only its own handles change these fields, and only
 * towards the same values (another handle forgetting the buffer meanwhile
 * would be the caller's race), so they are read without bh_state: 1 if so,
 * 0 if not. */
static int jbd_write_access_held(jbd_ctx *jc, jbd_handle *h, cm_bh *bh, bool undo)
{
	uint32_t ti = h->h_transaction;
	jbd_jh *jh = jbd_jh_of(jc, bh);

	if (!cm_bh_jh(bh))
		return 0;
	if (undo && !JBD_PEEK(jh->b_committed_data))
		return 0;
	return (JBD_PEEK(jh->b_transaction) == ti && JBD_PEEK(jh->b_jlist) != JBD_FORGET) ||
	       JBD_PEEK(jh->b_next_transaction) == ti;
}

static int jbd_write_access(jbd_ctx *jc, jbd_handle *h, cm_bh *bh, bool undo)
{
	jbd_jh *jh;
	int r;

	if (!cm_bh_test(bh, CM_BH_UPTODATE))
		return -EINVAL;
	r = jbd_enter(jc);
	if (r < 0)
		return r;
	if (jbd_write_access_held(jc, h, bh, undo)) {
		jbd_leave(jc);
		return 0;
	}
	r = jbd_jh_get(jc, bh, &jh);
	if (r == 0) {
		while ((r = jbd_try_write_access(jc, h, bh, jh, undo)) == 1)
			;
		jbd_jh_put(jc, jh);
	}
	jbd_leave(jc);
	return jbd_handle_error(h, r);
}

int jbd_get_write_access(jbd_ctx *jc, jbd_handle *h, cm_bh *bh)
{
	return jbd_write_access(jc, h, bh, false);
}

int jbd_get_undo_access(jbd_ctx *jc, jbd_handle *h, cm_bh *bh)
{
	return jbd_write_access(jc, h, bh, true);
}

int jbd_get_create_access(jbd_ctx *jc, jbd_handle *h, cm_bh *bh)
{
	jbd_transaction *t = jbd_handle_trans(jc, h);
	uint32_t ti = jbd_tidx(jc, t);
	jbd_jh *jh;
	int r;

	cm_bh_clear_dirty(bh);
	r = jbd_bh_begin(jc, bh, &jh);
	if (r < 0)
		return jbd_handle_error(h, r);
	if (jh->b_transaction == ti || jh->b_next_transaction == ti) {
		/* Already ours. */
	} else if (!jh->b_transaction) {
		jh->b_modified = 0;
		jh->b_jflags &= ~JBD_JF_JBDDIRTY;
		r = jbd_lock(jc, jbd_list_lock(jc));
		if (r == 0) {
			__jbd_file_buffer(jc, jh, t, JBD_RESERVED);
			jbd_unlock(jc, jbd_list_lock(jc));
		}
	} else if (jh->b_jlist == JBD_FORGET) {
		jh->b_modified = 0;
		jh->b_next_transaction = ti;
	} else {
		/* A new block that the committing transaction still logs: the
		 * caller freed it without forgetting it. */
		r = -EIO;
	}
	jbd_unlock(jc, jbd_bh_state(jc, jh->b_blocknr));
	if (r == 0)
		r = jbd_cancel_revoke(jc, h, jh);
	return jbd_bh_end(jc, h, jh, r);
}

const void *jbd_committed_data(jbd_ctx *jc, cm_bh *bh)
{
	if (!cm_bh_jh(bh))
		return NULL;
	return jbd_copy_ptr(jc, jbd_jh_of(jc, bh)->b_committed_data);
}

int jbd_dirty_metadata(jbd_ctx *jc, jbd_handle *h, cm_bh *bh)
{
	jbd_transaction *t = jbd_handle_trans(jc, h);
	uint32_t ti = jbd_tidx(jc, t);
	jbd_jh *jh;
	cm_mutex *bs;
	int r;

	if (!cm_bh_jh(bh))
		return -EINVAL; /* no write access was taken */
	jh = jbd_jh_of(jc, bh);
	/* Dirtied in this transaction already: nothing changes (the fields
	 * are stable while it runs, as in jbd_write_access_held). */
	if (JBD_PEEK(jh->b_transaction) == ti && JBD_PEEK(jh->b_jlist) == JBD_METADATA &&
	    JBD_PEEK(jh->b_modified))
		return 0;
	bs = jbd_bh_state(jc, jh->b_blocknr);
	r = jbd_enter(jc);
	if (r < 0)
		return r;
	r = jbd_lock(jc, bs);
	if (r < 0)
		goto leave;
	if (jh->b_transaction != ti && jh->b_next_transaction != ti) {
		r = -EINVAL;
		goto unlock;
	}
	if (!jh->b_modified) {
		if (h->h_buffer_credits <= 0) {
			r = -ENOSPC;
			goto unlock;
		}
		jh->b_modified = 1;
		h->h_buffer_credits--;
	}
	jh->b_jflags |= JBD_JF_JBDDIRTY;
	if (jh->b_transaction == ti && jh->b_jlist != JBD_METADATA) {
		r = jbd_lock(jc, jbd_list_lock(jc));
		if (r == 0) {
			__jbd_file_buffer(jc, jh, t, JBD_METADATA);
			jbd_unlock(jc, jbd_list_lock(jc));
		}
	}
unlock:
	jbd_unlock(jc, bs);
leave:
	jbd_leave(jc);
	return jbd_handle_error(h, r);
}

int jbd_dirty_data(jbd_ctx *jc, jbd_handle *h, cm_bh *bh)
{
	jbd_transaction *t = jbd_handle_trans(jc, h);
	uint32_t ti = jbd_tidx(jc, t), busy_tid = 0;
	jbd_jh *jh;
	int r;

	switch (jc->j->data_mode) {
	case JBD_DATA_JOURNAL:
		return jbd_dirty_metadata(jc, h, bh);
	case JBD_DATA_WRITEBACK:
		cm_bh_mark_dirty(bh);
		return 0;
	default:
		break;
	}
	for (;;) {
		r = jbd_bh_begin(jc, bh, &jh);
		if (r < 0)
			break;
		if (!jh->b_transaction || jh->b_transaction == ti) {
			r = jbd_lock(jc, jbd_list_lock(jc));
			if (r == 0) {
				if (!jh->b_transaction)
					__jbd_file_buffer(jc, jh, t, JBD_SYNCDATA);
				jbd_unlock(jc, jbd_list_lock(jc));
			}
			cm_bh_mark_dirty(bh);
		} else {
			busy_tid = jbd_t(jc, jh->b_transaction)->t_tid;
		}
		jbd_unlock(jc, jbd_bh_state(jc, jh->b_blocknr));
		if (jbd_bh_end(jc, h, jh, r) < 0 || !busy_tid)
			return r;
		/* The committing transaction writes it: let it finish. */
		r = jbd_wait_commit(jc, busy_tid);
		if (r < 0)
			break;
		busy_tid = 0;
	}
	return jbd_handle_error(h, r);
}

int jbd_forget(jbd_ctx *jc, jbd_handle *h, cm_bh *bh)
{
	uint32_t ti = jbd_tidx(jc, jbd_handle_trans(jc, h));
	jbd_jh *jh;
	bool was_modified;
	int r;

	if (!cm_bh_jh(bh)) {
		cm_bh_clear_dirty(bh);
		return 0;
	}
	r = jbd_bh_begin(jc, bh, &jh);
	if (r < 0)
		return jbd_handle_error(h, r);
	if (jh->b_committed_data) {
		r = -EIO; /* a bitmap is never forgotten */
		goto unlock;
	}
	/* A credit comes back only if this transaction spent it: b_modified
	 * of a buffer that only a checkpoint list holds is an older
	 * transaction's (JBD2's drop_reserve). */
	was_modified = jh->b_modified && (jh->b_transaction == ti || jh->b_next_transaction == ti);
	if (jh->b_transaction == ti) {
		cm_bh_clear_dirty(bh);
		jh->b_jflags &= ~JBD_JF_JBDDIRTY;
		jh->b_modified = 0;
		r = jbd_lock(jc, jbd_list_lock(jc));
		if (r == 0) {
			/* Logged by an earlier transaction that is not yet
			 * checkpointed: the commit takes it off that list. */
			if (jh->b_cp_transaction)
				__jbd_file_buffer(jc, jh, jbd_t(jc, ti), JBD_FORGET);
			else
				__jbd_unfile_buffer(jc, jh);
			jbd_unlock(jc, jbd_list_lock(jc));
		}
	} else if (!jh->b_transaction) {
		r = jbd_lock(jc, jbd_list_lock(jc));
		if (r == 0 && jh->b_cp_transaction) {
			/* Only awaiting its checkpoint: once freed it must not go
			 * home; the commit takes it off that list (as JBD2). */
			cm_bh_clear_dirty(bh);
			jh->b_jflags &= ~JBD_JF_JBDDIRTY;
			jh->b_modified = 0;
			__jbd_file_buffer(jc, jh, jbd_t(jc, ti), JBD_FORGET);
		}
		if (r == 0)
			jbd_unlock(jc, jbd_list_lock(jc));
	} else if (jh->b_transaction && jh->b_next_transaction == ti) {
		/* The committing transaction logs it; we no longer want it. */
		jh->b_next_transaction = 0;
		jh->b_modified = 0;
		jh->b_jflags &= ~JBD_JF_JBDDIRTY;
	}
	if (was_modified)
		h->h_buffer_credits++;
unlock:
	jbd_unlock(jc, jbd_bh_state(jc, jh->b_blocknr));
	return jbd_bh_end(jc, h, jh, r);
}
