/* ops_xattr.c - extended attributes and POSIX ACLs for clients: getxattr,
 * setxattr, listxattr, removexattr with the VFS's checks (fs/xattr.c's
 * xattr_permission, the capability rules of the security. and trusted.
 * namespaces, posix_acl_xattr_set's), ACL values converted between the
 * VFS's format and ext3's; and the ACL work of other operations: a new
 * inode inheriting its directory's default ACL (posix_acl_create), chmod
 * carrying the mode into the access ACL (posix_acl_chmod). Set and remove
 * are one transaction each, under the inode's lock; ctime moves with them.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "ops.h"
#include "xattr.h"

/* What a request's name says. */
struct ino_xname {
	int index;
	const char *sfx;
	size_t slen;
};

static int ino_xname_of(const cm_fs_req *rq, struct ino_xname *x)
{
	if (rq->namelen == 0 || rq->namelen > CM_FS_NAME_MAX)
		return -ERANGE;
	if (memchr(rq->name, '\0', rq->namelen))
		return -ERANGE;
	return ino_xattr_name(rq->name, rq->namelen, &x->index, &x->sfx, &x->slen);
}

static bool ino_xname_acl(const struct ino_xname *x)
{
	return x->index == INO_XATTR_INDEX_ACL_ACCESS || x->index == INO_XATTR_INDEX_ACL_DEFAULT;
}

/* xattr_permission (and the capability checks after it): 0 or -errno. */
static int ino_xattr_perm(const ino_inode *in, const ino_creds *c, const struct ino_xname *x,
			  bool write)
{
	bool root = c->uid == 0;

	if (write && (in->flags & (EXT3_IMMUTABLE_FL | EXT3_APPEND_FL)))
		return -EPERM;
	switch (x->index) {
	case INO_XATTR_INDEX_SECURITY:
		/* cap_inode_setxattr: CAP_SYS_ADMIN to write */
		return write && !root ? -EPERM : 0;
	case INO_XATTR_INDEX_TRUSTED:
		if (!root)
			return write ? -EPERM : -ENODATA;
		return 0;
	case INO_XATTR_INDEX_USER:
		if (!S_ISREG(in->mode) && !S_ISDIR(in->mode))
			return write ? -EPERM : -ENODATA;
		if (write && S_ISDIR(in->mode) && (in->mode & S_ISVTX) && !ino_owner(in, c))
			return -EPERM;
		return ino_perm(in, c, write ? 2 : 4);
	default:
		return S_ISLNK(in->mode) ? -EOPNOTSUPP : 0;
	}
}

/* The room a get or list may fill: the request's, as the VFS caps it. */
static size_t ino_xroom(const cm_fs_req *rq)
{
	size_t room = rq->length;

	if (room > INO_XATTR_SIZE_MAX)
		room = INO_XATTR_SIZE_MAX;
	return room > CM_SEG_DATA ? CM_SEG_DATA : room;
}

int ino_h_getxattr(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		   uint8_t *data)
{
	ino_svc *s = ss->svc;
	struct ino_xname x;
	ino_inode in;
	ssize_t n;
	int r = ino_xname_of(rq, &x);

	if (r == 0)
		r = ino_op_read(s, rq->ino, &in);
	if (r == 0)
		r = ino_xattr_perm(&in, c, &x, false);
	if (r < 0)
		return r;
	if (ino_xname_acl(&x)) {
		ino_acl acl;

		r = ino_acl_get(s->fs, &in, x.index, &acl);
		if (r < 0)
			return r;
		if (acl.count == 0)
			return -ENODATA;
		n = ino_acl_to_xattr(&acl, data, ino_xroom(rq));
	} else {
		n = ino_xattr_get(s->fs, &in, x.index, x.sfx, x.slen, data, ino_xroom(rq));
	}
	if (n < 0)
		return (int)n;
	rs->length = (uint32_t)n;
	return 0;
}

int ino_h_listxattr(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		    uint8_t *data)
{
	ino_inode in;
	ssize_t n;
	int r = ino_op_read(ss->svc, rq->ino, &in);

	if (r < 0)
		return r;
	n = ino_xattr_list(ss->svc->fs, &in, c->uid == 0, (char *)data, ino_xroom(rq));
	if (n < 0)
		return (int)n;
	rs->length = (uint32_t)n;
	return 0;
}

/* posix_acl_update_mode: the mode an access ACL gives; an ACL the mode
 * says all of is dropped (count 0). */
static void ino_acl_update_mode(const ino_creds *c, ino_inode *in, ino_acl *acl)
{
	uint16_t mode = in->mode;

	if (ino_acl_equiv_mode(acl, &mode) == 0)
		acl->count = 0;
	if (c->uid != 0 && !ino_cred_in_group(c, in->gid))
		mode &= (uint16_t)~S_ISGID;
	in->mode = mode;
}

