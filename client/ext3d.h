/* ext3d.h - libext3d, the client library of ext3d.
 *
 * A program attaches to a running ext3d instance and reads the ext3
 * filesystem it serves, without a kernel mount. The library is thread-safe:
 * one ext3d handle may be used by several threads at once (up to four calls
 * run in parallel; more wait for a free lane).
 *
 * Every call returns 0 (or a count) on success and a negative errno on
 * failure, like the kernel: -ENOENT, -EACCES, -ENOTDIR, -EISDIR,
 * -ENAMETOOLONG, -ELOOP, -EINVAL, -EUCLEAN (the image is corrupt), -EIO
 * (the instance went away; the next call attaches again by itself).
 *
 * Permissions are checked by inode-svc against the credentials of the
 * attaching process, as the kernel would check them.
 *
 * Two layers: calls by inode number (like FUSE's low-level API), and path
 * conveniences on top (absolute paths from the filesystem's root; symlinks
 * followed as the kernel follows them, at most EXT3D_SYMLOOP_MAX per
 * lookup).
 *
 * Inode numbers are granted, as FUSE node ids are: a session may name an
 * inode only once ext3d_lookup (or ext3d_readdir_ino, for the entries it
 * returns with attributes, "." and ".." excepted) returned it, so that a
 * guessed number does not get past a directory's permissions. Each of
 * those returns counts once; ext3d_forget gives counts back, and at zero
 * the number is no longer the session's. Other numbers get -EACCES. The
 * root directory is always granted, and a process attached as root may
 * name any inode. A session holds at most 65536 inodes (-ENFILE beyond).
 * The path calls give back what they take (an open file or directory
 * holds its inode until closed). Grants belong to the session: if the
 * instance restarts, numbers must be looked up again.
 */
#ifndef EXT3D_H
#define EXT3D_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EXT3D_ROOT_INO 2
#define EXT3D_NAME_MAX 255
#define EXT3D_SYMLOOP_MAX 40

typedef struct ext3d ext3d;

/* What stat(2) would say. */
typedef struct ext3d_attr {
	uint64_t ino;
	uint32_t mode;     /* type and permission bits, as st_mode */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size;
	uint64_t blocks;   /* 512-byte units, as st_blocks */
	uint32_t rdev;     /* device nodes: Linux dev_t encoding */
	uint32_t blksize;
	int64_t atime, mtime, ctime; /* seconds since the epoch */
	uint32_t atime_ns, mtime_ns, ctime_ns; /* 0 on 128-byte inodes */
	uint32_t flags;    /* the inode flags, as FS_IOC_GETFLAGS gives them (FS_*_FL) */
	uint32_t generation; /* i_generation: a new one each time the number is allocated */
} ext3d_attr;

/* A node: the inode number with its generation above it. The *_ino calls
 * take one wherever they take an inode number, and fail with -ESTALE when
 * the inode was freed and its number allocated again since (a file handle
 * that outlives a group restart that rolled the inode's creation back);
 * a bare number (generation 0) is not checked. */
static inline uint64_t ext3d_node(const ext3d_attr *a)
{
	return a->ino | (uint64_t)a->generation << 32;
}

/* d_type values are DT_* of <dirent.h>. */
typedef struct ext3d_dirent {
	uint64_t ino;
	uint8_t type;
	char name[EXT3D_NAME_MAX + 1];
	ext3d_attr attr;   /* filled by readdir: no getattr per entry needed */
	uint64_t next;     /* the cookie of the entry after this one */
} ext3d_dirent;

typedef struct ext3d_fsstat {
	uint64_t blocks, bfree, bavail;
	uint64_t files, ffree;
	uint32_t bsize, namemax;
} ext3d_fsstat;

