/* path.c - libext3d's path conveniences over the inode calls: resolve a
 * path one lookup per component from the root, following symlinks as the
 * kernel does (the last component only when asked or when a '/' follows
 * it, EXT3D_SYMLOOP_MAX in all); the read-only path calls and directory
 * handles (file handles are file.c's). Every grant a lookup takes is
 * given back: at once for what the walk passes through, at close for an
 * open directory.
 *
 * A directory has one name, so a lookup that finds a directory the walk
 * already stands in (a corrupt image's second entry for it, say /a/x
 * naming the root) is a loop: -ELOOP, as the kernel's dcache refuses a
 * second alias for an ancestor. Without the check rm -r of /a would go
 * on to remove the whole tree from the root. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define X3_DIR_BATCH 64
#define X3_WALK_DEPTH 64 /* directories a walk checks for loops */

/* The directories from the root to where a walk stands. */
struct x3_walk {
	uint64_t ino[X3_WALK_DEPTH];
	unsigned depth; /* may pass X3_WALK_DEPTH: the deeper ones are not kept */
};

static void x3_walk_reset(struct x3_walk *w)
{
	w->ino[0] = EXT3D_ROOT_INO;
	w->depth = 1;
}

/* Steps into dir ino by name; false if it is one the walk stands in. */
static bool x3_walk_enter(struct x3_walk *w, const char *name, uint64_t ino)
{
	if (!strcmp(name, "."))
		return true;
	if (!strcmp(name, "..")) {
		if (w->depth > 1)
			w->depth--;
		if (w->depth <= X3_WALK_DEPTH)
			w->ino[w->depth - 1] = ino;
		return true;
	}
	for (unsigned i = 0; i < w->depth && i < X3_WALK_DEPTH; i++)
		if (w->ino[i] == ino)
			return false;
	if (w->depth < X3_WALK_DEPTH)
		w->ino[w->depth] = ino;
	w->depth++;
	return true;
}

struct ext3d_dir {
	ext3d *fs;
	uint64_t ino;
	uint64_t cookie;
	int n, next;
	ext3d_dirent ents[X3_DIR_BATCH];
};

void x3_drop(ext3d *fs, uint64_t ino)
{
	if (ino != EXT3D_ROOT_INO)
		(void)ext3d_forget(fs, ino, 1);
}

/* A trailing '/' after a name that is not a directory. */
static int x3_enotdir(ext3d *fs, uint64_t held)
{
	x3_drop(fs, held);
	return -ENOTDIR;
}

/* The directories walked through hold no grant once it returns. */
int x3_resolve(ext3d *fs, const char *path, bool follow_last, ext3d_attr *ret)
{
	char buf[X3_PATH_MAX], name[EXT3D_NAME_MAX + 1], target[X3_PATH_MAX];
	uint64_t held = EXT3D_ROOT_INO; /* *ret's inode, granted once by this walk */
	struct x3_walk walk;
	int links = 0, r;
	size_t len = strlen(path), pos = 0;

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	x3_walk_reset(&walk);
	r = ext3d_getattr(fs, EXT3D_ROOT_INO, ret);
	while (r == 0) {
		while (buf[pos] == '/')
			pos++;
		if (!buf[pos])
			return pos && buf[pos - 1] == '/' && !S_ISDIR(ret->mode) ? x3_enotdir(fs, held)
										   : 0;
		size_t n = strcspn(buf + pos, "/");
		if (!S_ISDIR(ret->mode)) {
			r = -ENOTDIR;
			break;
		}
		if (n > EXT3D_NAME_MAX) {
			/* The kernel asks for search permission first. */
			r = fs->root ? 0 : ext3d_access_ino(fs, held, X_OK);
			r = r < 0 ? r : -ENAMETOOLONG;
			break;
		}
		memcpy(name, buf + pos, n);
		name[n] = '\0';
		pos += n;
		uint64_t dir = held;
		r = ext3d_lookup(fs, dir, name, ret);
		if (r < 0)
			break;
		held = ret->ino;
		if (S_ISDIR(ret->mode) && !x3_walk_enter(&walk, name, held)) {
			x3_drop(fs, dir);
			r = -ELOOP;
			break;
		}
		bool last = buf[pos + strspn(buf + pos, "/")] == '\0';
		if (!S_ISLNK(ret->mode) || (last && !follow_last && buf[pos] != '/')) {
			x3_drop(fs, dir);
			continue;
		}
		/* Splice the target in place of the component just walked and go
		 * on from dir (or the root). */
		ssize_t tl = ext3d_readlink_ino(fs, held, target, sizeof(target));
		x3_drop(fs, held);
		held = dir;
		if (tl < 0 || ++links > EXT3D_SYMLOOP_MAX || tl == 0 ||
		    (size_t)tl + strlen(buf + pos) + 1 > sizeof(buf)) {
			r = tl < 0 ? (int)tl : links > EXT3D_SYMLOOP_MAX ? -ELOOP
				: tl == 0 ? -ENOENT : -ENAMETOOLONG;
			break;
		}
		memmove(buf + tl, buf + pos, strlen(buf + pos) + 1);
		memcpy(buf, target, (size_t)tl);
		pos = 0;
		if (target[0] == '/') {
			x3_drop(fs, held);
			held = EXT3D_ROOT_INO;
			x3_walk_reset(&walk);
		}
		r = ext3d_getattr(fs, held, ret);
	}
	x3_drop(fs, held);
	return r;
}

int ext3d_stat(ext3d *fs, const char *path, ext3d_attr *ret)
{
	int r = x3_resolve(fs, path, true, ret);

	if (r == 0)
		x3_drop(fs, ret->ino);
	return r;
}

int ext3d_lstat(ext3d *fs, const char *path, ext3d_attr *ret)
{
	int r = x3_resolve(fs, path, false, ret);

	if (r == 0)
		x3_drop(fs, ret->ino);
	return r;
}

ssize_t ext3d_readlink(ext3d *fs, const char *path, char *buf, size_t len)
{
	ext3d_attr a;
	ssize_t n = x3_resolve(fs, path, false, &a);

	if (n < 0)
		return n;
	n = S_ISLNK(a.mode) ? ext3d_readlink_ino(fs, a.ino, buf, len) : -EINVAL;
	x3_drop(fs, a.ino);
	return n;
}

int ext3d_opendir(ext3d *fs, const char *path, ext3d_dir **ret)
{
	ext3d_attr a;
	ext3d_dir *d = NULL;
	int r = x3_resolve(fs, path, true, &a);

	if (r < 0)
		return r;
	if (!S_ISDIR(a.mode))
		r = -ENOTDIR;
	if (r == 0)
		r = ext3d_access_ino(fs, a.ino, R_OK);
	if (r == 0 && !(d = calloc(1, sizeof(*d))))
		r = -ENOMEM;
	if (r < 0) {
		x3_drop(fs, a.ino);
		return r;
	}
	d->fs = fs;
	d->ino = a.ino;
	*ret = d;
	return 0;
}

int ext3d_readdir(ext3d_dir *d, const ext3d_dirent **ret)
{
	if (d->next == d->n) {
		/* Entries are not granted: the path calls name them by path. */
		int n = x3_readdir(d->fs, d->ino, &d->cookie, d->ents, X3_DIR_BATCH, 0);
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
	x3_drop(d->fs, d->ino);
	free(d);
	return 0;
}
