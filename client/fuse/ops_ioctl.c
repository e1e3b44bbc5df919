/* ops_ioctl.c - the ioctls a FUSE mount passes on: FS_IOC_GETFLAGS and
 * FS_IOC_SETFLAGS (lsattr, chattr) and FS_IOC_FSGETXATTR and
 * FS_IOC_FSSETXATTR (the same flags as xflags; the kernel asks for them
 * before any set, to check what changes), which the kernel's fileattr
 * code sends on a file or directory it opened for the purpose. The
 * kernel checked the caller there (the owner or CAP_FOWNER,
 * CAP_LINUX_IMMUTABLE to move immutable or append-only), so a set runs
 * with checked credentials (journal-data aside, xf_set_flags); inode-svc
 * keeps ext3's rules on which flags a file takes. Any other ioctl is
 * ENOTTY. */
#include <errno.h>
#include <linux/fs.h>
#include <stdint.h>
#include <string.h>

#include "xfuse.h"

/* The flags xflags stand for (fileattr_fill_xflags). */
static const struct {
	uint32_t flag, xflag;
} xf_xflags[] = {
	{FS_SYNC_FL, FS_XFLAG_SYNC},
	{FS_IMMUTABLE_FL, FS_XFLAG_IMMUTABLE},
	{FS_APPEND_FL, FS_XFLAG_APPEND},
	{FS_NODUMP_FL, FS_XFLAG_NODUMP},
	{FS_NOATIME_FL, FS_XFLAG_NOATIME},
	{FS_DAX_FL, FS_XFLAG_DAX},
	{FS_PROJINHERIT_FL, FS_XFLAG_PROJINHERIT},
};
#define XF_NXFLAGS (sizeof(xf_xflags) / sizeof(xf_xflags[0]))

static uint32_t xf_to_xflags(uint32_t flags)
{
	uint32_t x = 0;

	for (size_t i = 0; i < XF_NXFLAGS; i++)
		if (flags & xf_xflags[i].flag)
			x |= xf_xflags[i].xflag;
	return x;
}

/* flags with those xflags stand for set from x, the others kept. */
static uint32_t xf_from_xflags(uint32_t flags, uint32_t x)
{
	for (size_t i = 0; i < XF_NXFLAGS; i++) {
		flags &= ~xf_xflags[i].flag;
		if (x & xf_xflags[i].xflag)
			flags |= xf_xflags[i].flag;
	}
	return flags;
}

static void xf_get(fuse_req_t req, fuse_ino_t ino, bool xattr, size_t out_bufsz)
{
	struct fsxattr fa = {0};
	uint32_t flags;
	ext3d_attr a;
	int r = ext3d_getattr(xf_of(req)->fs, xf_ino(ino), &a);

	if (r == 0 && out_bufsz < (xattr ? sizeof(fa) : sizeof(flags)))
		r = -EINVAL;
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	flags = a.flags;
	fa.fsx_xflags = xf_to_xflags(a.flags);
	if (xattr)
		fuse_reply_ioctl(req, 0, &fa, sizeof(fa));
	else
		fuse_reply_ioctl(req, 0, &flags, sizeof(flags));
}

/* The flags a set asks for (from the xflags, the others kept, for
 * FSSETXATTR). ext4 itself asks CAP_SYS_RESOURCE to move journal-data,
 * which the kernel did not check: root only here, as inode-svc says. */
static int xf_set_flags(fuse_req_t req, fuse_ino_t ino, bool xattr, const void *in_buf,
			uint32_t *ret)
{
	struct fsxattr fa;
	ext3d_attr a;
	int r = ext3d_getattr(xf_of(req)->fs, xf_ino(ino), &a);

	if (r < 0)
		return r;
	if (xattr) {
		memcpy(&fa, in_buf, sizeof(fa));
		if (fa.fsx_projid)
			return -EOPNOTSUPP; /* no project quota on ext3 */
		*ret = xf_from_xflags(a.flags, fa.fsx_xflags);
	} else {
		memcpy(ret, in_buf, sizeof(*ret));
	}
	if (((*ret ^ a.flags) & FS_JOURNAL_DATA_FL) && fuse_req_ctx(req)->uid != 0)
		return -EPERM;
	return 0;
}

static void xf_set(fuse_req_t req, fuse_ino_t ino, bool xattr, const void *in_buf, size_t in_bufsz)
{
	uint32_t flags = 0;
	int r = in_bufsz < (xattr ? sizeof(struct fsxattr) : sizeof(flags)) ? -EINVAL : 0;

	if (r == 0)
		r = xf_set_flags(req, ino, xattr, in_buf, &flags);
	if (r == 0)
		r = xf_creds_checked(req);
	if (r == 0) {
		xf_dirtok tok = xf_dir_begin(xf_of(req), xf_ino(ino));

		r = ext3d_setflags_ino(xf_of(req)->fs, xf_ino(ino), flags, NULL);
		xf_dir_end(xf_of(req), &tok, NULL);
	}
	xf_creds_end(req);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}

void xf_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
	      struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
	      size_t out_bufsz)
{
	(void)arg;
	(void)fi;
	(void)flags; /* FUSE_IOCTL_DIR, COMPAT: the records are the same */
	switch (cmd) {
	case FS_IOC_GETFLAGS:
	case FS_IOC_FSGETXATTR:
		xf_get(req, ino, cmd == FS_IOC_FSGETXATTR, out_bufsz);
		break;
	case FS_IOC_SETFLAGS:
	case FS_IOC_FSSETXATTR:
		xf_set(req, ino, cmd == FS_IOC_FSSETXATTR, in_buf, in_bufsz);
		break;
	default:
		fuse_reply_err(req, ENOTTY);
	}
}
