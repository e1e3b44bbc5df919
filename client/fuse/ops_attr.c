/* ops_attr.c - attributes: getattr, setattr (mode, owner, size, atime and
 * mtime given or "now"; ctime moves with every change, inode-svc's
 * clock), statfs, access. setattr runs as the daemon: the kernel has
 * checked the caller's right to each change and worked out the set-id
 * bits a chown, truncate or write by a non-owner takes away (ops.c), and
 * sends the mode it wants. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "xfuse.h"

void xf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	xf_fs *x = xf_of(req);
	ext3d_attr a;
	struct stat st;
	int r = xf_dir_cached(x, xf_ino(ino), &a) ? 0 : ext3d_getattr(x->fs, xf_ino(ino), &a);

	(void)fi;
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	xf_stat(&a, &st);
	fuse_reply_attr(req, &st, x->cfg.attr_timeout);
}

/* FUSE's FUSE_SET_ATTR_* into libext3d's EXT3D_SET_* and values. */
static unsigned xf_setattr_from(const struct stat *st, int to_set, ext3d_setattr *set)
{
	unsigned valid = 0;

	memset(set, 0, sizeof(*set));
	if (to_set & FUSE_SET_ATTR_MODE) {
		valid |= EXT3D_SET_MODE;
		set->mode = st->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		valid |= EXT3D_SET_UID;
		set->uid = st->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		valid |= EXT3D_SET_GID;
		set->gid = st->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		valid |= EXT3D_SET_SIZE;
		set->size = (uint64_t)st->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		valid |= EXT3D_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		valid |= EXT3D_SET_ATIME;
		set->atime = st->st_atim.tv_sec;
		set->atime_ns = (uint32_t)st->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		valid |= EXT3D_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		valid |= EXT3D_SET_MTIME;
		set->mtime = st->st_mtim.tv_sec;
		set->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	}
	return valid;
}

/* Is req's caller in group gid (its fsgid or a supplementary group)? */
static bool xf_in_group(fuse_req_t req, gid_t gid)
{
	gid_t groups[EXT3D_MAX_GROUPS];
	int n = fuse_req_getgroups(req, EXT3D_MAX_GROUPS, groups);

	if (fuse_req_ctx(req)->gid == gid)
		return true;
	for (int i = 0; i < n && i < EXT3D_MAX_GROUPS; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* A setattr with no field is chown(f, -1, -1) (or, with the write-back
 * cache, a ctime update). On the kernel's ext3, chown of a non-directory
 * also kills the set-user-ID bit, and the set-group-ID bit when the
 * group may execute or the caller is neither in the file's group nor
 * root (chown_common: ATTR_KILL_SUID, setattr_should_drop_sgid), even
 * with both ids -1; notify_change turns the kill of a bit that is set
 * into ATTR_MODE, and a mode change is the owner's right (setattr_prepare):
 * EPERM for anyone else but root. The FUSE module sends no mode in this
 * case, so the daemon works it out: 0, set and valid taking the new mode
 * for the owner or root. */
static int xf_chown_none(fuse_req_t req, xf_fs *x, uint64_t ino, ext3d_setattr *set,
			 unsigned *valid)
{
	uid_t uid = fuse_req_ctx(req)->uid;
	uint32_t kill = 0;
	ext3d_attr a;
	int r = ext3d_getattr(x->fs, ino, &a);

	if (r < 0 || S_ISDIR(a.mode))
		return r < 0 ? r : 0;
	if (a.mode & S_ISUID)
		kill |= S_ISUID;
	if ((a.mode & S_ISGID) && ((a.mode & S_IXGRP) || (uid != 0 && !xf_in_group(req, a.gid))))
		kill |= S_ISGID;
	if (!kill)
		return 0;
	/* From anyone but the owner only the set-group-ID bit of a group
	 * that may not execute, by a caller outside the group, gets here:
	 * FUSE sends the other kills as a mode, which setattr_prepare
	 * refuses a non-owner first. A write's kill of that bit looks the
	 * same as chown(f, -1, -1). The write is let through and takes the
	 * bit itself (inode-svc); the chown is let through too, where the
	 * kernel's ext3 says EPERM (docs/fuse.md). */
	if (uid != 0 && uid != a.uid)
		return 0;
	*valid |= EXT3D_SET_MODE;
	set->mode = a.mode & 07777 & ~kill;
	return 0;
}

void xf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi)
{
	xf_fs *x = xf_of(req);
	ext3d_setattr set;
	unsigned valid = xf_setattr_from(attr, to_set, &set);
	ext3d_attr a;
	struct stat st;
	int r;

	(void)fi;
	if ((to_set & FUSE_SET_ATTR_SIZE) && attr->st_size < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* Nothing else to set (chown(f, -1, -1), or the write-back cache's
	 * ctime): ctime still moves, as on the kernel's ext3. */
	r = valid ? 0 : xf_chown_none(req, x, xf_ino(ino), &set, &valid);
	if (!valid)
		valid = EXT3D_SET_CTIME_NOW;
	/* A size change is made as the caller, who may lose set-id bits by it. */
	if (r == 0 && (valid & EXT3D_SET_SIZE))
		r = xf_creds_checked(req);
	if (r == 0) {
		xf_dirtok tok = xf_dir_begin(x, xf_ino(ino));

		r = ext3d_setattr_ino(x->fs, xf_ino(ino), &set, valid, &a);
		xf_dir_end(x, &tok, NULL);
	}
	if (valid & EXT3D_SET_SIZE)
		xf_creds_end(req);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	xf_stat(&a, &st);
	fuse_reply_attr(req, &st, x->cfg.attr_timeout);
}

void xf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	ext3d_fsstat s;
	struct statvfs sv;
	int r = ext3d_statfs(xf_of(req)->fs, &s);

	(void)ino;
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = s.bsize;
	sv.f_blocks = s.blocks;
	sv.f_bfree = s.bfree;
	sv.f_bavail = s.bavail;
	sv.f_files = s.files;
	sv.f_ffree = sv.f_favail = s.ffree;
	sv.f_namemax = s.namemax;
	fuse_reply_statfs(req, &sv);
}

/* Only asked without default_permissions; answered as the caller. */
void xf_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	xf_fs *x = xf_of(req);
	ext3d_attr a;
	int r = xf_creds_begin(req);

	if (r == 0)
		r = mask ? ext3d_access_ino(x->fs, xf_ino(ino), mask)
			 : ext3d_getattr(x->fs, xf_ino(ino), &a);
	xf_creds_end(req);
	fuse_reply_err(req, -r);
}
