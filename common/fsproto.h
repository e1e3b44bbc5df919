/* fsproto.h - the records a client exchanges with inode-svc on the lanes of
 * its session segment (segment.h), version CM_FS_VERSION.
 *
 * Requests name inodes by number (like 9P fids or FUSE node ids). A session
 * may name an inode only once a lookup (or a granting readdir) returned it
 * to that session; CM_FS_FORGET gives such grants back. Bulk data
 * (file bytes, directory entries, symlink targets) travels in the lane's
 * data buffer; the response says how many bytes are there. Every field is
 * client-controlled and checked by inode-svc before use.
 */
#ifndef CM_FSPROTO_H
#define CM_FSPROTO_H

#include <stdint.h>

#include "chan.h"

#define CM_FS_VERSION 2
#define CM_FS_NAME_MAX 255
#define CM_FS_MAX_GROUPS 32

enum cm_fs_op {
	CM_FS_LOOKUP = 1,   /* ino = dir, name -> attr */
	CM_FS_GETATTR = 2,  /* ino -> attr */
	CM_FS_READDIR = 3,  /* ino = dir, offset = cookie, length = buffer -> entries */
	CM_FS_READ = 4,     /* ino, offset, length -> bytes */
	CM_FS_READLINK = 5, /* ino -> target bytes */
	CM_FS_STATFS = 6,   /* -> statfs */
	CM_FS_ACCESS = 7,   /* ino, mask (R_OK 4, W_OK 2, X_OK 1) in flags -> status */
	CM_FS_FORGET = 8,   /* ino, offset = nlookup: drop that many grants of ino */
	/* The write calls. Each is one journal transaction. The new inode of
	 * MKNOD and SYMLINK, and the inode of LINK, come back in attr,
	 * granted. */
	CM_FS_MKNOD = 9,    /* ino = dir, name, mode (S_IFREG, S_IFDIR, S_IFCHR, S_IFBLK,
			     * S_IFIFO, S_IFSOCK with the permission bits, umask
			     * applied by the caller, or CM_FS_MKNOD_UMASK), rdev -> attr;
			     * -EEXIST if the name exists */
	CM_FS_SYMLINK = 10, /* ino = dir, name, target in the data buffer (length bytes) -> attr */
	CM_FS_LINK = 11,    /* ino = the inode, ino2 = dir, name -> attr */
	CM_FS_UNLINK = 12,  /* ino = dir, name */
	CM_FS_RMDIR = 13,   /* ino = dir, name */
	CM_FS_RENAME = 14,  /* ino = old dir, name = old name, ino2 = new dir, new name in
			     * the data buffer (length bytes), flags CM_FS_RENAME_* */
	CM_FS_WRITE = 15,   /* ino, offset, length bytes from the data buffer, flags
			     * CM_FS_WRITE_* -> attr, length = bytes written */
	CM_FS_SETATTR = 16, /* ino, flags = CM_FS_SET_* mask of the fields to set:
			     * mode, uid, gid, offset = size, atime/mtime -> attr */
	CM_FS_FSYNC = 17,   /* ino, flags CM_FS_FSYNC_DATA (fdatasync): returns once the
			     * commit holding the inode's changes is durable */
	CM_FS_SYNC = 18,    /* commit everything, wait for it */
	CM_FS_FALLOCATE = 23, /* ino, flags = fallocate(2)'s mode, offset, range = length:
			       * PUNCH_HOLE|KEEP_SIZE frees the range's blocks and zeroes
			       * its partial blocks; other modes -EOPNOTSUPP -> attr */
	CM_FS_LSEEK = 24,   /* ino, offset, flags = CM_FS_SEEK_DATA or _HOLE -> next = the
			     * offset found in the block map */
	/* Extended attributes: full names ("user.x", "system.posix_acl_access")
	 * in name, values in the data buffer, ACLs in the VFS's
	 * posix_acl_xattr format. A get or list with length 0 asks for the
	 * size only. SET and REMOVE are one transaction each. */
	CM_FS_GETXATTR = 19,    /* ino, name, length = room -> length = value size, value */
	CM_FS_SETXATTR = 20,    /* ino, name, value (length bytes), flags CM_FS_XATTR_* -> attr */
	CM_FS_LISTXATTR = 21,   /* ino, length = room -> length = list size, NUL-ended names */
	CM_FS_REMOVEXATTR = 22, /* ino, name -> attr */
	CM_FS_SETFLAGS = 25,    /* ino, flags = the inode flags (FS_IOC_SETFLAGS's FS_*_FL)
				 * -> attr (attr.iflags: FS_IOC_GETFLAGS's answer) */
	CM_FS_FIEMAP = 26,      /* ino, offset = start, range = length (bytes), flags =
				 * FIEMAP_FLAG_*, length = room -> cm_fs_extent records,
				 * count = how many placed (with room 0: how many there are) */
};

