/* bwq.h - the home-write queue: buffers written home in runs.
 *
 * A writer that has many buffers to send home (ordered data at commit,
 * metadata at checkpoint) hands them to a cm_bwq one by one. Buffers of
 * consecutive blocks, in the order given, are gathered into one run, up
 * to CM_BDEV_RUN_MAX buffers, and a run goes to blockdev-svc as one
 * gathering write (CM_BD_WRITEV; a run of one as CM_BD_WRITE). Up to
 * CM_BWQ_DEPTH runs are in flight at once on the queue's channel. So a
 * 256 MiB sequential file goes home in 2048 requests of 128 KiB, not
 * 65536 round trips of one block.
 *
 * The caller holds a reference to each buffer it adds, and its LOCKED bit
 * with DIRTY already cleared (it found the buffer dirty under LOCKED).
 * When its run is reaped the queue sets DIRTY again if the write failed,
 * unlocks the buffer, and calls done (if not NULL) with the tag given at
 * cm_bwq_add and the result; the reference is still the caller's, to drop
 * in done or later. A thread holding LOCKED bits never waits for another
 * buffer's, so the caller may take further buffers' LOCKED bits while
 * runs are in flight (docs/locking.md).
 *
 * The channel bd must have nothing else in flight while the queue is in
 * use. Not shared between threads.
 */
#ifndef CM_BWQ_H
#define CM_BWQ_H

#include "bcache.h"

#define CM_BWQ_DEPTH 8 /* runs in flight: 1 MiB of 4 KiB blocks */

typedef void cm_bwq_done_fn(void *ctx, cm_bh *bh, void *tag, int r);

struct cm_bwq_run {
	uint64_t first; /* block of bh[0] */
	uint32_t n;
	cm_bh *bh[CM_BDEV_RUN_MAX];
	void *tag[CM_BDEV_RUN_MAX];
};

typedef struct cm_bwq {
	cm_bcache *c;
	cm_bdev *bd;
	cm_bwq_done_fn *done;
	void *ctx;
	/* runs[head..head + inflight) are in flight, oldest first; the one
	 * after them is open, gathering. */
	struct cm_bwq_run runs[CM_BWQ_DEPTH + 1];
	uint32_t head, inflight;
	uint32_t requests; /* requests sent, for tests and statistics */
	int err;           /* the first error */
} cm_bwq;

void cm_bwq_init(cm_bwq *q, cm_bcache *c, cm_bdev *bd, cm_bwq_done_fn *done, void *ctx);
/* Queues bh (LOCKED, DIRTY cleared, referenced) to be written home. */
void cm_bwq_add(cm_bwq *q, cm_bh *bh, void *tag);
/* Sends the open run now, without waiting for it. */
void cm_bwq_kick(cm_bwq *q);
/* Sends the open run and waits for every run in flight. Returns the first
 * error of any write since cm_bwq_init, or 0. */
int cm_bwq_finish(cm_bwq *q);

#endif
