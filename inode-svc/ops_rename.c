/* ops_rename.c - rename, within a directory or across two, onto a free
 * name or replacing a file or an empty directory (renameat2's NOREPLACE
 * refuses to), or swapping two names of any types (EXCHANGE: both must
 * exist; directories swapped across parents get their ".." and the
 * parents' link counts follow), in one transaction under the locks of both directories,
 * the source and the target. A directory moved across gets its ".."
 * pointed at its new parent and the parents' link counts follow; it may
 * not go into its own subtree (EINVAL: the ".." chain from the new parent
 * is walked under the rename lock, which every cross-directory rename
 * holds, so no chain changes meanwhile), nor may the target be above the
 * source (ENOTEMPTY, as the kernel says it). Types must agree: a directory
 * replaces only a directory (ENOTDIR), a file only a file (EISDIR).
 * With WHITEOUT (overlayfs's renameat2 flag) the old name is not removed
 * but made to name a new whiteout inode, in the same transaction.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "ops.h"

#define INO_CRED_RENAME (2 * INO_CRED_DIR_ADD + INO_CRED_DIR_DEL + 4 * INO_CRED_INODE + 2 + \
			 INO_CRED_TRUNCATE)
/* The deepest directory chain walked looking for a loop. */
#define INO_RENAME_DEPTH 65536

struct ino_rn {
	const char *oname, *nname;
	size_t olen, nlen;
	uint32_t odirino, ndirino;
	ino_inode odir, ndir, src, tgt; /* ndir unused when the directories are one */
	uint32_t srcino, tgtino;        /* tgtino 0: the new name is free */
	bool whiteout;                  /* the old name then names a new whiteout */
};

/* Reads both directories and looks both names up. */
static int ino_rn_find(ino_svc *s, const ino_creds *c, struct ino_rn *x, uint32_t *src,
		       uint32_t *tgt)
{
	ino_inode *nd = x->odirino == x->ndirino ? &x->odir : &x->ndir;
	int r = ino_op_read(s, x->odirino, &x->odir);

	if (r == 0 && x->odirino != x->ndirino)
		r = ino_op_read(s, x->ndirino, &x->ndir);
	if (r == 0 && (!S_ISDIR(x->odir.mode) || !S_ISDIR(nd->mode)))
		r = -ENOTDIR;
	if (r == 0)
		r = ino_perm(&x->odir, c, 1);
	if (r == 0)
		r = ino_perm(nd, c, 1);
	if (r == 0)
		r = ino_op_lookup(s, &x->odir, x->oname, x->olen, src);
	if (r == 0 && *src == 0)
		r = -ENOENT;
	if (r == 0)
		r = ino_op_lookup(s, nd, x->nname, x->nlen, tgt);
	return r;
}

/* Locks the four inodes, retrying while the names move; returns locked. */
static int ino_rn_lock(ino_svc *s, const ino_creds *c, struct ino_rn *x, ino_ilockset *ls)
{
	uint32_t inos[4] = {x->odirino, x->ndirino, 0, 0}, src, tgt;
	int r;

	for (;;) {
		ino_ilock(ls, inos, 2);
		r = ino_rn_find(s, c, x, &inos[2], &inos[3]);
		ino_iunlock(ls);
		if (r < 0)
			return r;
		ino_ilock(ls, inos, 4);
		r = ino_rn_find(s, c, x, &src, &tgt);
		if (r == 0 && src == inos[2] && tgt == inos[3]) {
			x->srcino = src;
			x->tgtino = tgt;
			r = ino_op_read(s, src, &x->src);
			if (r == 0 && tgt)
				r = ino_op_read(s, tgt, &x->tgt);
			if (r == 0)
				return 0;
		}
		ino_iunlock(ls);
		if (r < 0)
			return r;
	}
}

/* -EINVAL if directory src is dir or one of its ancestors (lock_rename's
 * trap). Called with the rename lock held. */
