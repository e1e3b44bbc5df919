/* wpath.c - libext3d's write calls by path: split the path into its
 * parent directory (resolved as the kernel does, symlinks followed) and
 * its last component, check what the kernel checks on the path itself
 * ("." and "..", a trailing '/', the root), then one call by inode
 * number. New inodes get the calling process's umask, or their directory's
 * default ACL where it has one (inode-svc decides). Every grant a walk
 * takes is given back before the call returns. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

uint32_t x3_umask(void)
{
	char buf[2048];
	uint32_t mask = 022;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return mask;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		const char *u = strstr(buf, "\nUmask:");
		unsigned v;
		if (u && sscanf(u + 7, "%o", &v) == 1)
			mask = v & 0777;
	}
	return mask;
}

int x3_split(const char *path, char *parent, size_t cap, char name[EXT3D_NAME_MAX + 1],
	     int *ret_kind, bool *ret_slash)
{
	size_t len = strlen(path), end, start;

	if (len == 0)
		return -ENOENT;
	if (len >= cap)
		return -ENAMETOOLONG;
	end = len;
	while (end > 0 && path[end - 1] == '/')
		end--;
	*ret_slash = end < len;
	start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	memcpy(parent, path, start);
	parent[start] = '\0';
	if (end - start > EXT3D_NAME_MAX) {
		/* As the kernel, only once the parent is found. */
		name[0] = '\0';
		*ret_kind = X3_LAST_LONG;
		return 0;
	}
	memcpy(name, path + start, end - start);
	name[end - start] = '\0';
	if (end == 0)
		*ret_kind = X3_LAST_ROOT;
	else if (strcmp(name, ".") == 0)
		*ret_kind = X3_LAST_DOT;
	else if (strcmp(name, "..") == 0)
		*ret_kind = X3_LAST_DOTDOT;
	else
		*ret_kind = X3_LAST_NORM;
	return 0;
}

int x3_parent_any(ext3d *fs, const char *path, ext3d_attr *dir,
			 char name[EXT3D_NAME_MAX + 1], int *ret_kind, bool *ret_slash)
{
	char parent[X3_PATH_MAX];
	int r = x3_split(path, parent, sizeof(parent), name, ret_kind, ret_slash);

	if (r < 0)
		return r;
	r = x3_resolve(fs, parent, true, dir);
	if (r < 0)
		return r;
	if (!S_ISDIR(dir->mode))
		r = -ENOTDIR;
	/* The kernel's walk needs search permission on the last directory
	 * too, before the last name is looked at. */
	else if (!fs->root)
		r = ext3d_access_ino(fs, dir->ino, X_OK);
	if (r < 0)
		x3_drop(fs, dir->ino);
	return r;
}

int x3_parent(ext3d *fs, const char *path, ext3d_attr *dir, char name[EXT3D_NAME_MAX + 1],
	      int *ret_kind, bool *ret_slash)
{
	int r = x3_parent_any(fs, path, dir, name, ret_kind, ret_slash);

	if (r == 0 && *ret_kind == X3_LAST_LONG) {
		x3_drop(fs, dir->ino);
		r = -ENAMETOOLONG;
	}
	return r;
}

/* What a create (mknod, symlink, link's new name) of a special last
 * component fails with: as the kernel's filename_create. A trailing '/'
 * on a name that does not exist: -ENOENT; on one that does: -EEXIST. */
static int x3_create_check(ext3d *fs, const ext3d_attr *dir, const char *name, int kind,
			   bool slash)
{
	ext3d_attr a;
	int r;

	if (kind != X3_LAST_NORM)
		return -EEXIST;
	if (!slash)
		return 0;
	r = ext3d_lookup(fs, dir->ino, name, &a);
	if (r == 0) {
		x3_drop(fs, a.ino);
		return -EEXIST;
	}
	return r;
}

static int x3_mknod_path(ext3d *fs, const char *path, uint32_t mode, uint32_t rdev)
{
	char name[EXT3D_NAME_MAX + 1];
	ext3d_attr dir, a;
	bool slash;
	int kind, r;

	r = x3_parent(fs, path, &dir, name, &kind, &slash);
	if (r < 0)
		return r;
	if (S_ISDIR(mode))
		r = kind == X3_LAST_NORM ? 0 : -EEXIST;
	else
		r = x3_create_check(fs, &dir, name, kind, slash);
	if (r == 0)
		r = ext3d_mknod_umask_ino(fs, dir.ino, name, mode, rdev, x3_umask(), &a);
	if (r == 0)
		x3_drop(fs, a.ino);
	x3_drop(fs, dir.ino);
	return r;
}

