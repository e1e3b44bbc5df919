/* ops_data.c - open files: open and create (an xf_file per open; the page
 * cache kept when the file is as the last open saw it, cache.c), read,
 * write (O_APPEND at the end inode-svc sees, unless the kernel's
 * write-back cache places the bytes), release, fsync and fdatasync
 * (wait for the commit that holds the file's changes), fallocate (punch
 * hole; the other modes are EOPNOTSUPP, as on the kernel's ext3) and
 * copy_file_range (read, then write, through libext3d), lseek's
 * SEEK_DATA / SEEK_HOLE (from the block map). The data calls run as the
 * daemon: the kernel checked the open's access mode, and an open
 * descriptor keeps its rights as the kernel's do; the ones that may take
 * blocks name the caller for the reserved blocks (creds.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iflags.h"
#include "xfuse.h"

#define XF_COPY_CHUNK (1u << 20)

static int xf_file_new(int flags, struct fuse_file_info *fi)
{
	xf_file *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->flags = flags;
	fi->fh = (uint64_t)(uintptr_t)f;
	return 0;
}

static xf_file *xf_file_of(struct fuse_file_info *fi)
{
	return (xf_file *)(uintptr_t)fi->fh;
}

void xf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	xf_fs *x = xf_of(req);
	ext3d_attr a;
	int r = ext3d_getattr(x->fs, xf_ino(ino), &a);

	if (r == 0 && S_ISDIR(a.mode))
		r = -EISDIR;
	if (r == 0)
		r = cm_iflags_may_open(a.flags, fi->flags);
	if (r == 0)
		r = xf_file_new(fi->flags, fi);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	/* A read relatime would time must reach the daemon (atime.c). */
	fi->keep_cache = xf_keep_cache(x, &a) && !xf_atime_due(&a);
	if (fuse_reply_open(req, fi) != 0)
		free(xf_file_of(fi)); /* the opener went away */
}

/* open(2) of an existing file for create, which the kernel sent because
 * its cache had no such name (another client made it since): the caller
 * must be allowed the access flags ask for, O_TRUNC truncates. *a: the
 * file, granted (given back on failure). */
static int xf_create_existing(fuse_req_t req, fuse_ino_t parent, const char *name, int flags,
			      ext3d_attr *a)
{
	xf_fs *x = xf_of(req);
	int acc = flags & O_ACCMODE, mask = 0, r;
	ext3d_setattr zero = {.size = 0};

	if (acc != O_WRONLY)
		mask |= R_OK;
	if (acc != O_RDONLY || (flags & O_TRUNC))
		mask |= W_OK;
	r = ext3d_lookup(x->fs, xf_ino(parent), name, a);
	if (r < 0)
		return r;
	if (!S_ISREG(a->mode))
		r = S_ISDIR(a->mode) ? -EISDIR : -EEXIST;
	if (r == 0)
		r = xf_creds_begin(req);
	if (r == 0)
		r = ext3d_access_ino(x->fs, a->ino, mask);
	xf_creds_end(req);
	if (r == 0)
		r = cm_iflags_may_open(a->flags, flags);
	if (r == 0 && (flags & O_TRUNC))
		r = ext3d_setattr_ino(x->fs, a->ino, &zero, EXT3D_SET_SIZE, a);
	if (r < 0)
		(void)ext3d_forget(x->fs, a->ino, 1);
	return r;
}

void xf_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi)
{
	xf_fs *x = xf_of(req);
	struct fuse_entry_param e;
	xf_new n = {.parent = parent, .name = name, .mode = S_IFREG | (mode & 07777)};
	ext3d_attr a;
	int r = xf_as_caller(req, n.mode, xf_new_inode, &n);

	a = n.a;
	if (r == -EEXIST && !(fi->flags & O_EXCL))
		r = xf_create_existing(req, parent, name, fi->flags, &a);
	if (r == 0 && (r = xf_file_new(fi->flags, fi)) < 0)
		(void)ext3d_forget(x->fs, a.ino, 1);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	xf_keep_note(x, &a);
	xf_entry(x, &a, &e);
	if (fuse_reply_create(req, &e, fi) != 0) {
		(void)ext3d_forget(x->fs, a.ino, 1);
		free(xf_file_of(fi));
	}
}

