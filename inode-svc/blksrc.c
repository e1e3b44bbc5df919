/* blksrc.c - the filesystem core's block source: blocks come from the
 * shared buffer cache, which reads them through blockdev-svc on a channel
 * of the calling thread's own (a channel is single-threaded). The cache is
 * made by the first service to need it and published in the layout.
 * A lane worker that ends gives its blockdev client (channel and scratch
 * tables) to a small pool that the next session's workers take from, so
 * attaching does not open channels or ask blockdev-svc for the device
 * size again. Locks: pool_mtx (process-private, a leaf). */
#include <errno.h>

#include "internal.h"
#include "log.h"

#define INO_BDEV_POOL 16

static _Thread_local cm_bdev *ino_tl_bdev;
static pthread_mutex_t ino_pool_mtx = PTHREAD_MUTEX_INITIALIZER;
static cm_bdev *ino_pool[INO_BDEV_POOL]; /* [ino_pool_mtx] idle clients */
static unsigned ino_pool_n;              /* [ino_pool_mtx] */

cm_bdev *ino_thread_bdev(ino_svc *s)
{
	if (ino_tl_bdev)
		return ino_tl_bdev;
	pthread_mutex_lock(&ino_pool_mtx);
	if (ino_pool_n)
		ino_tl_bdev = ino_pool[--ino_pool_n];
	pthread_mutex_unlock(&ino_pool_mtx);
	if (!ino_tl_bdev && cm_bdev_open(s->svc.arena, &ino_tl_bdev) < 0)
		ino_tl_bdev = NULL;
	return ino_tl_bdev;
}

/* Pools the thread's client if it is idle (nothing in flight after a
 * failed reap) and the pool has room, else closes it. */
void ino_thread_bdev_close(void)
{
	cm_bdev *b = ino_tl_bdev;

	ino_tl_bdev = NULL;
	if (!b)
		return;
	if (cm_chan_inflight(cm_bdev_chan(b)) == 0) {
		pthread_mutex_lock(&ino_pool_mtx);
		if (ino_pool_n < INO_BDEV_POOL) {
			ino_pool[ino_pool_n++] = b;
			b = NULL;
		}
		pthread_mutex_unlock(&ino_pool_mtx);
	}
	cm_bdev_close(b);
}

static const void *ino_blk_get(void *ctx, uint64_t blocknr, void **cookie, int *err)
{
	ino_svc *s = ctx;
	cm_bdev *bd = ino_thread_bdev(s);
	cm_bh *bh;
	int r;

	if (!bd) {
		*err = -EIO;
		return NULL;
	}
	r = cm_bcache_read(s->cache, bd, blocknr, &bh);
	if (r < 0) {
		*err = r;
		return NULL;
	}
	*cookie = bh;
	return cm_bh_data(s->cache, bh);
}

static void ino_blk_prefetch(void *ctx, const uint64_t *blocks, size_t n)
{
	ino_svc *s = ctx;
	cm_bdev *bd = ino_thread_bdev(s);

	if (bd)
		cm_bcache_prefetch(s->cache, bd, blocks, n);
}

static void ino_blk_put(void *ctx, void *cookie)
{
	ino_svc *s = ctx;

	cm_bcache_put(s->cache, cookie);
}

/* The block size, read from the superblock with a direct device read:
 * the cache needs it before the filesystem can be mounted through it. */
static int ino_read_block_size(ino_svc *s, uint32_t *ret)
{
	cm_bdev *bd = ino_thread_bdev(s);
	cm_off buf = cm_arena_alloc_data(s->svc.arena, 1024, 4096);
	int r;

	if (!bd || !buf)
		return -ENOMEM;
	r = cm_bdev_read(bd, 2, 2, buf);
	if (r < 0)
		return r;
	return ino_probe_block_size(cm_arena_ptr(s->svc.arena, buf, 1024), ret);
}

int ino_blksrc_start(ino_svc *s)
{
	uint64_t dev_bytes;
	uint32_t bs;
	char why[160];
	int r;

	r = ino_read_block_size(s, &bs);
	if (r < 0)
		return cm_log_errno(r, "no ext3 superblock on the device: %m");
	r = cm_bcache_open_shared(s->svc.arena, s->cache_bytes, bs, &s->cache);
	if (r < 0)
		return cm_log_errno(r, "buffer cache of %llu bytes: %m",
				    (unsigned long long)s->cache_bytes);
	dev_bytes = cm_bdev_sectors(ino_thread_bdev(s)) * CM_BD_SECTOR;
	ino_blksrc src = {.get = ino_blk_get, .put = ino_blk_put, .prefetch = ino_blk_prefetch,
			  .ctx = s, .block_size = bs};
	r = ino_fs_mount(&src, dev_bytes, &s->fs, why, sizeof(why));
	if (r < 0)
		return cm_log_errno(r, "cannot serve this image: %s", why);
	return 0;
}
