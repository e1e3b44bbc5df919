/* ops_data.c - a file's bytes and attributes: write (O_APPEND, O_SYNC),
 * setattr (mode, owner, size, times with nanoseconds or the server's
 * clock), fsync / fdatasync, sync. A write runs in as many transactions as
 * its length needs, each as large as the journal takes, under the inode's
 * lock throughout; a setattr is one (a huge shrink restarts inside
 * ino_truncate, kept safe by the orphan list). Permission rules are the
 * kernel's (inode_change_ok / setattr_prepare, file_remove_privs): chown
 * only by root (or the owner to its own uid), chgrp by the owner to one of
 * its groups, chmod and explicit times by the owner or root, times "now"
 * by anyone who may write; set-id bits go when a non-root caller writes
 * or truncates, on chown, and setgid on a non-root chmod outside the group.
 * fallocate punches holes (the only mode ext3 has).
 */
#include <errno.h>
#include <sys/stat.h>

#include "journal.h"
#include "ops.h"

/* Whether a change by c takes set-group-ID away (setattr_should_drop_sgid):
 * when the group may execute, or c is neither root nor in the file's group. */
static bool ino_drop_sgid(const ino_inode *in, const ino_creds *c)
{
	return (in->mode & S_ISGID) &&
	       ((in->mode & S_IXGRP) || (c->uid != 0 && !ino_cred_in_group(c, in->gid)));
}

/* The set-id bits a write or truncate by c takes away
 * (setattr_should_drop_suidgid): none for root (CAP_FSETID), whatever
 * ext3d-fuse checked for the caller. */
static uint16_t ino_killpriv(const ino_inode *in, const ino_creds *c)
{
	uint16_t kill = 0;

	if (c->uid == 0 || !S_ISREG(in->mode))
		return 0;
	if (in->mode & S_ISUID)
		kill |= S_ISUID;
	if (ino_drop_sgid(in, c))
		kill |= S_ISGID;
	return kill;
}

/* The most credits one write transaction asks for. */
static int ino_write_cap(ino_svc *s)
{
	return (int)(s->jc->j->j_max_transaction_buffers / 2);
}

/* The bytes of [off, off + len) one transaction takes: all of them, or
 * fewer whole blocks while their credits pass the cap. */
static size_t ino_write_chunk(ino_svc *s, uint64_t off, size_t len)
{
	uint32_t bs = ino_fs_geom(s->fs)->block_size;
	int cap = ino_write_cap(s);

	while (len > bs && ino_cred_write(s->fs, off, len) > cap) {
		size_t half = len / 2;
		uint64_t end = (off + half) / bs * bs; /* end the chunk on a block boundary */
		len = end > off ? (size_t)(end - off) : bs - off % bs;
	}
	return len;
}

/* Writes len bytes at off, chunk by chunk, one transaction each; *done
 * gets the bytes written. Called with in's lock held. */
static int ino_write_loop(ino_svc *s, const ino_creds *c, ino_inode *in, const uint8_t *buf,
			  size_t len, uint64_t off, bool sync, size_t *done)
{
	uint16_t kill = ino_killpriv(in, c);
	uint32_t tid;
	ino_txn *t;
	int r = 0;

	int retries = 0;

	*done = 0;
	while (*done < len) {
		size_t chunk = ino_write_chunk(s, off + *done, len - *done);
		ssize_t n;
		r = ino_txn_start(s, c, ino_cred_write(s->fs, off + *done, chunk), &t);
		if (r < 0)
			break;
		if (kill) {
			in->mode &= (uint16_t)~kill;
			kill = 0;
		}
		n = ino_file_write(s->fs, t, in, buf + *done, chunk, off + *done);
		r = ino_op_stop(t, &in->ino, 1, true);
		if (n < 0)
			r = (int)n;
		if (ino_op_retry(s, r, &retries))
			continue;
		if (r < 0)
			break;
		*done += (size_t)n;
		if (n == 0)
			break;
	}
	if (sync && *done && ino_tid_last(in->ino, true, &tid))
		r = ino_txn_wait(s, tid); /* O_SYNC: durable, data included */
	else if (*done)
		r = 0;
	return r;
}

