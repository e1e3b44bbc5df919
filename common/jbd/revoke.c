/*
 * revoke.c - revoke records: a block freed by a transaction must not be
 * replayed from the log of an earlier one (JBD's revoke.c). Two hash
 * tables, as in JBD: the running transaction adds to j_revoke_cur; when a
 * commit starts it switches tables, writes the other table's records into
 * its revoke blocks and empties it. Write access to a block cancels the
 * running transaction's revoke of it, so a block freed and reused in one
 * transaction is replayed normally.
 *
 * Locks: j_revoke_lock (a leaf) around every table access.
 */
#include <errno.h>

#include "runtime.h"

static uint32_t jbd_revoke_bucket(uint64_t blocknr)
{
	return (uint32_t)((blocknr * 0x9e3779b97f4a7c15ULL) >> 40) & (JBD_REVOKE_BUCKETS - 1);
}

static jbd_revoke_record *jbd_rec(jbd_ctx *jc, uint32_t ri)
{
	return ri ? cm_pool_obj(jc->a, jc->rpool, ri - 1) : NULL;
}

/* Under j_revoke_lock: the link that points at blocknr's record in table
 * tab, or at the 0 ending its bucket. */
static uint32_t *__jbd_revoke_find(jbd_ctx *jc, uint32_t tab, uint64_t blocknr)
{
	uint32_t *link = &jc->j->j_revoke_table[tab][jbd_revoke_bucket(blocknr)];
	jbd_revoke_record *rec;

	while ((rec = jbd_rec(jc, *link)) && rec->blocknr != blocknr)
		link = &rec->next;
	return link;
}

int jbd_revoke(jbd_ctx *jc, jbd_handle *h, uint64_t blocknr, cm_bh *bh)
{
	jbd_transaction *t = jbd_t(jc, h->h_transaction);
	jbd_journal *j = jc->j;
	uint32_t *link, idx;
	int r;

	if (blocknr >= j->fs_blocks)
		return -EINVAL;
	if (bh) {
		r = jbd_forget(jc, h, bh);
		if (r < 0)
			return r;
	}
	r = jbd_enter(jc);
	if (r < 0)
		return r;
	r = jbd_lock(jc, jbd_revoke_lock(jc));
	if (r < 0)
		goto leave;
	link = __jbd_revoke_find(jc, j->j_revoke_cur, blocknr);
	if (*link) {
		r = -EIO; /* revoked twice in one transaction, as JBD refuses */
	} else if ((idx = cm_pool_get(jc->a, jc->rpool)) == CM_POOL_NONE) {
		r = -ENOMEM;
	} else {
		jbd_revoke_record *rec = cm_pool_obj(jc->a, jc->rpool, idx);

		rec->blocknr = blocknr;
		rec->tid = h->h_tid;
		*link = idx + 1;
		t->t_revoke_records++;
		atomic_fetch_add(&j->stats.revokes, 1);
	}
	jbd_unlock(jc, jbd_revoke_lock(jc));
leave:
	jbd_leave(jc);
	return jbd_handle_error(h, r);
}

int jbd_cancel_revoke(jbd_ctx *jc, jbd_handle *h, jbd_jh *jh)
{
	jbd_transaction *t = jbd_t(jc, h->h_transaction);
	uint32_t *link;
	int r;

	/* Nothing revoked in this transaction: no record to cancel. A revoke
	 * of this block would have been ordered before its reuse by the
	 * allocator's lock, so the racy read cannot miss one. */
	if (!atomic_load(&t->t_revoke_records))
		return 0;
	r = jbd_lock(jc, jbd_revoke_lock(jc));
	if (r < 0)
		return r;
	link = __jbd_revoke_find(jc, jc->j->j_revoke_cur, jh->b_blocknr);
	if (*link) {
		uint32_t idx = *link - 1;

		*link = jbd_rec(jc, *link)->next;
		cm_pool_put(jc->a, jc->rpool, idx);
		t->t_revoke_records--;
	}
	jbd_unlock(jc, jbd_revoke_lock(jc));
	return 0;
}

void jbd_switch_revoke_table(jbd_ctx *jc)
{
	if (jbd_lock(jc, jbd_revoke_lock(jc)) < 0)
		return;
	jc->j->j_revoke_cur ^= 1;
	jbd_unlock(jc, jbd_revoke_lock(jc));
}

int jbd_drain_revokes(jbd_ctx *jc, int (*fn)(void *ctx, uint64_t blocknr), void *ctx)
{
	uint32_t *table;
	int r, err = 0;

	r = jbd_lock(jc, jbd_revoke_lock(jc));
	if (r < 0)
		return r;
	table = jc->j->j_revoke_table[jc->j->j_revoke_cur ^ 1];
	for (uint32_t b = 0; b < JBD_REVOKE_BUCKETS; b++) {
		while (table[b]) {
			uint32_t idx = table[b] - 1;
			jbd_revoke_record *rec = jbd_rec(jc, table[b]);

			if (!err)
				err = fn(ctx, rec->blocknr);
			table[b] = rec->next;
			cm_pool_put(jc->a, jc->rpool, idx);
		}
	}
	jbd_unlock(jc, jbd_revoke_lock(jc));
	return err;
}
