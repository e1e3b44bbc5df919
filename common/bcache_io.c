/* bcache_io.c - the buffer cache's I/O: filling a buffer from the device
 * (one reader, the others wait and share its result), pipelined prefetch of
 * block lists, writing a dirty buffer home, sync, and write-back of dirty
 * buffers the journal does not own when the cache runs short (bcache.h).
 * Every wait here is on the blockdev ring or a LOCKED buffer, so no arena
 * lock is held across any of it. */
#include "bcache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bcache_impl.h"

/* Prefetch runs in flight on one channel: at most 16 x 32 blocks. */
#define CM_PREFETCH_RUNS 16
/* Write-back requests in flight at once, and what a read short of buffers
 * writes back before it tries again. */
#define CM_WRITEBACK_DEPTH 32
#define CM_WRITEBACK_BATCH 64

/* Called with LOCKED held: one device read or write of bh, counted. */
static int cm_bcache_io(cm_bcache *c, cm_bdev *bd, cm_bh *bh, bool write)
{
	uint32_t nsect = c->sh->block_size / CM_BD_SECTOR;
	uint64_t blocknr = cm_bh_blocknr(bh);
	int r = -ERANGE;

	struct cm_bcache_stripe *st = cm_bcache_stripe_of(c, blocknr);

	if (blocknr <= UINT64_MAX / nsect) {
		atomic_fetch_add(write ? &st->writes : &st->reads, 1);
		r = write ? cm_bdev_write(bd, blocknr * nsect, nsect, bh->b_data, 0)
			  : cm_bdev_read(bd, blocknr * nsect, nsect, bh->b_data);
	}
	if (r < 0)
		atomic_fetch_add(&st->errors, 1);
	atomic_store(&bh->b_error, r);
	return r;
}

/* Makes a referenced buffer UPTODATE: one thread reads, the others wait
 * and return its error if it failed. */
static int cm_bcache_fill(cm_bcache *c, cm_bdev *bd, cm_bh *bh)
{
	int r;

	for (;;) {
		uint32_t st = atomic_load(&bh->b_state);

		if (st & CM_BH_UPTODATE)
			return 0;
		if (cm_bh_trylock(bh))
			break;
		r = cm_bh_wait_unlocked(c, bh);
		if (r < 0)
			return r;
		/* The read we waited for failed: its error is ours. */
		st = atomic_load(&bh->b_state);
		r = atomic_load(&bh->b_error);
		if (!(st & (CM_BH_UPTODATE | CM_BH_LOCKED)) && r < 0)
			return r;
	}
	r = cm_bh_test(bh, CM_BH_UPTODATE) ? 0 : cm_bcache_io(c, bd, bh, false);
	if (r == 0)
		atomic_fetch_or(&bh->b_state, CM_BH_UPTODATE);
	cm_bh_unlock(c, bh);
	return r;
}

int cm_bcache_read(cm_bcache *c, cm_bdev *bd, uint64_t blocknr, cm_bh **ret)
{
	cm_bh *bh;
	int r;

	r = cm_bcache_getblk(c, blocknr, &bh);
	if (r == -ENOMEM && cm_bcache_writeback(c, bd, CM_WRITEBACK_BATCH) > 0)
		r = cm_bcache_getblk(c, blocknr, &bh);
	if (r < 0)
		return r;
	r = cm_bcache_fill(c, bd, bh);
	if (r < 0) {
		cm_bcache_put(c, bh);
		return r;
	}
	*ret = bh;
	return 0;
}

/* Takes a prefetched block for reading: false if it needs none or another
 * thread is reading it (the caller drops bh then). */
static bool cm_bcache_prefetch_claim(cm_bcache *c, cm_bh *bh)
{
	if (cm_bh_test(bh, CM_BH_UPTODATE) || !cm_bh_trylock(bh))
		return false;
	if (!cm_bh_test(bh, CM_BH_UPTODATE))
		return true;
	cm_bh_unlock(c, bh);
	return false;
}

/* A run of claimed buffers of consecutive blocks, read by one request. */
struct cm_prefetch_run {
	cm_bh *bh[CM_BDEV_RUN_MAX];
	uint32_t n;
};