/* Reads ino, locked by the caller, for a change of its bytes by c: a
 * regular file (-EISDIR, or notreg for other types) that c may write. */
static int ino_data_read(ino_svc *s, const ino_creds *c, uint64_t ino, int notreg,
			 ino_inode *in)
{
	int r = ino_op_read(s, ino, in);

	if (r == 0 && S_ISDIR(in->mode))
		r = -EISDIR;
	else if (r == 0 && !S_ISREG(in->mode))
		r = notreg;
	if (r == 0)
		r = ino_perm(in, c, 2);
	return r;
}

int ino_h_write(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		uint8_t *data)
{
	ino_svc *s = ss->svc;
	uint32_t ino = (uint32_t)rq->ino;
	uint64_t off = rq->offset;
	ino_ilockset ls;
	ino_inode in;
	size_t done = 0;
	int r;

	if (rq->flags & ~(CM_FS_WRITE_APPEND | CM_FS_WRITE_SYNC))
		return -EINVAL;
	if (rq->length > CM_SEG_DATA)
		return -EINVAL;
	if (!s->jc)
		return -EROFS;
	ino_ilock(&ls, &ino, 1);
	r = ino_data_read(s, c, rq->ino, -EINVAL, &in);
	if (r == 0 && (rq->flags & CM_FS_WRITE_APPEND))
		off = in.size;
	if (r == 0)
		r = ino_flags_may_write(&in, off == in.size);
	if (r == 0 && rq->length && off >= ino_fs_max_size(s->fs))
		r = -EFBIG;
	if (r == 0 && (int64_t)off < 0)
		r = -EINVAL;
	if (r == 0)
		r = ino_write_loop(s, c, &in, data, rq->length, off,
				   rq->flags & CM_FS_WRITE_SYNC, &done);
	ino_iunlock(&ls);
	if (r < 0)
		return r;
	rs->length = (uint32_t)done;
	ino_attr_fill(s, &in, &rs->attr);
	return 0;
}

/* May c make the changes rq asks of in? 0, -EPERM or -EACCES. */
static int ino_setattr_check(const ino_creds *c, const cm_fs_req *rq, const ino_inode *in)
{
	uint32_t f = rq->flags;
	bool root = ino_capable(c), owner = c->uid == in->uid;

	/* ext4_setattr: nothing changes on an immutable inode (not even
	 * ctime alone); on an append-only one only the times, to now */
	if (f && ino_flags_may_write(in, true) < 0)
		return -EPERM;
	if ((f & (CM_FS_SET_MODE | CM_FS_SET_UID | CM_FS_SET_GID | CM_FS_SET_SIZE |
		  CM_FS_SET_ATIME | CM_FS_SET_MTIME)) && ino_flags_may_change(in) < 0)
		return -EPERM;
	if ((f & CM_FS_SET_UID) && !root && !(owner && rq->uid == in->uid))
		return -EPERM;
	if ((f & CM_FS_SET_GID) && !root &&
	    !(owner && (rq->gid == in->gid || ino_cred_in_group(c, rq->gid))))
		return -EPERM;
	if ((f & CM_FS_SET_MODE) && !ino_owner(in, c))
		return -EPERM;
	if ((f & (CM_FS_SET_ATIME | CM_FS_SET_MTIME)) && !ino_owner(in, c))
		return -EPERM;
	if ((f & (CM_FS_SET_ATIME_NOW | CM_FS_SET_MTIME_NOW | CM_FS_SET_CTIME_NOW)) &&
	    !ino_owner(in, c) &&
	    ino_perm(in, c, 2) < 0)
		return -EACCES;
	if (f & CM_FS_SET_SIZE) {
		if (S_ISDIR(in->mode))
			return -EISDIR;
		if (!S_ISREG(in->mode))
			return -EINVAL;
		return ino_perm(in, c, 2);
	}
	return 0;
}

