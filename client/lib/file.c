/* file.c - ext3d_file: an open file by path, with the kernel's open(2)
 * semantics (O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_SYNC, O_DIRECTORY,
 * O_NOFOLLOW, the access mode) and a file position.
 *
 * A file remembers the path it was opened at and the session generation
 * its inode was granted on: after a group restart it looks the path up
 * again (the new session grants the inode anew; another inode there is
 * -ESTALE). It also remembers the generation of its first write not yet
 * made durable: an fsync after the instance restarted since then returns
 * -EIO once (the kernel's writeback error), as that write may be lost.
 * mtx covers the position and those generations; it is never held across
 * a call to inode-svc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iflags.h"
#include "internal.h"
#include "sysctl.h"

#define X3_OPEN_RETRIES 8 /* re-walks when a restart or a racing create gets in the way */

struct ext3d_file {
	ext3d *fs;              /* [immutable] */
	char *path;             /* [immutable] where it was opened, to find it again */
	int flags;              /* [immutable] open flags */
	pthread_mutex_t mtx;
	uint64_t ino;           /* [immutable] */
	uint64_t gen;           /* [mtx] session generation ino is granted on */
	uint64_t unsynced_gen;  /* [mtx] generation of the first write not durable yet; 0: none */
	uint64_t pos;           /* [mtx] */
};

/* Walks path like open(2) with O_CREAT: the file, or a new one (mode less
 * the umask) if the last name does not exist, a dangling symlink's target
 * included. *ret holds a grant; the path where the file is goes into
 * where (X3_PATH_MAX bytes); *ret_created: it was made here; *ret_dir:
 * the directory it is in. */
static int x3_open_create(ext3d *fs, const char *path, int flags, uint32_t mode, ext3d_attr *ret,
			  char *where, bool *ret_created, ext3d_attr *ret_dir)
{
	char parent[X3_PATH_MAX], name[EXT3D_NAME_MAX + 1], target[X3_PATH_MAX];
	int links = 0, tries = 0, kind, r;
	ext3d_attr dir;
	bool slash;

	*ret_created = false;
	if (strlen(path) >= X3_PATH_MAX)
		return -ENAMETOOLONG;
	strcpy(where, path);
	for (;;) {
		r = x3_split(where, parent, sizeof(parent), name, &kind, &slash);
		if (r == 0)
			r = x3_parent_any(fs, where, &dir, name, &kind, &slash);
		if (r < 0)
			return r;
		if (kind == X3_LAST_LONG && !slash) {
			x3_drop(fs, dir.ino);
			return -ENAMETOOLONG;
		}
		if (kind != X3_LAST_NORM || slash) {
			/* As the kernel: ".", ".." and the root exist (-EEXIST
			 * with O_EXCL), all are directories, as is a name with a
			 * trailing '/' (whatever its length). */
			bool dots = kind != X3_LAST_NORM && kind != X3_LAST_LONG;
			x3_drop(fs, dir.ino);
			return dots && (flags & O_EXCL) ? -EEXIST : -EISDIR;
		}
		r = ext3d_lookup(fs, dir.ino, name, ret);
		if (r == 0 && (flags & O_EXCL)) {
			x3_drop(fs, ret->ino);
			r = -EEXIST;
		} else if (r == 0 && S_ISLNK(ret->mode) && !(flags & O_NOFOLLOW)) {
			/* Create where the symlink points, as the kernel does. */
			ssize_t tl = ext3d_readlink_ino(fs, ret->ino, target, sizeof(target) - 1);
			x3_drop(fs, ret->ino);
			x3_drop(fs, dir.ino);
			if (tl < 0)
				return (int)tl;
			if (++links > EXT3D_SYMLOOP_MAX)
				return -ELOOP;
			if (tl == 0)
				return -ENOENT;
			target[tl] = '\0';
			size_t pl = target[0] == '/' ? 0 : strlen(parent);
			if (pl + (size_t)tl + 2 > X3_PATH_MAX)
				return -ENAMETOOLONG;
			memmove(where + pl + (pl ? 1 : 0), target, (size_t)tl + 1);
			memcpy(where, parent, pl);
			if (pl)
				where[pl] = '/';
			continue;
		} else if (r == -ENOENT) {
			r = ext3d_mknod_umask_ino(fs, dir.ino, name, S_IFREG | (mode & 07777), 0,
						  x3_umask(), ret);
			*ret_created = r == 0;
			if (r == -EEXIST && !(flags & O_EXCL) && ++tries < X3_OPEN_RETRIES) {
				x3_drop(fs, dir.ino);
				continue; /* another client made it meanwhile: open that */
			}
			if (r == 0 && strlen(parent) + strlen(name) + 2 <= X3_PATH_MAX) {
				size_t pl = strlen(parent);
				memcpy(where, parent, pl);
				strcpy(where + pl, name);
			}
		}
		*ret_dir = dir;
		x3_drop(fs, dir.ino);
		return r;
	}
}