/* A FIEMAP extent (struct fiemap_extent's fields): bytes, FIEMAP_EXTENT_*. */
typedef struct cm_fs_extent {
	uint64_t logical, physical, length;
	uint32_t flags;
	uint32_t reserved;
} cm_fs_extent;

/* lseek: whence, Linux's values */
#define CM_FS_SEEK_DATA 3u
#define CM_FS_SEEK_HOLE 4u

/* setxattr: fail with -EEXIST if it exists, or -ENODATA if it does not */
#define CM_FS_XATTR_CREATE 0x1u
#define CM_FS_XATTR_REPLACE 0x2u

/* mknod, symlink: mode is not masked; umask (the request's field) applies
 * unless the directory has a default ACL, which masks it instead (the
 * kernel's posix_acl_create). Without the flag the caller masked mode. */
#define CM_FS_MKNOD_UMASK 0x1u
/* mknod: also the directory's attributes after the call, a cm_fs_attr in
 * the data buffer (length), so that a client need not ask for them */
#define CM_FS_MKNOD_DIRATTR 0x2u
/* unlink: the same, the directory's attributes after the call */
#define CM_FS_UNLINK_DIRATTR 0x1u

/* rename: fail with -EEXIST rather than replace (renameat2's NOREPLACE) */
#define CM_FS_RENAME_NOREPLACE 0x1u
/* rename: both names exist and swap (renameat2's EXCHANGE), one transaction */
#define CM_FS_RENAME_EXCHANGE 0x2u
/* rename: the old name then names a new whiteout, a character device 0:0
 * of mode 0 (renameat2's WHITEOUT, for overlayfs); root or checked creds */
#define CM_FS_RENAME_WHITEOUT 0x4u

/* write: at the end of the file, whatever offset says (O_APPEND) */
#define CM_FS_WRITE_APPEND 0x1u
/* write: returns once the write is durable (O_SYNC) */
#define CM_FS_WRITE_SYNC 0x2u

/* fsync: fdatasync (skips a commit that only changed timestamps) */
#define CM_FS_FSYNC_DATA 0x1u

/* setattr: which fields to set (FUSE's FATTR_* semantics) */
#define CM_FS_SET_MODE 0x1u      /* permission bits of mode (the type is kept) */
#define CM_FS_SET_UID 0x2u
#define CM_FS_SET_GID 0x4u
#define CM_FS_SET_SIZE 0x8u      /* truncate or extend to offset */
#define CM_FS_SET_ATIME 0x10u    /* atime, atime_ns */
#define CM_FS_SET_MTIME 0x20u    /* mtime, mtime_ns */
#define CM_FS_SET_ATIME_NOW 0x40u
#define CM_FS_SET_MTIME_NOW 0x80u
/* alone: a read's access time (relatime): atime to now, if it is not
 * later than mtime or ctime or is a day old; ctime stays */
#define CM_FS_SET_ATIME_ACCESS 0x200u
#define CM_FS_SET_CTIME_NOW 0x100u /* nothing but ctime, to now (chown(f, -1, -1)) */

