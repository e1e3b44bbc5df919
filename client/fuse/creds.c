/* creds.c - who a request acts as. The kernel checks permissions itself
 * (default_permissions), so most calls run as the daemon (root); the calls
 * that create an inode run as the caller (ext3d_act_as with its fsuid,
 * fsgid and supplementary groups from the kernel) so that the new inode
 * gets the caller's owner, and the group inode-svc picks (the caller's, or
 * a set-group-ID directory's). The other calls that may allocate blocks
 * (write, fallocate, link, rename) pass the caller as checked creds
 * (EXT3D_CREDS_CHECKED): no permission is checked again, but only root
 * (or the superblock's resuid/resgid) gets the reserved blocks. A daemon
 * that is not root cannot act for others: its calls run as itself. The
 * supplementary groups cost a read of /proc/PID/task/TID/status: creates
 * fetch them only when inode-svc needs them (a set-gid mode, or a
 * permission it refused; xf_as_caller); checked creds always carry them,
 * for resgid. */
#include <errno.h>
#include <sys/stat.h>

#include "xfuse.h"

/* Acts as req's caller (flags: EXT3D_CREDS_*), with its supplementary
 * groups or without. */
static int xf_creds_act(fuse_req_t req, uint32_t flags, bool with_groups)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[EXT3D_MAX_GROUPS];
	ext3d_creds c = {.uid = ctx->uid, .gid = ctx->gid, .flags = flags};
	int n = with_groups ? fuse_req_getgroups(req, EXT3D_MAX_GROUPS, groups) : 0;
	int r;

	/* More groups than inode-svc takes: the first ones (the kernel
	 * already checked permissions with all of them). */
	c.ngroups = n < 0 ? 0 : n > EXT3D_MAX_GROUPS ? EXT3D_MAX_GROUPS : (uint32_t)n;
	for (uint32_t i = 0; i < c.ngroups; i++)
		c.groups[i] = groups[i];
	r = ext3d_act_as(xf_of(req)->fs, &c);
	return r == -EPERM ? 0 : r;
}

int xf_creds_begin(fuse_req_t req)
{
	return xf_creds_act(req, 0, true);
}

int xf_creds_checked(fuse_req_t req)
{
	return xf_creds_act(req, EXT3D_CREDS_CHECKED, true);
}

int xf_as_caller(fuse_req_t req, uint32_t mode, int (*call)(fuse_req_t req, void *arg),
		 void *arg)
{
	/* Without the groups, inode-svc may refuse (EACCES, EPERM) what a
	 * group allows, or drop a set-gid bit that a group keeps; root
	 * needs none. A refused call changed nothing: it runs again. */
	bool sgid = (mode & S_ISGID) && !S_ISDIR(mode);
	bool with = sgid && fuse_req_ctx(req)->uid != 0;
	int r = xf_creds_act(req, 0, with);

	if (r == 0)
		r = call(req, arg);
	if (!with && fuse_req_ctx(req)->uid != 0 && (r == -EACCES || r == -EPERM)) {
		r = xf_creds_act(req, 0, true);
		if (r == 0)
			r = call(req, arg);
	}
	xf_creds_end(req);
	return r;
}

void xf_creds_end(fuse_req_t req)
{
	(void)ext3d_act_as(xf_of(req)->fs, NULL);
}

uint32_t xf_umask(fuse_req_t req)
{
	return (uint32_t)fuse_req_ctx(req)->umask;
}
