/* write.c - libext3d's write calls by inode number (fsproto.h's write
 * ops): one request each, names in the request, symlink targets, rename's
 * new name and file bytes in the lane's data buffer (writes of more than a
 * lane's buffer are split into several requests, each its own
 * transaction). Each change is noted in dirty.c, which fsync and sync
 * consult. Takes no lock of its own; the lanes are session.c's. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* The longest symlink target the kernel takes (PATH_MAX with its NUL). */
#define X3_TARGET_MAX 4095

int x3_name(cm_fs_req *req, const char *name)
{
	size_t n = strlen(name);

	if (n > EXT3D_NAME_MAX)
		return -ENAMETOOLONG;
	req->namelen = (uint32_t)n;
	memcpy(req->name, name, n);
	return 0;
}

/* x3_wcall with the data out too: *resp holds the response. */
static int x3_wcall_io(ext3d *fs, cm_fs_req *req, x3_io *io, cm_fs_resp *resp, ext3d_attr *ret)
{
	int r = x3_call_io(fs, req, resp, io);

	if (req->hdr.op == CM_FS_FSYNC)
		return x3_dirty_fsync(fs, req->ino, io->gen, r);
	if (req->hdr.op == CM_FS_SYNC)
		return x3_dirty_sync(fs, io->gen, r);
	if (r == 0)
		x3_dirty_after(fs, req, resp, io->gen);
	if (r == 0 && ret)
		x3_attr_from(&resp->attr, ret);
	return r;
}

int x3_wcall(ext3d *fs, cm_fs_req *req, const void *in, size_t inlen, ext3d_attr *ret)
{
	x3_io io = {.in = in, .inlen = inlen};
	cm_fs_resp resp;

	return x3_wcall_io(fs, req, &io, &resp, ret);
}

/* x3_wcall of a request with a *_DIRATTR flag: the directory's attributes
 * after it, from the data buffer, into *dir_ret. */
static int x3_wcall_dirattr(ext3d *fs, cm_fs_req *req, ext3d_attr *ret, ext3d_attr *dir_ret)
{
	cm_fs_attr da;
	x3_io io = {.out = &da, .outlen = sizeof(da)};
	cm_fs_resp resp;
	int r = x3_wcall_io(fs, req, &io, &resp, ret);

	if (r == 0 && resp.length != sizeof(da))
		r = -EPROTO;
	if (r == 0 && dir_ret)
		x3_attr_from(&da, dir_ret);
	return r;
}

int ext3d_mknod_ino(ext3d *fs, uint64_t dir, const char *name, uint32_t mode, uint32_t rdev,
		    ext3d_attr *ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_MKNOD, .ino = dir, .mode = mode, .rdev = rdev};
	int r = x3_name(&req, name);

	return r < 0 ? r : x3_wcall(fs, &req, NULL, 0, ret);
}

int ext3d_mknod_umask_ino(ext3d *fs, uint64_t dir, const char *name, uint32_t mode,
			  uint32_t rdev, uint32_t umask, ext3d_attr *ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_MKNOD, .ino = dir, .mode = mode, .rdev = rdev,
			 .flags = CM_FS_MKNOD_UMASK, .umask = umask & 0777};
	int r = x3_name(&req, name);

	return r < 0 ? r : x3_wcall(fs, &req, NULL, 0, ret);
}

int ext3d_mknod_dirattr_ino(ext3d *fs, uint64_t dir, const char *name, uint32_t mode,
			    uint32_t rdev, uint32_t umask, ext3d_attr *ret, ext3d_attr *dir_ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_MKNOD, .ino = dir, .mode = mode, .rdev = rdev,
			 .flags = CM_FS_MKNOD_UMASK | CM_FS_MKNOD_DIRATTR, .umask = umask & 0777};
	int r = x3_name(&req, name);

	return r < 0 ? r : x3_wcall_dirattr(fs, &req, ret, dir_ret);
}

int ext3d_symlink_ino(ext3d *fs, uint64_t dir, const char *name, const char *target,
		      ext3d_attr *ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_SYMLINK, .ino = dir};
	size_t tl = strlen(target);
	int r = x3_name(&req, name);

	if (r < 0)
		return r;
	if (tl == 0)
		return -ENOENT;
	if (tl > X3_TARGET_MAX)
		return -ENAMETOOLONG;
	req.length = (uint32_t)tl;
	return x3_wcall(fs, &req, target, tl, ret);
}

int ext3d_link_ino(ext3d *fs, uint64_t ino, uint64_t newdir, const char *name, ext3d_attr *ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_LINK, .ino = ino, .ino2 = newdir};
	int r = x3_name(&req, name);

	return r < 0 ? r : x3_wcall(fs, &req, NULL, 0, ret);
}

int ext3d_unlink_ino(ext3d *fs, uint64_t dir, const char *name)
{
	cm_fs_req req = {.hdr.op = CM_FS_UNLINK, .ino = dir};
	int r = x3_name(&req, name);

	return r < 0 ? r : x3_wcall(fs, &req, NULL, 0, NULL);
}

int ext3d_unlink_dirattr_ino(ext3d *fs, uint64_t dir, const char *name, ext3d_attr *dir_ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_UNLINK, .ino = dir, .flags = CM_FS_UNLINK_DIRATTR};
	int r = x3_name(&req, name);

	return r < 0 ? r : x3_wcall_dirattr(fs, &req, NULL, dir_ret);
}

int ext3d_rmdir_ino(ext3d *fs, uint64_t dir, const char *name)
{
	cm_fs_req req = {.hdr.op = CM_FS_RMDIR, .ino = dir};
	int r = x3_name(&req, name);

	return r < 0 ? r : x3_wcall(fs, &req, NULL, 0, NULL);
}