/* The kernel's may_create_in_sticky: O_CREAT finding a file another user
 * owns in a sticky directory that all (or, by the sysctls, its group) may
 * write is -EACCES, even for root; regular files and FIFOs only as
 * fs.protected_regular and fs.protected_fifos say, anything else always. */
static int x3_sticky_create(ext3d *fs, const ext3d_attr *dir, const ext3d_attr *a)
{
	int reg = S_ISREG(a->mode) ? cm_sysctl_fs("protected_regular", 0) : -1;
	int fifo = S_ISFIFO(a->mode) ? cm_sysctl_fs("protected_fifos", 0) : -1;

	if (!(dir->mode & S_ISVTX) || reg == 0 || fifo == 0 || a->uid == dir->uid ||
	    a->uid == fs->uid)
		return 0;
	if ((dir->mode & 0002) || ((dir->mode & 0020) && (reg >= 2 || fifo >= 2)))
		return -EACCES;
	return 0;
}

/* The kernel's checks of open(2) on the inode found, in do_open's order
 * (created: just made by this open, which then needs no permission and is
 * not truncated; dir: where O_CREAT found it). */
static int x3_open_check(ext3d *fs, const ext3d_attr *a, const ext3d_attr *dir, int flags,
			 bool created)
{
	int acc = flags & O_ACCMODE, mask = 0, r;

	if ((flags & O_CREAT) && S_ISDIR(a->mode))
		return -EISDIR;
	if ((flags & O_CREAT) && !created && (r = x3_sticky_create(fs, dir, a)) < 0)
		return r;
	if ((flags & O_DIRECTORY) && !S_ISDIR(a->mode))
		return -ENOTDIR;
	if (S_ISLNK(a->mode))
		return -ELOOP; /* only O_NOFOLLOW leaves a symlink here */
	if (S_ISDIR(a->mode) && (acc != O_RDONLY || (flags & O_TRUNC)))
		return -EISDIR;
	if (created)
		return 0;
	if (acc == O_RDONLY || acc == O_RDWR)
		mask |= R_OK;
	if (acc == O_WRONLY || acc == O_RDWR || (flags & O_TRUNC))
		mask |= W_OK;
	r = ext3d_access_ino(fs, a->ino, mask);
	return r < 0 ? r : cm_iflags_may_open(a->flags, flags);
}

static int x3_open(ext3d *fs, const char *path, int flags, uint32_t mode, ext3d_file **ret)
{
	char *where = malloc(X3_PATH_MAX);
	ext3d_file *f = NULL;
	bool created = false;
	uint64_t gen = 0;
	ext3d_attr a, dir;
	int r = -EAGAIN;

	if (!where)
		return -ENOMEM;
	if ((flags & O_ACCMODE) == O_ACCMODE) {
		free(where);
		return -EINVAL;
	}
	/* The inode must be granted on the generation the file records. A
	 * file made here before the generation changed (a restart between
	 * two calls changes it at the first) is looked up again, not made
	 * twice, where O_EXCL would refuse it; made again only if gone. */
	for (int tries = 0; r == -EAGAIN && tries < X3_OPEN_RETRIES; tries++) {
		gen = x3_gen(fs);
		r = created ? x3_resolve(fs, where, false, &a) : -ENOENT;
		if (r == -ENOENT && (flags & O_CREAT)) {
			r = x3_open_create(fs, path, flags, mode, &a, where, &created, &dir);
		} else if (!created) {
			r = x3_resolve(fs, path, !(flags & O_NOFOLLOW), &a);
			if (r == 0 && strlen(path) < X3_PATH_MAX)
				strcpy(where, path);
		}
		if (r == 0 && x3_gen(fs) != gen) {
			x3_drop(fs, a.ino);
			r = -EAGAIN;
		}
	}
	if (r < 0) {
		free(where);
		return r;
	}
	r = x3_open_check(fs, &a, flags & O_CREAT ? &dir : NULL, flags, created);
	if (r == 0 && (flags & O_TRUNC) && S_ISREG(a.mode) && !created) {
		ext3d_setattr set = {.size = 0};
		r = ext3d_setattr_ino(fs, a.ino, &set, EXT3D_SET_SIZE, NULL);
	}
	if (r == 0 && !(f = calloc(1, sizeof(*f))))
		r = -ENOMEM;
	if (r < 0) {
		x3_drop(fs, a.ino);
		free(where);
		return r;
	}
	f->fs = fs;
	f->path = where;
	f->flags = flags;
	f->ino = a.ino;
	f->gen = gen;
	/* A create or truncation is not durable yet either. */
	f->unsynced_gen = created || (flags & O_TRUNC) ? gen : 0;
	pthread_mutex_init(&f->mtx, NULL);
	*ret = f;
	return 0;
}

