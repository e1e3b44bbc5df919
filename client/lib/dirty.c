/* dirty.c - what an ext3d handle changed that it has not seen made
 * durable, with the session generation each change was made on: for each
 * inode, the generation of its first change since its last fsync (an
 * open-addressing table), and for the whole handle the generation of its
 * first change since its last sync. A change made on a session that has
 * since been replaced (a group restart) may be lost: the next fsync of
 * that inode, or the next sync, returns -EIO once, as the kernel reports
 * a writeback error to the next fsync that has not seen it. The first
 * change call on such an inode gets -EIO too (x3_dirty_before), before it
 * can build on what was lost. dirty_mtx
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

/* Entries are kept by the bare inode number: a node (ext3d_node) and the
 * number name the same inode. The inode's generation, where a node or a
 * create's answer gives it, tells a file from one that took its number
 * after it was freed. */
static uint64_t x3_dirty_key(uint64_t ino)
{
	return ino & UINT32_MAX;
}

/* Whether e is about another file than the inode of generation igen. */
static bool x3_dirty_other(const x3_dirty_ent *e, uint32_t igen)
{
	return e->igen && igen && e->igen != igen;
}

static void x3_dirty_note_locked(ext3d *fs, uint64_t node, uint32_t igen, uint64_t gen)
{
	uint64_t ino = x3_dirty_key(node);

	if (!igen)
		igen = (uint32_t)(node >> 32);
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
	if (!fs->dirty[i].ino)
		fs->dirty_n++;
	if (!fs->dirty[i].ino || x3_dirty_other(&fs->dirty[i], igen))
		fs->dirty[i] = (x3_dirty_ent){.ino = ino, .igen = igen, .gen = gen};
	else if (!fs->dirty[i].igen)
		fs->dirty[i].igen = igen;
}

/* The inodes req changes (a create's new inode aside): up to two, 0 for
 * none. */
static void x3_dirty_targets(const cm_fs_req *req, uint64_t ino[2])
{
	ino[0] = ino[1] = 0;
	switch (req->hdr.op) {
	case CM_FS_LINK:
	case CM_FS_RENAME:
		ino[1] = req->ino2;
		/* fall through */
	case CM_FS_MKNOD:
	case CM_FS_SYMLINK:
	case CM_FS_UNLINK:
	case CM_FS_RMDIR:
	case CM_FS_SETATTR:
	case CM_FS_FALLOCATE:
	case CM_FS_SETXATTR:
	case CM_FS_REMOVEXATTR:
	case CM_FS_WRITE:
		ino[0] = req->ino;
		break;
	default:
		break;
	}
}

int x3_dirty_before(ext3d *fs, const cm_fs_req *req, uint64_t gen)
{
	uint64_t ino[2];
	int r = 0;

	x3_dirty_targets(req, ino);
	if (!ino[0])
		return 0;
	pthread_mutex_lock(&fs->dirty_mtx);
	for (int k = 0; k < 2 && fs->dirty_cap; k++) {
		x3_dirty_ent *e;
		if (!ino[k])
			continue;
		e = &fs->dirty[x3_dirty_slot(fs->dirty, fs->dirty_cap, x3_dirty_key(ino[k]))];
		if (e->ino && e->gen != gen && !e->told &&
		    !x3_dirty_other(e, (uint32_t)(ino[k] >> 32))) {
			e->told = true;
			r = -EIO;
		}
	}
	pthread_mutex_unlock(&fs->dirty_mtx);
	return r;
}

void x3_dirty_after(ext3d *fs, const cm_fs_req *req, const cm_fs_resp *resp, uint64_t gen)
{
	uint64_t ino[2];

	x3_dirty_targets(req, ino);
	/* An O_SYNC write is durable when it returns. */
	if (!ino[0] || (req->hdr.op == CM_FS_WRITE && (req->flags & CM_FS_WRITE_SYNC)))
		return;
	uint32_t igen1 = 0;
	if (req->hdr.op == CM_FS_MKNOD || req->hdr.op == CM_FS_SYMLINK) {
		ino[1] = resp->attr.ino;
		igen1 = resp->attr.generation;
	}
	pthread_mutex_lock(&fs->dirty_mtx);
	x3_dirty_note_locked(fs, ino[0], 0, gen);
	if (ino[1])
		x3_dirty_note_locked(fs, ino[1], igen1, gen);
	pthread_mutex_unlock(&fs->dirty_mtx);
}

int x3_dirty_fsync(ext3d *fs, uint64_t node, uint64_t gen, int r)
{
	uint64_t ino = x3_dirty_key(node);

	pthread_mutex_lock(&fs->dirty_mtx);
	if (fs->dirty_cap) {
		size_t i = x3_dirty_slot(fs->dirty, fs->dirty_cap, ino);
		if (fs->dirty[i].ino) {
			if (fs->dirty[i].gen != gen &&
			    !x3_dirty_other(&fs->dirty[i], (uint32_t)(node >> 32)))
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