/* readdir: each entry carries its attributes (zeroed where the caller may
 * not search the directory) */
#define CM_FS_READDIR_PLUS 0x1u
/* readdir with PLUS: each entry with attributes is granted once (readdirplus) */
#define CM_FS_READDIR_GRANT 0x2u

/* The caller's credentials; inode-svc honours them only from a privileged
 * peer (ext3d-fuse as root serving another user), else uses the peer's. */
/* creds_flags: the privileged peer has checked the caller's permissions
 * (the kernel did, for ext3d-fuse): inode-svc checks none again, and the
 * creds only name the owner of what the call creates and whether it may
 * take the reserved blocks (root, s_def_resuid, a member of s_def_resgid). */
#define CM_FS_CREDS_CHECKED 0x1u
typedef struct cm_fs_creds {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[CM_FS_MAX_GROUPS];
} cm_fs_creds;

typedef struct cm_fs_attr {
	uint64_t ino;
	uint64_t size;
	uint64_t blocks;       /* 512-byte units */
	int64_t atime, mtime, ctime;
	uint32_t mode;
	uint32_t nlink;
	uint32_t uid, gid;
	uint32_t rdev;
	uint32_t blksize;
	uint32_t generation;
	uint32_t atime_ns, mtime_ns, ctime_ns; /* 0 on 128-byte inodes */
	uint32_t iflags;       /* the inode flags lsattr shows (FS_*_FL) */
} cm_fs_attr;

typedef struct cm_fs_req {
	cm_rec_hdr hdr;
	uint64_t ino;
	uint64_t offset;
	uint32_t length;
	uint32_t flags;
	uint32_t use_creds;    /* 1: act as creds (privileged peers only) */
	uint32_t namelen;
	cm_fs_creds creds;
	char name[CM_FS_NAME_MAX + 1];
	uint64_t ino2;         /* link, rename: the second directory */
	uint32_t mode;         /* mknod, setattr */
	uint32_t rdev;         /* mknod: Linux dev_t encoding */
	uint32_t uid, gid;     /* setattr */
	int64_t atime, mtime;  /* setattr */
	uint32_t atime_ns, mtime_ns; /* setattr */
	uint64_t range;        /* fallocate: the length of the range */
	uint32_t umask;        /* mknod, symlink with CM_FS_MKNOD_UMASK */
	uint32_t creds_flags;  /* with use_creds: CM_FS_CREDS_* */
} cm_fs_req;

typedef struct cm_fs_statfs {
	uint64_t blocks, bfree, bavail;
	uint64_t files, ffree;
	uint32_t bsize, namemax;
} cm_fs_statfs;

typedef struct cm_fs_resp {
	cm_rec_hdr hdr;        /* hdr.status: 0 or -errno */
	cm_fs_attr attr;
	cm_fs_statfs statfs;
	uint64_t next;         /* readdir: cookie to continue from */
	uint32_t length;       /* bytes placed in the lane's data buffer */
	uint32_t count;        /* readdir: entries placed */
	uint32_t eof;          /* readdir/read: nothing more after this */
	uint32_t reserved;
} cm_fs_resp;

/* A readdir entry in the data buffer: this header, then namelen bytes of
 * name, then padding to 8 bytes; cm_fs_attr follows the padding when the
 * request had CM_FS_READDIR_PLUS. */
typedef struct cm_fs_dirent {
	uint64_t ino;
	uint64_t next;         /* cookie of the entry after this one */
	uint8_t type;          /* ext3 file type: 1 reg, 2 dir, 3 chr, 4 blk, 5 fifo, 6 sock, 7 lnk */
	uint8_t namelen;
	uint16_t reclen;       /* bytes to the next entry */
	uint32_t reserved;
} cm_fs_dirent;

#define CM_FS_REC_SIZE 512
_Static_assert(sizeof(cm_fs_req) <= CM_FS_REC_SIZE, "request fits a lane record");
_Static_assert(sizeof(cm_fs_resp) <= CM_FS_REC_SIZE, "response fits a lane record");

#endif