int ext3d_open(ext3d *fs, const char *path, int flags, ext3d_file **ret)
{
	if (flags & O_CREAT)
		return -EINVAL;
	return x3_open(fs, path, flags, 0, ret);
}

int ext3d_create(ext3d *fs, const char *path, int flags, uint32_t mode, ext3d_file **ret)
{
	return x3_open(fs, path, flags | O_CREAT, mode, ret);
}

/* The generation f's inode is granted on, after looking its path up again
 * if the session was replaced since. */
static int x3_file_regrant(ext3d_file *f, uint64_t *ret_gen)
{
	uint64_t gen;
	ext3d_attr a;
	int r;

	pthread_mutex_lock(&f->mtx);
	gen = f->gen;
	pthread_mutex_unlock(&f->mtx);
	for (int tries = 0; tries < X3_OPEN_RETRIES; tries++) {
		uint64_t now = x3_gen(f->fs);
		if (now == gen) {
			*ret_gen = gen;
			return 0;
		}
		r = x3_resolve(f->fs, f->path, !(f->flags & O_NOFOLLOW), &a);
		if (r < 0 && x3_gen(f->fs) != now)
			continue; /* the group restarted again during the walk */
		if (r < 0)
			return r == -ENOENT || r == -ENOTDIR ? -ESTALE : r;
		if (a.ino != f->ino) {
			x3_drop(f->fs, a.ino);
			return -ESTALE;
		}
		if (x3_gen(f->fs) != now) {
			x3_drop(f->fs, a.ino);
			continue;
		}
		pthread_mutex_lock(&f->mtx);
		if (f->gen != now)
			f->gen = now;
		else /* another thread re-granted it meanwhile */
			x3_drop(f->fs, a.ino);
		pthread_mutex_unlock(&f->mtx);
		gen = now;
	}
	return -EAGAIN;
}

/* Runs req on f's inode; once more after a re-grant if the session was
 * replaced under the call (a non-root session then refuses the inode). */
static int x3_file_call(ext3d_file *f, cm_fs_req *req, cm_fs_resp *resp, x3_io *io)
{
	for (int tries = 0;; tries++) {
		uint64_t gen;
		int r = x3_file_regrant(f, &gen);
		if (r < 0)
			return r;
		req->ino = f->ino;
		r = x3_call_io(f->fs, req, resp, io);
		if (r != -EACCES || io->gen == gen || tries)
			return r;
	}
}

static bool x3_readable(const ext3d_file *f)
{
	return (f->flags & O_ACCMODE) != O_WRONLY;
}

static bool x3_writable(const ext3d_file *f)
{
	return (f->flags & O_ACCMODE) != O_RDONLY;
}

ssize_t ext3d_pread(ext3d_file *f, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	if (!x3_readable(f))
		return -EBADF;
	while (done < len) {
		size_t chunk = len - done < CM_SEG_DATA ? len - done : CM_SEG_DATA;
		cm_fs_req req = {.hdr.op = CM_FS_READ, .offset = off + done,
				 .length = (uint32_t)chunk};
		x3_io io = {.out = (uint8_t *)buf + done, .outlen = chunk};
		cm_fs_resp resp;
		int r = x3_file_call(f, &req, &resp, &io);
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += resp.length < chunk ? resp.length : chunk;
		if (resp.length < chunk || resp.eof)
			break;
	}
	return (ssize_t)done;
}

ssize_t ext3d_read(ext3d_file *f, void *buf, size_t len)
{
	uint64_t pos;
	ssize_t n;

	pthread_mutex_lock(&f->mtx);
	pos = f->pos;
	pthread_mutex_unlock(&f->mtx);
	n = ext3d_pread(f, buf, len, pos);
	if (n > 0) {
		pthread_mutex_lock(&f->mtx);
		f->pos = pos + (uint64_t)n;
		pthread_mutex_unlock(&f->mtx);
	}
	return n;
}

/* A write at off (or at the end with O_APPEND); *ret_end: the offset
 * after the last byte written. */