/* Sets a time from the request (as the fs can hold it) or the
 * transaction's clock. */
static void ino_set_time(ino_svc *s, ino_txn *t, const ino_inode *in, bool now, int64_t sec,
			 uint32_t ns, int64_t *ret_sec, uint32_t *ret_ns)
{
	struct timespec ts = ino_txn_now(t);

	if (!now) {
		ino_time_truncate(s->fs, &sec, &ns);
		ts.tv_sec = sec;
		ts.tv_nsec = ns;
	}
	*ret_sec = ts.tv_sec;
	*ret_ns = EXT3_INODE_FITS(in->extra_isize, i_atime_extra) ? (uint32_t)ts.tv_nsec : 0;
}

/* The changes, in the caller's copy (the size change writes it first). */
static int ino_setattr_txn(ino_svc *s, const ino_creds *c, ino_txn *t, const cm_fs_req *rq,
			   ino_inode *in)
{
	uint32_t f = rq->flags;
	int r = 0;

	/* do_truncate takes the set-id bits whether the size changes or not */
	if (f & CM_FS_SET_SIZE)
		in->mode &= (uint16_t)~ino_killpriv(in, c);
	if ((f & CM_FS_SET_SIZE) && rq->offset != in->size) {
		r = ino_truncate(s->fs, t, in, rq->offset);
		if (r < 0)
			return r;
	} else if (f & CM_FS_SET_SIZE) {
		ino_inode_touch(t, in, true); /* ext4_setattr: the same size moves mtime too */
	}
	if (f & CM_FS_SET_MODE) {
		uint16_t mode = (uint16_t)(rq->mode & 07777);
		uint32_t gid = (f & CM_FS_SET_GID) ? rq->gid : in->gid;
		if (!ino_capable(c) && !ino_cred_in_group(c, gid))
			mode &= (uint16_t)~S_ISGID;
		in->mode = (uint16_t)((in->mode & S_IFMT) | mode);
	}
	if ((f & (CM_FS_SET_UID | CM_FS_SET_GID)) && !S_ISDIR(in->mode)) {
		/* chown takes setuid, and setgid as ino_drop_sgid says (with the
		 * group the file had) */
		if (ino_drop_sgid(in, c))
			in->mode &= (uint16_t)~S_ISGID;
		in->mode &= (uint16_t)~S_ISUID;
	}
	if (f & CM_FS_SET_UID)
		in->uid = rq->uid;
	if (f & CM_FS_SET_GID)
		in->gid = rq->gid;
	if (f & (CM_FS_SET_ATIME | CM_FS_SET_ATIME_NOW))
		ino_set_time(s, t, in, f & CM_FS_SET_ATIME_NOW, rq->atime, rq->atime_ns, &in->atime,
			     &in->atime_ns);
	if (f & (CM_FS_SET_MTIME | CM_FS_SET_MTIME_NOW))
		ino_set_time(s, t, in, f & CM_FS_SET_MTIME_NOW, rq->mtime, rq->mtime_ns, &in->mtime,
			     &in->mtime_ns);
	ino_inode_touch(t, in, false);
	if (f & CM_FS_SET_MODE) {
		r = ino_acl_follow_mode(s, t, in);
		if (r < 0)
			return r;
	}
	return ino_inode_write(s->fs, t, in);
}