/* Attaches to the instance (NULL: $EXT3D_INSTANCE or "default").
 * Every call has a deadline, $EXT3D_CALL_TIMEOUT_MS (default 10000, longer
 * than the supervisor's watchdog): past it the call fails with -ETIMEDOUT
 * instead of blocking. When the instance's group restarts, calls in flight
 * fail with -EIO at once; the next calls attach anew by themselves,
 * waiting (within their deadline) until the new group takes sessions.
 * -EPERM, sending nothing, when /tmp/ext3d-UID (the run directory of a
 * user without $XDG_RUNTIME_DIR) is not the caller's own with mode 0700,
 * or the server is neither root nor the caller's uid (SO_PEERCRED). */
int ext3d_attach(const char *instance, ext3d **ret);
/* Detaches; accepts NULL; returns NULL. */
ext3d *ext3d_detach(ext3d *fs);
/* Why the calling thread's last ext3d_attach (or re-attach) was refused, in
 * words ("" when there was no reason given): e.g. the uid's session quota
 * is used up (-EUSERS), every session is taken (-ENFILE), the socket admits
 * only the instance's client group (-EACCES). */
const char *ext3d_attach_detail(void);

/* By inode number. */
int ext3d_lookup(ext3d *fs, uint64_t dir, const char *name, ext3d_attr *ret);
int ext3d_getattr(ext3d *fs, uint64_t ino, ext3d_attr *ret);
/* Gives back nlookup grants of ino (-ENOENT if the session holds none). */
int ext3d_forget(ext3d *fs, uint64_t ino, uint64_t nlookup);
/* Entries of dir from *cookie (0: the start), at most max; returns how many
 * (0 at the end) and advances *cookie. Cookies stay valid while others read. */
int ext3d_readdir_ino(ext3d *fs, uint64_t dir, uint64_t *cookie, ext3d_dirent *ents, size_t max);
/* Bytes read (0 at or past the end of file). */
ssize_t ext3d_read_ino(ext3d *fs, uint64_t ino, void *buf, size_t len, uint64_t off);
/* lseek(2)'s SEEK_DATA (3) or SEEK_HOLE (4) on regular file ino, from its
 * block map as the kernel's ext3 answers: the offset (>= off) of the
 * first mapped block or the first hole (the end of the file counts as a
 * hole); -ENXIO for off at or past the end or no data after it, -EINVAL
 * for another whence or file type. */
int64_t ext3d_lseek_ino(ext3d *fs, uint64_t ino, uint64_t off, int whence);
/* FIEMAP (FS_IOC_FIEMAP, filefrag) of a regular file or directory ino:
 * the extents of [start, start + len) into ext[0..max), as the kernel's
 * ext3 reports them (bytes; flags FIEMAP_EXTENT_MERGED, and
 * FIEMAP_EXTENT_LAST on the last one when all fitted). Returns how many
 * were placed, or with max 0 how many there are; flags 0 or
 * FIEMAP_FLAG_SYNC (-EBADR for others); -EOPNOTSUPP on other types. At
 * most EXT3D_FIEMAP_MAX extents a call: go on from the last one's end. */
typedef struct ext3d_extent {
	uint64_t logical, physical, length;
	uint32_t flags;
} ext3d_extent;
#define EXT3D_FIEMAP_MAX 32768
int ext3d_fiemap_ino(ext3d *fs, uint64_t ino, uint64_t start, uint64_t len, unsigned flags,
		     ext3d_extent *ext, unsigned max);
/* The target's length; the target is copied (not NUL-terminated) up to len. */
ssize_t ext3d_readlink_ino(ext3d *fs, uint64_t ino, char *buf, size_t len);
/* mask: R_OK, W_OK, X_OK of <unistd.h>, or-ed. */
int ext3d_access_ino(ext3d *fs, uint64_t ino, int mask);
int ext3d_statfs(ext3d *fs, ext3d_fsstat *ret);

/* By path. */
int ext3d_stat(ext3d *fs, const char *path, ext3d_attr *ret);
int ext3d_lstat(ext3d *fs, const char *path, ext3d_attr *ret);
ssize_t ext3d_readlink(ext3d *fs, const char *path, char *buf, size_t len);