static ssize_t x3_file_write(ext3d_file *f, const void *buf, size_t len, uint64_t off,
			     uint64_t *ret_end)
{
	unsigned flags = (f->flags & O_APPEND ? EXT3D_WRITE_APPEND : 0) |
			 (f->flags & (O_SYNC | O_DSYNC) ? EXT3D_WRITE_SYNC : 0);
	size_t done = 0;

	if (!x3_writable(f))
		return -EBADF;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		size_t chunk = len - done < CM_SEG_DATA ? len - done : CM_SEG_DATA;
		cm_fs_req req = x3_write_req(0, off + done, chunk, flags);
		x3_io io = {.in = (const uint8_t *)buf + done, .inlen = chunk};
		cm_fs_resp resp;
		int r = x3_file_call(f, &req, &resp, &io);

		if (r < 0)
			return done ? (ssize_t)done : r;
		x3_dirty_after(f->fs, &req, &resp, io.gen);
		size_t n = resp.length < chunk ? resp.length : chunk;
		done += n;
		*ret_end = flags & EXT3D_WRITE_APPEND ? resp.attr.size : off + done;
		if (!(flags & EXT3D_WRITE_SYNC)) {
			pthread_mutex_lock(&f->mtx);
			if (!f->unsynced_gen)
				f->unsynced_gen = io.gen;
			pthread_mutex_unlock(&f->mtx);
		}
		if (n < chunk)
			break;
	}
	return (ssize_t)done;
}

ssize_t ext3d_pwrite(ext3d_file *f, const void *buf, size_t len, uint64_t off)
{
	uint64_t end;

	return x3_file_write(f, buf, len, off, &end);
}

ssize_t ext3d_write(ext3d_file *f, const void *buf, size_t len)
{
	uint64_t pos, end = 0;
	ssize_t n;

	pthread_mutex_lock(&f->mtx);
	pos = f->pos;
	pthread_mutex_unlock(&f->mtx);
	n = x3_file_write(f, buf, len, pos, &end);
	if (n > 0) {
		pthread_mutex_lock(&f->mtx);
		f->pos = end;
		pthread_mutex_unlock(&f->mtx);
	}
	return n;
}

int ext3d_ftruncate(ext3d_file *f, uint64_t size)
{
	cm_fs_req req = {.hdr.op = CM_FS_SETATTR, .flags = CM_FS_SET_SIZE, .offset = size};
	x3_io io = {0};
	cm_fs_resp resp;
	int r;

	if (!x3_writable(f))
		return -EINVAL;
	r = x3_file_call(f, &req, &resp, &io);
	if (r == 0) {
		x3_dirty_after(f->fs, &req, &resp, io.gen);
		pthread_mutex_lock(&f->mtx);
		if (!f->unsynced_gen)
			f->unsynced_gen = io.gen;
		pthread_mutex_unlock(&f->mtx);
	}
	return r;
}

static int x3_file_sync(ext3d_file *f, int datasync)
{
	cm_fs_req req = {.hdr.op = CM_FS_FSYNC, .flags = datasync ? CM_FS_FSYNC_DATA : 0};
	x3_io io = {0};
	cm_fs_resp resp;
	int r = x3_file_call(f, &req, &resp, &io);

	/* Changes through any handle of this ext3d count, as the kernel
	 * reports a writeback error to an fsync that has not seen it. */
	r = x3_dirty_fsync(f->fs, f->ino, io.gen, r);
	pthread_mutex_lock(&f->mtx);
	if (f->unsynced_gen && (r < 0 || f->unsynced_gen != io.gen)) {
		r = -EIO; /* reported once, as the kernel reports a writeback error */
		f->unsynced_gen = 0;
	} else if (r == 0) {
		f->unsynced_gen = 0;
	}
	pthread_mutex_unlock(&f->mtx);
	return r;
}

int ext3d_fsync(ext3d_file *f)
{
	return x3_file_sync(f, 0);
}

int ext3d_fdatasync(ext3d_file *f)
{
	return x3_file_sync(f, 1);
}

int ext3d_fstat(ext3d_file *f, ext3d_attr *ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_GETATTR};
	x3_io io = {0};
	cm_fs_resp resp;
	int r = x3_file_call(f, &req, &resp, &io);

	if (r == 0)
		x3_attr_from(&resp.attr, ret);
	return r;
}

int ext3d_close(ext3d_file *f)
{
	if (!f)
		return 0;
	if (f->gen == x3_gen(f->fs))
		x3_drop(f->fs, f->ino);
	pthread_mutex_destroy(&f->mtx);
	free(f->path);
	free(f);
	return 0;
}
