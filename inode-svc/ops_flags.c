/* ops_flags.c - the inode flags lsattr and chattr see (FS_IOC_GETFLAGS,
 * FS_IOC_SETFLAGS) and what immutable and append-only forbid, with the
 * rules of the kernel's ext4 driver on an ext3 image (ext4_fileattr_set,
 * fileattr_set_prepare, notify_change, may_delete, vfs_link):
 * - the owner (or CAP_FOWNER) sets flags; only CAP_LINUX_IMMUTABLE moves
 *   immutable or append-only, and an immutable inode changes no other
 *   flag; flags outside the user-visible set are -EOPNOTSUPP, those that
 *   are visible but not settable are kept as they are;
 * - an immutable inode is not written, truncated, linked, removed,
 *   renamed, nor its mode, owner, times or extended attributes changed;
 *   an append-only one likewise, except that it may be written at its end
 *   and its times moved to now (perm.c, ops_data.c, ops_xattr.c);
 * - a new inode inherits some of its directory's flags (sync, noatime,
 *   nodump, dirsync...), those its type takes.
 * A setflags is one transaction under the inode's lock; ctime moves. */
#include <errno.h>
#include <sys/stat.h>

#include "ops.h"

/* ext4's EXT4_FL_USER_VISIBLE and EXT4_FL_USER_MODIFIABLE. */
#define INO_FL_USER_VISIBLE 0x725BDFFFu
#define INO_FL_USER_MODIFIABLE 0x624BC0FFu
#define INO_FL_NOCOMPR 0x00000400u
#define INO_FL_EXTENTS 0x00080000u
#define INO_FL_EOFBLOCKS 0x00400000u
#define INO_FL_PROJINHERIT 0x20000000u
#define INO_FL_CASEFOLD 0x40000000u
#define INO_FL_DAX 0x02000000u
/* ext4's EXT4_FL_INHERITED: what a new inode takes from its directory. */
#define INO_FL_INHERITED                                                                           \
	(EXT3_SECRM_FL | EXT3_UNRM_FL | EXT3_COMPR_FL | EXT3_SYNC_FL | EXT3_NODUMP_FL |            \
	 EXT3_NOATIME_FL | INO_FL_NOCOMPR | EXT3_JOURNAL_DATA_FL | EXT3_NOTAIL_FL |                \
	 EXT3_DIRSYNC_FL | INO_FL_PROJINHERIT | INO_FL_CASEFOLD | INO_FL_DAX)
/* ext4_mask_flags: what regular files and other non-directories take. */
#define INO_FL_REG_MASK (~(EXT3_DIRSYNC_FL | EXT3_TOPDIR_FL | INO_FL_CASEFOLD | INO_FL_PROJINHERIT))
#define INO_FL_OTHER_MASK (EXT3_NODUMP_FL | EXT3_NOATIME_FL)

static uint32_t ino_flags_mask(uint16_t mode, uint32_t flags)
{
	if (S_ISDIR(mode))
		return flags;
	return flags & (S_ISREG(mode) ? INO_FL_REG_MASK : INO_FL_OTHER_MASK);
}

uint32_t ino_flags_visible(const ino_inode *in)
{
	return in->flags & INO_FL_USER_VISIBLE;
}

uint32_t ino_flags_inherit(const ino_inode *dir, uint16_t mode)
{
	return ino_flags_mask(mode, dir->flags & INO_FL_INHERITED);
}

int ino_flags_may_change(const ino_inode *in)
{
	return in->flags & (EXT3_IMMUTABLE_FL | EXT3_APPEND_FL) ? -EPERM : 0;
}

int ino_flags_may_write(const ino_inode *in, bool at_end)
{
	if (in->flags & EXT3_IMMUTABLE_FL)
		return -EPERM;
	return (in->flags & EXT3_APPEND_FL) && !at_end ? -EPERM : 0;
}

/* May c set in's flags to want? 0, -EPERM or -EOPNOTSUPP. */
static int ino_setflags_check(const ino_creds *c, const ino_inode *in, uint32_t want)
{
	uint32_t old = in->flags, ia = EXT3_IMMUTABLE_FL | EXT3_APPEND_FL;

	if (!ino_owner(in, c))
		return -EPERM;
	if (((want ^ old) & ia) && !ino_capable(c))
		return -EPERM;
	if (want & ~INO_FL_USER_VISIBLE)
		return -EOPNOTSUPP;
	want &= INO_FL_USER_MODIFIABLE;
	if (ino_flags_mask(in->mode, want) != want)
		return -EOPNOTSUPP;
	/* ext4_ioctl_check_immutable: against all of the old flags */
	if ((old & EXT3_IMMUTABLE_FL) && (want & EXT3_IMMUTABLE_FL) &&
	    (old & ~EXT3_IMMUTABLE_FL) != (want & ~EXT3_IMMUTABLE_FL))
		return -EPERM;
	if (((want ^ old) & EXT3_JOURNAL_DATA_FL) && !ino_capable(c))
		return -EPERM;
	/* no extents nor casefolding on ext3; EOFBLOCKS is never added */
	if ((want ^ old) & (INO_FL_EXTENTS | INO_FL_CASEFOLD))
		return -EOPNOTSUPP;
	if (want & ~old & INO_FL_EOFBLOCKS)
		return -EOPNOTSUPP;
	return 0;
}

int ino_h_setflags(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		   uint8_t *data)
{
	uint32_t ino = (uint32_t)rq->ino, keep;
	ino_svc *s = ss->svc;
	ino_ilockset ls;
	ino_inode in;
	ino_txn *t;
	int r;

	(void)data;
	if (!s->jc)
		return -EROFS;
	ino_ilock(&ls, &ino, 1);
	r = ino_op_read(s, rq->ino, &in);
	if (r == 0)
		r = ino_setflags_check(c, &in, rq->flags);
	if (r == 0)
		r = ino_txn_start(s, c, INO_CRED_INODE, &t);
	if (r == 0) {
		keep = in.flags & ~INO_FL_USER_MODIFIABLE;
		in.flags = keep | (rq->flags & INO_FL_USER_MODIFIABLE);
		ino_inode_touch(t, &in, false);
		r = ino_inode_write(s->fs, t, &in);
		int st = ino_op_stop(t, &ino, 1, true);
		r = r < 0 ? r : st;
	}
	ino_iunlock(&ls);
	if (r == 0)
		ino_attr_fill(s, &in, &rs->attr);
	return r;
}
