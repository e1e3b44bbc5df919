/* device.c - the device descriptor: open, size, read, write, flush, and
 * the injected I/O faults of --fault. An I/O error is always returned as an
 * error, never folded into success. A device that is missing, empty or too
 * small to hold even a superblock (BD_DEVICE_MIN bytes), or in use by
 * another instance (imglock.h), is refused at open with a line saying
 * which. */
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

int bd_device_open(bd_device *d, const char *path, char *why, size_t whylen)
{
	struct stat st;
	uint64_t bytes;
	int r;

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
	d->sectors = bytes / CM_BD_SECTOR;
	if (bytes == 0)
		return bd_refuse(-EINVAL, why, whylen, "image %s is empty (0 bytes)", path);
	if (bytes < BD_DEVICE_MIN)
		return bd_refuse(-EINVAL, why, whylen,
				 "image %s too small: %llu bytes, a superblock ends at byte %u",
				 path, (unsigned long long)bytes, BD_DEVICE_MIN);
	return 0;
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
	return cm_pread_full(d->fd, buf, (size_t)nsect * CM_BD_SECTOR,
			     (off_t)(sector * CM_BD_SECTOR));
}

int bd_device_readv(bd_device *d, uint64_t sector, struct iovec *iov, int iovcnt)
{
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

	r = cm_pwrite_full(d->fd, buf, (size_t)nsect * CM_BD_SECTOR,
			   (off_t)(sector * CM_BD_SECTOR));
	if (r == 0 && fua && fdatasync(d->fd) < 0)
		r = -errno;
	return r;
}

int bd_device_flush(bd_device *d)
{
	return fdatasync(d->fd) < 0 ? -errno : 0;
}

void bd_device_close(bd_device *d)
{
	if (d->fd >= 0) {
		(void)fdatasync(d->fd);
		close(d->fd);
	}
	d->fd = -1;
}