/* Writes by inode number. Each call is one journal transaction: it
 * happens entirely or not at all, whatever process is killed. mode holds
 * the type and permission bits (the caller's umask is not applied here);
 * the new inode comes back in *ret (may be NULL), granted. */
int ext3d_mknod_ino(ext3d *fs, uint64_t dir, const char *name, uint32_t mode, uint32_t rdev,
		    ext3d_attr *ret);
/* The same with mode not masked: inode-svc masks it with the directory's
 * default ACL (which the new inode inherits), or with umask when the
 * directory has none, as the kernel's posix_acl_create does. */
int ext3d_mknod_umask_ino(ext3d *fs, uint64_t dir, const char *name, uint32_t mode,
			  uint32_t rdev, uint32_t umask, ext3d_attr *ret);
/* ext3d_mknod_umask_ino, and the directory's attributes just after the
 * call into *dir_ret, in the same reply. */
int ext3d_mknod_dirattr_ino(ext3d *fs, uint64_t dir, const char *name, uint32_t mode,
			    uint32_t rdev, uint32_t umask, ext3d_attr *ret, ext3d_attr *dir_ret);
int ext3d_symlink_ino(ext3d *fs, uint64_t dir, const char *name, const char *target,
		      ext3d_attr *ret);
int ext3d_link_ino(ext3d *fs, uint64_t ino, uint64_t newdir, const char *name, ext3d_attr *ret);
int ext3d_unlink_ino(ext3d *fs, uint64_t dir, const char *name);
/* ext3d_unlink_ino, and the directory's attributes just after the call
 * into *dir_ret, in the same reply. */
int ext3d_unlink_dirattr_ino(ext3d *fs, uint64_t dir, const char *name, ext3d_attr *dir_ret);
int ext3d_rmdir_ino(ext3d *fs, uint64_t dir, const char *name);
/* flags: 0, EXT3D_RENAME_NOREPLACE or EXT3D_RENAME_EXCHANGE (both names
 * must exist; they swap, in one transaction), as renameat2's; and
 * EXT3D_RENAME_WHITEOUT (not with EXCHANGE; root only, -EPERM): the old
 * name then names a whiteout, a character device 0:0 of mode 0, made in
 * the same transaction, as overlayfs asks of its upper file system. */
#define EXT3D_RENAME_NOREPLACE 0x1u
#define EXT3D_RENAME_EXCHANGE 0x2u
#define EXT3D_RENAME_WHITEOUT 0x4u
int ext3d_rename_ino(ext3d *fs, uint64_t olddir, const char *oldname, uint64_t newdir,
		     const char *newname, unsigned flags);
/* Bytes written; flags EXT3D_WRITE_APPEND (at the end of the file, off
 * ignored), EXT3D_WRITE_SYNC (durable when it returns). */
#define EXT3D_WRITE_APPEND 0x1u
#define EXT3D_WRITE_SYNC 0x2u
ssize_t ext3d_write_ino(ext3d *fs, uint64_t ino, const void *buf, size_t len, uint64_t off,
			unsigned flags);

/* What ext3d_setattr_ino sets: the EXT3D_SET_* bits of valid. Times are
 * seconds and nanoseconds since the epoch; *_NOW takes the server's
 * clock. */
#define EXT3D_SET_MODE 0x1u
#define EXT3D_SET_UID 0x2u
#define EXT3D_SET_GID 0x4u
#define EXT3D_SET_SIZE 0x8u
#define EXT3D_SET_ATIME 0x10u
#define EXT3D_SET_MTIME 0x20u
#define EXT3D_SET_ATIME_NOW 0x40u
#define EXT3D_SET_MTIME_NOW 0x80u
#define EXT3D_SET_CTIME_NOW 0x100u /* only ctime moves (every change moves it) */
/* Alone: the access time of a read, as the kernel's relatime mount keeps
 * it: atime moves to now if it is not later than mtime or ctime, or is a
 * day old; nothing else moves (not ctime). */
