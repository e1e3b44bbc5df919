/* ops_ns.c - the namespace: lookup and forget (the kernel's lookup counts
 * are inode-svc's grants), readlink, and the calls that make or remove
 * names: mknod, mkdir, symlink (as the caller: creds.c), link, unlink,
 * rmdir, rename (RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT).
 * Each change is one libext3d call, one transaction. */
#include <errno.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/stat.h>

#include "xfuse.h"

void xf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	xf_fs *x = xf_of(req);
	ext3d_attr a;
	int r = ext3d_lookup(x->fs, xf_ino(parent), name, &a);

	/* No such name: a negative entry (node id 0) that the kernel keeps
	 * for the entry timeout, so that the lookup before a create or a
	 * stat of a missing name is not asked again. */
	if (r == -ENOENT && x->cfg.entry_timeout > 0) {
		struct fuse_entry_param e = {.ino = 0, .entry_timeout = x->cfg.entry_timeout};
		fuse_reply_entry(req, &e);
		return;
	}
	xf_reply_entry(req, r, &a);
}

void xf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ext3d_forget(xf_of(req)->fs, xf_ino(ino), nlookup);
	fuse_reply_none(req);
}

void xf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		(void)ext3d_forget(xf_of(req)->fs, xf_ino(forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

void xf_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[4096];
	ssize_t n = ext3d_readlink_ino(xf_of(req)->fs, xf_ino(ino), buf, sizeof(buf) - 1);

	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	if ((size_t)n >= sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	buf[n] = '\0';
	xf_accessed(xf_of(req), ino);
	fuse_reply_readlink(req, buf);
}

/* A new inode of mode (type and permission bits, before the umask) as
 * the caller; inode-svc applies the umask or the default ACL. */
int xf_new_inode(fuse_req_t req, void *arg)
{
	xf_new *n = arg;
	xf_dirtok tok = xf_dir_begin(xf_of(req), xf_ino(n->parent));
	int r = ext3d_mknod_dirattr_ino(xf_of(req)->fs, xf_ino(n->parent), n->name, n->mode,
					n->rdev, xf_umask(req), &n->a, &n->dir);

	xf_dir_end(xf_of(req), &tok, r == 0 ? &n->dir : NULL);
	return r;
}

static void xf_make(fuse_req_t req, fuse_ino_t parent, const char *name, uint32_t mode,
		    uint32_t rdev)
{
	xf_new n = {.parent = parent, .name = name, .mode = mode, .rdev = rdev};
	int r = xf_as_caller(req, mode, xf_new_inode, &n);

	xf_reply_entry(req, r, &n.a);
}

void xf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	xf_make(req, parent, name, mode, (uint32_t)rdev);
}

void xf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	xf_make(req, parent, name, S_IFDIR | (mode & 07777), 0);
}

void xf_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	xf_fs *x = xf_of(req);
	ext3d_attr a;
	int r = xf_creds_begin(req);

	if (r == 0) {
		xf_dirtok tok = xf_dir_begin(x, xf_ino(parent));

		r = ext3d_symlink_ino(x->fs, xf_ino(parent), name, link, &a);
		xf_dir_end(x, &tok, NULL);
	}
	xf_creds_end(req);
	xf_reply_entry(req, r, &a);
}

void xf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	ext3d_attr a;
	int r = xf_creds_checked(req);

	if (r == 0) {
		xf_dirtok tok = xf_dir_begin(xf_of(req), xf_ino(newparent));

		r = ext3d_link_ino(xf_of(req)->fs, xf_ino(ino), xf_ino(newparent), newname, &a);
		xf_dir_end(xf_of(req), &tok, NULL);
	}
	xf_creds_end(req);

	xf_reply_entry(req, r, &a);
}

void xf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	ext3d_attr d;
	xf_dirtok tok = xf_dir_begin(xf_of(req), xf_ino(parent));
	int r = ext3d_unlink_dirattr_ino(xf_of(req)->fs, xf_ino(parent), name, &d);

	xf_dir_end(xf_of(req), &tok, r == 0 ? &d : NULL);
	fuse_reply_err(req, -r);
}

void xf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int r;

	xf_dir_all_begin(xf_of(req));
	r = ext3d_rmdir_ino(xf_of(req)->fs, xf_ino(parent), name);
	xf_dir_all_end(xf_of(req));
	fuse_reply_err(req, -r);
}

void xf_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags)
{
	unsigned f = 0;
	int r;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (flags & RENAME_NOREPLACE)
		f |= EXT3D_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		f |= EXT3D_RENAME_EXCHANGE;
	if (flags & RENAME_WHITEOUT)
		f |= EXT3D_RENAME_WHITEOUT; /* the kernel checked CAP_MKNOD */
	r = xf_creds_checked(req);
	if (r == 0) {
		xf_dir_all_begin(xf_of(req));
		r = ext3d_rename_ino(xf_of(req)->fs, xf_ino(parent), name, xf_ino(newparent),
				     newname, f);
		xf_dir_all_end(xf_of(req));
	}
	xf_creds_end(req);
	fuse_reply_err(req, -r);
}
