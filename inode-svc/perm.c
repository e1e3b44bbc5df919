/* perm.c - permission checks as the kernel's generic_permission() makes
 * them: the owner's bits if the caller owns the inode, else the group's if
 * the inode's group is the caller's or one of its supplementary groups, else
 * the others'. uid 0 (CAP_DAC_OVERRIDE) may read and write anything, and
 * execute a directory or anything with an execute bit set. Changing a
 * directory needs write and search permission on it; in a sticky directory
 * only the owner of the entry's inode or of the directory (or root) may
 * remove or replace it (may_delete's -EPERM). A caller who does not own an
 * inode whose group bits are not all clear gets its access ACL's answer
 * when it has one (posix_acl_permission), as acl_permission_check asks.
 * Device nodes need CAP_MKNOD (vfs_mknod), and with fs.protected_hardlinks
 * a hard link needs what may_linkat asks; both for every path a request
 * takes. */
#include <errno.h>
#include <sys/stat.h>

#include "ops.h"
#include "sysctl.h"

/* The filesystem ACLs are read from. [immutable after start] */
static ino_fs *perm_fs;
/* The machine's fs.protected_hardlinks, read at start. [immutable after start] */
static bool perm_protected_hardlinks;

void ino_perm_setup(ino_fs *fs)
{
	perm_fs = fs;
	/* On unless the machine says 0; the sandbox reads no file later. */
	perm_protected_hardlinks = cm_sysctl_fs("protected_hardlinks", 1) != 0;
}

bool ino_cred_in_group(const ino_creds *c, uint32_t gid)
{
	if (c->gid == gid)
		return true;
	for (uint32_t i = 0; i < c->ngroups && i < CM_FS_MAX_GROUPS; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/* posix_acl_permission: the entry that applies to c, masked. */
static int ino_acl_permission(const ino_acl *a, const ino_inode *in, const ino_creds *c,
			      unsigned want)
{
	const ino_acl_entry *pa = NULL;
	bool found = false;

	for (uint32_t i = 0; i < a->count && !pa; i++) {
		const ino_acl_entry *e = &a->e[i];

		switch (e->tag) {
		case INO_ACL_USER_OBJ:
			if (c->uid == in->uid)
				return (e->perm & want) == want ? 0 : -EACCES;
			break;
		case INO_ACL_USER:
			if (c->uid == e->id)
				pa = e;
			break;
		case INO_ACL_GROUP_OBJ:
		case INO_ACL_GROUP:
			if (ino_cred_in_group(c, e->tag == INO_ACL_GROUP ? e->id : in->gid)) {
				found = true;
				if ((e->perm & want) == want)
					pa = e;
			}
			break;
		case INO_ACL_OTHER:
			if (found)
				return -EACCES;
			return (e->perm & want) == want ? 0 : -EACCES;
		default:
			break;
		}
	}
	if (!pa)
		return -EIO;
	for (const ino_acl_entry *m = pa + 1; m < a->e + a->count; m++)
		if (m->tag == INO_ACL_MASK)
			return (pa->perm & m->perm & want) == want ? 0 : -EACCES;
	return (pa->perm & want) == want ? 0 : -EACCES;
}

int ino_perm(const ino_inode *in, const ino_creds *c, int mask)
{
	unsigned mode = in->mode, bits;

	/* Nobody writes an immutable inode (inode_permission), checked
	 * callers neither: FUSE inodes carry no S_IMMUTABLE. */
	if ((mask & 2) && (in->flags & EXT3_IMMUTABLE_FL))
		return -EPERM;
	if (c->checked)
		return 0;
	if (c->uid == 0) {
		if (!(mask & 1) || S_ISDIR(mode) || (mode & 0111))
			return 0;
		return -EACCES;
	}
	if (c->uid != in->uid && (mode & 070) && perm_fs && !S_ISLNK(mode)) {
		ino_acl acl;
		int r = ino_acl_get(perm_fs, in, INO_XATTR_INDEX_ACL_ACCESS, &acl);

		if (r < 0)
			return r;
		if (acl.count)
			return ino_acl_permission(&acl, in, c, (unsigned)mask & 7);
	}
	if (c->uid == in->uid)
		bits = mode >> 6;
	else if (ino_cred_in_group(c, in->gid))
		bits = mode >> 3;
	else
		bits = mode;
	return ((unsigned)mask & ~bits & 7) ? -EACCES : 0;
}

bool ino_owner(const ino_inode *in, const ino_creds *c)
{
	return ino_capable(c) || c->uid == in->uid;
}

bool ino_capable(const ino_creds *c)
{
	return c->uid == 0 || c->checked;
}

int ino_perm_sticky(const ino_inode *dir, const ino_inode *victim, const ino_creds *c)
{
	if ((dir->flags & EXT3_APPEND_FL) || ino_flags_may_change(victim) < 0)
		return -EPERM;
	if (!(dir->mode & S_ISVTX) || ino_capable(c) || c->uid == dir->uid || c->uid == victim->uid)
		return 0;
	return -EPERM;
}

int ino_perm_mknod(uint32_t mode, uint32_t rdev, const ino_creds *c)
{
	bool device = S_ISCHR(mode) || S_ISBLK(mode);
	bool whiteout = S_ISCHR(mode) && rdev == 0;

	return device && !whiteout && !ino_capable(c) ? -EPERM : 0;
}

int ino_perm_link(const ino_inode *in, const ino_creds *c)
{
	if (!perm_protected_hardlinks || ino_owner(in, c))
		return 0;
	if (!S_ISREG(in->mode) || (in->mode & S_ISUID) ||
	    (in->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		return -EPERM;
	return ino_perm(in, c, 6) == 0 ? 0 : -EPERM;
}
