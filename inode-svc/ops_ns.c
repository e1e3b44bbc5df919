/* ops_ns.c - names that come into being: mknod (files, directories,
 * devices, fifos, sockets), symlink (fast and slow), link. Each is one
 * transaction under the inode locks of the directory (and, for link, the
 * inode). Checks in the kernel's order: the directory is one (ENOTDIR) and
 * searchable (EACCES), the name is free (EEXIST), the directory is not
 * removed (ENOENT) and writable (EACCES), then what the type needs: a
 * device node needs CAP_MKNOD (EPERM); a link passes may_linkat (EPERM)
 * between the name and the removed directory, where do_linkat asks.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "ops.h"

/* Credits of a create: the entry, the inode and its allocation, a
 * directory's first block and its parent's link count, a slow symlink's
 * block, and freeing it all again if adding the entry fails. */
#define INO_CRED_CREATE (INO_CRED_DIR_ADD + INO_CRED_IALLOC + 3 * INO_CRED_INODE + \
			 2 * INO_CRED_BLOCK + INO_CRED_TRUNCATE + 2 * INO_CRED_XATTR)

/* What a create needs to know beyond the request. */
struct ino_new {
	uint16_t mode;
	uint32_t rdev;
	const char *target;   /* symlinks */
	size_t tlen;
	ino_newacl *acl;      /* the ACLs it inherits (ops_xattr.c) */
};

/* The directory rq->ino, locked by the caller, checked as a place to
 * create rq->name in (a link to linked, when not NULL): 0, or the errno
 * the kernel gives. */
static int ino_create_check(ino_svc *s, const ino_creds *c, const cm_fs_req *rq, uint64_t dirino,
			    const ino_inode *linked, ino_inode *dir)
{
	uint32_t found;
	int r = ino_name_check(rq->name, rq->namelen);

	if (r != 0)
		return r == 1 ? -EEXIST : r;
	r = ino_op_read(s, dirino, dir);
	if (r == 0 && !S_ISDIR(dir->mode))
		r = -ENOTDIR;
	if (r == 0)
		r = ino_perm(dir, c, 1);
	if (r == 0)
		r = ino_op_lookup(s, dir, rq->name, rq->namelen, &found);
	if (r == 0 && found)
		r = -EEXIST;
	if (r == 0 && linked)
		r = ino_perm_link(linked, c); /* do_linkat asks before vfs_link */
	if (r == 0 && dir->links == 0)
		r = -ENOENT;
	if (r == 0)
		r = ino_perm(dir, c, 2);
	return r;
}

/* Sets up the new inode in (allocated, not written): type's contents,
 * links. */
static int ino_create_fill(ino_svc *s, ino_txn *t, const struct ino_new *nw, uint32_t parent,
			   ino_inode *in)
{
	switch (nw->mode & S_IFMT) {
	case S_IFDIR:
		in->links = 2;
		return ino_dir_init(s->fs, t, in, parent);
	case S_IFLNK:
		in->links = 1;
		return ino_symlink_store(s->fs, t, in, nw->target, nw->tlen);
	case S_IFCHR:
	case S_IFBLK: {
		uint32_t major = (nw->rdev >> 8) & 0xfff;
		uint32_t minor = (nw->rdev & 0xff) | ((nw->rdev >> 12) & 0xfff00);
		/* ext3_do_update_inode: the old 8:8 encoding when it fits */
		if (major < 256 && minor < 256)
			in->block[0] = major << 8 | minor;
		else
			in->block[1] = nw->rdev;
		in->links = 1;
		return 0;
	}
	default:
		in->links = 1;
		return 0;
	}
}

