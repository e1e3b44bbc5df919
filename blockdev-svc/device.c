/* device.c - the device descriptor: open, size, read, write, flush, and
 * the injected I/O faults of --fault. An I/O error is always returned as an
 * error, never folded into success. A device that is missing, empty or too
 * small to hold even a superblock (BD_DEVICE_MIN bytes), or in use by
 * another instance (imglock.h), is refused at open with a line saying
 * which. The device may also be an NBD export (nbd.c). */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "imglock.h"
#include "io.h"

/* A predecessor killed an instant ago may not have let the image go yet. */
#define BD_LOCK_WAIT_MS 1000 /* within the crash window: a held lock still ends in a crash loop */

__attribute__((format(printf, 4, 5)))
static int bd_refuse(int r, char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return r;
}

static int bd_check_size(bd_device *d, const char *path, uint64_t bytes, char *why,
			 size_t whylen)
{
	d->sectors = bytes / CM_BD_SECTOR;
	if (bytes == 0)
		return bd_refuse(-EINVAL, why, whylen, "image %s is empty (0 bytes)", path);
	if (bytes < BD_DEVICE_MIN)
		return bd_refuse(-EINVAL, why, whylen,
				 "image %s too small: %llu bytes, a superblock ends at byte %u",
				 path, (unsigned long long)bytes, BD_DEVICE_MIN);
	return 0;
}

static void bd_publish(bd_device *d, const char *path, enum cm_transport transport)
{
	snprintf(d->stat->where, sizeof(d->stat->where), "%s", path);
	atomic_store(&d->stat->read_only, d->read_only);
	atomic_store(&d->stat->link, CM_LINK_UP);
	if (transport != CM_TRANSPORT_NONE)
		atomic_store(&d->stat->transport, transport);
}

/* An NBD export: no image lock, since the server owns the storage. */
static int bd_device_open_nbd(bd_device *d, const char *uri, char *why, size_t whylen)
{
	int r = bd_nbd_open(&d->nbd, uri, d->timeout_ms, d->stat, why, whylen);

	if (r < 0)
		return r;
	d->read_only = bd_nbd_read_only(d->nbd);
	bd_publish(d, uri, CM_TRANSPORT_NONE);
	return bd_check_size(d, uri, bd_nbd_size(d->nbd), why, whylen);
}

int bd_device_open(bd_device *d, const char *path, char *why, size_t whylen)
{
	struct stat st;
	uint64_t bytes;
	int r;

	if (cm_device_is_nbd_uri(path))
		return bd_device_open_nbd(d, path, why, whylen);
	d->fd = cm_image_open(path, O_RDWR, BD_LOCK_WAIT_MS, why, whylen);
	if (d->fd == -ENOENT)
		return bd_refuse(-ENOENT, why, whylen, "image %s does not exist", path);
	if (d->fd < 0)
		return d->fd;
	if (fstat(d->fd, &st) < 0) {
		r = -errno;
		return bd_refuse(r, why, whylen, "image %s: %s", path, strerror(-r));
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(d->fd, BLKGETSIZE64, &bytes) < 0) {
			r = -errno;
			return bd_refuse(r, why, whylen, "size of %s: %s", path, strerror(-r));
		}
	} else if (S_ISREG(st.st_mode)) {
		bytes = (uint64_t)st.st_size;
	} else {
		return bd_refuse(-ENOTBLK, why, whylen,
				 "image %s is neither a regular file nor a block device", path);
	}
	bd_publish(d, path, S_ISBLK(st.st_mode) ? CM_TRANSPORT_BLOCK : CM_TRANSPORT_FILE);
	return bd_check_size(d, path, bytes, why, whylen);
}

int bd_device_parse_fault(bd_device *d, const char *spec)
{
	char kind[16];
	unsigned long long at;

	if (sscanf(spec, "ioerr:%15[a-z]:%llu", kind, &at) != 2 || at == 0)
		return -EINVAL;
	if (strcmp(kind, "transient") == 0)
		d->fault = BD_FAULT_TRANSIENT;
	else if (strcmp(kind, "persistent") == 0)
		d->fault = BD_FAULT_PERSISTENT;
	else
		return -EINVAL;
	d->fault_at = at;
	return 0;
}

int bd_device_read(bd_device *d, uint64_t sector, uint32_t nsect, void *buf)
{
	struct iovec iov = {.iov_base = buf, .iov_len = (size_t)nsect * CM_BD_SECTOR};

	if (d->nbd)
		return bd_nbd_readv(d->nbd, sector * CM_BD_SECTOR, &iov, 1);
	return cm_pread_full(d->fd, buf, (size_t)nsect * CM_BD_SECTOR,
			     (off_t)(sector * CM_BD_SECTOR));
}

int bd_device_readv(bd_device *d, uint64_t sector, struct iovec *iov, int iovcnt)
{
	if (d->nbd)
		return bd_nbd_readv(d->nbd, sector * CM_BD_SECTOR, iov, iovcnt);
	return cm_preadv_full(d->fd, iov, iovcnt, (off_t)(sector * CM_BD_SECTOR));
}

bool bd_device_fault_hits(bd_device *d)
{
	d->writes++;
	switch (d->fault) {
	case BD_FAULT_TRANSIENT:
		return d->writes == d->fault_at;
	case BD_FAULT_PERSISTENT:
		return d->writes >= d->fault_at;
	default:
		return false;
	}
}

int bd_device_write(bd_device *d, uint64_t sector, uint32_t nsect, const void *buf, bool fua)
{
	int r;

	if (d->read_only)
		return -EROFS;
	if (d->nbd)
		return bd_nbd_write(d->nbd, sector * CM_BD_SECTOR, buf,
				    (size_t)nsect * CM_BD_SECTOR, fua);
	r = cm_pwrite_full(d->fd, buf, (size_t)nsect * CM_BD_SECTOR,
			   (off_t)(sector * CM_BD_SECTOR));
	if (r == 0 && fua && fdatasync(d->fd) < 0)
		r = -errno;
	return r;
}

int bd_device_flush(bd_device *d)
{
	if (d->nbd)
		return bd_nbd_flush(d->nbd);
	return fdatasync(d->fd) < 0 ? -errno : 0;
}

void bd_device_close(bd_device *d)
{
	bd_nbd_close(d->nbd);
	d->nbd = NULL;
	if (d->fd >= 0) {
		(void)fdatasync(d->fd);
		close(d->fd);
	}
	d->fd = -1;
}
