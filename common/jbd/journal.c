/*
 * journal.c - the journal in the arena: creating it (journald-svc) and
 * attaching to it (every service), journal heads, the per-transaction
 * buffer lists and checkpoint lists, block copies and transaction objects
 * (runtime.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* The locks of every transaction object, once (see jbd_transaction). */
static int jbd_init_transaction_locks(cm_arena *a, jbd_journal *j)
{
	cm_pool *tp = cm_arena_ptr(a, j->transactions, sizeof(*tp));
	int r;

	for (uint32_t i = 0; i < JBD_MAX_TRANSACTIONS; i++) {
		jbd_transaction *t = cm_pool_obj(a, tp, i);

		if ((r = cm_mutex_init(&t->t_handle_lock, CM_RANK_T_HANDLE, "t_handle_lock")) < 0 ||
		    (r = cm_mutex_init(&t->t_jcb_lock, CM_RANK_T_JCB, "t_jcb_lock")) < 0)
			return r;
	}
	return 0;
}

int jbd_create(cm_arena *a, const jbd_geometry *g, cm_off *ret)
{
	cm_layout *l = cm_layout_get(a);
	cm_off off, coff;
	jbd_journal *j;
	uint32_t nbufs, ncopies;
	int r;

	if (!l || !atomic_load(&l->bcache) || g->last <= g->first || g->first == 0)
		return -EINVAL;
	{
		cm_bcache *c;
		cm_bcache_stats st;

		r = cm_bcache_attach(a, atomic_load(&l->bcache), &c);
		if (r < 0)
			return r;
		cm_bcache_stats_read(c, &st);
		cm_bcache_detach(c);
		if (st.block_size != g->block_size)
			return -EINVAL;
		nbufs = st.nbufs;
	}
	off = cm_arena_alloc(a, sizeof(*j), 64);
	if (!off)
		return -ENOMEM;
	j = cm_arena_ptr(a, off, sizeof(*j));
	j->version = JBD_VERSION;
	j->block_size = g->block_size;
	j->fs_blocks = g->fs_blocks;
	j->j_first = g->first;
	j->j_last = g->last;
	j->j_max_transaction_buffers = g->last / 4;
	j->data_mode = g->data_mode ? g->data_mode : JBD_DATA_ORDERED;
	j->commit_interval_ms = g->commit_interval_ms ? g->commit_interval_ms
						      : JBD_DEFAULT_COMMIT_MS;
	j->fs_sb_block = g->fs_sb_block;
	j->fs_sb_offset = g->fs_sb_offset;
	memcpy(j->uuid, g->uuid, sizeof(j->uuid));
	j->logmap = cm_arena_alloc(a, (uint64_t)g->last * sizeof(uint32_t), 64);
	j->jheads = cm_arena_alloc(a, (uint64_t)nbufs * sizeof(jbd_jh), 64);
	if (!j->logmap || !j->jheads)
		return -ENOMEM;
	memcpy(cm_arena_ptr(a, j->logmap, (uint64_t)g->last * sizeof(uint32_t)), g->logmap,
	       (uint64_t)g->last * sizeof(uint32_t));
	j->njheads = nbufs;
	/* Frozen and committed copies: at most one of each per buffer a
	 * transaction may hold, and the escape copies of one commit. */
	ncopies = j->j_max_transaction_buffers < nbufs ? j->j_max_transaction_buffers : nbufs;
	ncopies = ncopies * 2 + 64;
	if ((r = cm_pool_create(a, sizeof(jbd_transaction), JBD_MAX_TRANSACTIONS, false,
			  &j->transactions)) < 0 ||
	    (r = cm_pool_create(a, sizeof(jbd_handle), JBD_MAX_HANDLES, false, &j->handles)) < 0 ||
	    (r = cm_pool_create(a, sizeof(jbd_revoke_record), JBD_MAX_REVOKES, false,
			  &j->revokes)) < 0 ||
	    (r = cm_pool_create(a, sizeof(jbd_callback), JBD_MAX_CALLBACKS, false,
			  &j->callbacks)) < 0 ||
	    (r = cm_pool_create(a, g->block_size, ncopies, true, &coff)) < 0)
		return r;
	j->copies = coff;
	if ((r = jbd_init_transaction_locks(a, j)) < 0)
		return r;
	j->j_head = g->first;
	j->j_tail = 0;
	j->j_free = g->last - g->first;
	j->j_transaction_sequence = g->sequence;
	j->j_tail_sequence = g->sequence;
	atomic_store(&j->j_commit_sequence, g->sequence - 1);
	j->j_commit_request = g->sequence - 1;
	j->j_flags = JBD_F_FLUSHED;
	cm_event_init(&j->j_wait_transaction_locked);
	cm_event_init(&j->j_wait_updates);
	cm_event_init(&j->j_wait_done_commit);
	cm_event_init(&j->j_wait_commit);
	cm_event_init(&j->j_wait_unshadow);
	cm_event_init(&j->j_wait_space);
	j->magic = JBD_MAGIC;
	atomic_store_explicit(&l->journal, off, memory_order_release);
	*ret = off;
	return 0;
}

