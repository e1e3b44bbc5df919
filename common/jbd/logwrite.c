/*
 * logwrite.c - FLUSH -> COMMIT (jbd_commit_write_log, commit.h): the
 * journal superblock first if the log was empty on disk, ordered data
 * home, revoke blocks, descriptor blocks of 8-byte JBD2 tags (the UUID
 * after each descriptor's first, SAME_UUID on the rest, LAST_TAG on the
 * last), and the logged blocks: the frozen copy where the running
 * transaction took the buffer over, an escaped copy where it begins with
 * the journal magic. Pipelined on one blockdev channel; the flush after
 * them is the commit block's (commit.c). No journal lock is held while
 * waiting for I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bwq.h"
#include "byteorder.h"
#include "commit.h"
#include "jbd2_disk.h"
#include "runtime.h"

#define JBD_TAG_BYTES 8 /* JBD2 tag without 64BIT or checksums */

/* Writes in flight, reaped in submission order. */
typedef struct jbd_inflight {
	jbd_jh *jh;   /* a logged buffer on JBD_SHADOW until written, or NULL */
	uint32_t ci;  /* a copy to free once written (descriptor, revoke, escape) */
} jbd_inflight;

typedef struct jbd_logw {
	jbd_ctx *jc;
	cm_bdev *bd;
	jbd_transaction *t;
	jbd_inflight q[CM_CHAN_DEPTH];
	uint32_t qhead, qlen;
	int err;             /* the first error */
	uint32_t desc;       /* open descriptor block: copy index + 1, or 0 */
	uint32_t desc_lblk;  /* its log block */
	uint32_t desc_off;   /* where its next tag goes */
	uint32_t last_tag;   /* offset of its last tag */
	uint64_t *revokes;   /* blocks the committing transaction revoked */
	size_t nrevokes, maxrevokes;
	cm_bwq ordered;      /* ordered data going home, on its own channel */
} jbd_logw;

/* A logged buffer is written: SHADOW -> FORGET, and the running
 * transaction's writers waiting for it go on. */
static void jbd_unshadow(jbd_logw *w, jbd_jh *jh)
{
	jbd_ctx *jc = w->jc;
	uint64_t blk = jh->b_blocknr;

	if (jbd_enter(jc) == 0) {
		if (jbd_lock(jc, jbd_bh_state(jc, blk)) == 0) {
			if (jbd_lock(jc, jbd_list_lock(jc)) == 0) {
				__jbd_file_buffer(jc, jh, w->t, JBD_FORGET);
				jbd_unlock(jc, jbd_list_lock(jc));
			}
			jbd_unlock(jc, jbd_bh_state(jc, blk));
		}
		jbd_jh_put(jc, jh);
		jbd_leave(jc);
	}
	cm_event_signal(&jc->j->j_wait_unshadow);
}

static void jbd_logw_done(jbd_logw *w, jbd_inflight it, int r)
{
	if (r < 0 && !w->err)
		w->err = r;
	jbd_copy_free(w->jc, it.ci);
	if (it.jh)
		jbd_unshadow(w, it.jh);
}

static void jbd_logw_reap(jbd_logw *w)
{
	cm_bd_rec rec;
	jbd_inflight it = w->q[w->qhead];
	int r = cm_bdev_reap(w->bd, &rec);

	w->qhead = (w->qhead + 1) % CM_CHAN_DEPTH;
	w->qlen--;
	jbd_logw_done(w, it, r < 0 ? r : rec.hdr.status);
}

static void jbd_logw_drain(jbd_logw *w)
{
	while (w->qlen)
		jbd_logw_reap(w);
}

/* Queues the write of data to log block lblk; its jh and ci are finished
 * when it is reaped (at once if it could not be queued). */
static void jbd_logw_submit(jbd_logw *w, uint32_t lblk, cm_off data, jbd_jh *jh, uint32_t ci)
{
	uint32_t spb = w->jc->j->block_size / CM_BD_SECTOR;
	jbd_inflight it = {.jh = jh, .ci = ci};
	int r = -EIO;

	for (;;) {
		cm_bd_rec rec = {
			.hdr.op = CM_BD_WRITE, .sector = (uint64_t)w->jc->logmap[lblk] * spb,
			.nsect = spb, .data_off = data,
		};

		if (w->qlen < CM_CHAN_DEPTH && (r = cm_bdev_submit(w->bd, &rec)) != -EAGAIN)
			break;
		if (!w->qlen)
			break;
		jbd_logw_reap(w);
	}
	if (r < 0) {
		jbd_logw_done(w, it, r);
		return;
	}
	w->q[(w->qhead + w->qlen) % CM_CHAN_DEPTH] = it;
	w->qlen++;
}

