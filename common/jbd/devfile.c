/*
 * devfile.c - a jd_dev over an image file, for ext3d-recover and the unit
 * tests: pread, pwrite, fdatasync.
 */
#include "recovery.h"

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static int file_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	ssize_t n = pread((int)(intptr_t)ctx, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static int file_write(void *ctx, uint64_t off, const void *buf, size_t len)
{
	ssize_t n = pwrite((int)(intptr_t)ctx, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static int file_flush(void *ctx)
{
	return fdatasync((int)(intptr_t)ctx) < 0 ? -errno : 0;
}

int jd_dev_file(int fd, jd_dev *ret)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	*ret = (jd_dev){.read = file_read, .write = file_write,
			.flush = file_flush, .ctx = (void *)(intptr_t)fd,
			.size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0};
	return 0;
}
