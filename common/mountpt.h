/* mountpt.h - mount points of the FUSE front end, as the supervisor and the
 * CLI see them: whether a directory is a mount point (read from
 * /proc/self/mountinfo, which never calls into a FUSE daemon), whether a
 * mount there is stale (its daemon died: stat gives ENOTCONN), checking a
 * directory before mounting on it, and unmounting (lazily when busy).
 *
 * Unmounting uses umount2(2), which needs CAP_SYS_ADMIN; without it,
 * fusermount3 -u (-z when lazy), as libfuse does for a user's mount.
 */
#ifndef CM_MOUNTPT_H
#define CM_MOUNTPT_H

#include <stdbool.h>
#include <stddef.h>

/* One mount of the mount table: its id (field 1 of mountinfo, unique
 * among the mounts of the moment), its device (a FUSE mount's minor is
 * its connection's number under /sys/fs/fuse/connections) and type. */
typedef struct cm_mount {
	int id;
	unsigned major, minor;
	char fstype[64];
} cm_mount;

/* 1 if path (absolute, no trailing '/') is a mount point, with the top
 * mount there in ret (may be NULL); 0 if not; -errno if the mount table
 * cannot be read. */
int cm_mount_find(const char *path, cm_mount *ret);
/* A mount point whose FUSE daemon is gone: a getattr of it that the
 * kernel must send to the daemon (statx with AT_STATX_FORCE_SYNC, so that
 * cached attributes do not hide the dead connection) fails with ENOTCONN.
 * Only ask when no live daemon serves path (a hung one would block it). */
bool cm_mount_stale(const char *path);
/* Detaches m, the top mount at path, whose FUSE daemon is known to be
 * dead: aborts its connection first (/sys/fs/fuse/connections/N/abort,
 * where fusectl is mounted; *aborted says whether it was), so that
 * whatever still holds files there gets errors at once, then unmounts it
 * lazily, which works whatever is open on it. 0 or -errno. */
int cm_mount_detach_dead(const char *path, const cm_mount *m, bool *aborted);
/* Unmounts a stale FUSE mount at path (lazily): 1 if there was one, 0 if
 * not, -errno if it could not be removed. */
int cm_mount_clean_stale(const char *path);
/* Whether path can take a mount: 0, or -ENOENT (missing), -ENOTDIR, -EBUSY
 * (already a mount point), -EINVAL (not absolute), with the reason in why.
 * A stale FUSE mount there is unmounted first; then why says so even when
 * the result is 0. */
int cm_mount_check_dir(const char *path, char *why, size_t len);
/* Unmounts path; if it is busy, detaches it lazily and sets *lazy (it goes
 * away once its last user leaves). 0 or -errno. */
int cm_unmount(const char *path, bool *lazy);

#endif