int ext3d_mkdir(ext3d *fs, const char *path, uint32_t mode)
{
	return x3_mknod_path(fs, path, S_IFDIR | (mode & 01777), 0);
}

int ext3d_mknod(ext3d *fs, const char *path, uint32_t mode, uint32_t rdev)
{
	uint32_t type = mode & S_IFMT;

	if (type == 0)
		type = S_IFREG;
	if (type == S_IFDIR)
		return -EPERM;
	if (type != S_IFREG && type != S_IFCHR && type != S_IFBLK && type != S_IFIFO &&
	    type != S_IFSOCK)
		return -EINVAL;
	return x3_mknod_path(fs, path, type | (mode & 07777), rdev);
}

int ext3d_symlink(ext3d *fs, const char *target, const char *linkpath)
{
	char name[EXT3D_NAME_MAX + 1];
	ext3d_attr dir, a;
	bool slash;
	int kind, r;

	if (!target[0])
		return -ENOENT;
	if (strlen(target) >= X3_PATH_MAX)
		return -ENAMETOOLONG;
	r = x3_parent(fs, linkpath, &dir, name, &kind, &slash);
	if (r < 0)
		return r;
	r = x3_create_check(fs, &dir, name, kind, slash);
	if (r == 0)
		r = ext3d_symlink_ino(fs, dir.ino, name, target, &a);
	if (r == 0)
		x3_drop(fs, a.ino);
	x3_drop(fs, dir.ino);
	return r;
}

int ext3d_link(ext3d *fs, const char *oldpath, const char *newpath)
{
	char name[EXT3D_NAME_MAX + 1];
	ext3d_attr old, dir, a;
	bool slash;
	int kind, r;

	r = x3_resolve(fs, oldpath, false, &old);
	if (r < 0)
		return r;
	r = x3_parent(fs, newpath, &dir, name, &kind, &slash);
	if (r < 0) {
		x3_drop(fs, old.ino);
		return r;
	}
	/* inode-svc applies fs.protected_hardlinks, for every link path. */
	r = x3_create_check(fs, &dir, name, kind, slash);
	if (r == 0)
		r = ext3d_link_ino(fs, old.ino, dir.ino, name, &a);
	if (r == 0)
		x3_drop(fs, a.ino);
	x3_drop(fs, dir.ino);
	x3_drop(fs, old.ino);
	return r;
}

int ext3d_unlink(ext3d *fs, const char *path)
{
	char name[EXT3D_NAME_MAX + 1];
	ext3d_attr dir, a;
	bool slash;
	int kind, r;

	r = x3_parent(fs, path, &dir, name, &kind, &slash);
	if (r < 0)
		return r;
	if (kind != X3_LAST_NORM) {
		r = -EISDIR;
	} else if (slash) {
		/* As the kernel: the name must exist, and is not removed. */
		r = ext3d_lookup(fs, dir.ino, name, &a);
		if (r == 0) {
			x3_drop(fs, a.ino);
			r = S_ISDIR(a.mode) ? -EISDIR : -ENOTDIR;
		}
	} else {
		r = ext3d_unlink_ino(fs, dir.ino, name);
	}
	x3_drop(fs, dir.ino);
	return r;
}

int ext3d_rmdir(ext3d *fs, const char *path)
{
	static const int special[] = {
		[X3_LAST_DOT] = -EINVAL, [X3_LAST_DOTDOT] = -ENOTEMPTY, [X3_LAST_ROOT] = -EBUSY};
	char name[EXT3D_NAME_MAX + 1];
	ext3d_attr dir;
	bool slash;
	int kind, r;

	r = x3_parent(fs, path, &dir, name, &kind, &slash);
	if (r < 0)
		return r;
	r = kind != X3_LAST_NORM ? special[kind] : ext3d_rmdir_ino(fs, dir.ino, name);
	x3_drop(fs, dir.ino);
	return r;
}

