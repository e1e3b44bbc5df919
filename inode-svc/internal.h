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
 * Admission (session.c): at most INO_MAX_SESSIONS sessions, of which
 * INO_ROOT_RESERVE only root may take, and sessions_per_uid per other uid;
 * at most INO_PENDING_PER_UID connections of one uid wait for their attach
 * message (the oldest is dropped for a newer one), each for at most
 * INO_ATTACH_TIMEOUT_MS. A session names only inodes granted to it
 * (grant.c).
 *
 * Locks: sessions_mtx (process-private) covers the session list; each
 * session's grants.mtx (a leaf) covers its grant table; fserror.c's
 * fserr_mtx (a leaf) serialises the records of errors in the superblock. No arena lock is
 * taken here beyond those inside the buffer cache.
 * Lock order: sessions_mtx -> grants.mtx (never both today).
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
#include "ext3fs_w.h"
#include "fsproto.h"
#include "segment.h"
#include "service.h"

typedef struct ino_creds {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[CM_FS_MAX_GROUPS];
	bool checked;    /* the privileged peer checked permissions (CM_FS_CREDS_CHECKED) */
} ino_creds;

typedef struct ino_svc ino_svc;

#define INO_MAX_SESSIONS 48
#define INO_ROOT_RESERVE 8          /* sessions only root may take */
#define INO_SESSIONS_PER_UID 8      /* default of --sessions-per-uid */
#define INO_MAX_PENDING 64          /* connections waiting for their attach message */
#define INO_PENDING_PER_UID 8       /* of them, from one uid */
#define INO_ATTACH_TIMEOUT_MS 2000  /* to send the attach message after connecting */
#define INO_GRANTS_MAX 65536        /* inodes one session may hold granted */

typedef struct ino_grant {
	uint32_t ino;                       /* 0: free slot */
	uint32_t count;                     /* lookups not yet forgotten (saturates) */
} ino_grant;

typedef struct ino_grants {
	pthread_mutex_t mtx;
	ino_grant *slots;                   /* [mtx] nslots entries, a power of two */
	uint32_t nslots;                    /* [mtx] */
	uint32_t used;                      /* [mtx] inodes granted */
} ino_grants;

typedef struct ino_session {
	ino_svc *svc;                       /* [immutable] */
	uint64_t id;                        /* [immutable] */
	int sock;                           /* [immutable] the attach socket */
	cm_seg *seg;                        /* [immutable] */
	ino_creds peer;                     /* [immutable] from SO_PEERCRED/SO_PEERGROUPS */
	pid_t peer_pid;                     /* [immutable] */
	bool privileged;                    /* [immutable] peer is root: may pass creds */
	_Atomic bool closing;               /* [atomic] workers stop when set */
	ino_grants grants;                  /* inodes it may name (grant.c) */
	pthread_t workers[CM_SEG_LANES];    /* [session manager] */
	struct ino_session *next;           /* [sessions_mtx] */
} ino_session;

struct ino_svc {
	cm_service svc;
	cm_bcache *cache;                   /* [immutable after start] */
	ino_fs *fs;                         /* [immutable after mount] */
	struct jbd_ctx *jc;                 /* [immutable after ino_txn_setup] NULL: read-only */
	char rundir[256];                   /* [immutable] */
	uint64_t cache_bytes;               /* [immutable] */
	int clients_gid;                    /* [immutable] socket group (-1: anyone may attach) */
	unsigned sessions_per_uid;          /* [immutable] sessions one non-root uid may hold */
	int listen_fd;                      /* [session manager] */
	struct ino_pending {
		int sock;
		uint32_t uid;
		uint64_t since, until;      /* accepted at; when to give up on it */
	} pending[INO_MAX_PENDING];         /* [session manager] accepted, not attached yet */
	int npending;                       /* [session manager] */
	pthread_mutex_t sessions_mtx;
	ino_session *sessions;              /* [sessions_mtx] */
	uint64_t next_session_id;           /* [session manager] */
};

/* blksrc.c: the filesystem's blocks, through the buffer cache. */
int ino_blksrc_start(ino_svc *s);
cm_bdev *ino_thread_bdev(ino_svc *s);
void ino_thread_bdev_close(void);

/* txn.c: the write path's transactions (ext3fs_w.h's ino_txn): a JBD
 * handle on the shared journal, blocks from the shared cache, allocation
 * through alloc-svc on the calling thread's own channel.
 * ino_txn_setup attaches the journal at start (before sessions).
 * ino_txn_start: the calling thread's transaction with credits (one at a
 * time per thread; -EROFS when the image has no journal or it aborted, or
 * after an error under errors=remount-ro),
 * for the caller c (NULL: the service itself); root's allocations may use
 * the reserved blocks.
 * ino_txn_stop ends it and returns the first error the transaction met
 * (0 when every change in it is filed); *tid (may be NULL) gets the id of
 * the transaction that holds its changes, for fsync. */
int ino_txn_setup(ino_svc *s);
int ino_txn_start(ino_svc *s, const ino_creds *c, int credits, ino_txn **ret);
int ino_txn_stop(ino_txn *t, uint32_t *tid);
/* As ino_txn_stop, for a change the caller is about to acknowledge to a
 * client: the instance's error sequence (errseq.h) learns its tid first. */
int ino_txn_stop_acked(ino_txn *t, uint32_t *tid);
/* Returns once transaction tid is durable (fsync); 0 or -EIO. */
int ino_txn_wait(ino_svc *s, uint32_t tid);
/* Commits the running transaction and waits for it (sync). */
int ino_txn_sync(ino_svc *s);
/* Closes the calling thread's alloc-svc channel (a worker that ends). */
void ino_txn_thread_end(void);
/* The fuzzy counters' approximate free blocks and inodes for statfs;
 * -ENOENT before alloc-svc published them. */
int ino_txn_free_counts(ino_svc *s, uint64_t *bfree, uint64_t *ffree);

/* fserror.c: a write (op, on inode ino) met corruption: the error goes
 * into the superblock, then the errors behaviour applies. Called with no
 * inode lock and no transaction. */
void ino_fserror(ino_svc *s, const char *op, uint64_t ino);
/* True after an error under errors=remount-ro, or on a read-only device
 * (a read-only NBD export): writes get -EROFS. */
bool ino_fserror_read_only(ino_svc *s);

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

/* grant.c: the inodes a session may name. ino_grant_check: 0 or -EACCES. */
void ino_grants_init(ino_grants *g);
void ino_grants_fini(ino_grants *g);
int ino_grant_add(ino_session *ss, uint32_t ino);
int ino_grant_check(ino_session *ss, uint64_t ino);
int ino_grant_forget(ino_session *ss, uint64_t ino, uint64_t nlookup);

/* perm.c: may creds access in with mask (4 read, 2 write, 1 exec)? */
int ino_perm(const ino_inode *in, const ino_creds *c, int mask);

#endif
