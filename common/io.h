/* io.h - whole-buffer positional I/O: EINTR and short transfers are handled
 * here once, so callers see either the full count or -errno. */
#ifndef CM_IO_H
#define CM_IO_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* 0 on success; -EIO if the file ends before len bytes (reads). */
int cm_pread_full(int fd, void *buf, size_t len, off_t off);
int cm_pwrite_full(int fd, const void *buf, size_t len, off_t off);
/* Fills every iov (which it may modify); -EIO if the file ends first. */
int cm_preadv_full(int fd, struct iovec *iov, int iovcnt, off_t off);
int cm_write_full(int fd, const void *buf, size_t len);

#endif
