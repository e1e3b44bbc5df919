/* bdclient.c - the blockdev-svc client over one channel; see bdclient.h.
 * The offset tables of scatter reads and gathering writes live in the
 * channel's scratch space, which the channel keeps for its next client:
 * opening and closing clients never grows the arena. */
#include "bdclient.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(CM_BDEV_RUN_MAX * sizeof(cm_off) * CM_CHAN_DEPTH <= CM_CHAN_SCRATCH,
	       "a table per request in flight fits the channel's scratch");

struct cm_bdev {
	cm_arena *arena;
	cm_chan_client *chan;
	uint64_t sectors; /* [immutable] device size, from CM_BD_INFO */
	cm_off tables;    /* CM_CHAN_DEPTH offset tables for CM_BD_READV in the
			   * channel's scratch, 0 until used */
	uint32_t next_table;
};

int cm_bdev_submit(cm_bdev *b, cm_bd_rec *rec)
{
	return cm_chan_submit(b->chan, rec);
}

/* blockdev-svc did not answer in time: the requests in flight are
 * abandoned with their channel (a late answer must not be taken for the
 * next request's) and a fresh channel serves the next ones. */
static int cm_bdev_abandon(cm_bdev *b)
{
	cm_layout *l = b->arena ? cm_layout_get(b->arena) : NULL;
	int slot = l ? cm_layout_find_svc(l, "blockdev-svc") : -ENOENT;
	cm_chan_client *cc;

	if (slot >= 0 && cm_chan_open(b->arena, (uint32_t)slot, CM_BD_VERSION, &cc) == 0) {
		cm_chan_close(b->chan);
		b->chan = cc;
	}
	return -EIO;
}

int cm_bdev_reap(cm_bdev *b, cm_bd_rec *rec)
{
	int r = cm_chan_reap(b->chan, rec, CM_BD_TIMEOUT_MS);

	return r == -ETIMEDOUT ? cm_bdev_abandon(b) : r;
}

static int cm_bdev_call(cm_bdev *b, cm_bd_rec *rec)
{
	int r = cm_bdev_submit(b, rec);

	if (r == 0)
		r = cm_bdev_reap(b, rec);
	return r < 0 ? r : rec->hdr.status;
}

int cm_bdev_open(cm_arena *a, cm_bdev **ret)
{
	cm_layout *l = cm_layout_get(a);
	cm_bd_rec rec = {.hdr.op = CM_BD_INFO};
	cm_bdev *b;
	int slot, r;

	if (!l)
		return -EPROTO;
	slot = cm_layout_find_svc(l, "blockdev-svc");
	if (slot < 0)
		return slot;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	r = cm_chan_open(a, (uint32_t)slot, CM_BD_VERSION, &b->chan);
	if (r == 0)
		r = cm_bdev_call(b, &rec);
	if (r < 0) {
		cm_bdev_close(b);
		return r;
	}
	b->sectors = rec.dev_sectors;
	b->arena = a;
	*ret = b;
	return 0;
}

cm_bdev *cm_bdev_close(cm_bdev *b)
{
	if (!b)
		return NULL;
	cm_chan_close(b->chan);
	free(b);
	return NULL;
}

uint64_t cm_bdev_sectors(const cm_bdev *b)
{
	return b->sectors;
}

cm_chan_client *cm_bdev_chan(cm_bdev *b)
{
	return b->chan;
}

static int cm_bdev_io(cm_bdev *b, enum cm_bd_op op, uint64_t sector, uint32_t nsect,
		      cm_off buf, uint32_t flags)
{
	cm_bd_rec rec = {
		.hdr.op = (uint16_t)op, .sector = sector, .nsect = nsect,
		.data_off = buf, .flags = flags,
	};

	return cm_bdev_call(b, &rec);
}

int cm_bdev_read(cm_bdev *b, uint64_t sector, uint32_t nsect, cm_off buf)
{
	return cm_bdev_io(b, CM_BD_READ, sector, nsect, buf, 0);
}

int cm_bdev_write(cm_bdev *b, uint64_t sector, uint32_t nsect, cm_off buf, uint32_t flags)
{
	return cm_bdev_io(b, CM_BD_WRITE, sector, nsect, buf, flags);
}

int cm_bdev_flush(cm_bdev *b)
{
	return cm_bdev_io(b, CM_BD_FLUSH, 0, 0, 0, 0);
}

/* A scatter read or gathering write: the table of buffer offsets goes in
 * the channel's scratch space. */
static int cm_bdev_submit_vec(cm_bdev *b, enum cm_bd_op op, uint64_t sector,
			      uint32_t sect_per_buf, const cm_off *bufs, uint32_t n, uint32_t flags)
{
	const uint64_t table_bytes = CM_BDEV_RUN_MAX * sizeof(cm_off);
	cm_bd_rec rec = {
		.hdr.op = (uint16_t)op, .sector = sector, .chunk = sect_per_buf, .flags = flags,
	};
	cm_off *table;

	if (n == 0 || n > CM_BDEV_RUN_MAX)
		return -EINVAL;
	if (!b->tables) {
		b->tables = cm_chan_scratch(b->chan);
		if (!b->tables)
			return -ENOMEM;
	}
	/* At most CM_CHAN_DEPTH requests are in flight, reaped in order: the
	 * table used CM_CHAN_DEPTH submissions ago is free again. */
	rec.data_off = b->tables + table_bytes * b->next_table;
	b->next_table = (b->next_table + 1) % CM_CHAN_DEPTH;
	table = cm_arena_ptr(b->arena, rec.data_off, table_bytes);
	memcpy(table, bufs, n * sizeof(cm_off));
	rec.nsect = sect_per_buf * n;
	return cm_chan_submit(b->chan, &rec);
}

int cm_bdev_submit_readv(cm_bdev *b, uint64_t sector, uint32_t sect_per_buf,
			 const cm_off *bufs, uint32_t n)
{
	return cm_bdev_submit_vec(b, CM_BD_READV, sector, sect_per_buf, bufs, n, 0);
}

int cm_bdev_submit_writev(cm_bdev *b, uint64_t sector, uint32_t sect_per_buf,
			  const cm_off *bufs, uint32_t n, uint32_t flags)
{
	return cm_bdev_submit_vec(b, CM_BD_WRITEV, sector, sect_per_buf, bufs, n, flags);
}
