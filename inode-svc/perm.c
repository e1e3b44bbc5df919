/* perm.c - permission checks as the kernel's generic_permission() makes
 * them: the owner's bits if the caller owns the inode, else the group's if
 * the inode's group is the caller's or one of its supplementary groups, else
 * the others'. uid 0 (CAP_DAC_OVERRIDE) may read and write anything, and
 * execute a directory or anything with an execute bit set. Changing a
 * directory needs write and search permission on it; in a sticky directory
 * only the owner of the entry's inode or of the directory (or root) may
 * remove or replace it (may_delete's -EPERM). */
#include <errno.h>
#include <sys/stat.h>

#include "ops.h"

bool ino_cred_in_group(const ino_creds *c, uint32_t gid)
{
	if (c->gid == gid)
		return true;
	for (uint32_t i = 0; i < c->ngroups && i < CM_FS_MAX_GROUPS; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

int ino_perm(const ino_inode *in, const ino_creds *c, int mask)
{
	unsigned mode = in->mode, bits;

	if (c->uid == 0) {
		if (!(mask & 1) || S_ISDIR(mode) || (mode & 0111))
			return 0;
		return -EACCES;
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
	return c->uid == 0 || c->uid == in->uid;
}

int ino_perm_sticky(const ino_inode *dir, const ino_inode *victim, const ino_creds *c)
{
	if (!(dir->mode & S_ISVTX) || c->uid == 0 || c->uid == dir->uid || c->uid == victim->uid)
		return 0;
	return -EPERM;
}