int jbd_attach(cm_arena *a, cm_bcache *cache, uint32_t slot, jbd_ctx **ret)
{
	cm_layout *l = cm_layout_get(a);
	cm_off off = l ? atomic_load_explicit(&l->journal, memory_order_acquire) : 0;
	jbd_journal *j;
	jbd_ctx *jc;

	if (!off)
		return -ENOENT;
	j = cm_arena_ptr(a, off, sizeof(*j));
	if (!j || j->magic != JBD_MAGIC || j->version != JBD_VERSION)
		return -EPROTO;
	jc = calloc(1, sizeof(*jc));
	if (!jc)
		return -ENOMEM;
	jc->a = a;
	jc->l = l;
	jc->ls = &l->locks;
	jc->cache = cache;
	jc->j = j;
	jc->tpool = cm_arena_ptr(a, j->transactions, sizeof(cm_pool));
	jc->hpool = cm_arena_ptr(a, j->handles, sizeof(cm_pool));
	jc->rpool = cm_arena_ptr(a, j->revokes, sizeof(cm_pool));
	jc->cbpool = cm_arena_ptr(a, j->callbacks, sizeof(cm_pool));
	jc->cpool = cm_arena_ptr(a, j->copies, sizeof(cm_pool));
	jc->jheads = cm_arena_ptr(a, j->jheads, (uint64_t)j->njheads * sizeof(jbd_jh));
	jc->logmap = cm_arena_ptr(a, j->logmap, (uint64_t)j->j_last * sizeof(uint32_t));
	jc->big = l->locks.mode == CM_LOCKING_BIG;
	jc->slot = slot;
	if (!jc->tpool || !jc->hpool || !jc->rpool || !jc->cbpool || !jc->cpool ||
	    !jc->jheads || !jc->logmap) {
		free(jc);
		return -EPROTO;
	}
	*ret = jc;
	return 0;
}

jbd_ctx *jbd_detach(jbd_ctx *jc)
{
	uint32_t spare;

	if (!jc)
		return NULL;
	spare = atomic_exchange(&jc->spare, 0);
	if (spare && atomic_load(&jc->a->hdr->state) == CM_ARENA_LIVE)
		cm_pool_put(jc->a, jc->hpool, spare - 1);
	cm_bdev_close(jc->data_bd);
	free(jc);
	return NULL;
}

/* ---- journal heads ---- */

int jbd_jh_get(jbd_ctx *jc, cm_bh *bh, jbd_jh **ret)
{
	jbd_jh *jh = jbd_jh_of(jc, bh);
	uint64_t blk = cm_bh_blocknr(bh);
	cm_mutex *m = jbd_jh_lock(jc, blk);
	int r;

	r = jbd_lock(jc, m);
	if (r < 0)
		return r;
	if (!cm_bh_jh(bh)) {
		memset(jh, 0, sizeof(*jh));
		jh->b_blocknr = blk;
		cm_bh_hold(bh);
		cm_bh_set_jh(bh, cm_arena_off(jc->a, jh));
	}
	jh->b_jcount++;
	jbd_unlock(jc, m);
	*ret = jh;
	return 0;
}