#define EXT3D_SET_ATIME_ACCESS 0x200u
typedef struct ext3d_setattr {
	uint32_t mode;     /* permission bits (and set-id, sticky) */
	uint32_t uid, gid;
	uint64_t size;
	int64_t atime, mtime;
	uint32_t atime_ns, mtime_ns;
} ext3d_setattr;
int ext3d_setattr_ino(ext3d *fs, uint64_t ino, const ext3d_setattr *set, unsigned valid,
		      ext3d_attr *ret);
/* FS_IOC_SETFLAGS (chattr) on ino: flags are FS_*_FL (ext3d_attr.flags
 * has the current ones). As the kernel's ext3: the owner (or root) may,
 * only root may set or clear FS_IMMUTABLE_FL and FS_APPEND_FL (and
 * FS_JOURNAL_DATA_FL), an immutable inode keeps its other flags (-EPERM);
 * a flag ext3 does not know, or one the file type cannot take, is
 * -EOPNOTSUPP. An immutable inode is then written, truncated, linked,
 * removed, renamed and changed by nobody (-EPERM), an append-only one
 * only written at its end (opened with O_APPEND) and its times moved to
 * now. */
int ext3d_setflags_ino(ext3d *fs, uint64_t ino, uint32_t flags, ext3d_attr *ret);
/* The same by path (symlinks followed); ext3d_stat's flags read them. */
int ext3d_setflags(ext3d *fs, const char *path, uint32_t flags);
/* fallocate(2) on ino: mode FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
 * frees the blocks of [off, off + len) and zeroes the partial blocks at
 * its ends (the size stays); every other mode is -EOPNOTSUPP, as the
 * kernel answers on ext3's block-mapped files. */
int ext3d_fallocate_ino(ext3d *fs, uint64_t ino, int mode, uint64_t off, uint64_t len);
/* Returns once the commit holding ino's changes is durable; datasync
 * skips a commit that changed only its timestamps. */
int ext3d_fsync_ino(ext3d *fs, uint64_t ino, int datasync);
/* Everything written so far is durable when it returns 0. -EIO when a
 * group restart since the last sync that reported one discarded changes
 * acknowledged to any client, in any session (docs/write-path.md). */
int ext3d_sync(ext3d *fs);

/* Acting for another user (a file server such as ext3d-fuse): from this
 * call on, the calling thread's calls on fs act as c (its fsuid, fsgid
 * and supplementary groups): permission checks are made against c and
 * the inodes those calls create belong to c, as the kernel gives them
 * (a set-group-ID directory's group included). NULL: the thread acts as
 * the process again. Only a handle attached as root may (-EPERM), and c
 * has at most EXT3D_MAX_GROUPS groups (-EINVAL). The setting is the
 * thread's own (thread-local) and stays across re-attaches. */
#define EXT3D_MAX_GROUPS 32
typedef struct ext3d_creds {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[EXT3D_MAX_GROUPS];
	uint32_t flags;     /* EXT3D_CREDS_* */
} ext3d_creds;
/* flags: the caller of ext3d_act_as has checked c's permissions itself
 * (ext3d-fuse: the kernel did), so inode-svc checks none again; c still
 * owns what the calls create and may use the reserved blocks only as the
 * kernel lets c (root, the superblock's resuid, a member of its resgid). */
#define EXT3D_CREDS_CHECKED 0x1u
int ext3d_act_as(ext3d *fs, const ext3d_creds *c);

/* Writes by path; mode gets the calling process's umask, as the kernel
 * applies it. */
int ext3d_mkdir(ext3d *fs, const char *path, uint32_t mode);
int ext3d_mknod(ext3d *fs, const char *path, uint32_t mode, uint32_t rdev);
int ext3d_symlink(ext3d *fs, const char *target, const char *linkpath);
int ext3d_link(ext3d *fs, const char *oldpath, const char *newpath);
int ext3d_unlink(ext3d *fs, const char *path);
int ext3d_rmdir(ext3d *fs, const char *path);
int ext3d_rename(ext3d *fs, const char *oldpath, const char *newpath);
int ext3d_chmod(ext3d *fs, const char *path, uint32_t mode);
/* uid or gid (uint32_t)-1: left as it is. */
int ext3d_chown(ext3d *fs, const char *path, uint32_t uid, uint32_t gid);
int ext3d_truncate(ext3d *fs, const char *path, uint64_t size);

