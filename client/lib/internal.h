/* internal.h - libext3d's private state.
 *
 * An ext3d handle owns one session with inode-svc: the attach socket and
 * the segment with its lanes. Threads borrow a lane for each call; mtx and
 * lane_free cover the lane pool and the session swap done when a dead
 * session is replaced (only while no lane is borrowed). Every call has a
 * deadline: waiting for a lane, re-attaching and waiting for the answer
 * all count against it.
 */
#ifndef X3_INTERNAL_H
#define X3_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "ext3d.h"
#include "fsproto.h"
#include "segment.h"

struct ext3d {
	char instance[72];             /* [immutable] */
	pthread_mutex_t mtx;
	pthread_cond_t lane_free;      /* [mtx] signalled when a lane is returned */
	unsigned busy;                 /* [mtx] bitmap of borrowed lanes */
	bool dead;                     /* [mtx] the session's socket hung up */
	int sock;                      /* [mtx] swapped only when busy == 0 */
	cm_seg *seg;                   /* [mtx] swapped only when busy == 0 */
	bool grants;                   /* [mtx] the session names only granted inodes */
	uint64_t next_seq;             /* [mtx] */
	int call_timeout_ms;           /* [immutable] deadline of each call */
};

/* session.c */
#define X3_CALL_TIMEOUT_MS 10000 /* default call deadline (EXT3D_CALL_TIMEOUT_MS) */
/* Sets the call deadline from the environment, then attaches, waiting up
 * to that deadline while the instance's supervisor runs but inode-svc does
 * not take sessions yet (a group restart). */
int x3_session_attach(ext3d *fs);
void x3_session_close(ext3d *fs);
/* Runs one request on a lane; copies up to outlen bytes of the lane's data
 * into out. Returns the response's status (0 or -errno). */
int x3_call(ext3d *fs, cm_fs_req *req, cm_fs_resp *resp, void *out, size_t outlen);

/* The reason inode-svc gave for the calling thread's last refused attach. */
void x3_detail_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ops.c */
void x3_attr_from(const cm_fs_attr *a, ext3d_attr *ret);
/* ext3d_readdir_ino with the request's flags (CM_FS_READDIR_*). */
int x3_readdir(ext3d *fs, uint64_t dir, uint64_t *cookie, ext3d_dirent *ents, size_t max,
	       uint32_t flags);

#endif
