/* internal.h - libext3d's private state.
 *
 * An ext3d handle owns one session with inode-svc: the attach socket and
 * the segment with its lanes. Threads borrow a lane for each call: taking
 * one holds mtx (once per call), giving it back is an atomic clear of its
 * busy bit (mtx only to wake a waiter or mark the session dead). mtx and
 * lane_free also cover the session swap done when a dead session is
 * replaced (only while no lane is borrowed; each swap bumps gen). Every
 * call has a deadline: waiting for a lane, re-attaching and waiting for
 * the answer all count against it.
 */
#ifndef X3_INTERNAL_H
#define X3_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "ext3d.h"
#include "fsproto.h"
#include "segment.h"

/* An inode changed since its last fsync, and the generation of its first
 * change (dirty.c). */
typedef struct x3_dirty_ent {
	uint64_t ino;                  /* the bare number (no generation); 0: a free slot */
	uint32_t igen;                 /* the inode's i_generation, 0 if not known */
	uint64_t gen;                  /* the session generation of its first change */
	bool told;                     /* a change call got -EIO for it (x3_dirty_before) */
} x3_dirty_ent;

struct ext3d {
	char instance[72];             /* [immutable] */
	pthread_mutex_t mtx;
	pthread_cond_t lane_free;      /* [mtx] signalled when a lane is returned */
	unsigned busy;                 /* [mtx to set a bit, atomic to clear one] borrowed lanes */
	unsigned waiters;              /* [mtx to change, atomic read] threads waiting for a lane */
	bool dead;                     /* [mtx, atomic read] the session hung up or timed out */
	int sock;                      /* [mtx] swapped only when busy == 0 */
	cm_seg *seg;                   /* [mtx] swapped only when busy == 0 */
	bool grants;                   /* [mtx, atomic read] the session names only granted inodes */
	uint64_t gen;                  /* [mtx, atomic read] sessions opened so far (1: the first) */
	uint64_t next_seq;             /* [atomic] */
	int call_timeout_ms;           /* [immutable] deadline of each call */
	bool root;                     /* [immutable] attached with effective uid 0 */
	uint32_t uid;                  /* [immutable] the effective uid it attached with */
	pthread_mutex_t dirty_mtx;     /* covers the dirty_* fields (dirty.c) */
	x3_dirty_ent *dirty;           /* [dirty_mtx] inodes changed since their fsync */
	size_t dirty_cap, dirty_n;     /* [dirty_mtx] */
	uint64_t dirty_first;          /* [dirty_mtx] gen of the first change since a sync; 0 none */
	uint64_t dirty_lost;           /* [dirty_mtx] gen of the first change not in the table */
};

/* session.c */
#define X3_CALL_TIMEOUT_MS 10000 /* default call deadline (EXT3D_CALL_TIMEOUT_MS) */
/* Sets the call deadline from the environment, then attaches, waiting up
 * to that deadline while the instance's supervisor runs but inode-svc does
 * not take sessions yet (a group restart). */
int x3_session_attach(ext3d *fs);
void x3_session_close(ext3d *fs);
/* One call's bulk data: in (inlen bytes, at most CM_SEG_DATA) goes into the
 * lane's data buffer before the request; up to outlen bytes of the data
 * the response placed there are copied into out. gen is set to the
 * session generation the call ran on (fs->gen then). */
typedef struct x3_io {
	const void *in;
	size_t inlen;
	void *out;
	size_t outlen;
	uint64_t gen;
} x3_io;
/* Runs one request on a lane. Returns the response's status (0 or -errno). */
int x3_call_io(ext3d *fs, cm_fs_req *req, cm_fs_resp *resp, x3_io *io);
/* x3_call_io with only data out. */
int x3_call(ext3d *fs, cm_fs_req *req, cm_fs_resp *resp, void *out, size_t outlen);
/* The current session generation (changes when the session is replaced). */
uint64_t x3_gen(ext3d *fs);

/* The reason inode-svc gave for the calling thread's last refused attach. */
void x3_detail_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* actas.c: the calling thread's ext3d_act_as credentials into req. */
void x3_act_apply(const ext3d *fs, cm_fs_req *req);
/* write.c: req's name (-ENAMETOOLONG); runs a write request (in: data
 * sent) and on success fills *ret (may be NULL) from the response, noting
 * the change for fsync. */
