/* dirty.c - what an ext3d handle changed that it has not seen made
 * durable, with the session generation each change was made on: for each
 * inode, the generation of its first change since its last fsync (an
 * open-addressing table), and for the whole handle the generation of its
 * first change since its last sync. A change made on a session that has
 * since been replaced (a group restart) may be lost: the next fsync of
 * that inode, or the next sync, returns -EIO once, as the kernel reports
 * a writeback error to the next fsync that has not seen it. dirty_mtx
 * covers it all; it is never held across a call to inode-svc. Past
 * X3_DIRTY_MAX inodes the oldest generation among those not tracked is
 * kept instead, and every fsync answers for it.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

#define X3_DIRTY_MAX 65536

/* Called with dirty_mtx held. Slot of ino in a table of cap (a power of
 * two), where it is or would go. */
static size_t x3_dirty_slot(const x3_dirty_ent *t, size_t cap, uint64_t ino)
{
	size_t i = (size_t)(ino * 0x9e3779b97f4a7c15ull) & (cap - 1);

	while (t[i].ino && t[i].ino != ino)
		i = (i + 1) & (cap - 1);
	return i;
}

/* Called with dirty_mtx held. */
static int x3_dirty_grow(ext3d *fs)
{
	size_t cap = fs->dirty_cap ? 2 * fs->dirty_cap : 64;
	x3_dirty_ent *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < fs->dirty_cap; i++)
		if (fs->dirty[i].ino)
			t[x3_dirty_slot(t, cap, fs->dirty[i].ino)] = fs->dirty[i];
	free(fs->dirty);
	fs->dirty = t;
	fs->dirty_cap = cap;
	return 0;
}

static void x3_dirty_note_locked(ext3d *fs, uint64_t ino, uint64_t gen)
{
	if (!fs->dirty_first)
		fs->dirty_first = gen;
	if (!ino)
		return;
	if (2 * (fs->dirty_n + 1) > fs->dirty_cap &&
	    (fs->dirty_n >= X3_DIRTY_MAX || x3_dirty_grow(fs) < 0)) {
		if (!fs->dirty_lost)
			fs->dirty_lost = gen;
		return;
	}
	size_t i = x3_dirty_slot(fs->dirty, fs->dirty_cap, ino);
	if (!fs->dirty[i].ino) {
		fs->dirty[i] = (x3_dirty_ent){.ino = ino, .gen = gen};
		fs->dirty_n++;
	}
}

void x3_dirty_after(ext3d *fs, const cm_fs_req *req, const cm_fs_resp *resp, uint64_t gen)
{
	pthread_mutex_lock(&fs->dirty_mtx);
	switch (req->hdr.op) {
	case CM_FS_MKNOD:
	case CM_FS_SYMLINK:
		x3_dirty_note_locked(fs, req->ino, gen);
		x3_dirty_note_locked(fs, resp->attr.ino, gen);
		break;
	case CM_FS_LINK:
	case CM_FS_RENAME:
		x3_dirty_note_locked(fs, req->ino, gen);
		x3_dirty_note_locked(fs, req->ino2, gen);
		break;
	case CM_FS_UNLINK:
	case CM_FS_RMDIR:
	case CM_FS_SETATTR:
	case CM_FS_FALLOCATE:
	case CM_FS_SETXATTR:
	case CM_FS_REMOVEXATTR:
		x3_dirty_note_locked(fs, req->ino, gen);
		break;
	case CM_FS_WRITE:
		if (!(req->flags & CM_FS_WRITE_SYNC))
			x3_dirty_note_locked(fs, req->ino, gen);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&fs->dirty_mtx);
}

int x3_dirty_fsync(ext3d *fs, uint64_t ino, uint64_t gen, int r)
{
	pthread_mutex_lock(&fs->dirty_mtx);
	if (fs->dirty_cap) {
		size_t i = x3_dirty_slot(fs->dirty, fs->dirty_cap, ino);
		if (fs->dirty[i].ino) {
			if (fs->dirty[i].gen != gen)
				r = -EIO;
			/* Forgotten: deleting from open addressing rebuilds the run. */
			fs->dirty[i].ino = 0;
			fs->dirty_n--;
			for (size_t j = (i + 1) & (fs->dirty_cap - 1); fs->dirty[j].ino;
			     j = (j + 1) & (fs->dirty_cap - 1)) {
				x3_dirty_ent e = fs->dirty[j];
				fs->dirty[j].ino = 0;
				fs->dirty[x3_dirty_slot(fs->dirty, fs->dirty_cap, e.ino)] = e;
			}
		}
	}
	if (fs->dirty_lost && fs->dirty_lost != gen)
		r = -EIO;
	pthread_mutex_unlock(&fs->dirty_mtx);
	return r;
}

int x3_dirty_sync(ext3d *fs, uint64_t gen, int r)
{
	pthread_mutex_lock(&fs->dirty_mtx);
	if (fs->dirty_first && fs->dirty_first != gen)
		r = -EIO;
	fs->dirty_first = 0;
	fs->dirty_lost = 0;
	fs->dirty_n = 0;
	for (size_t i = 0; i < fs->dirty_cap; i++)
		fs->dirty[i].ino = 0;
	pthread_mutex_unlock(&fs->dirty_mtx);
	return r;
}

void x3_dirty_fini(ext3d *fs)
{
	free(fs->dirty);
	fs->dirty = NULL;
	fs->dirty_cap = fs->dirty_n = 0;
}
