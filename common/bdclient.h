/* bdclient.h - block I/O through blockdev-svc, for processes that map the
 * arena (services and test tools). One cm_bdev per thread. A request waits
 * through a restart of blockdev-svc (the channel resubmits it); -EIO if the
 * service stays away longer than CM_BD_TIMEOUT_MS, and then the requests
 * in flight are abandoned with their channel (all their reaps give -EIO
 * or -EINVAL) and the next ones go to a fresh channel.
 *
 * CM_BD_TIMEOUT_MS is longer than the supervisor's default watchdog
 * deadline plus a restart (a stopped blockdev-svc is replaced before it
 * runs out) and shorter than libext3d's default call deadline (a client
 * sees EIO from inode-svc before its own ETIMEDOUT). */
#ifndef CM_BDCLIENT_H
#define CM_BDCLIENT_H

#include <stdint.h>

#include "arena.h"
#include "bdrec.h"

#define CM_BD_TIMEOUT_MS 8000

typedef struct cm_bdev cm_bdev;

int cm_bdev_open(cm_arena *a, cm_bdev **ret);
cm_bdev *cm_bdev_close(cm_bdev *b);
uint64_t cm_bdev_sectors(const cm_bdev *b);
int cm_bdev_read(cm_bdev *b, uint64_t sector, uint32_t nsect, cm_off buf);
int cm_bdev_write(cm_bdev *b, uint64_t sector, uint32_t nsect, cm_off buf, uint32_t flags);
int cm_bdev_flush(cm_bdev *b);
/* Pipelined use: submit up to CM_CHAN_DEPTH requests, reap them in order.
 * The reaped record's hdr.status is the request's result. */
int cm_bdev_submit(cm_bdev *b, cm_bd_rec *rec);
int cm_bdev_reap(cm_bdev *b, cm_bd_rec *rec);
cm_chan_client *cm_bdev_chan(cm_bdev *b);
/* Pipelined scatter read (CM_BD_READV) of n <= CM_BDEV_RUN_MAX buffers of
 * sect_per_buf sectors each, from sector on; reap it with cm_bdev_reap().
 * The offset tables (one per request in flight) live in the channel's
 * scratch space, which outlives this cm_bdev. */
#define CM_BDEV_RUN_MAX 32
int cm_bdev_submit_readv(cm_bdev *b, uint64_t sector, uint32_t sect_per_buf,
			 const cm_off *bufs, uint32_t n);
/* The same for a gathering write (CM_BD_WRITEV); flags: CM_BD_FUA. */
int cm_bdev_submit_writev(cm_bdev *b, uint64_t sector, uint32_t sect_per_buf,
			  const cm_off *bufs, uint32_t n, uint32_t flags);

#endif
