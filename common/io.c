/* io.c - full-length read/write loops over pread/pwrite/write; see io.h. */
#include "io.h"

#include <errno.h>
#include <unistd.h>

int cm_pread_full(int fd, void *buf, size_t len, off_t off)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return cm_preadv_full(fd, &iov, 1, off);
}

int cm_preadv_full(int fd, struct iovec *iov, int iovcnt, off_t off)
{
	for (;;) {
		while (iovcnt > 0 && iov->iov_len == 0) {
			iov++;
			iovcnt--;
		}
		if (iovcnt == 0)
			return 0;
		ssize_t n = preadv(fd, iov, iovcnt, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		off += n;
		while (iovcnt > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
}

int cm_pwrite_full(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

int cm_write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
