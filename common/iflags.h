/* iflags.h - what an open(2) may ask of an inode with the immutable or
 * append-only flag, as the kernel's may_open and inode_permission rule:
 * no write access to an immutable inode, and to an append-only one only
 * with O_APPEND and without O_TRUNC (-EPERM). One copy, for libext3d's
 * ext3d_open and ext3d-fuse's open and create, which inode-svc does not
 * see as opens. The flags are FS_IOC_GETFLAGS's (FS_*_FL). */
#ifndef CM_IFLAGS_H
#define CM_IFLAGS_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>

#define CM_IFLAG_IMMUTABLE 0x10u /* FS_IMMUTABLE_FL */
#define CM_IFLAG_APPEND 0x20u	 /* FS_APPEND_FL */

static inline int cm_iflags_may_open(uint32_t iflags, int oflags)
{
	int acc = oflags & O_ACCMODE;
	int writes = acc == O_WRONLY || acc == O_RDWR || (oflags & O_TRUNC);

	if ((iflags & CM_IFLAG_IMMUTABLE) && writes)
		return -EPERM;
	if ((iflags & CM_IFLAG_APPEND) && writes && (!(oflags & O_APPEND) || (oflags & O_TRUNC)))
		return -EPERM;
	return 0;
}

#endif
