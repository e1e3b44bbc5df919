/* imglock.h - one writer per image. blockdev-svc, the only process of an
 * instance that opens the image, and ext3d-recover hold an exclusive
 * flock(2) on it for as long as they have it open, so a second instance
 * (or a replay) on an image in use is refused instead of writing over the
 * first one's journal. A block device is also opened O_EXCL, which the
 * kernel refuses while the device is mounted or claimed. The lock goes
 * with the descriptor: a killed blockdev-svc releases it as it dies, and
 * its restart takes it again. */
#ifndef CM_IMGLOCK_H
#define CM_IMGLOCK_H

#include <stddef.h>

/* Opens path with flags (O_RDWR or O_RDONLY; O_CLOEXEC added) and takes
 * the lock (shared for O_RDONLY), trying again for up to wait_ms while
 * another holds it (a killed predecessor whose exit is still under way):
 * the descriptor, or -errno with why written (-EBUSY: in use). */
int cm_image_open(const char *path, int flags, int wait_ms, char *why, size_t len);

#endif