/* Extended attributes by inode number, as getxattr(2) and friends: full
 * names ("user.x", "trusted.x", "security.x", "system.posix_acl_access",
 * "system.posix_acl_default"), ACL values in the Linux VFS format
 * (posix_acl_xattr, version 2). len 0 asks for the size. Errors as the
 * kernel's: -ENODATA, -ERANGE (buffer too small, name empty or too long),
 * -E2BIG (a value over 64 KiB), -ENOSPC, -EOPNOTSUPP (another namespace),
 * -EPERM, -EACCES. flags: 0, EXT3D_XATTR_CREATE or EXT3D_XATTR_REPLACE. */
#define EXT3D_XATTR_CREATE 0x1
#define EXT3D_XATTR_REPLACE 0x2
ssize_t ext3d_getxattr_ino(ext3d *fs, uint64_t ino, const char *name, void *buf, size_t len);
ssize_t ext3d_listxattr_ino(ext3d *fs, uint64_t ino, char *buf, size_t len);
int ext3d_setxattr_ino(ext3d *fs, uint64_t ino, const char *name, const void *val, size_t len,
		       int flags);
int ext3d_removexattr_ino(ext3d *fs, uint64_t ino, const char *name);
/* The same by path (symlinks followed). */
ssize_t ext3d_getxattr(ext3d *fs, const char *path, const char *name, void *buf, size_t len);
ssize_t ext3d_listxattr(ext3d *fs, const char *path, char *buf, size_t len);
int ext3d_setxattr(ext3d *fs, const char *path, const char *name, const void *val, size_t len,
		   int flags);
int ext3d_removexattr(ext3d *fs, const char *path, const char *name);

typedef struct ext3d_file ext3d_file;
/* flags: O_RDONLY, O_WRONLY or O_RDWR, with O_CREAT (mode, less the umask),
 * O_EXCL, O_TRUNC, O_APPEND, O_SYNC, O_DIRECTORY, O_NOFOLLOW, with the
 * kernel's semantics and errors. Checks permissions. ext3d_open with
 * O_CREAT is -EINVAL: ext3d_create takes the new file's mode. */
int ext3d_open(ext3d *fs, const char *path, int flags, ext3d_file **ret);
int ext3d_create(ext3d *fs, const char *path, int flags, uint32_t mode, ext3d_file **ret);
ssize_t ext3d_read(ext3d_file *f, void *buf, size_t len);
ssize_t ext3d_pread(ext3d_file *f, void *buf, size_t len, uint64_t off);
ssize_t ext3d_write(ext3d_file *f, const void *buf, size_t len);
ssize_t ext3d_pwrite(ext3d_file *f, const void *buf, size_t len, uint64_t off);
int ext3d_ftruncate(ext3d_file *f, uint64_t size);
/* -EIO if the instance restarted since this file's last write was made
 * durable and that write may be lost (the kernel's writeback error). */
int ext3d_fsync(ext3d_file *f);
int ext3d_fdatasync(ext3d_file *f);
int ext3d_fstat(ext3d_file *f, ext3d_attr *ret);
int ext3d_close(ext3d_file *f);

typedef struct ext3d_dir ext3d_dir;
int ext3d_opendir(ext3d *fs, const char *path, ext3d_dir **ret);
/* 1 and *ret set (valid until the next call), 0 at the end, or -errno. */
int ext3d_readdir(ext3d_dir *d, const ext3d_dirent **ret);
int ext3d_closedir(ext3d_dir *d);

#ifdef __cplusplus
}
#endif

#endif
