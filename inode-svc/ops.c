/* ops.c - what the request handlers share: the start-time work of the
 * write path (journal, orphan list), name checks, reading the inode a
 * request names (an unlinked inode still held open included), attributes
 * for responses, the last link of an inode going (orphan or free), and
 * stopping a transaction with its tid noted for fsync.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "ops.h"

static ino_txn *ino_orphan_start(void *ctx, int credits)
{
	ino_txn *t;

	return ino_txn_start(ctx, NULL, credits, &t) < 0 ? NULL : t;
}

static int ino_orphan_stop(void *ctx, ino_txn *t)
{
	(void)ctx;
	return ino_txn_stop(t, NULL);
}

int ino_ops_start(ino_svc *s)
{
	int r;

	ino_perm_setup(s->fs);
	r = ino_txn_setup(s);
	if (r < 0 || !s->jc)
		return r;
	/* Files unlinked while open, truncates a crash cut short. */
	r = ino_orphans_process(s->fs, ino_orphan_start, ino_orphan_stop, s);
	if (r > 0)
		cm_info("orphan list: %d inodes deleted or truncated", r);
	else if (r < 0)
		cm_warn("orphan list not processed: %s, ignoring", strerror(-r));
	return 0;
}

void ino_attr_fill(ino_svc *s, const ino_inode *in, cm_fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = in->ino;
	a->size = in->size;
	a->blocks = in->blocks512;
	a->atime = in->atime;
	a->mtime = in->mtime;
	a->ctime = in->ctime;
	a->atime_ns = in->atime_ns;
	a->mtime_ns = in->mtime_ns;
	a->ctime_ns = in->ctime_ns;
	a->iflags = ino_flags_visible(in);
	a->mode = in->mode;
	a->nlink = in->links;
	a->uid = in->uid;
	a->gid = in->gid;
	a->blksize = ino_fs_geom(s->fs)->block_size;
	a->generation = in->generation;
	if (S_ISCHR(in->mode) || S_ISBLK(in->mode))
		a->rdev = ino_rdev(in);
}

void ino_attr_reply_data(ino_svc *s, const ino_inode *dir, cm_fs_resp *rs, uint8_t *data)
{
	cm_fs_attr da;

	ino_attr_fill(s, dir, &da);
	memcpy(data, &da, sizeof(da));
	rs->length = sizeof(da);
}

int ino_op_read(ino_svc *s, uint64_t ino, ino_inode *in)
{
	int r;

	if (ino == 0 || ino > UINT32_MAX)
		return -EINVAL;
	r = ino_inode_read(s->fs, (uint32_t)ino, in);
	/* Unlinked while a session held it: an orphan, still usable. An
	 * inode freed before it was held (links 0, not an orphan) is not. */
	if (r == -ESTALE && ino_hold_is_orphan((uint32_t)ino)) {
		r = ino_inode_read_any(s->fs, (uint32_t)ino, in);
		if (r == 0 && in->mode == 0)
			r = -ESTALE;
	}
	return r;
}

int ino_name_check(const char *name, size_t len)
{
	if (len == 0)
		return -ENOENT;
	if (len > CM_FS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

int ino_op_lookup(ino_svc *s, const ino_inode *dir, const char *name, size_t len,
		  uint32_t *ret)
{
	int r = ino_dir_lookup(s->fs, dir, name, len, ret);

	if (r == -ENOENT) {
		*ret = 0;
		r = 0;
	}
	return r;
}

void ino_op_lose_subdir(ino_inode *dir)
{
	if (dir->links > 2)
		dir->links--;
}

void ino_op_gain_subdir(ino_inode *dir)
{
	if (dir->links != 1 || !(dir->flags & EXT3_INDEX_FL))
		dir->links++;
}

int ino_op_may_unlink(ino_svc *s, const ino_inode *in)
{
	if (!S_ISDIR(in->mode) && in->links > 1)
		return 0;
	return ino_map_check(s->fs, in, 0);
}

int ino_op_unlinked(ino_svc *s, ino_txn *t, ino_inode *in)
{
	if (in->links > 0)
		return ino_inode_write(s->fs, t, in);
	if (ino_hold_orphan(in->ino))
		return ino_orphan_add(s->fs, t, in); /* writes in */
	return ino_inode_delete(s->fs, t, in);
}

void ino_op_release(ino_svc *s, uint32_t ino)
{
	ino_ilockset ls;
	ino_inode in;
	ino_txn *t;
	int r;

	ino_ilock(&ls, &ino, 1);
	r = ino_inode_read_any(s->fs, ino, &in);
	if (r == 0 && in.links == 0 && in.mode != 0 && ino_hold_count(ino) == 0) {
		r = ino_txn_start(s, NULL, INO_CRED_TRUNCATE, &t);
		if (r == 0) {
			r = ino_inode_delete(s->fs, t, &in);
			int st = ino_txn_stop(t, NULL);
			r = r < 0 ? r : st;
		}
	}
	ino_iunlock(&ls);
	if (r < 0)
		cm_warn("ino=%u: freeing the unlinked inode after its last close: %s, ignoring",
			ino, strerror(-r));
}

int ino_op_stop(ino_txn *t, const uint32_t *inos, unsigned n, bool data)
{
	uint32_t tid;
	int r = ino_txn_stop_acked(t, &tid);

	for (unsigned i = 0; i < n; i++)
		if (inos[i])
			ino_tid_note(inos[i], tid, data);
	return r;
}

/* Reads dir (a searchable directory) and looks name up: *child gets the
 * inode it names (0: none). */
static int ino_entry_find(ino_svc *s, const ino_creds *c, uint32_t dirino, const char *name,
			  size_t len, ino_inode *dir, uint32_t *child)
{
	int r = ino_op_read(s, dirino, dir);

	if (r == 0 && !S_ISDIR(dir->mode))
		r = -ENOTDIR;
	if (r == 0)
		r = ino_perm(dir, c, 1);
	if (r == 0)
		r = ino_op_lookup(s, dir, name, len, child);
	return r;
}

int ino_op_lock_entry(ino_svc *s, const ino_creds *c, uint32_t dirino, const char *name,
		      size_t len, ino_ilockset *ls, ino_inode *dir, ino_inode *child)
{
	uint32_t inos[2] = {dirino, 0}, again;
	int r;

	if (dirino == 0)
		return -EINVAL;
	for (;;) {
		ino_ilock(ls, inos, 1);
		r = ino_entry_find(s, c, dirino, name, len, dir, &inos[1]);
		ino_iunlock(ls);
		if (r == 0 && inos[1] == 0)
			r = -ENOENT;
		if (r < 0)
			return r;
		/* Both locks, in order; the name may have moved meanwhile. */
		ino_ilock(ls, inos, 2);
		r = ino_entry_find(s, c, dirino, name, len, dir, &again);
		if (r == 0 && again == inos[1]) {
			r = ino_op_read(s, again, child);
			if (r == 0)
				return 0;
		}
		ino_iunlock(ls);
		if (r < 0)
			return r;
	}
}

bool ino_op_retry(ino_svc *s, int r, int *retries)
{
	if ((r != -ENOSPC && r != -ENOMEM) || (*retries)++ >= INO_RETRIES)
		return false;
	/* Blocks freed by a transaction not yet committed are not usable
	 * yet (ext3_should_retry_alloc), and buffers it pins cannot be
	 * evicted: commit it, then try again. */
	return ino_txn_sync(s) == 0;
}