void jbd_jh_put(jbd_ctx *jc, jbd_jh *jh)
{
	cm_bh *bh = jbd_bh_of(jc, jh);
	cm_mutex *m = jbd_jh_lock(jc, jh->b_blocknr);
	bool drop = false;

	if (jbd_lock(jc, m) < 0)
		return;
	if (jh->b_jcount)
		jh->b_jcount--;
	if (!jh->b_jcount && !jh->b_transaction && !jh->b_next_transaction &&
	    !jh->b_cp_transaction && !jh->b_frozen_data && !jh->b_committed_data) {
		cm_bh_set_jh(bh, 0);
		drop = true;
	}
	jbd_unlock(jc, m);
	if (drop)
		cm_bcache_put(jc->cache, bh);
}

/* ---- buffer lists: circular, the head names the first ---- */

static uint32_t *jbd_list_head(jbd_transaction *t, enum jbd_jlist jlist)
{
	return &t->t_lists[jlist];
}

static void jbd_ring_add(jbd_ctx *jc, uint32_t *head, jbd_jh *jh, bool cp)
{
	uint32_t ji = jbd_jhidx(jc, jh);
	jbd_jh *first = jbd_jh_at(jc, *head);

	if (!first) {
		if (cp)
			jh->b_cpnext = jh->b_cpprev = ji;
		else
			jh->b_tnext = jh->b_tprev = ji;
		*head = ji;
		return;
	}
	if (cp) {
		jbd_jh *last = jbd_jh_at(jc, first->b_cpprev);
		jh->b_cpnext = *head;
		jh->b_cpprev = first->b_cpprev;
		last->b_cpnext = ji;
		first->b_cpprev = ji;
	} else {
		jbd_jh *last = jbd_jh_at(jc, first->b_tprev);
		jh->b_tnext = *head;
		jh->b_tprev = first->b_tprev;
		last->b_tnext = ji;
		first->b_tprev = ji;
	}
}

static void jbd_ring_del(jbd_ctx *jc, uint32_t *head, jbd_jh *jh, bool cp)
{
	uint32_t ji = jbd_jhidx(jc, jh);
	uint32_t next = cp ? jh->b_cpnext : jh->b_tnext;
	uint32_t prev = cp ? jh->b_cpprev : jh->b_tprev;

	if (next == ji) {
		*head = 0;
	} else {
		if (cp) {
			jbd_jh_at(jc, prev)->b_cpnext = next;
			jbd_jh_at(jc, next)->b_cpprev = prev;
		} else {
			jbd_jh_at(jc, prev)->b_tnext = next;
			jbd_jh_at(jc, next)->b_tprev = prev;
		}
		if (*head == ji)
			*head = next;
	}
	if (cp)
		jh->b_cpnext = jh->b_cpprev = 0;
	else
		jh->b_tnext = jh->b_tprev = 0;
}

void __jbd_temp_unlink(jbd_ctx *jc, jbd_jh *jh)
{
	jbd_transaction *t = jbd_t(jc, jh->b_transaction);

	if (!t || jh->b_jlist == JBD_NONE)
		return;
	if (jh->b_jlist == JBD_METADATA)
		t->t_nr_buffers--;
	jbd_ring_del(jc, jbd_list_head(t, jh->b_jlist), jh, false);
	jh->b_jlist = JBD_NONE;
}

