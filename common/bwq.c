/* bwq.c - the home-write queue: consecutive buffers gathered into runs,
 * each one gathering write, pipelined on one channel; see bwq.h. */
#include "bwq.h"

#include <errno.h>

#include "bcache_impl.h"

void cm_bwq_init(cm_bwq *q, cm_bcache *c, cm_bdev *bd, cm_bwq_done_fn *done, void *ctx)
{
	*q = (cm_bwq){.c = c, .bd = bd, .done = done, .ctx = ctx};
}

static struct cm_bwq_run *cm_bwq_at(cm_bwq *q, uint32_t i)
{
	return &q->runs[(q->head + i) % (CM_BWQ_DEPTH + 1)];
}

/* Ends every write of run with result r and empties it. */
static void cm_bwq_end(cm_bwq *q, struct cm_bwq_run *run, int r)
{
	if (r < 0) {
		atomic_fetch_add(&cm_bcache_stripe_of(q->c, run->first)->errors, 1);
		if (q->err == 0)
			q->err = r;
	}
	for (uint32_t i = 0; i < run->n; i++) {
		cm_bh *bh = run->bh[i];

		if (r < 0)
			atomic_fetch_or(&bh->b_state, CM_BH_DIRTY);
		atomic_store(&bh->b_error, r);
		cm_bh_unlock(q->c, bh);
		if (q->done)
			q->done(q->ctx, bh, run->tag[i], r);
	}
	run->n = 0;
}

static void cm_bwq_reap(cm_bwq *q)
{
	struct cm_bwq_run *run = cm_bwq_at(q, 0);
	cm_bd_rec rec;
	int r = cm_bdev_reap(q->bd, &rec);

	q->head = (q->head + 1) % (CM_BWQ_DEPTH + 1);
	q->inflight--;
	cm_bwq_end(q, run, r < 0 ? r : rec.hdr.status);
}

/* Sends the open run, first making room for it. Reaping moves head on by
 * one and inflight back by one, so the open run's slot stays where it is. */
static void cm_bwq_send(cm_bwq *q)
{
	struct cm_bwq_run *run = cm_bwq_at(q, q->inflight);
	uint32_t spb = q->c->sh->block_size / CM_BD_SECTOR;
	cm_off bufs[CM_BDEV_RUN_MAX];
	int r;

	if (run->n == 0)
		return;
	if (q->inflight == CM_BWQ_DEPTH)
		cm_bwq_reap(q);
	for (uint32_t i = 0; i < run->n; i++)
		bufs[i] = run->bh[i]->b_data;
	for (;;) {
		if (run->first > UINT64_MAX / spb) {
			r = -ERANGE;
		} else if (run->n == 1) {
			cm_bd_rec rec = {
				.hdr.op = CM_BD_WRITE, .sector = run->first * spb, .nsect = spb,
				.data_off = bufs[0],
			};
			r = cm_bdev_submit(q->bd, &rec);
		} else {
			r = cm_bdev_submit_writev(q->bd, run->first * spb, spb, bufs, run->n, 0);
		}
		if (r != -EAGAIN || q->inflight == 0)
			break;
		/* The ring is full: reap the oldest run. */
		cm_bwq_reap(q);
	}
	if (r < 0) {
		cm_bwq_end(q, run, r);
		return;
	}
	atomic_fetch_add(&cm_bcache_stripe_of(q->c, run->first)->writes, 1);
	q->requests++;
	q->inflight++;
}

void cm_bwq_add(cm_bwq *q, cm_bh *bh, void *tag)
{
	struct cm_bwq_run *run = cm_bwq_at(q, q->inflight);
	uint64_t blocknr = cm_bh_blocknr(bh);

	if (run->n && (run->n == CM_BDEV_RUN_MAX || blocknr != run->first + run->n)) {
		cm_bwq_send(q);
		run = cm_bwq_at(q, q->inflight);
	}
	if (run->n == 0)
		run->first = blocknr;
	run->bh[run->n] = bh;
	run->tag[run->n++] = tag;
}

void cm_bwq_kick(cm_bwq *q)
{
	cm_bwq_send(q);
}

int cm_bwq_finish(cm_bwq *q)
{
	cm_bwq_send(q);
	while (q->inflight)
		cm_bwq_reap(q);
	return q->err;
}
