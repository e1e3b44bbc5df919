/* imglock.c - open an image and take its one-writer lock (imglock.h). */
#include "imglock.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define CM_IMAGE_LOCK_POLL_MS 20

int cm_image_open(const char *path, int flags, int wait_ms, char *why, size_t len)
{
	bool rdonly = (flags & O_ACCMODE) == O_RDONLY;
	struct stat st;
	int fd, r;

	/* O_EXCL on a block device: refused while it is mounted or claimed. */
	if (!rdonly && stat(path, &st) == 0 && S_ISBLK(st.st_mode))
		flags |= O_EXCL;
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(why, len, "%s: %s%s", path, strerror(-r),
			 r == -EBUSY ? " (mounted or in use)" : "");
		return r;
	}
	while ((r = flock(fd, (rdonly ? LOCK_SH : LOCK_EX) | LOCK_NB)) < 0 &&
	       errno == EWOULDBLOCK && wait_ms > 0) {
		usleep(CM_IMAGE_LOCK_POLL_MS * 1000);
		wait_ms -= CM_IMAGE_LOCK_POLL_MS;
	}
	if (r < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		snprintf(why, len, "%s is in use by another ext3d instance or ext3d-recover "
			 "(its lock is held): %s", path, strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}
