/* xattr.c - libext3d's extended-attribute calls by inode number
 * (CM_FS_GETXATTR, SETXATTR, LISTXATTR, REMOVEXATTR): the name in the
 * request, values and name lists in the lane's data buffer. The checks the
 * VFS makes before a filesystem sees the call (name length, value size)
 * are made here too, so a caller gets the kernel's errno either way. Set
 * and remove are noted for fsync like the other writes. The path calls
 * walk to the inode and give its grant back after. */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define X3_XATTR_SIZE_MAX 65536

/* The name into req: -ERANGE when empty or too long, as the VFS says. */
static int x3_xname(cm_fs_req *req, const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > EXT3D_NAME_MAX)
		return -ERANGE;
	return x3_name(req, name);
}

static size_t x3_xroom(size_t len)
{
	if (len > X3_XATTR_SIZE_MAX)
		len = X3_XATTR_SIZE_MAX;
	return len > CM_SEG_DATA ? CM_SEG_DATA : len;
}

ssize_t ext3d_getxattr_ino(ext3d *fs, uint64_t ino, const char *name, void *buf, size_t len)
{
	cm_fs_req req = {.hdr.op = CM_FS_GETXATTR, .ino = ino};
	cm_fs_resp resp;
	int r = x3_xname(&req, name);

	if (r < 0)
		return r;
	req.length = (uint32_t)x3_xroom(len);
	r = x3_call(fs, &req, &resp, buf, req.length);
	return r < 0 ? r : (ssize_t)resp.length;
}

ssize_t ext3d_listxattr_ino(ext3d *fs, uint64_t ino, char *buf, size_t len)
{
	cm_fs_req req = {.hdr.op = CM_FS_LISTXATTR, .ino = ino};
	cm_fs_resp resp;
	int r;

	req.length = (uint32_t)x3_xroom(len);
	r = x3_call(fs, &req, &resp, buf, req.length);
	return r < 0 ? r : (ssize_t)resp.length;
}

int ext3d_setxattr_ino(ext3d *fs, uint64_t ino, const char *name, const void *val, size_t len,
		       int flags)
{
	cm_fs_req req = {.hdr.op = CM_FS_SETXATTR, .ino = ino};
	int r = x3_xname(&req, name);

	if (r < 0)
		return r;
	if (flags & ~(EXT3D_XATTR_CREATE | EXT3D_XATTR_REPLACE))
		return -EINVAL;
	if (len > X3_XATTR_SIZE_MAX)
		return -E2BIG;
	if (flags & EXT3D_XATTR_CREATE)
		req.flags |= CM_FS_XATTR_CREATE;
	if (flags & EXT3D_XATTR_REPLACE)
		req.flags |= CM_FS_XATTR_REPLACE;
	req.length = (uint32_t)len;
	return x3_wcall(fs, &req, len ? val : NULL, len, NULL);
}

int ext3d_removexattr_ino(ext3d *fs, uint64_t ino, const char *name)
{
	cm_fs_req req = {.hdr.op = CM_FS_REMOVEXATTR, .ino = ino};
	int r = x3_xname(&req, name);

	return r < 0 ? r : x3_wcall(fs, &req, NULL, 0, NULL);
}

/* The path calls: the walk follows symlinks, as getxattr(2) does. */
ssize_t ext3d_getxattr(ext3d *fs, const char *path, const char *name, void *buf, size_t len)
{
	ext3d_attr a;
	ssize_t n = x3_resolve(fs, path, true, &a);

	if (n < 0)
		return n;
	n = ext3d_getxattr_ino(fs, a.ino, name, buf, len);
	x3_drop(fs, a.ino);
	return n;
}

ssize_t ext3d_listxattr(ext3d *fs, const char *path, char *buf, size_t len)
{
	ext3d_attr a;
	ssize_t n = x3_resolve(fs, path, true, &a);

	if (n < 0)
		return n;
	n = ext3d_listxattr_ino(fs, a.ino, buf, len);
	x3_drop(fs, a.ino);
	return n;
}

int ext3d_setxattr(ext3d *fs, const char *path, const char *name, const void *val, size_t len,
		   int flags)
{
	ext3d_attr a;
	int r = x3_resolve(fs, path, true, &a);

	if (r < 0)
		return r;
	r = val ? ext3d_setxattr_ino(fs, a.ino, name, val, len, flags)
		: ext3d_removexattr_ino(fs, a.ino, name);
	x3_drop(fs, a.ino);
	return r;
}

int ext3d_removexattr(ext3d *fs, const char *path, const char *name)
{
	return ext3d_setxattr(fs, path, name, NULL, 0, 0);
}
