/* xfuse.h - ext3d-fuse, the FUSE daemon: its configuration, its state and
 * what its files share.
 *
 * The daemon serves the FUSE 3 low-level API on a libext3d handle attached
 * as root: FUSE node ids are ext3 inode numbers (FUSE_ROOT_ID, 1, stands
 * for the root directory, inode 2), lookup counts are inode-svc's grants
 * (each reply that makes the kernel count a lookup took one grant; forget
 * gives them back), and nothing inside knows a path. Requests run on
 * fuse_session_loop_mt's threads; each handler is one or a few libext3d
 * calls. The kernel checks permissions (default_permissions); calls that
 * create an inode run as the caller (creds.c) so that it gets the
 * caller's owner and group.
 *
 * Locks: cache.c's keep_mtx (a leaf) covers the keep-cache table,
 * dirattr.c's dir_mtx (a leaf) the directory attribute table; the rest
 * is immutable after start or the request's own.
 */
#ifndef XF_FUSE_H
#define XF_FUSE_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>

#include "ext3d.h"

typedef struct xf_config {
	const char *instance;       /* NULL: $EXT3D_INSTANCE or "default" */
	const char *source;         /* the mount's source (fsname); NULL: ext3d:INSTANCE */
	const char *mountpoint;
	bool foreground;            /* -f: stay in the foreground */
	bool debug;                 /* -d: FUSE's debug output (implies -f) */
	bool writeback;             /* -o writeback_cache */
	bool clean_stale;           /* --clean-stale: unmount a dead daemon's mount first */
	double attr_timeout;        /* -o attr_timeout=S (seconds) */
	double entry_timeout;       /* -o entry_timeout=S */
	char fuse_opts[1024];       /* the -o options passed on to libfuse */
} xf_config;

#define XF_KEEP_SLOTS 4096

/* What an open saw of a file, to keep its page cache on the next open. */
typedef struct xf_keep {
	uint64_t ino;               /* 0: free */
	int64_t mtime;
	uint32_t mtime_ns;
	uint64_t size;
} xf_keep;

#define XF_DIR_SLOTS 1024

/* A directory's attributes as a create in it left them (dirattr.c). */
typedef struct xf_dirslot {
	ext3d_attr attr;            /* attr.ino: the directory */
	bool valid;                 /* attr may answer a GETATTR */
	unsigned running;           /* changes of this slot's directory under way */
	uint64_t gen;               /* changes begun on this slot */
	uint64_t epoch;             /* dir_epoch when attr was stored */
	uint64_t expires_ns;        /* CLOCK_MONOTONIC: attr answers until then */
} xf_dirslot;

/* What xf_dir_begin saw, for xf_dir_end. */
typedef struct xf_dirtok {
	uint64_t ino;
	uint64_t gen;
	uint64_t epoch;
	bool alone;                 /* no other change of the slot or of all was under way */
} xf_dirtok;

typedef struct xf_fs {
	ext3d *fs;                  /* [immutable] attached as the daemon (root: acts for callers) */
	xf_config cfg;              /* [immutable] */
	char bdi[32];               /* [immutable once serving] the mount's device, "" unknown */
	pthread_mutex_t keep_mtx;
	xf_keep keep[XF_KEEP_SLOTS]; /* [keep_mtx] */
	pthread_mutex_t dir_mtx;
	xf_dirslot dir[XF_DIR_SLOTS]; /* [dir_mtx] */
	unsigned dir_all_running;   /* [dir_mtx] changes of unnamed directories under way */
	uint64_t dir_epoch;         /* [dir_mtx] moves at each one's start and end */
} xf_fs;

/* An open file (fuse_file_info's fh). */
typedef struct xf_file {
	int flags;                  /* [immutable] open(2)'s flags */
	bool written;               /* [atomic] a write went through this file */
} xf_file;

static inline xf_fs *xf_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* FUSE node id <-> ext3 inode number. */
static inline uint64_t xf_ino(fuse_ino_t node)
{
	return node == FUSE_ROOT_ID ? EXT3D_ROOT_INO : (uint64_t)node;
}

/* The node id of a: its inode number with its generation (ext3d_node), so
 * that a node id the kernel keeps across a group restart that freed and
 * reused the number gets -ESTALE instead of another file's inode. */
static inline fuse_ino_t xf_node(const ext3d_attr *a)
{
	return a->ino == EXT3D_ROOT_INO ? FUSE_ROOT_ID : (fuse_ino_t)ext3d_node(a);
}

/* opts.c: the command line into *cfg; 0, 1 after --help, or -EINVAL
 * (said why on stderr). */
int xf_opts_parse(int argc, char **argv, xf_config *cfg);

/* mount.c: checks the mount point (missing, not a directory, a stale or
 * live mount there; a stale one is unmounted when clean_stale): 0 or
 * -errno, said why on stderr. */
