/* internal.h - inode-svc: the namespace, inodes, directories and file data
 * of the filesystem, served to client sessions.
 *
 * Threads: the main thread mounts, then runs the session manager (accepts
 * attaches on RUNDIR/session.sock, notices detaches and dead clients by
 * their socket's hang-up). Each session has one worker thread per lane of
 * its segment. Every thread that reads the filesystem has its own channel
 * to blockdev-svc (ino_thread_bdev). Filesystem state comes from the shared
 * buffer cache; nothing here is written yet (the read path).
 *
 * Locks: sessions_mtx (process-private) covers the session list. No arena
 * lock is taken here beyond those inside the buffer cache.
 */
#ifndef INO_INTERNAL_H
#define INO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "bcache.h"
#include "bdclient.h"
#include "ext3fs.h"
#include "fsproto.h"
#include "segment.h"
#include "service.h"

typedef struct ino_creds {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[CM_FS_MAX_GROUPS];
} ino_creds;

typedef struct ino_svc ino_svc;

#define INO_MAX_PENDING 16 /* connections waiting for their attach message */

typedef struct ino_session {
	ino_svc *svc;                       /* [immutable] */
	uint64_t id;                        /* [immutable] */
	int sock;                           /* [immutable] the attach socket */
	cm_seg *seg;                        /* [immutable] */
	ino_creds peer;                     /* [immutable] from SO_PEERCRED/SO_PEERGROUPS */
	pid_t peer_pid;                     /* [immutable] */
	bool privileged;                    /* [immutable] peer is root: may pass creds */
	_Atomic bool closing;               /* [atomic] workers stop when set */
	pthread_t workers[CM_SEG_LANES];    /* [session manager] */
	struct ino_session *next;           /* [sessions_mtx] */
} ino_session;

struct ino_svc {
	cm_service svc;
	cm_bcache *cache;                   /* [immutable after start] */
	ino_fs *fs;                         /* [immutable after mount] */
	char rundir[256];                   /* [immutable] */
	uint64_t cache_bytes;               /* [immutable] */
	int listen_fd;                      /* [session manager] */
	int pending[INO_MAX_PENDING];       /* [session manager] accepted, not attached yet */
	uint64_t pending_until[INO_MAX_PENDING]; /* [session manager] when to give up on each */
	int npending;                       /* [session manager] */
	pthread_mutex_t sessions_mtx;
	ino_session *sessions;              /* [sessions_mtx] */
	uint64_t next_session_id;           /* [session manager] */
};

/* blksrc.c: the filesystem's blocks, through the buffer cache. */
int ino_blksrc_start(ino_svc *s);
cm_bdev *ino_thread_bdev(ino_svc *s);
void ino_thread_bdev_close(void);

/* session.c */
int ino_sessions_listen(ino_svc *s);
void ino_sessions_run(ino_svc *s);
void ino_sessions_stop(ino_svc *s);

/* lane.c: the worker serving one lane of a session; arg is a malloc'ed
 * ino_lane_arg that it frees. */
struct ino_lane_arg {
	ino_session *ss;
	unsigned lane;
};
void *ino_lane_main(void *arg);

/* dispatch.c: one request; fills resp and the lane's data buffer. */
void ino_dispatch(ino_session *ss, const cm_fs_req *req, cm_fs_resp *resp, uint8_t *data);

/* perm.c: may creds access in with mask (4 read, 2 write, 1 exec)? */
int ino_perm(const ino_inode *in, const ino_creds *c, int mask);

#endif