static int ino_rn_loop(ino_svc *s, uint32_t src, uint32_t dir)
{
	ino_inode in;
	int r;

	for (int depth = 0; dir != EXT3_ROOT_INO; depth++) {
		if (dir == src)
			return -EINVAL;
		if (depth == INO_RENAME_DEPTH)
			return -ELOOP;
		r = ino_op_read(s, dir, &in);
		if (r == 0)
			r = ino_dir_parent(s->fs, &in, &dir);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The checks, in the kernel's order as far as it matters. */
static int ino_rn_check(ino_svc *s, const ino_creds *c, struct ino_rn *x, unsigned flags)
{
	bool cross = x->odirino != x->ndirino, sdir = S_ISDIR(x->src.mode);
	ino_inode *nd = cross ? &x->ndir : &x->odir;
	int r = 0;

	if (x->tgtino && (flags & CM_FS_RENAME_NOREPLACE))
		r = -EEXIST;
	/* The source may not be above the new directory (EINVAL), nor the
	 * target above the source (ENOTEMPTY), whatever the types. */
	if (r == 0 && sdir && cross)
		r = ino_rn_loop(s, x->srcino, x->ndirino);
	if (r == 0 && x->tgtino && S_ISDIR(x->tgt.mode) && cross) {
		r = ino_rn_loop(s, x->tgtino, x->odirino);
		r = r == -EINVAL ? -ENOTEMPTY : r;
	}
	if (r == 0 && x->srcino == x->tgtino)
		return 1; /* two names of one inode: nothing to do */
	if (r == 0)
		r = ino_perm(&x->odir, c, 2);
	if (r == 0)
		r = ino_perm_sticky(&x->odir, &x->src, c);
	if (r == 0 && nd->links == 0)
		r = -ENOENT;
	if (r == 0)
		r = ino_perm(nd, c, 2);
	if (r == 0 && x->tgtino)
		r = ino_perm_sticky(nd, &x->tgt, c);
	if (r == 0 && x->tgtino && sdir && !S_ISDIR(x->tgt.mode))
		r = -ENOTDIR;
	if (r == 0 && x->tgtino && !sdir && S_ISDIR(x->tgt.mode))
		r = -EISDIR;
	/* As in the kernel, whose VFS checks this before the file system
	 * looks at the target's entries: EACCES before ENOTEMPTY. */
	if (r == 0 && sdir && cross)
		r = ino_perm(&x->src, c, 2); /* its ".." changes */
	if (r == 0 && x->tgtino && sdir) {
		r = ino_dir_is_empty(s->fs, &x->tgt);
		r = r < 0 ? r : r == 0 ? -ENOTEMPTY : 0;
	}
	if (r == 0 && sdir && cross && !x->tgtino && nd->links >= INO_LINK_MAX)
		r = -EMLINK;
	return r;
}

/* The checks of an exchange (renameat2's RENAME_EXCHANGE): both names
 * exist, neither directory goes under itself (EINVAL both ways), both may
 * be removed from where they are (sticky bits too), a directory that
 * moves across may have its ".." changed, and a parent that gains a
 * subdirectory has room for the link. */
static int ino_rn_check_exchange(ino_svc *s, const ino_creds *c, struct ino_rn *x)
{
	bool cross = x->odirino != x->ndirino, sdir = S_ISDIR(x->src.mode);
	bool tdir = x->tgtino && S_ISDIR(x->tgt.mode);
	ino_inode *nd = cross ? &x->ndir : &x->odir;
	int r = x->tgtino ? 0 : -ENOENT;

	if (r == 0 && sdir && cross)
		r = ino_rn_loop(s, x->srcino, x->ndirino);
	if (r == 0 && tdir && cross)
		r = ino_rn_loop(s, x->tgtino, x->odirino);
	if (r == 0 && x->srcino == x->tgtino)
		return 1;
	if (r == 0)
		r = ino_perm(&x->odir, c, 2);
	if (r == 0)
		r = ino_perm_sticky(&x->odir, &x->src, c);
	if (r == 0)
		r = ino_perm(nd, c, 2);
	if (r == 0)
		r = ino_perm_sticky(nd, &x->tgt, c);
	if (r == 0 && sdir && cross)
		r = ino_perm(&x->src, c, 2);
	if (r == 0 && tdir && cross)
		r = ino_perm(&x->tgt, c, 2);
	if (r == 0 && cross && sdir && !tdir && nd->links >= INO_LINK_MAX)
		r = -EMLINK;
	if (r == 0 && cross && !sdir && tdir && x->odir.links >= INO_LINK_MAX)
		r = -EMLINK;
	return r;
}

/* An exchange's changes: each entry names the other inode; directories
 * that changed parent point their ".." there. */
static int ino_rn_txn_exchange(ino_svc *s, ino_txn *t, struct ino_rn *x)
{
	bool cross = x->odirino != x->ndirino, sdir = S_ISDIR(x->src.mode);
	bool tdir = S_ISDIR(x->tgt.mode);
	ino_inode *nd = cross ? &x->ndir : &x->odir;
	int r;

	r = ino_dir_retarget(s->fs, t, nd, x->nname, x->nlen, x->srcino, x->src.mode);
	if (r == 0)
		r = ino_dir_retarget(s->fs, t, &x->odir, x->oname, x->olen, x->tgtino, x->tgt.mode);
	if (r == 0 && cross && sdir)
		r = ino_dir_set_parent(s->fs, t, &x->src, x->ndirino);
	if (r == 0 && cross && tdir)
		r = ino_dir_set_parent(s->fs, t, &x->tgt, x->odirino);
	if (r == 0 && cross && sdir != tdir) {
		ino_inode *loses = sdir ? &x->odir : nd, *gains = sdir ? nd : &x->odir;
		ino_op_lose_subdir(loses);
		ino_op_gain_subdir(gains);
	}
	ino_inode_touch(t, &x->src, false);
	ino_inode_touch(t, &x->tgt, false);
	if (r == 0)
		r = ino_inode_write(s->fs, t, &x->src);
	if (r == 0)
		r = ino_inode_write(s->fs, t, &x->tgt);
	if (r == 0)
		r = ino_inode_write(s->fs, t, &x->odir);
	if (r == 0 && cross)
		r = ino_inode_write(s->fs, t, &x->ndir);
	return r;
}

/* RENAME_WHITEOUT: the old name points at a new whiteout inode (a
 * character device 0:0, mode 0, owned as a create by c would be), as
 * ext4_whiteout_for_rename makes it; it is freed again if that fails. */
static int ino_rn_whiteout(ino_svc *s, const ino_creds *c, ino_txn *t, struct ino_rn *x)
{
	uint16_t mode = S_IFCHR;
	ino_inode wh;
	uint32_t ino, gid;
	int r = ino_txn_alloc_inode(t, x->odirino, mode, &ino);

	if (r < 0)
		return r;
	ino_create_owner(c, &x->odir, &mode, &gid);
	r = ino_inode_new(s->fs, t, ino, mode, c->uid, gid, &wh);
	if (r < 0) {
		(void)ino_txn_free_inode(t, ino, mode);
		return r;
	}
	wh.flags = ino_flags_inherit(&x->odir, mode);
	wh.links = 1;
	r = ino_inode_write(s->fs, t, &wh);
	if (r == 0)
		r = ino_dir_retarget(s->fs, t, &x->odir, x->oname, x->olen, ino, mode);
	if (r < 0) {
		wh.links = 0;
		(void)ino_inode_delete(s->fs, t, &wh);
	}
	return r;
}

/* The transaction's changes. */
static int ino_rn_txn(ino_svc *s, const ino_creds *c, ino_txn *t, struct ino_rn *x)
{
	bool cross = x->odirino != x->ndirino, sdir = S_ISDIR(x->src.mode);
	ino_inode *nd = cross ? &x->ndir : &x->odir;
	uint32_t gone;
	int r;

	if (x->tgtino)
		r = ino_dir_retarget(s->fs, t, nd, x->nname, x->nlen, x->srcino, x->src.mode);
	else
		r = ino_dir_add(s->fs, t, nd, x->nname, x->nlen, x->srcino, x->src.mode);
	if (r == 0 && x->whiteout)
		r = ino_rn_whiteout(s, c, t, x);
	else if (r == 0)
		r = ino_dir_remove(s->fs, t, &x->odir, x->oname, x->olen, &gone);
	if (r == 0 && sdir && cross) {
		r = ino_dir_set_parent(s->fs, t, &x->src, x->ndirino);
		ino_op_lose_subdir(&x->odir);
		ino_op_gain_subdir(nd);
	}
	if (r == 0 && x->tgtino) {
		if (S_ISDIR(x->tgt.mode))
			ino_op_lose_subdir(nd);
		x->tgt.links = S_ISDIR(x->tgt.mode) || x->tgt.links == 0 ? 0 : x->tgt.links - 1;
		ino_inode_touch(t, &x->tgt, false);
		r = ino_op_unlinked(s, t, &x->tgt);
	}
	if (r == 0) {
		ino_inode_touch(t, &x->src, false);
		r = ino_inode_write(s->fs, t, &x->src);
	}
	if (r == 0)
		r = ino_inode_write(s->fs, t, &x->odir);
	if (r == 0 && cross)
		r = ino_inode_write(s->fs, t, &x->ndir);
	return r;
}

int ino_h_rename(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		 uint8_t *data)
{
	struct ino_rn x = {.oname = rq->name, .olen = rq->namelen, .nname = (const char *)data,
			   .nlen = rq->length};
	ino_svc *s = ss->svc;
	ino_ilockset ls;
	bool exchange = rq->flags & CM_FS_RENAME_EXCHANGE;
	ino_txn *t;
	int r, rn, retries = 0;

	(void)rs;
	if ((rq->flags & ~(CM_FS_RENAME_NOREPLACE | CM_FS_RENAME_EXCHANGE | CM_FS_RENAME_WHITEOUT)) ||
	    (exchange && (rq->flags & ~CM_FS_RENAME_EXCHANGE)))
		return -EINVAL;
	x.whiteout = rq->flags & CM_FS_RENAME_WHITEOUT;
	if (x.whiteout && !ino_capable(c))
		return -EPERM; /* do_renameat2: CAP_MKNOD */
	r = ino_grant_check(ss, rq->ino2);
	if (r < 0)
		return r;
	if (rq->ino == 0 || rq->ino > UINT32_MAX || rq->ino2 == 0 || rq->ino2 > UINT32_MAX)
		return -EINVAL;
	if (rq->length > CM_SEG_DATA)
		return -ENAMETOOLONG;
	r = ino_name_check(x.oname, x.olen);
	rn = r < 0 ? r : ino_name_check(x.nname, x.nlen);
	if (r < 0 || rn < 0)
		return r < 0 ? r : rn;
	if (r == 1 || rn == 1)
		return -EBUSY;
	x.odirino = (uint32_t)rq->ino;
	x.ndirino = (uint32_t)rq->ino2;
	if (x.odirino != x.ndirino)
		ino_rename_lock();
	do {
		r = ino_rn_lock(s, c, &x, &ls);
		if (r < 0)
			break;
		r = exchange ? ino_rn_check_exchange(s, c, &x) : ino_rn_check(s, c, &x, rq->flags);
		if (r == 0 && !exchange && x.tgtino)
			r = ino_op_may_unlink(s, &x.tgt);
		if (r == 0)
			r = ino_txn_start(s, c, INO_CRED_RENAME + 2 * INO_CRED_INODE + INO_CRED_IALLOC,
					  &t);
		if (r == 0) {
			uint32_t inos[4] = {x.odirino, x.ndirino, x.srcino, x.tgtino};
			r = exchange ? ino_rn_txn_exchange(s, t, &x) : ino_rn_txn(s, c, t, &x);
			int st = ino_op_stop(t, inos, 4, true);
			r = r < 0 ? r : st;
		}
		ino_iunlock(&ls);
	} while (ino_op_retry(s, r, &retries));
	if (x.odirino != x.ndirino)
		ino_rename_unlock();
	return r < 0 ? r : 0;
}