void __jbd_file_buffer(jbd_ctx *jc, jbd_jh *jh, jbd_transaction *t, enum jbd_jlist jlist)
{
	if (jh->b_transaction && jh->b_jlist == jlist && jbd_t(jc, jh->b_transaction) == t)
		return;
	__jbd_temp_unlink(jc, jh);
	jh->b_transaction = jbd_tidx(jc, t);
	if (jlist == JBD_NONE)
		return;
	jbd_ring_add(jc, jbd_list_head(t, jlist), jh, false);
	jh->b_jlist = jlist;
	if (jlist == JBD_METADATA)
		t->t_nr_buffers++;
}

void __jbd_unfile_buffer(jbd_ctx *jc, jbd_jh *jh)
{
	__jbd_temp_unlink(jc, jh);
	jh->b_transaction = 0;
}

void __jbd_refile_buffer(jbd_ctx *jc, jbd_jh *jh)
{
	jbd_transaction *next = jbd_t(jc, jh->b_next_transaction);
	enum jbd_jlist jlist;

	if (!next) {
		__jbd_unfile_buffer(jc, jh);
		return;
	}
	if (jh->b_jflags & JBD_JF_FREED)
		jlist = JBD_FORGET;
	else if (jh->b_modified)
		jlist = JBD_METADATA;
	else
		jlist = JBD_RESERVED;
	__jbd_temp_unlink(jc, jh);
	jh->b_transaction = 0;
	jh->b_next_transaction = 0;
	__jbd_file_buffer(jc, jh, next, jlist);
}

jbd_jh *__jbd_list_first(jbd_ctx *jc, jbd_transaction *t, enum jbd_jlist jlist)
{
	return jbd_jh_at(jc, *jbd_list_head(t, jlist));
}

void __jbd_cp_insert(jbd_ctx *jc, jbd_jh *jh, jbd_transaction *t)
{
	jh->b_cp_transaction = jbd_tidx(jc, t);
	jbd_ring_add(jc, &t->t_checkpoint_list, jh, true);
}

void __jbd_cp_remove(jbd_ctx *jc, jbd_jh *jh)
{
	jbd_transaction *t = jbd_t(jc, jh->b_cp_transaction);

	if (!t)
		return;
	jbd_ring_del(jc, &t->t_checkpoint_list, jh, true);
	jh->b_cp_transaction = 0;
}

/* ---- block copies ---- */

uint32_t jbd_copy_alloc(jbd_ctx *jc)
{
	uint32_t idx = cm_pool_get(jc->a, jc->cpool);

	return idx == CM_POOL_NONE ? 0 : idx + 1;
}

void jbd_copy_free(jbd_ctx *jc, uint32_t ci)
{
	if (ci)
		cm_pool_put(jc->a, jc->cpool, ci - 1);
}

void *jbd_copy_ptr(jbd_ctx *jc, uint32_t ci)
{
	return ci ? cm_pool_obj(jc->a, jc->cpool, ci - 1) : NULL;
}

cm_off jbd_copy_off(jbd_ctx *jc, uint32_t ci)
{
	return cm_pool_off(jc->cpool, ci - 1);
}

/* ---- transactions ---- */

jbd_transaction *__jbd_new_transaction(jbd_ctx *jc)
{
	uint32_t idx = cm_pool_get_raw(jc->a, jc->tpool);
	const size_t keep = offsetof(jbd_transaction, t_tid);
	jbd_transaction *t;
	uint64_t now = cm_now_ns();

	if (idx == CM_POOL_NONE)
		return NULL;
	t = cm_pool_obj(jc->a, jc->tpool, idx);
	memset((char *)t + keep, 0, sizeof(*t) - keep);
	t->t_tid = jc->j->j_transaction_sequence++;
	atomic_store(&t->t_state, JBD_T_RUNNING);
	t->t_start_ns = now;
	t->t_expires_ns = now + (uint64_t)jc->j->commit_interval_ms * 1000000ULL;
	return t;
}

void jbd_free_transaction(jbd_ctx *jc, jbd_transaction *t)
{
	atomic_store(&t->t_state, 0);
	cm_pool_put(jc->a, jc->tpool, cm_pool_idx(jc->a, jc->tpool, t));
}