int x3_name(cm_fs_req *req, const char *name);
int x3_wcall(ext3d *fs, cm_fs_req *req, const void *in, size_t inlen, ext3d_attr *ret);

/* ops.c */
void x3_attr_from(const cm_fs_attr *a, ext3d_attr *ret);
/* ext3d_readdir_ino with the request's flags (CM_FS_READDIR_*). */
int x3_readdir(ext3d *fs, uint64_t dir, uint64_t *cookie, ext3d_dirent *ents, size_t max,
	       uint32_t flags);

/* dirty.c */
/* Notes that the change req made (it succeeded on generation gen) is not
 * known durable yet, for each inode it changed. */
void x3_dirty_after(ext3d *fs, const cm_fs_req *req, const cm_fs_resp *resp, uint64_t gen);
/* Before req, a change, runs on generation gen: -EIO, once for each inode,
 * if it changes an inode that this handle changed on an older generation
 * and has not fsynced since: that change may be gone with the group
 * restart, and the call would build on what the caller no longer has (an
 * append would land at the old end of the file). 0 otherwise. */
int x3_dirty_before(ext3d *fs, const cm_fs_req *req, uint64_t gen);
/* After an fsync of ino that ran on gen and returned r: -EIO if ino was
 * changed on an older generation (reported once), else r. */
int x3_dirty_fsync(ext3d *fs, uint64_t ino, uint64_t gen, int r);
/* After a sync that ran on gen and returned r: -EIO if anything was
 * changed on an older generation since the last sync, else r. */
int x3_dirty_sync(ext3d *fs, uint64_t gen, int r);
void x3_dirty_fini(ext3d *fs);

/* write.c */
/* The request writing chunk bytes at off of ino with EXT3D_WRITE_* flags. */
cm_fs_req x3_write_req(uint64_t ino, uint64_t off, size_t chunk, unsigned flags);
/* ext3d_write_ino that also says the session generation of its last
 * request (*ret_gen) and the file's size after it (*ret_size); both may
 * be NULL, and are left alone if nothing was written. */
ssize_t x3_write_gen(ext3d *fs, uint64_t ino, const void *buf, size_t len, uint64_t off,
		     unsigned flags, uint64_t *ret_gen, uint64_t *ret_size);

/* path.c */
/* Walks path (absolute or relative to the root) into *ret, following a
 * last symlink when follow_last. On success the inode found holds one
 * grant taken by the walk (x3_drop gives it back). */
int x3_resolve(ext3d *fs, const char *path, bool follow_last, ext3d_attr *ret);
/* Gives back the grant of ino that a lookup of ours took. */
void x3_drop(ext3d *fs, uint64_t ino);

/* wpath.c */
#define X3_PATH_MAX 4096
/* What a path's last component is. */
enum { X3_LAST_NORM, X3_LAST_DOT, X3_LAST_DOTDOT, X3_LAST_ROOT, X3_LAST_LONG };
/* The calling process's umask. */
uint32_t x3_umask(void);
/* Splits path into its parent (a path, into parent, cap bytes) and its
 * last component (into name); *ret_kind: X3_LAST_* (X3_LAST_LONG: over
 * EXT3D_NAME_MAX, name left empty); *ret_slash: the path ends in '/'. */
int x3_split(const char *path, char *parent, size_t cap, char name[EXT3D_NAME_MAX + 1],
	     int *ret_kind, bool *ret_slash);
/* x3_split, then the parent resolved into *dir (a directory, granted:
 * x3_drop it); -ENAMETOOLONG after that for a name too long. On failure
 * nothing is held. */
int x3_parent(ext3d *fs, const char *path, ext3d_attr *dir, char name[EXT3D_NAME_MAX + 1],
	      int *ret_kind, bool *ret_slash);
/* x3_parent that leaves a name too long (X3_LAST_LONG) to its caller. */
int x3_parent_any(ext3d *fs, const char *path, ext3d_attr *dir, char name[EXT3D_NAME_MAX + 1],
		  int *ret_kind, bool *ret_slash);

#endif