int ino_h_setattr(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		  uint8_t *data)
{
	const uint32_t known = CM_FS_SET_MODE | CM_FS_SET_UID | CM_FS_SET_GID | CM_FS_SET_SIZE |
			       CM_FS_SET_ATIME | CM_FS_SET_MTIME | CM_FS_SET_ATIME_NOW |
			       CM_FS_SET_MTIME_NOW | CM_FS_SET_CTIME_NOW;
	uint32_t ino = (uint32_t)rq->ino, f = rq->flags;
	ino_svc *s = ss->svc;
	ino_ilockset ls;
	ino_inode in;
	ino_txn *t;
	int r;

	(void)data;
	if (f == CM_FS_SET_ATIME_ACCESS)
		return ino_setattr_access(s, c, rq->ino, rs);
	if (f & ~known)
		return -EINVAL;
	ino_ilock(&ls, &ino, 1);
	r = ino_op_read(s, rq->ino, &in);
	if (r == 0)
		r = ino_setattr_check(c, rq, &in);
	if (r == 0 && (f & CM_FS_SET_SIZE) && rq->offset > ino_fs_max_size(s->fs))
		r = -EFBIG; /* after the type and permission, as vfs_truncate */
	if (r == 0 && f)
		r = ino_txn_start(s, c, INO_CRED_TRUNCATE + INO_CRED_INODE + INO_CRED_XATTR, &t);
	if (r == 0 && f) {
		/* Only times: fdatasync need not wait for it. */
		bool datasync = f & ~(CM_FS_SET_ATIME | CM_FS_SET_MTIME | CM_FS_SET_ATIME_NOW |
				  CM_FS_SET_MTIME_NOW | CM_FS_SET_CTIME_NOW);
		r = ino_setattr_txn(s, c, t, rq, &in);
		int st = ino_op_stop(t, &ino, 1, datasync);
		r = r < 0 ? r : st;
	}
	ino_iunlock(&ls);
	if (r == 0)
		ino_attr_fill(s, &in, &rs->attr);
	return r;
}

/* fallocate(2): only PUNCH_HOLE | KEEP_SIZE, as the kernel's ext3 (the
 * ext4 driver on a block-mapped file) does, by a caller that may write
 * the file. One transaction, restarted between steps as a truncate's. */
int ino_h_fallocate(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		    uint8_t *data)
{
	const uint32_t punch = 0x02 | 0x01; /* FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE */
	uint32_t ino = (uint32_t)rq->ino;
	ino_svc *s = ss->svc;
	ino_ilockset ls;
	ino_inode in;
	ino_txn *t;
	int r;

	(void)data;
	if ((int64_t)rq->offset < 0 || rq->range == 0 || (int64_t)rq->range < 0)
		return -EINVAL;
	if (rq->flags != punch)
		return -EOPNOTSUPP;
	if (!s->jc)
		return -EROFS;
	ino_ilock(&ls, &ino, 1);
	r = ino_data_read(s, c, rq->ino, -ENODEV, &in);
	if (r == 0)
		r = ino_flags_may_change(&in); /* vfs_fallocate: a punch is no append */
	if (r == 0 && rq->offset + rq->range < rq->offset)
		r = -EFBIG;
	if (r == 0) {
		r = ino_txn_start(s, c, INO_CRED_TRUNCATE + INO_CRED_INODE + 2, &t);
		if (r == 0) {
			r = ino_punch(s->fs, t, &in, rq->offset, rq->range);
			int st = ino_op_stop(t, &ino, 1, true);
			r = r < 0 ? r : st;
		}
	}
	ino_iunlock(&ls);
	if (r == 0)
		ino_attr_fill(s, &in, &rs->attr);
	return r;
}

int ino_h_fsync(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		uint8_t *data)
{
	uint32_t tid;

	(void)c;
	(void)rs;
	(void)data;
	if (rq->flags & ~CM_FS_FSYNC_DATA)
		return -EINVAL;
	if (rq->ino == 0 || rq->ino > UINT32_MAX)
		return -EINVAL;
	if (!ino_tid_last((uint32_t)rq->ino, rq->flags & CM_FS_FSYNC_DATA, &tid))
		return 0;
	return ino_txn_wait(ss->svc, tid);
}

/* A sync that made everything durable still returns -EIO if a group
 * restart since the last sync discarded changes acknowledged to any
 * client, in any session (errseq.h). */
int ino_h_sync(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
	       uint8_t *data)
{
	cm_errseq *e = &ss->svc->svc.layout->errseq;
	uint32_t since = cm_errseq_since(e);
	int r;

	(void)c;
	(void)rq;
	(void)rs;
	(void)data;
	r = ino_txn_sync(ss->svc);
	return r < 0 ? r : cm_errseq_check(e, since);
}
