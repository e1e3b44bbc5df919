/* attr.c - libext3d's attributes in FUSE's forms: struct stat (st_ino is
 * the ext3 inode number, 2 for the root, as the kernel's ext3 shows it)
 * and the entry of a lookup (node id: the inode number with its
 * generation above it, FUSE_ROOT_ID for the root), with the configured
 * timeouts. */
#include <errno.h>
#include <string.h>

#include "xfuse.h"

void xf_stat(const ext3d_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev; /* Linux dev_t encoding, as FUSE carries it */
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_blksize = a->blksize;
	st->st_atim = (struct timespec){.tv_sec = a->atime, .tv_nsec = a->atime_ns};
	st->st_mtim = (struct timespec){.tv_sec = a->mtime, .tv_nsec = a->mtime_ns};
	st->st_ctim = (struct timespec){.tv_sec = a->ctime, .tv_nsec = a->ctime_ns};
}

void xf_entry(const xf_fs *x, const ext3d_attr *a, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = xf_node(a);
	e->generation = a->generation; /* the kernel's check of a reused node id */
	e->attr_timeout = x->cfg.attr_timeout;
	e->entry_timeout = x->cfg.entry_timeout;
	xf_stat(a, &e->attr);
}

void xf_reply_entry(fuse_req_t req, int r, const ext3d_attr *a)
{
	struct fuse_entry_param e;

	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	xf_entry(xf_of(req), a, &e);
	if (fuse_reply_entry(req, &e) != 0)
		(void)ext3d_forget(xf_of(req)->fs, a->ino, 1); /* the kernel did not take it */
}