int ext3d_rename(ext3d *fs, const char *oldpath, const char *newpath)
{
	char oname[EXT3D_NAME_MAX + 1], nname[EXT3D_NAME_MAX + 1];
	ext3d_attr odir, ndir, a;
	bool oslash, nslash;
	int okind, nkind, r;

	/* The kernel's order: both parents, ".", ".." or the root (-EBUSY),
	 * then the old name, then the new one. */
	r = x3_parent_any(fs, oldpath, &odir, oname, &okind, &oslash);
	if (r < 0)
		return r;
	r = x3_parent_any(fs, newpath, &ndir, nname, &nkind, &nslash);
	if (r < 0) {
		x3_drop(fs, odir.ino);
		return r;
	}
	if ((okind != X3_LAST_NORM && okind != X3_LAST_LONG) ||
	    (nkind != X3_LAST_NORM && nkind != X3_LAST_LONG))
		r = -EBUSY;
	else if (okind == X3_LAST_LONG)
		r = -ENAMETOOLONG;
	else if (nkind == X3_LAST_LONG) {
		r = ext3d_lookup(fs, odir.ino, oname, &a);
		if (r == 0) {
			x3_drop(fs, a.ino);
			r = -ENAMETOOLONG;
		}
	}
	if (r == 0 && (oslash || nslash)) {
		/* A trailing '/' names a directory: a file there is -ENOTDIR. */
		r = ext3d_lookup(fs, odir.ino, oname, &a);
		if (r == 0) {
			x3_drop(fs, a.ino);
			r = S_ISDIR(a.mode) ? 0 : -ENOTDIR;
		}
	}
	if (r == 0)
		r = ext3d_rename_ino(fs, odir.ino, oname, ndir.ino, nname, 0);
	x3_drop(fs, ndir.ino);
	x3_drop(fs, odir.ino);
	return r;
}

/* setattr on what path names (symlinks followed). */
static int x3_setattr_path(ext3d *fs, const char *path, const ext3d_setattr *set,
			   unsigned valid)
{
	ext3d_attr a;
	int r = x3_resolve(fs, path, true, &a);

	if (r < 0)
		return r;
	r = ext3d_setattr_ino(fs, a.ino, set, valid, NULL);
	x3_drop(fs, a.ino);
	return r;
}

int ext3d_setflags(ext3d *fs, const char *path, uint32_t flags)
{
	ext3d_attr a;
	int r = x3_resolve(fs, path, true, &a);

	if (r < 0)
		return r;
	r = ext3d_setflags_ino(fs, a.ino, flags, NULL);
	x3_drop(fs, a.ino);
	return r;
}

int ext3d_chmod(ext3d *fs, const char *path, uint32_t mode)
{
	ext3d_setattr set = {.mode = mode & 07777};

	return x3_setattr_path(fs, path, &set, EXT3D_SET_MODE);
}

/* As the kernel's chown: on anything but a directory it also clears
 * set-uid, and set-gid where group execution is on (the VFS does it above
 * the filesystem, whoever the caller is). */
int ext3d_chown(ext3d *fs, const char *path, uint32_t uid, uint32_t gid)
{
	ext3d_setattr set = {.uid = uid, .gid = gid};
	unsigned valid = (uid != (uint32_t)-1 ? EXT3D_SET_UID : 0) |
			 (gid != (uint32_t)-1 ? EXT3D_SET_GID : 0);
	ext3d_attr a;
	int r = x3_resolve(fs, path, true, &a);

	if (r < 0)
		return r;
	set.mode = a.mode & 07777;
	if (!S_ISDIR(a.mode)) {
		set.mode &= ~(uint32_t)S_ISUID;
		if ((a.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
			set.mode &= ~(uint32_t)S_ISGID;
	}
	if (set.mode != (a.mode & 07777))
		valid |= EXT3D_SET_MODE;
	r = ext3d_setattr_ino(fs, a.ino, &set, valid, NULL);
	x3_drop(fs, a.ino);
	return r;
}

int ext3d_truncate(ext3d *fs, const char *path, uint64_t size)
{
	ext3d_setattr set = {.size = size};
	ext3d_attr a;
	int r = x3_resolve(fs, path, true, &a);

	if (r < 0)
		return r;
	if (S_ISDIR(a.mode))
		r = -EISDIR;
	else if (!S_ISREG(a.mode))
		r = -EINVAL;
	else
		r = ext3d_access_ino(fs, a.ino, W_OK);
	if (r == 0)
		r = ext3d_setattr_ino(fs, a.ino, &set, EXT3D_SET_SIZE, NULL);
	x3_drop(fs, a.ino);
	return r;
}