void xf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	(void)fi;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = off < 0 ? -EINVAL : ext3d_read_ino(xf_of(req)->fs, xf_ino(ino), buf, size,
					       (uint64_t)off);
	if (n >= 0)
		xf_accessed(xf_of(req), ino);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

void xf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi)
{
	xf_fs *x = xf_of(req);
	xf_file *f = xf_file_of(fi);
	unsigned flags = 0;
	ssize_t n;

	if (f && (f->flags & O_APPEND) && !x->cfg.writeback && !fi->writepage)
		flags |= EXT3D_WRITE_APPEND;
	n = off < 0 ? -EINVAL : xf_creds_checked(req);
	if (n == 0)
		n = ext3d_write_ino(x->fs, xf_ino(ino), buf, size, (uint64_t)off, flags);
	xf_creds_end(req);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	if (f)
		__atomic_store_n(&f->written, true, __ATOMIC_RELAXED);
	fuse_reply_write(req, (size_t)n);
}

void xf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	xf_fs *x = xf_of(req);
	xf_file *f = xf_file_of(fi);
	ext3d_attr a;

	/* Our writes went through the page cache: it holds the new bytes. */
	if (f && __atomic_load_n(&f->written, __ATOMIC_RELAXED) &&
	    ext3d_getattr(x->fs, xf_ino(ino), &a) == 0)
		xf_keep_note(x, &a);
	free(f);
	fuse_reply_err(req, 0);
}

void xf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)fi;
	fuse_reply_err(req, -ext3d_fsync_ino(xf_of(req)->fs, xf_ino(ino), datasync));
}

void xf_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
		  struct fuse_file_info *fi)
{
	int r;

	(void)fi;
	r = offset < 0 || length <= 0 ? -EINVAL : xf_creds_checked(req);
	if (r == 0)
		r = ext3d_fallocate_ino(xf_of(req)->fs, xf_ino(ino), mode, (uint64_t)offset,
					(uint64_t)length);
	xf_creds_end(req);
	fuse_reply_err(req, -r);
}

/* The kernel sends only SEEK_DATA and SEEK_HOLE (it does SEEK_SET, CUR
 * and END itself); inode-svc answers from the block map. */
void xf_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	int64_t r = off < 0 ? -ENXIO : ext3d_lseek_ino(xf_of(req)->fs, xf_ino(ino), (uint64_t)off,
							whence);

	(void)fi;
	if (r < 0)
		fuse_reply_err(req, (int)-r);
	else
		fuse_reply_lseek(req, (off_t)r);
}

void xf_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			struct fuse_file_info *fi_out, size_t len, int flags)
{
	xf_fs *x = xf_of(req);
	size_t chunk = len < XF_COPY_CHUNK ? len : XF_COPY_CHUNK, done = 0;
	char *buf;
	int r = 0;

	(void)fi_in;
	if (flags != 0 || off_in < 0 || off_out < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	buf = malloc(chunk ? chunk : 1);
	r = buf ? xf_creds_checked(req) : -ENOMEM;
	while (r == 0 && done < len) {
		size_t want = len - done < chunk ? len - done : chunk;
		ssize_t n = ext3d_read_ino(x->fs, xf_ino(ino_in), buf, want, (uint64_t)off_in + done);
		ssize_t w = n > 0 ? ext3d_write_ino(x->fs, xf_ino(ino_out), buf, (size_t)n,
						    (uint64_t)off_out + done, 0)
				  : n;
		if (w <= 0) {
			r = (int)w;
			break;
		}
		done += (size_t)w;
		if (w < n || (size_t)n < want)
			break;
	}
	xf_creds_end(req);
	free(buf);
	if (done && fi_out)
		__atomic_store_n(&xf_file_of(fi_out)->written, true, __ATOMIC_RELAXED);
	if (done == 0 && r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_write(req, done);
}
