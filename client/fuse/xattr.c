/* xattr.c - extended attributes and POSIX ACLs on the mount: getxattr,
 * setxattr, listxattr, removexattr, each one libext3d call run as the
 * caller (creds.c), so that inode-svc applies the rules the kernel's ext3
 * applies (the trusted. names a non-root caller may not see, who may set
 * an ACL, the set-gid bit an access ACL takes away). With
 * FUSE_CAP_POSIX_ACL (ops.c) the kernel enforces the ACLs it reads here
 * and leaves to the daemon, that is to inode-svc, the mode an access ACL
 * sets, the ACL a chmod rewrites and the default ACL a new inode inherits
 * (with the caller's umask when there is none). */
#include <errno.h>
#include <stdlib.h>

#include "xfuse.h"

/* The largest value or name list the VFS asks for (XATTR_SIZE_MAX). */
#define XF_XATTR_MAX 65536

/* Replies to a get or list: the size when size is 0, else the bytes. */
static void xf_xattr_reply(fuse_req_t req, size_t size, char *buf, ssize_t n)
{
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

void xf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char *buf = size ? malloc(size < XF_XATTR_MAX ? size : XF_XATTR_MAX) : NULL;
	ssize_t n = size && !buf ? -ENOMEM : xf_creds_begin(req);

	if (n == 0)
		n = ext3d_getxattr_ino(xf_of(req)->fs, xf_ino(ino), name, buf,
				       size < XF_XATTR_MAX ? size : XF_XATTR_MAX);
	xf_creds_end(req);
	xf_xattr_reply(req, size, buf, n);
	free(buf);
}

void xf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = size ? malloc(size < XF_XATTR_MAX ? size : XF_XATTR_MAX) : NULL;
	ssize_t n = size && !buf ? -ENOMEM : xf_creds_begin(req);

	if (n == 0)
		n = ext3d_listxattr_ino(xf_of(req)->fs, xf_ino(ino), buf,
					size < XF_XATTR_MAX ? size : XF_XATTR_MAX);
	xf_creds_end(req);
	xf_xattr_reply(req, size, buf, n);
	free(buf);
}

void xf_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
		 int flags)
{
	xf_dirtok tok = xf_dir_begin(xf_of(req), xf_ino(ino));
	int r = xf_creds_begin(req);

	if (r == 0)
		r = ext3d_setxattr_ino(xf_of(req)->fs, xf_ino(ino), name, value, size, flags);
	xf_creds_end(req);
	xf_dir_end(xf_of(req), &tok, NULL);
	fuse_reply_err(req, -r);
}

void xf_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	xf_dirtok tok = xf_dir_begin(xf_of(req), xf_ino(ino));
	int r = xf_creds_begin(req);

	if (r == 0)
		r = ext3d_removexattr_ino(xf_of(req)->fs, xf_ino(ino), name);
	xf_creds_end(req);
	xf_dir_end(xf_of(req), &tok, NULL);
	fuse_reply_err(req, -r);
}