/* A block copy for the log; when none is free, the writes in flight give
 * theirs back first. */
static uint32_t jbd_logw_copy(jbd_logw *w)
{
	uint32_t ci = jbd_copy_alloc(w->jc);

	if (!ci) {
		jbd_logw_drain(w);
		ci = jbd_copy_alloc(w->jc);
	}
	if (ci)
		memset(jbd_copy_ptr(w->jc, ci), 0, w->jc->j->block_size);
	else if (!w->err)
		w->err = -ENOMEM;
	return ci;
}

static int jbd_collect_revoke(void *ctx, uint64_t blocknr)
{
	jbd_logw *w = ctx;

	if (w->nrevokes == w->maxrevokes) {
		size_t n = w->maxrevokes ? w->maxrevokes * 2 : 256;
		uint64_t *v = realloc(w->revokes, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->revokes = v;
		w->maxrevokes = n;
	}
	w->revokes[w->nrevokes++] = blocknr;
	return 0;
}

/* Revoke blocks, before the descriptors (as JBD): 4-byte records. */
static int jbd_write_revokes(jbd_logw *w)
{
	jbd_ctx *jc = w->jc;
	uint32_t per = (jc->j->block_size - 16) / 4, lblk;
	int r = jbd_enter(jc);

	if (r < 0)
		return r;
	r = jbd_drain_revokes(jc, jbd_collect_revoke, w);
	jbd_leave(jc);

	for (size_t i = 0; r == 0 && i < w->nrevokes; i += per) {
		uint32_t n = w->nrevokes - i < per ? (uint32_t)(w->nrevokes - i) : per;
		uint32_t ci = jbd_logw_copy(w);
		jbd2_journal_revoke_header_t *rh;

		if (!ci || (r = jbd_next_log_block(jc, &lblk)) < 0) {
			jbd_copy_free(jc, ci);
			return ci ? r : -ENOMEM;
		}
		rh = jbd_copy_ptr(jc, ci);
		jbd_header(rh, JBD2_REVOKE_BLOCK, w->t->t_tid);
		cm_set_be32(&rh->r_count, 16 + 4 * n);
		for (uint32_t k = 0; k < n; k++)
			cm_set_be32((cm_be32_t *)((char *)rh + 16) + k, (uint32_t)w->revokes[i + k]);
		jbd_logw_submit(w, lblk, jbd_copy_off(jc, ci), NULL, ci);
	}
	atomic_fetch_add(&jc->j->stats.revokes, w->nrevokes);
	return r;
}

static void jbd_close_descriptor(jbd_logw *w)
{
	journal_block_tag_t *tag;

	if (!w->desc)
		return;
	tag = (void *)((char *)jbd_copy_ptr(w->jc, w->desc) + w->last_tag);
	cm_set_be16(&tag->t_flags, cm_be16(tag->t_flags) | JBD2_FLAG_LAST_TAG);
	jbd_logw_submit(w, w->desc_lblk, jbd_copy_off(w->jc, w->desc), NULL, w->desc);
	w->desc = 0;
}

/* Logs one buffer, now on SHADOW (data is what to log, stable until the
 * write is reaped): a tag in the open descriptor (opened if needed), then
 * the block, escaped into a copy if it begins with the magic. */
static int jbd_log_buffer(jbd_logw *w, jbd_jh *jh, cm_off data)
{
	jbd_ctx *jc = w->jc;
	uint32_t bs = jc->j->block_size, esc = 0, lblk;
	void *src = cm_arena_ptr(jc->a, data, bs);
	uint16_t flags = 0;
	journal_block_tag_t *tag;
	int r;

	if (cm_be32(*(cm_be32_t *)src) == JBD2_MAGIC_NUMBER) {
		if (!(esc = jbd_logw_copy(w)))
			return -ENOMEM;
		memcpy(jbd_copy_ptr(jc, esc), src, bs);
		memset(jbd_copy_ptr(jc, esc), 0, 4);
		data = jbd_copy_off(jc, esc);
		flags |= JBD2_FLAG_ESCAPE;
		atomic_fetch_add(&jc->j->stats.escaped, 1);
	}
	if (!w->desc) {
		if (!(w->desc = jbd_logw_copy(w)) || (r = jbd_next_log_block(jc, &w->desc_lblk)) < 0) {
			jbd_copy_free(jc, w->desc);
			jbd_copy_free(jc, esc);
			r = w->desc ? r : -ENOMEM;
			w->desc = 0;
			return r;
		}
		jbd_header(jbd_copy_ptr(jc, w->desc), JBD2_DESCRIPTOR_BLOCK, w->t->t_tid);
		w->desc_off = sizeof(journal_header_t);
	} else {
		flags |= JBD2_FLAG_SAME_UUID;
	}
	if ((r = jbd_next_log_block(jc, &lblk)) < 0) {
		jbd_copy_free(jc, esc);
		return r;
	}
	tag = (void *)((char *)jbd_copy_ptr(jc, w->desc) + w->desc_off);
	cm_set_be32(&tag->t_blocknr, (uint32_t)jh->b_blocknr);
	cm_set_be16(&tag->t_flags, flags);
	w->last_tag = w->desc_off;
	w->desc_off += JBD_TAG_BYTES;
	if (!(flags & JBD2_FLAG_SAME_UUID)) {
		memcpy((char *)tag + JBD_TAG_BYTES, jc->j->uuid, 16);
		w->desc_off += 16;
	}
	jbd_logw_submit(w, lblk, data, jh, esc);
	if (bs - w->desc_off < JBD_TAG_BYTES + 16)
		jbd_close_descriptor(w);
	atomic_fetch_add(&jc->j->stats.blocks, 1);
	return 0;
}

/* An ordered data buffer is home (or failed): the journal head taken for
 * its write is given back. */
static void jbd_ordered_done(void *ctx, cm_bh *bh, void *tag, int r)
{
	jbd_ctx *jc = ctx;

	(void)bh;
	(void)r;
	if (jbd_enter(jc) == 0) {
		jbd_jh_put(jc, tag);
		jbd_leave(jc);
	}
}

/* Ordered data: sent home through q (bwq.h) in list order (a file
 * written front to back is listed so), neighbours in one write; each is
 * LOCKED until its write is reaped. The caller waits for q before the
 * commit block, which flushes it (jbd_write_commit_block): durable before
 * the commit is, as JBD2 orders it; the log writes go meanwhile. Taking
 * journal locks for the next while holding LOCKED bits is safe: no thread
 * waits for a LOCKED buffer while holding a journal lock
 * (docs/locking.md). */
static int jbd_write_ordered(jbd_ctx *jc, cm_bwq *q, jbd_transaction *t)
{
	bool entered = true;
	jbd_jh *jh;
	int r, first = 0;

	if ((r = jbd_enter(jc)) < 0)
		return r;
	while ((jh = jbd_lock_first(jc, t, JBD_SYNCDATA, &r))) {
		uint64_t blk = jh->b_blocknr;
		jbd_transaction *next = jbd_t(jc, jh->b_next_transaction);
		cm_bh *bh = jbd_bh_of(jc, jh);
		jbd_jh *held;

		if ((r = jbd_jh_get(jc, bh, &held)) < 0) {
			jbd_unlock_jh(jc, blk);
			break;
		}
		__jbd_unfile_buffer(jc, jh);
		if (next) {
			jh->b_next_transaction = 0;
			__jbd_file_buffer(jc, jh, next, JBD_SYNCDATA);
		}
		jbd_unlock_jh(jc, blk);
		jbd_leave(jc);
		entered = false;
		/* Cleared under LOCKED: a modification made meanwhile dirties it again. */
		if ((r = cm_bh_lock(jc->cache, bh)) < 0) {
			first = first ? first : r;
			jbd_ordered_done(jc, bh, jh, r);
		} else if (atomic_fetch_and(&bh->b_state, ~(uint32_t)CM_BH_DIRTY) & CM_BH_DIRTY) {
			cm_bwq_add(q, bh, jh);
		} else {
			cm_bh_unlock(jc->cache, bh);
			jbd_ordered_done(jc, bh, jh, 0);
		}
		if ((r = jbd_enter(jc)) < 0)
			break;
		entered = true;
	}
	if (entered)
		jbd_leave(jc);
	cm_bwq_kick(q);
	return first < 0 ? first : r;
}

/* The channel ordered data goes home on: its own, so that its writes are
 * in flight beside the log's (each channel is reaped in order), or the
 * log's if no second channel can be had. */
static cm_bdev *jbd_data_channel(jbd_ctx *jc, cm_bdev *bd)
{
	if (!jc->data_bd && cm_bdev_open(jc->a, &jc->data_bd) < 0)
		jc->data_bd = NULL;
	return jc->data_bd ? jc->data_bd : bd;
}

/* Logs every buffer on t's METADATA list; returns holding nothing. */
static int jbd_write_metadata(jbd_logw *w)
{
	jbd_ctx *jc = w->jc;
	jbd_jh *jh, *held;
	int r;

	while (!w->err) {
		uint64_t blk;
		cm_bh *bh;
		cm_off data;

		if ((r = jbd_enter(jc)) < 0)
			return r;
		if (!(jh = jbd_lock_first(jc, w->t, JBD_METADATA, &r))) {
			jbd_leave(jc);
			return r;
		}
		blk = jh->b_blocknr;
		bh = jbd_bh_of(jc, jh);
		if ((r = jbd_jh_get(jc, bh, &held)) < 0) {
			jbd_unlock_jh(jc, blk);
			jbd_leave(jc);
			return r;
		}
		/* While on SHADOW nobody changes the live buffer (write access
		 * waits), and a frozen copy made before is what commits. */
		data = jh->b_frozen_data ? jbd_copy_off(jc, jh->b_frozen_data) : bh->b_data;
		__jbd_file_buffer(jc, jh, w->t, JBD_SHADOW);
		jbd_unlock_jh(jc, blk);
		jbd_leave(jc);
		if ((r = jbd_log_buffer(w, jh, data)) < 0) {
			jbd_unshadow(w, jh);
			return r;
		}
	}
	return w->err;
}

int jbd_commit_write_log(jbd_ctx *jc, cm_bdev *bd, jbd_transaction *t)
{
	jbd_journal *j = jc->j;
	jbd_logw *w = calloc(1, sizeof(*w));
	bool flushed;
	int r;

	if (!w)
		return -ENOMEM;
	w->jc = jc;
	w->bd = bd;
	w->t = t;
	if ((r = jbd_state_enter(jc)) < 0)
		goto out;
	flushed = j->j_flags & JBD_F_FLUSHED;
	jbd_state_leave(jc);
	/* The log was empty on disk: s_start must name this transaction
	 * before its first block is written. */
	if (flushed) {
		if ((r = jbd_jsb_write(jc, bd, t->t_log_start, t->t_tid)) < 0 ||
		    (r = jbd_state_enter(jc)) < 0)
			goto out;
		j->j_flags &= ~(uint32_t)JBD_F_FLUSHED;
		jbd_state_leave(jc);
	}
	cm_bwq_init(&w->ordered, jc->cache, jbd_data_channel(jc, bd), jbd_ordered_done, jc);
	if ((r = jbd_write_ordered(jc, &w->ordered, t)) < 0)
		goto out;
	/* On the log's own channel the ordered writes must be reaped first. */
	if (w->ordered.bd == bd && (r = cm_bwq_finish(&w->ordered)) < 0)
		goto out;
	if ((r = jbd_write_revokes(w)) < 0)
		goto out;
	r = jbd_write_metadata(w);
	if (r == 0 && !w->err)
		jbd_close_descriptor(w);
	jbd_copy_free(jc, w->desc);
	w->desc = 0;
	jbd_logw_drain(w);
	if (r == 0)
		r = w->err;
	if (r == 0)
		r = cm_bwq_finish(&w->ordered);
	/* The flush that makes all of it durable before the commit block is
	 * the commit block's own (CM_BD_PREFLUSH, jbd_write_commit_block). */
	if (r == 0 && (r = jbd_state_enter(jc)) == 0) {
		atomic_store(&t->t_state, JBD_T_COMMIT);
		JBD_CHECK_LOCKED(jc, t);
		jbd_state_leave(jc);
	}
out:
	jbd_logw_drain(w);
	cm_bwq_finish(&w->ordered);
	free(w->revokes);
	free(w);
	if (r < 0 && r != -EOWNERDEAD) {
		jbd_abort(jc, r);
		return -EIO;
	}
	return r;
}
