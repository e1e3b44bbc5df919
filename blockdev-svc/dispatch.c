/* dispatch.c - check and perform one blockdev request. Everything in a
 * request is client-controlled: version, op, flags, range and buffer are
 * all checked before any I/O, and a bad one gets an error response. A
 * write reads the shared buffer exactly once, into the private bounce
 * buffer, and both the write log and the device get that copy. A
 * gathering write (CM_BD_WRITEV) gathers its buffers there, so it is one
 * write to both. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "futex.h"
#include "internal.h"

static int bd_check_range(bd_svc *bd, const cm_bd_rec *rq, void **buf)
{
	uint64_t len = (uint64_t)rq->nsect * CM_BD_SECTOR;

	if (rq->nsect == 0 || rq->nsect > CM_BD_MAX_SECTORS)
		return -EINVAL;
	if (rq->sector >= bd->dev.sectors || rq->nsect > bd->dev.sectors - rq->sector)
		return -ERANGE;
	if (!cm_arena_in_data(bd->arena, rq->data_off, len))
		return -EFAULT;
	*buf = cm_arena_ptr(bd->arena, rq->data_off, len);
	return *buf ? 0 : -EFAULT;
}

/* The buffers of a scatter read or gathering write: the table and every
 * buffer it names are checked (and the offsets copied out, since the
 * client may change them) before any I/O. Returns how many, or an error. */
static int bd_check_vec(bd_svc *bd, const cm_bd_rec *rq, uint32_t flags_ok,
			struct iovec iov[CM_BD_MAX_IOV])
{
	uint64_t len = (uint64_t)rq->chunk * CM_BD_SECTOR;
	const _Atomic uint64_t *table;
	uint32_t n;

	if (rq->chunk == 0 || rq->nsect == 0 || rq->nsect > CM_BD_MAX_SECTORS ||
	    rq->nsect % rq->chunk || (rq->flags & ~flags_ok))
		return -EINVAL;
	n = rq->nsect / rq->chunk;
	if (n > CM_BD_MAX_IOV)
		return -EINVAL;
	if (rq->sector >= bd->dev.sectors || rq->nsect > bd->dev.sectors - rq->sector)
		return -ERANGE;
	if (!cm_arena_in_data(bd->arena, rq->data_off, (uint64_t)n * sizeof(uint64_t)) ||
	    rq->data_off % sizeof(uint64_t))
		return -EFAULT;
	table = cm_arena_ptr(bd->arena, rq->data_off, (uint64_t)n * sizeof(uint64_t));
	for (uint32_t i = 0; i < n; i++) {
		cm_off off = atomic_load_explicit(&table[i], memory_order_relaxed);
		if (!cm_arena_in_data(bd->arena, off, len))
			return -EFAULT;
		iov[i].iov_base = cm_arena_ptr(bd->arena, off, len);
		iov[i].iov_len = len;
		if (!iov[i].iov_base)
			return -EFAULT;
	}
	return (int)n;
}

/* Writes the bounce buffer's first nsect sectors: for PREFLUSH a flush of
 * the device and the log first, then the write log, then the device, then
 * for FUA a flush of the log. */
static int bd_write_bounce(bd_svc *bd, uint64_t sector, uint32_t nsect, uint32_t flags)
{
	bool fua = flags & CM_BD_FUA;
	int r = 0;

	if (flags & CM_BD_PREFLUSH) {
		r = bd_device_flush(&bd->dev);
		if (r == 0)
			r = bd_wlog_flush(&bd->wlog);
	}
	if (r == 0)
		r = bd_wlog_write(&bd->wlog, sector, nsect, fua ? CM_BD_FUA : 0, bd->bounce);
	if (r == 0)
		r = bd_device_write(&bd->dev, sector, nsect, bd->bounce, fua);
	if (r == 0 && fua)
		r = bd_wlog_flush(&bd->wlog);
	return r;
}

static int bd_do_write(bd_svc *bd, const cm_bd_rec *rq, const void *buf)
{
	if (rq->flags & ~CM_BD_WRITE_FLAGS)
		return -EINVAL;
	/* Before the log: a write that failed never reached the device. */
	if (bd_device_fault_hits(&bd->dev))
		return -EIO;
	/* One read of the shared buffer (bd_check_range bounded nsect). */
	memcpy(bd->bounce, buf, (size_t)rq->nsect * CM_BD_SECTOR);
	return bd_write_bounce(bd, rq->sector, rq->nsect, rq->flags);
}

/* A gathering write: its buffers are read once each, in table order, into
 * the bounce buffer, which then goes out as one write. */
static int bd_do_writev(bd_svc *bd, const cm_bd_rec *rq)
{
	struct iovec iov[CM_BD_MAX_IOV];
	int n = bd_check_vec(bd, rq, CM_BD_WRITE_FLAGS, iov);
	uint8_t *p = bd->bounce;

	if (n < 0)
		return n;
	if (bd_device_fault_hits(&bd->dev))
		return -EIO;
	for (int i = 0; i < n; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	return bd_write_bounce(bd, rq->sector, rq->nsect, rq->flags);
}

static int bd_exec_one(bd_svc *bd, const void *req, void *resp)
{
	const cm_bd_rec *rq = req;
	cm_bd_rec *rs = resp;
	void *buf = NULL;
	int r;

	if (rq->hdr.version != CM_BD_VERSION)
		return -EPROTO;
	switch (rq->hdr.op) {
	case CM_BD_INFO:
		rs->dev_sectors = bd->dev.sectors;
		return 0;
	case CM_BD_READ:
		r = bd_check_range(bd, rq, &buf);
		if (r == 0 && rq->flags)
			r = -EINVAL;
		return r < 0 ? r : bd_device_read(&bd->dev, rq->sector, rq->nsect, buf);
	case CM_BD_WRITE:
		r = bd_check_range(bd, rq, &buf);
		return r < 0 ? r : bd_do_write(bd, rq, buf);
	case CM_BD_READV: {
		struct iovec iov[CM_BD_MAX_IOV];
		int n = bd_check_vec(bd, rq, 0, iov);
		return n < 0 ? n : bd_device_readv(&bd->dev, rq->sector, iov, n);
	}
	case CM_BD_WRITEV:
		return bd_do_writev(bd, rq);
	case CM_BD_FLUSH:
		r = bd_device_flush(&bd->dev);
		return r < 0 ? r : bd_wlog_flush(&bd->wlog);
	default:
		return -EPROTONOSUPPORT;
	}
}

int bd_exec(void *ctx, const void *req, void *resp)
{
	const cm_bd_rec *rq = req;
	uint64_t start = cm_now_ns();
	bd_svc *bd = ctx;
	int r = bd_exec_one(bd, req, resp);

	if (rq->hdr.op != CM_BD_INFO)
		bd_stat_request(bd->dev.stat, start, r);
	return r;
}