int ext3d_rename_ino(ext3d *fs, uint64_t olddir, const char *oldname, uint64_t newdir,
		     const char *newname, unsigned flags)
{
	cm_fs_req req = {.hdr.op = CM_FS_RENAME, .ino = olddir, .ino2 = newdir};
	size_t nl = strlen(newname);
	int r = x3_name(&req, oldname);

	if (r < 0)
		return r;
	if (nl > EXT3D_NAME_MAX)
		return -ENAMETOOLONG;
	_Static_assert(EXT3D_RENAME_NOREPLACE == CM_FS_RENAME_NOREPLACE &&
			       EXT3D_RENAME_EXCHANGE == CM_FS_RENAME_EXCHANGE &&
			       EXT3D_RENAME_WHITEOUT == CM_FS_RENAME_WHITEOUT,
		       "ext3d.h's rename flags are fsproto.h's");
	if ((flags & ~(EXT3D_RENAME_NOREPLACE | EXT3D_RENAME_EXCHANGE | EXT3D_RENAME_WHITEOUT)) ||
	    ((flags & EXT3D_RENAME_EXCHANGE) && flags != EXT3D_RENAME_EXCHANGE))
		return -EINVAL;
	req.flags = flags;
	req.length = (uint32_t)nl;
	return x3_wcall(fs, &req, newname, nl, NULL);
}

cm_fs_req x3_write_req(uint64_t ino, uint64_t off, size_t chunk, unsigned flags)
{
	cm_fs_req req = {.hdr.op = CM_FS_WRITE, .ino = ino, .offset = off,
			 .length = (uint32_t)chunk};

	if (flags & EXT3D_WRITE_APPEND)
		req.flags |= CM_FS_WRITE_APPEND;
	if (flags & EXT3D_WRITE_SYNC)
		req.flags |= CM_FS_WRITE_SYNC;
	return req;
}

ssize_t x3_write_gen(ext3d *fs, uint64_t ino, const void *buf, size_t len, uint64_t off,
		     unsigned flags, uint64_t *ret_gen, uint64_t *ret_size)
{
	size_t done = 0;

	if (flags & ~(EXT3D_WRITE_APPEND | EXT3D_WRITE_SYNC))
		return -EINVAL;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		size_t chunk = len - done < CM_SEG_DATA ? len - done : CM_SEG_DATA;
		cm_fs_req req = x3_write_req(ino, off + done, chunk, flags);
		x3_io io = {.in = (const uint8_t *)buf + done, .inlen = chunk};
		cm_fs_resp resp;
		int r = x3_call_io(fs, &req, &resp, &io);

		if (r < 0)
			return done ? (ssize_t)done : r;
		x3_dirty_after(fs, &req, &resp, io.gen);
		if (ret_gen)
			*ret_gen = io.gen;
		if (ret_size)
			*ret_size = resp.attr.size;
		done += resp.length < chunk ? resp.length : chunk;
		if (resp.length < chunk)
			break;
	}
	return (ssize_t)done;
}

ssize_t ext3d_write_ino(ext3d *fs, uint64_t ino, const void *buf, size_t len, uint64_t off,
			unsigned flags)
{
	return x3_write_gen(fs, ino, buf, len, off, flags, NULL, NULL);
}

int ext3d_setattr_ino(ext3d *fs, uint64_t ino, const ext3d_setattr *set, unsigned valid,
		      ext3d_attr *ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_SETATTR, .ino = ino, .flags = valid,
			 .mode = set->mode, .uid = set->uid, .gid = set->gid, .offset = set->size,
			 .atime = set->atime, .mtime = set->mtime, .atime_ns = set->atime_ns,
			 .mtime_ns = set->mtime_ns};

	_Static_assert(EXT3D_SET_MODE == CM_FS_SET_MODE && EXT3D_SET_SIZE == CM_FS_SET_SIZE &&
			       EXT3D_SET_MTIME_NOW == CM_FS_SET_MTIME_NOW &&
			       EXT3D_SET_CTIME_NOW == CM_FS_SET_CTIME_NOW &&
			       EXT3D_SET_ATIME_ACCESS == CM_FS_SET_ATIME_ACCESS,
		       "ext3d.h's setattr bits are fsproto.h's");
	if (valid & ~0x3ffu)
		return -EINVAL;
	return x3_wcall(fs, &req, NULL, 0, ret);
}

int ext3d_setflags_ino(ext3d *fs, uint64_t ino, uint32_t flags, ext3d_attr *ret)
{
	cm_fs_req req = {.hdr.op = CM_FS_SETFLAGS, .ino = ino, .flags = flags};

	return x3_wcall(fs, &req, NULL, 0, ret);
}

int ext3d_fallocate_ino(ext3d *fs, uint64_t ino, int mode, uint64_t off, uint64_t len)
{
	cm_fs_req req = {.hdr.op = CM_FS_FALLOCATE, .ino = ino, .flags = (uint32_t)mode,
			 .offset = off, .range = len};

	return x3_wcall(fs, &req, NULL, 0, NULL);
}

int ext3d_fsync_ino(ext3d *fs, uint64_t ino, int datasync)
{
	cm_fs_req req = {.hdr.op = CM_FS_FSYNC, .ino = ino,
			 .flags = datasync ? CM_FS_FSYNC_DATA : 0};

	return x3_wcall(fs, &req, NULL, 0, NULL);
}

int ext3d_sync(ext3d *fs)
{
	cm_fs_req req = {.hdr.op = CM_FS_SYNC};

	return x3_wcall(fs, &req, NULL, 0, NULL);
}