int xf_mountpoint_check(const char *path, bool clean_stale);
/* Runs the daemon: attach, mount, serve until unmounted or signalled. */
int xf_run(const xf_config *cfg);

/* The largest read or write request: one libext3d call. */
#define XF_MAX_IO (1u << 20)

/* bdi.c: the name (major:minor) of the backing device of the mount at
 * mountpoint into name; 0 or -1. */
int xf_bdi_name(const char *mountpoint, char *name, size_t len);
/* Sets that device's readahead to kib KiB; false where sysfs is out of
 * reach. */
bool xf_bdi_readahead(const char *name, unsigned kib);

/* attr.c: ext3d_attr into what FUSE replies with. */
void xf_stat(const ext3d_attr *a, struct stat *st);
void xf_entry(const xf_fs *x, const ext3d_attr *a, struct fuse_entry_param *e);
/* Replies with the entry of a (a granted inode) or the error r. */
void xf_reply_entry(fuse_req_t req, int r, const ext3d_attr *a);

/* creds.c: the calling thread acts as req's caller until xf_creds_end. */
int xf_creds_begin(fuse_req_t req);
/* The same, with permissions taken as checked by the kernel: the caller
 * counts for the reserved blocks only (and owns what is created). */
int xf_creds_checked(fuse_req_t req);
void xf_creds_end(fuse_req_t req);
/* call(req, arg) as req's caller, for a new inode of mode: the caller's
 * supplementary groups only when inode-svc needs them (creds.c). */
int xf_as_caller(fuse_req_t req, uint32_t mode, int (*call)(fuse_req_t req, void *arg),
		 void *arg);
/* The caller's umask, which the kernel leaves to the daemon (DONT_MASK,
 * POSIX_ACL): inode-svc applies it to a new inode's mode, or the
 * directory's default ACL instead (ext3d_mknod_umask_ino). */
uint32_t xf_umask(fuse_req_t req);

/* atime.c: would relatime time a read of the file a describes now? */
bool xf_atime_due(const ext3d_attr *a);
/* After a read, readdir or readlink of ino: its access time (relatime). */
void xf_accessed(xf_fs *x, fuse_ino_t ino);

/* cache.c: may an open of the file a describes keep the kernel's page
 * cache (unchanged since the last open)? Records a either way. */
bool xf_keep_cache(xf_fs *x, const ext3d_attr *a);
/* Records a as the file's state the page cache holds (after our writes). */
void xf_keep_note(xf_fs *x, const ext3d_attr *a);

/* dirattr.c: a change of directory ino begins (its attributes answer
 * nothing until it ends). */
xf_dirtok xf_dir_begin(xf_fs *x, uint64_t ino);
/* It ended; after (may be NULL) holds the directory's attributes just
 * after it, kept for the attribute timeout if nothing overlapped it. */
void xf_dir_end(xf_fs *x, const xf_dirtok *tok, const ext3d_attr *after);
/* A change of directories the handler cannot name (rename, rmdir): no
 * kept attributes answer while it runs, none kept before it ends answer
 * after. */
void xf_dir_all_begin(xf_fs *x);
void xf_dir_all_end(xf_fs *x);
/* The kept attributes of directory ino into *a: true, or false. */
bool xf_dir_cached(xf_fs *x, uint64_t ino, ext3d_attr *a);

/* ops_ns.c: the inode a create, mknod or mkdir makes, as xf_as_caller's
 * call: arg is an xf_new, its a the new inode (granted). */
typedef struct xf_new {
	fuse_ino_t parent;
	const char *name;
	uint32_t mode;              /* type and permission bits, before the umask */
	uint32_t rdev;
	ext3d_attr a;
	ext3d_attr dir;             /* the directory's attributes after it */
} xf_new;
int xf_new_inode(fuse_req_t req, void *arg);

/* The handlers. */
void xf_init(void *userdata, struct fuse_conn_info *conn);
void xf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void xf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void xf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void xf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void xf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi);
void xf_statfs(fuse_req_t req, fuse_ino_t ino);
void xf_access(fuse_req_t req, fuse_ino_t ino, int mask);
void xf_readlink(fuse_req_t req, fuse_ino_t ino);
void xf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void xf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void xf_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void xf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void xf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void xf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void xf_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags);
void xf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void xf_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi);
void xf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void xf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi);
void xf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void xf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void xf_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
	      struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
	      size_t out_bufsz);
void xf_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
		  struct fuse_file_info *fi);
void xf_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);
void xf_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			struct fuse_file_info *fi_out, size_t len, int flags);
void xf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void xf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void xf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void xf_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void xf_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
/* xattr.c */
void xf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void xf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void xf_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		 size_t size, int flags);
void xf_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

#endif
