/* bdclient.c - the blockdev-svc client over one channel; see bdclient.h. */
#include "bdclient.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct cm_bdev {
	cm_chan_client *chan;
	uint64_t sectors; /* [immutable] device size, from CM_BD_INFO */
};

int cm_bdev_submit(cm_bdev *b, cm_bd_rec *rec)
{
	return cm_chan_submit(b->chan, rec);
}

int cm_bdev_reap(cm_bdev *b, cm_bd_rec *rec)
{
	int r = cm_chan_reap(b->chan, rec, CM_BD_TIMEOUT_MS);

	return r == -ETIMEDOUT ? -EIO : r;
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