void ino_create_owner(const ino_creds *c, const ino_inode *dir, uint16_t *mode, uint32_t *gid)
{
	*gid = c->gid;
	if (!(dir->mode & S_ISGID))
		return;
	*gid = dir->gid;
	if (S_ISDIR(*mode))
		*mode |= S_ISGID;
	else if ((*mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && c->uid != 0 &&
		 !ino_cred_in_group(c, dir->gid))
		*mode &= (uint16_t)~S_ISGID;
}

/* The transaction of a create: inode, contents, entry, parent's links. */
static int ino_create_txn(ino_svc *s, const ino_creds *c, ino_txn *t, ino_inode *dir,
			  const cm_fs_req *rq, const struct ino_new *nw, ino_inode *in)
{
	uint16_t mode = nw->mode;
	uint32_t ino, gid;
	int r;

	r = ino_txn_alloc_inode(t, dir->ino, mode, &ino);
	if (r < 0)
		return r;
	ino_create_owner(c, dir, &mode, &gid);
	r = ino_inode_new(s->fs, t, ino, mode, c->uid, gid, in);
	if (r < 0) {
		(void)ino_txn_free_inode(t, ino, mode);
		return r;
	}
	in->flags = ino_flags_inherit(dir, mode);
	r = ino_create_fill(s, t, nw, dir->ino, in);
	if (r == 0)
		r = ino_inode_write(s->fs, t, in);
	if (r == 0)
		r = ino_acl_store_new(s, t, in, nw->acl);
	if (r == 0)
		r = ino_dir_add(s->fs, t, dir, rq->name, rq->namelen, ino, mode);
	if (r == 0 && S_ISDIR(mode)) {
		ino_op_gain_subdir(dir);
		r = ino_inode_write(s->fs, t, dir);
	}
	if (r < 0) {
		/* Nothing names it: free what it got. */
		in->links = 0;
		(void)ino_inode_delete(s->fs, t, in);
	}
	return r;
}

static int ino_create(ino_session *ss, const ino_creds *c, const cm_fs_req *rq,
		      const struct ino_new *req_nw, cm_fs_resp *rs, uint8_t *data)
{
	struct ino_new nwc = *req_nw, *nw = &nwc;
	ino_svc *s = ss->svc;
	uint32_t dirino = (uint32_t)rq->ino, inos[2], gid;
	ino_inode dir, in;
	ino_ilockset ls;
	ino_txn *t;
	int r, retries = 0;

	if (rq->ino == 0 || rq->ino > UINT32_MAX)
		return -EINVAL;
	ino_ilock(&ls, &dirino, 1);
	do {
		r = ino_create_check(s, c, rq, dirino, NULL, &dir);
		if (r == 0)
			r = ino_perm_mknod(nw->mode, nw->rdev, c);
		if (r == 0 && S_ISDIR(nw->mode) && dir.links >= INO_LINK_MAX)
			r = -EMLINK;
		nwc.mode = req_nw->mode;
		/* The set-gid bit goes or stays by the mode asked for, before
		 * the umask or a default ACL masks it (mode_strip_sgid). */
		if (r == 0)
			ino_create_owner(c, &dir, &nwc.mode, &gid);
		if (r == 0)
			r = ino_acl_inherit(s, &dir, &nwc.mode, rq->flags & CM_FS_MKNOD_UMASK,
					    rq->umask, nwc.acl);
		if (r == 0)
			r = ino_txn_start(s, c, INO_CRED_CREATE, &t);
		if (r == 0) {
			r = ino_create_txn(s, c, t, &dir, rq, nw, &in);
			inos[0] = dirino;
			inos[1] = r == 0 ? in.ino : 0;
			int st = ino_op_stop(t, inos, 2, true);
			r = r < 0 ? r : st;
		}
	} while (ino_op_retry(s, r, &retries));
	/* Granted before the locks go, so that no unlink frees it first. */
	if (r == 0)
		r = ino_grant_add(ss, in.ino);
	ino_iunlock(&ls);
	if (r == 0)
		ino_attr_fill(s, &in, &rs->attr);
	if (r == 0 && (rq->flags & CM_FS_MKNOD_DIRATTR))
		ino_attr_reply_data(s, &dir, rs, data);
	return r;
}

int ino_h_mknod(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		uint8_t *data)
{
	ino_newacl acl;
	struct ino_new nw = {.mode = (uint16_t)(rq->mode & 07777), .rdev = rq->rdev, .acl = &acl};
	uint32_t type = rq->mode & S_IFMT;

	if (rq->mode & ~(uint32_t)(S_IFMT | 07777) ||
	    (rq->flags & ~(CM_FS_MKNOD_UMASK | CM_FS_MKNOD_DIRATTR)))
		return -EINVAL;
	switch (type) {
	case 0:
		type = S_IFREG; /* mknod(2): a zero type is a regular file */
		break;
	case S_IFREG:
	case S_IFDIR:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	default:
		return -EINVAL;
	}
	nw.mode |= (uint16_t)type;
	if (type == S_IFDIR)
		nw.mode &= 01777 | S_IFDIR; /* mkdir keeps no set-id bits of its own */
	return ino_create(ss, c, rq, &nw, rs, data);
}

int ino_h_symlink(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		  uint8_t *data)
{
	ino_newacl acl;
	struct ino_new nw = {.mode = S_IFLNK | 0777, .target = (const char *)data,
			     .tlen = rq->length, .acl = &acl};

	if (rq->length == 0)
		return -ENOENT;
	if (rq->length >= ino_fs_geom(ss->svc->fs)->block_size || rq->length > CM_SEG_DATA)
		return -ENAMETOOLONG;
	if (memchr(data, '\0', rq->length))
		return -EINVAL;
	return ino_create(ss, c, rq, &nw, rs, data);
}

int ino_h_link(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
	       uint8_t *data)
{
	ino_svc *s = ss->svc;
	uint32_t inos[2];
	ino_inode dir, in;
	ino_ilockset ls;
	ino_txn *t;
	int r, retries = 0;

	(void)data;
	r = ino_grant_check(ss, rq->ino2);
	if (r < 0)
		return r;
	inos[0] = (uint32_t)rq->ino;
	inos[1] = (uint32_t)rq->ino2;
	ino_ilock(&ls, inos, 2);
	do {
		r = ino_op_read(s, rq->ino, &in);
		if (r == 0)
			r = ino_create_check(s, c, rq, rq->ino2, &in, &dir);
		if (r == 0)
			r = ino_flags_may_change(&in); /* vfs_link */
		if (r == 0 && S_ISDIR(in.mode))
			r = -EPERM;
		if (r == 0 && in.links == 0)
			r = -ENOENT;
		if (r == 0 && in.links >= INO_LINK_MAX)
			r = -EMLINK;
		if (r == 0)
			r = ino_txn_start(s, c, INO_CRED_DIR_ADD + 2 * INO_CRED_INODE, &t);
		if (r == 0) {
			r = ino_dir_add(s->fs, t, &dir, rq->name, rq->namelen, in.ino, in.mode);
			if (r == 0) {
				in.links++;
				ino_inode_touch(t, &in, false);
				r = ino_inode_write(s->fs, t, &in);
			}
			int st = ino_op_stop(t, inos, 2, true);
			r = r < 0 ? r : st;
		}
	} while (ino_op_retry(s, r, &retries));
	/* Granted before the locks go, so that no unlink frees it first. */
	if (r == 0)
		r = ino_grant_add(ss, in.ino);
	ino_iunlock(&ls);
	if (r == 0)
		ino_attr_fill(s, &in, &rs->attr);
	return r;
}
