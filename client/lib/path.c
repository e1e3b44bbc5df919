/* path.c - libext3d's path conveniences over the inode calls: resolve a
 * path one lookup per component from the root, following symlinks as the
 * kernel does (the last component only when asked, EXT3D_SYMLOOP_MAX in
 * all); file and directory handles. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define X3_PATH_MAX 4096
#define X3_DIR_BATCH 64

struct ext3d_file {
	ext3d *fs;
	uint64_t ino;
	uint64_t pos;
};

struct ext3d_dir {
	ext3d *fs;
	uint64_t ino;
	uint64_t cookie;
	int n, next;
	ext3d_dirent ents[X3_DIR_BATCH];
};

/* Walks path (absolute or relative to the root) into *ret. */
static int x3_resolve(ext3d *fs, const char *path, bool follow_last, ext3d_attr *ret)
{
	char buf[X3_PATH_MAX], name[EXT3D_NAME_MAX + 1];
	uint64_t dir = EXT3D_ROOT_INO;
	int links = 0, r;
	size_t len = strlen(path), pos = 0;

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	r = ext3d_getattr(fs, EXT3D_ROOT_INO, ret);
	while (r == 0) {
		while (buf[pos] == '/')
			pos++;
		if (!buf[pos])
			return 0;
		size_t n = strcspn(buf + pos, "/");
		if (n > EXT3D_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, buf + pos, n);
		name[n] = '\0';
		pos += n;
		if (!S_ISDIR(ret->mode))
			return -ENOTDIR;
		dir = ret->ino;
		r = ext3d_lookup(fs, dir, name, ret);
		bool last = buf[pos + strspn(buf + pos, "/")] == '\0';
		if (r < 0 || !S_ISLNK(ret->mode) || (last && !follow_last && buf[pos] != '/'))
			continue;
		/* Splice the target in place of the component just walked. */
		char target[X3_PATH_MAX];
		ssize_t tl = ext3d_readlink_ino(fs, ret->ino, target, sizeof(target));
		if (tl < 0)
			return (int)tl;
		if (++links > EXT3D_SYMLOOP_MAX)
			return -ELOOP;
		if ((size_t)tl + strlen(buf + pos) + 1 > sizeof(buf))
			return -ENAMETOOLONG;
		memmove(buf + tl, buf + pos, strlen(buf + pos) + 1);
		memcpy(buf, target, (size_t)tl);
		pos = 0;
		r = target[0] == '/' || tl == 0 ? ext3d_getattr(fs, EXT3D_ROOT_INO, ret)
						: ext3d_getattr(fs, dir, ret);
		if (tl == 0)
			return -ENOENT;
	}
	return r;
}

int ext3d_stat(ext3d *fs, const char *path, ext3d_attr *ret)
{
	return x3_resolve(fs, path, true, ret);
}

int ext3d_lstat(ext3d *fs, const char *path, ext3d_attr *ret)
{
	return x3_resolve(fs, path, false, ret);
}

ssize_t ext3d_readlink(ext3d *fs, const char *path, char *buf, size_t len)
{
	ext3d_attr a;
	int r = x3_resolve(fs, path, false, &a);

	if (r < 0)
		return r;
	if (!S_ISLNK(a.mode))
		return -EINVAL;
	return ext3d_readlink_ino(fs, a.ino, buf, len);
}

int ext3d_open(ext3d *fs, const char *path, int flags, ext3d_file **ret)
{
	ext3d_attr a;
	ext3d_file *f;
	int r;

	if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC | O_APPEND)))
		return -EROFS;
	r = x3_resolve(fs, path, !(flags & O_NOFOLLOW), &a);
	if (r == 0 && (flags & O_NOFOLLOW) && S_ISLNK(a.mode))
		r = -ELOOP;
	if (r == 0 && (flags & O_DIRECTORY) && !S_ISDIR(a.mode))
		r = -ENOTDIR;
	if (r == 0)
		r = ext3d_access_ino(fs, a.ino, R_OK);
	if (r < 0)
		return r;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fs = fs;
	f->ino = a.ino;
	*ret = f;
	return 0;
}

ssize_t ext3d_pread(ext3d_file *f, void *buf, size_t len, uint64_t off)
{
	return ext3d_read_ino(f->fs, f->ino, buf, len, off);
}

ssize_t ext3d_read(ext3d_file *f, void *buf, size_t len)
{
	ssize_t n = ext3d_read_ino(f->fs, f->ino, buf, len, f->pos);

	if (n > 0)
		f->pos += (uint64_t)n;
	return n;
}

int ext3d_fstat(ext3d_file *f, ext3d_attr *ret)
{
	return ext3d_getattr(f->fs, f->ino, ret);
}

int ext3d_close(ext3d_file *f)
{
	free(f);
	return 0;
}

int ext3d_opendir(ext3d *fs, const char *path, ext3d_dir **ret)
{
	ext3d_attr a;
	ext3d_dir *d;
	int r = x3_resolve(fs, path, true, &a);

	if (r == 0 && !S_ISDIR(a.mode))
		r = -ENOTDIR;
	if (r == 0)
		r = ext3d_access_ino(fs, a.ino, R_OK);
	if (r < 0)
		return r;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->fs = fs;
	d->ino = a.ino;
	*ret = d;
	return 0;
}

int ext3d_readdir(ext3d_dir *d, const ext3d_dirent **ret)
{
	if (d->next == d->n) {
		int n = ext3d_readdir_ino(d->fs, d->ino, &d->cookie, d->ents, X3_DIR_BATCH);
		if (n <= 0)
			return n;
		d->n = n;
		d->next = 0;
	}
	*ret = &d->ents[d->next++];
	return 1;
}

int ext3d_closedir(ext3d_dir *d)
{
	free(d);
	return 0;
}