/* Ends a run: every buffer uptodate (or its error kept), unlocked, put. */
static void cm_bcache_run_end(cm_bcache *c, struct cm_prefetch_run *run, int r)
{
	if (r < 0 && run->n)
		atomic_fetch_add(&cm_bcache_stripe_of(c, cm_bh_blocknr(run->bh[0]))->errors, 1);
	for (uint32_t i = 0; i < run->n; i++) {
		cm_bh *bh = run->bh[i];
		if (r == 0)
			atomic_fetch_or(&bh->b_state, CM_BH_UPTODATE);
		atomic_store(&bh->b_error, r);
		cm_bh_unlock(c, bh);
		cm_bcache_put(c, bh);
	}
	run->n = 0;
}

/* Gathers the next run from blocks[*next...]: consecutive block numbers,
 * each claimed; stops at a gap, a block it cannot claim, or a full run.
 * -ENOMEM when the cache is full. */
static int cm_bcache_run_gather(cm_bcache *c, const uint64_t *blocks, size_t n, size_t *next,
				struct cm_prefetch_run *run)
{
	while (*next < n && run->n < CM_BDEV_RUN_MAX) {
		cm_bh *bh;
		if (run->n && blocks[*next] != cm_bh_blocknr(run->bh[run->n - 1]) + 1)
			break;
		int r = cm_bcache_getblk(c, blocks[(*next)++], &bh);
		if (r < 0)
			return r;
		if (cm_bcache_prefetch_claim(c, bh)) {
			run->bh[run->n++] = bh;
			continue;
		}
		cm_bcache_put(c, bh);
		if (run->n)
			break;
	}
	return 0;
}

static int cm_bcache_run_start(cm_bcache *c, cm_bdev *bd, struct cm_prefetch_run *run)
{
	uint32_t nsect = c->sh->block_size / CM_BD_SECTOR;
	uint64_t first = cm_bh_blocknr(run->bh[0]);
	cm_off bufs[CM_BDEV_RUN_MAX];

	if (first > UINT64_MAX / nsect - run->n)
		return -ERANGE;
	for (uint32_t i = 0; i < run->n; i++)
		bufs[i] = run->bh[i]->b_data;
	atomic_fetch_add(&cm_bcache_stripe_of(c, first)->reads, run->n);
	return cm_bdev_submit_readv(bd, first * nsect, nsect, bufs, run->n);
}

void cm_bcache_prefetch(cm_bcache *c, cm_bdev *bd, const uint64_t *blocks, size_t n)
{
	struct cm_prefetch_run runs[CM_PREFETCH_RUNS];
	size_t next = 0, first = 0, count = 0;

	while (next < n || count > 0) {
		while (next < n && count < CM_PREFETCH_RUNS) {
			struct cm_prefetch_run *run = &runs[(first + count) % CM_PREFETCH_RUNS];
			run->n = 0;
			if (cm_bcache_run_gather(c, blocks, n, &next, run) < 0)
				next = n; /* the cache is full: read the rest one by one */
			if (run->n == 0)
				continue;
			int r = cm_bcache_run_start(c, bd, run);
			if (r < 0)
				cm_bcache_run_end(c, run, r);
			else
				count++;
		}
		if (count == 0)
			continue;
		cm_bd_rec rec;
		int r = cm_bdev_reap(bd, &rec);
		cm_bcache_run_end(c, &runs[first], r < 0 ? r : rec.hdr.status);
		first = (first + 1) % CM_PREFETCH_RUNS;
		count--;
	}
}

int cm_bcache_write(cm_bcache *c, cm_bdev *bd, cm_bh *bh)
{
	int r = cm_bh_lock(c, bh);

	if (r < 0)
		return r;
	/* Cleared before the write: a modification made meanwhile dirties it again. */
	if (atomic_fetch_and(&bh->b_state, ~(uint32_t)CM_BH_DIRTY) & CM_BH_DIRTY) {
		r = cm_bcache_io(c, bd, bh, true);
		if (r < 0)
			atomic_fetch_or(&bh->b_state, CM_BH_DIRTY);
	}
	cm_bh_unlock(c, bh);
	return r;
}

