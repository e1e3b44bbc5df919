/* ops_atime.c - the access time of a read (setattr with
 * CM_FS_SET_ATIME_ACCESS alone), kept as the kernel's ext3 keeps it on a
 * relatime mount, its default: touch_atime moves atime to now only when
 * relatime_need_update says so (atime not later than mtime, or than
 * ctime, or a day old), and nothing else moves (inode_update_time with
 * S_ATIME: not ctime). ext3d-fuse asks after each read, readdir and
 * readlink, which the FUSE module does not time itself (S_NOATIME). An
 * inode with the noatime flag (chattr +A) keeps its atime. */
#include "internal.h"
#include "ops.h"
#include "relatime.h"

static bool ino_atime_due(const ino_inode *in)
{
	return !(in->flags & EXT3_NOATIME_FL) && cm_relatime_due(in->atime, in->atime_ns, in->mtime, in->mtime_ns, in->ctime,
			       in->ctime_ns);
}

int ino_setattr_access(ino_svc *s, const ino_creds *c, uint64_t ino, cm_fs_resp *rs)
{
	uint32_t ino32 = (uint32_t)ino;
	ino_ilockset ls;
	ino_inode in;
	ino_txn *t;
	int r;

	ino_ilock(&ls, &ino32, 1);
	r = ino_op_read(s, ino, &in);
	if (r == 0 && !ino_capable(c))
		r = ino_perm(&in, c, 4); /* a reader's: it may read the inode */
	/* Read-only, as on a read-only mount, a read leaves atime alone. */
	if (r == 0 && ino_atime_due(&in) && !ino_fserror_read_only(s) &&
	    (r = ino_txn_start(s, c, INO_CRED_INODE, &t)) == 0) {
		struct timespec now = ino_txn_now(t);

		in.atime = now.tv_sec;
		in.atime_ns = EXT3_INODE_FITS(in.extra_isize, i_atime_extra) ? (uint32_t)now.tv_nsec : 0;
		r = ino_inode_write(s->fs, t, &in);
		/* A read's atime is no change a client was told of: a restart
		 * that loses it is not the error sequence's business. */
		uint32_t tid;
		int st = ino_txn_stop(t, &tid);
		ino_tid_note(ino32, tid, false);
		r = r < 0 ? r : st;
	}
	ino_iunlock(&ls);
	if (r == 0)
		ino_attr_fill(s, &in, &rs->attr);
	return r;
}