/* set_posix_acl's checks, then the change (val NULL: remove). */
static int ino_acl_change(ino_svc *s, const ino_creds *c, ino_txn *t, ino_inode *in, int index,
			  const void *val, size_t len)
{
	ino_acl acl = {.count = 0};
	int r = val ? ino_acl_from_xattr(val, len, &acl) : 0;

	if (r < 0)
		return r;
	if (index == INO_XATTR_INDEX_ACL_DEFAULT && !S_ISDIR(in->mode))
		return acl.count ? -EACCES : 0;
	if (!ino_owner(in, c))
		return -EPERM;
	if (acl.count && (r = ino_acl_valid(&acl)) < 0)
		return r;
	if (index == INO_XATTR_INDEX_ACL_ACCESS && acl.count)
		ino_acl_update_mode(c, in, &acl);
	ino_inode_touch(t, in, false);
	return ino_acl_set(s->fs, t, in, index, &acl);
}

/* setxattr and removexattr (val NULL). */
static int ino_xattr_change(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
			    cm_fs_resp *rs, const void *val, size_t len, int flags)
{
	uint32_t ino = (uint32_t)rq->ino;
	ino_svc *s = ss->svc;
	struct ino_xname x;
	ino_ilockset ls;
	ino_inode in;
	ino_txn *t;
	int r = ino_xname_of(rq, &x), retries = 0;
	bool too_big;

	if (r < 0)
		return r;
	if (rq->ino == 0 || rq->ino > UINT32_MAX)
		return -EINVAL;
	if (!s->jc)
		return -EROFS;
	/* too big for any block: no commit would make room for it */
	too_big = val && !ino_xname_acl(&x) && !ino_xattr_fits(s->fs, x.slen, len);
	ino_ilock(&ls, &ino, 1);
	do {
		r = ino_op_read(s, rq->ino, &in);
		if (r == 0)
			r = ino_xattr_perm(&in, c, &x, true);
		if (r == 0)
			r = ino_txn_start(s, c, INO_CRED_XATTR + INO_CRED_INODE, &t);
		if (r < 0)
			break;
		if (ino_xname_acl(&x)) {
			r = ino_acl_change(s, c, t, &in, x.index, val, len);
		} else {
			ino_inode_touch(t, &in, false);
			r = ino_xattr_set(s->fs, t, &in, x.index, x.sfx, x.slen, val, len, flags);
		}
		int st = ino_op_stop(t, &ino, 1, false);
		r = r < 0 ? r : st;
	} while (!(r == -ENOSPC && too_big) && ino_op_retry(s, r, &retries));
	ino_iunlock(&ls);
	if (r == 0)
		ino_attr_fill(s, &in, &rs->attr);
	return r;
}

int ino_h_setxattr(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		   uint8_t *data)
{
	int flags = 0;

	if (rq->flags & ~(CM_FS_XATTR_CREATE | CM_FS_XATTR_REPLACE))
		return -EINVAL;
	if (rq->length > INO_XATTR_SIZE_MAX)
		return -E2BIG;
	if (rq->flags & CM_FS_XATTR_CREATE)
		flags |= INO_XATTR_CREATE;
	if (rq->flags & CM_FS_XATTR_REPLACE)
		flags |= INO_XATTR_REPLACE;
	return ino_xattr_change(ss, c, rq, rs, data, rq->length, flags);
}

int ino_h_removexattr(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		      uint8_t *data)
{
	(void)data;
	return ino_xattr_change(ss, c, rq, rs, NULL, 0, INO_XATTR_REPLACE);
}

int ino_acl_inherit(ino_svc *s, const ino_inode *dir, uint16_t *mode, bool use_umask,
		    uint32_t umask, ino_newacl *ret)
{
	int r;

	ret->access.count = ret->dflt.count = 0;
	if (S_ISLNK(*mode))
		return 0;
	r = ino_acl_get(s->fs, dir, INO_XATTR_INDEX_ACL_DEFAULT, &ret->dflt);
	if (r < 0)
		return r;
	if (ret->dflt.count == 0) {
		if (use_umask)
			*mode &= (uint16_t) ~(umask & 0777);
		return 0;
	}
	ret->access = ret->dflt;
	r = ino_acl_create_masq(&ret->access, mode);
	if (r < 0)
		return -EIO;
	if (r == 0)
		ret->access.count = 0;
	if (!S_ISDIR(*mode))
		ret->dflt.count = 0;
	return 0;
}

int ino_acl_store_new(ino_svc *s, ino_txn *t, ino_inode *in, const ino_newacl *na)
{
	int r = 0;

	if (na->dflt.count)
		r = ino_acl_set(s->fs, t, in, INO_XATTR_INDEX_ACL_DEFAULT, &na->dflt);
	if (r == 0 && na->access.count)
		r = ino_acl_set(s->fs, t, in, INO_XATTR_INDEX_ACL_ACCESS, &na->access);
	return r;
}

int ino_acl_follow_mode(ino_svc *s, ino_txn *t, ino_inode *in)
{
	ino_acl acl;
	int r;

	if (S_ISLNK(in->mode))
		return 0;
	r = ino_acl_get(s->fs, in, INO_XATTR_INDEX_ACL_ACCESS, &acl);
	if (r < 0 || acl.count == 0)
		return r;
	ino_acl_chmod(&acl, in->mode);
	return ino_acl_set(s->fs, t, in, INO_XATTR_INDEX_ACL_ACCESS, &acl);
}