int cm_bcache_sync(cm_bcache *c, cm_bdev *bd)
{
	int first = 0, r;

	for (uint32_t i = 0; i < c->sh->nbufs; i++) {
		cm_bh *bh = &c->bhs[i];

		/* LOCKED ones too: a write in flight must end before the flush.
		 * The journal's buffers are the journal's to write. */
		if (!cm_bh_test(bh, CM_BH_DIRTY | CM_BH_LOCKED) || cm_bh_jh(bh) != 0)
			continue;
		r = cm_bcache_with_bh(c, bh, cm_bcache_ref_locked);
		if (r > 0) {
			r = cm_bcache_write(c, bd, bh);
			cm_bcache_put(c, bh);
		}
		if (r < 0 && first == 0)
			first = r;
	}
	r = cm_bdev_flush(bd);
	return first < 0 ? first : r;
}

/* Takes bh for write-back: referenced, LOCKED, DIRTY cleared. False (and
 * nothing held) if it is not a write-back candidate, is locked by another
 * thread, or the journal owns it. *r gets -EOWNERDEAD for a lost stripe. */
static bool cm_writeback_claim(cm_bcache *c, cm_bh *bh, int *r)
{
	if ((atomic_load(&bh->b_state) & (CM_BH_DIRTY | CM_BH_LOCKED)) != CM_BH_DIRTY ||
	    cm_bh_jh(bh) != 0)
		return false;
	*r = cm_bcache_with_bh(c, bh, cm_bcache_ref_locked);
	if (*r <= 0)
		return false;
	if (!cm_bh_trylock(bh)) {
		cm_bcache_put(c, bh);
		return false;
	}
	/* Again under LOCKED: a journal that takes the buffer meanwhile locks
	 * it (as JBD's get_write_access does) and so waits for this write. */
	if (cm_bh_jh(bh) == 0 &&
	    (atomic_fetch_and(&bh->b_state, ~(uint32_t)CM_BH_DIRTY) & CM_BH_DIRTY))
		return true;
	cm_bh_unlock(c, bh);
	cm_bcache_put(c, bh);
	return false;
}

/* Ends one write-back: on failure the buffer is dirty again. */
static int cm_writeback_end(cm_bcache *c, cm_bh *bh, int r)
{
	if (r < 0) {
		atomic_fetch_add(&cm_bcache_stripe_of(c, cm_bh_blocknr(bh))->errors, 1);
		atomic_fetch_or(&bh->b_state, CM_BH_DIRTY);
	}
	atomic_store(&bh->b_error, r);
	cm_bh_unlock(c, bh);
	cm_bcache_put(c, bh);
	return r;
}

int cm_bcache_writeback(cm_bcache *c, cm_bdev *bd, uint32_t max)
{
	uint32_t nsect = c->sh->block_size / CM_BD_SECTOR, n = c->sh->nbufs;
	cm_bh *flight[CM_WRITEBACK_DEPTH];
	uint32_t first = 0, count = 0, scanned = 0, written = 0;
	int err = 0, r;

	while (count > 0 || (scanned < n && written + count < max && err == 0)) {
		while (count < CM_WRITEBACK_DEPTH && scanned < n && written + count < max &&
		       err == 0) {
			cm_bh *bh = &c->bhs[atomic_fetch_add(&c->sh->wb_hand, 1) % n];
			scanned++;
			r = 0;
			if (!cm_writeback_claim(c, bh, &r)) {
				err = r < 0 ? r : 0;
				continue;
			}
			uint64_t blocknr = cm_bh_blocknr(bh);
			cm_bd_rec rec = {
				.hdr.op = CM_BD_WRITE, .sector = blocknr * nsect, .nsect = nsect,
				.data_off = bh->b_data,
			};
			r = blocknr > UINT64_MAX / nsect ? -ERANGE : cm_bdev_submit(bd, &rec);
			if (r < 0) {
				err = cm_writeback_end(c, bh, r);
				continue;
			}
			atomic_fetch_add(&cm_bcache_stripe_of(c, blocknr)->writes, 1);
			flight[(first + count++) % CM_WRITEBACK_DEPTH] = bh;
		}
		if (count == 0)
			continue;
		cm_bd_rec rec;
		r = cm_bdev_reap(bd, &rec);
		r = cm_writeback_end(c, flight[first], r < 0 ? r : rec.hdr.status);
		if (r < 0 && err == 0)
			err = r;
		else if (r == 0)
			written++;
		first = (first + 1) % CM_WRITEBACK_DEPTH;
		count--;
	}
	return err < 0 ? err : (int)written;
}
