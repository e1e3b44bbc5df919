/*
 * journal.h - the JBD journal at run time: the journal, its transactions,
 * handles, journal heads and revoke tables, all in the arena, and the calls
 * every service makes on them (JBD semantics, JBD2 format on disk).
 *
 * journald-svc creates the journal in the arena after recovery (jbd_create)
 * and runs commit and checkpoint (commit.h); inode-svc and alloc-svc attach
 * (jbd_attach) and make every metadata change inside a handle:
 *
 *	jbd_start(jc, credits, &h);
 *	jbd_get_write_access(jc, h, bh);   modify cm_bh_data(bh) ...
 *	jbd_dirty_metadata(jc, h, bh);
 *	jbd_stop(jc, h);
 *
 * Everything shared is named by index (transactions, handles, journal heads,
 * revoke records and block copies live in cm_pools; a journal head is the
 * one with the index of its buffer), so any process may follow the links.
 * Index fields hold index + 1, 0 meaning none.
 *
 * Locks (lockset.h has the ranks and why): each field below names the lock
 * that guards it. Outermost first: j_state_lock -> t_handle_lock ->
 * t_jcb_lock; j_state_lock -> bh_state -> j_list_lock -> journal_head;
 * j_revoke_lock is a leaf. In --locking=big mode every public call takes
 * the big lock for its whole length instead and no other journal lock. No
 * arena lock is held while waiting on a ring, an event or a LOCKED buffer.
 *
 * Transaction states, the one function that moves a transaction out of
 * each (under the lock named), and what holds in it (jbd_check() asserts
 * these; lockdep builds check them at every change, check.c):
 *
 *   (none)   -> RUNNING    jbd_start, through __jbd_new_transaction
 *                          (j_state_lock): j_running names it.
 *   RUNNING  -> LOCKED     jbd_commit_lock (journald-svc; j_state_lock): no
 *                          new handle joins; starters wait on
 *                          j_wait_transaction_locked. It then waits, holding
 *                          nothing, for t_updates 0 (j_wait_updates).
 *   LOCKED   -> FLUSH      jbd_commit_switch (j_state_lock), once t_updates
 *                          is 0: RESERVED buffers unfiled and the revoke
 *                          table switched first; j_running is 0 (the next
 *                          jbd_start makes a new one), j_committing names it,
 *                          t_log_start = j_head; no handle refers to it.
 *   FLUSH    -> COMMIT     jbd_commit_write_log (logwrite.c; j_state_lock):
 *                          ordered data is home; revoke, descriptor and data
 *                          blocks are in the log and flushed; each logged
 *                          buffer went METADATA -> SHADOW -> FORGET.
 *   COMMIT   -> FINISHED   jbd_commit_finish (j_state_lock, j_list_lock):
 *                          the commit block is durable; j_commit_sequence =
 *                          t_tid; FORGET buffers are on its checkpoint list
 *                          (JBDDIRTY ones, DIRTY for their home write) or
 *                          with the transaction waiting for them; it is on
 *                          j_checkpoint_transactions.
 *   FINISHED -> (freed)    jbd_checkpoint_drop (checkpoint.c; j_list_lock):
 *                          its checkpoint list is empty (every buffer it
 *                          logged is home, or logged again by a later
 *                          committed transaction, which took it) and the log
 *                          tail then moves past it.
 *
 * At most one transaction is RUNNING and at most one is between LOCKED and
 * COMMIT; FINISHED ones wait on j_checkpoint_transactions, oldest first.
 */
#ifndef JD_JOURNAL_H
#define JD_JOURNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "bcache.h"
#include "futex.h"
#include "layout.h"
#include "lockset.h"
#include "pool.h"

#define JBD_MAGIC 0x4c4e524a44334558ULL /* "EX3DJRNL" */
#define JBD_VERSION 1

#define JBD_MAX_TRANSACTIONS 256   /* running + committing + awaiting checkpoint */
#define JBD_MAX_HANDLES 1024       /* open at once, all processes */
#define JBD_MAX_REVOKES 65536      /* revoke records, both tables */
/* A running transaction with this many revoke records is full, as one
 * without credits: no handle joins or extends it, so that it and the
 * committing transaction (whose records go back when it is logged) leave
 * room for the records the handles already in it still add. data=journal
 * revokes every data block it frees: a truncate can add thousands. */
#define JBD_REVOKES_PER_TRANSACTION (JBD_MAX_REVOKES / 4)
#define JBD_REVOKE_BUCKETS 1024    /* per table, a power of 2 */
#define JBD_MAX_CALLBACKS 4096     /* commit callbacks waiting for their commit */
#define JBD_DEFAULT_COMMIT_MS 5000
#define JBD_CBQ_LEN 256           /* delivered callbacks per service, a power of 2 */

enum jbd_tstate {
	JBD_T_RUNNING = 1,
	JBD_T_LOCKED = 2,
	JBD_T_FLUSH = 3,
	JBD_T_COMMIT = 4,
	JBD_T_FINISHED = 5,
};

/* Which list of its transaction a journal head is on (b_jlist); the values
 * are JBD's. */
enum jbd_jlist {
	JBD_NONE = 0,
	JBD_SYNCDATA = 1,  /* ordered data: written home before the commit */
	JBD_METADATA = 2,  /* dirtied metadata: goes into the log */
	JBD_FORGET = 3,    /* forgotten, or logged and awaiting refile */
	JBD_IO = 4,        /* the temporary log copy being written */
	JBD_SHADOW = 5,    /* the original while its log copy is written */
	JBD_LOGCTL = 6,    /* descriptor and revoke blocks */
	JBD_RESERVED = 7,  /* write access taken, not dirtied (yet) */
	JBD_LOCKED = 8,    /* ordered data under write */
	JBD_NLISTS = 9,
};

/* b_jflags bits of a journal head: JBD's extra buffer-head states. */
enum jbd_jflag {
	JBD_JF_JBDDIRTY = 1u << 0,    /* dirty for the journal: logged, then checkpointed */
	JBD_JF_REVOKED = 1u << 1,     /* revoked in the running transaction */
	JBD_JF_REVOKEVALID = 1u << 2, /* JBD_JF_REVOKED is meaningful */
	JBD_JF_FREED = 1u << 3,       /* forgotten while the committing transaction had it */
};

enum jbd_data_mode {
	JBD_DATA_ORDERED = 1,   /* the default */
	JBD_DATA_JOURNAL = 2,
	JBD_DATA_WRITEBACK = 3,
};

/* j_flags */
enum jbd_flag {
	JBD_F_ABORTED = 1u << 0,  /* an I/O error or a dead holder: no more handles */
	JBD_F_UNMOUNT = 1u << 1,  /* clean shutdown in progress */
	JBD_F_FLUSHED = 1u << 2,  /* the log is empty on disk (s_start 0): the next
				   * commit writes the journal superblock first */
};

/* A journal head: JBD's view of one cached buffer. jh index == buffer index
 * (cm_bh.b_index), and cm_bh.b_jh is set while it is attached. */
typedef struct jbd_jh {
	uint32_t b_jcount;           /* [journal_head] users; attached while > 0 */
	uint32_t b_jlist;            /* [bh_state] enum jbd_jlist */
	uint32_t b_jflags;           /* [bh_state] enum jbd_jflag */
	uint32_t b_modified;         /* [bh_state] dirtied in its current transaction */
	uint32_t b_frozen_data;      /* [bh_state] copy index + 1: what commit logs */
	uint32_t b_committed_data;   /* [bh_state] copy index + 1: last committed image */
	uint32_t b_transaction;      /* [bh_state and j_list_lock] owner, index + 1 */
	uint32_t b_next_transaction; /* [bh_state] running trans waiting for the committing one */
	uint32_t b_tnext, b_tprev;   /* [j_list_lock] on b_transaction's b_jlist list */
	uint32_t b_cp_transaction;   /* [j_list_lock] transaction to checkpoint it, index + 1 */
	uint32_t b_cpnext, b_cpprev; /* [j_list_lock] on its checkpoint list */
	uint64_t b_blocknr;          /* [bh_state] the buffer's block while attached */
} jbd_jh;

/* The list heads of a transaction, indexed by enum jbd_jlist (JBD_NONE
 * unused); each names the first journal head of a circular list. */
typedef struct jbd_transaction {
	/* The two locks come first and are initialised once, when the pool is
	 * made, so a starter may lock a transaction it read from j_running
	 * racily even if that one was freed meanwhile (it then re-checks). */
	cm_mutex t_handle_lock;
	cm_mutex t_jcb_lock;
	uint32_t t_tid;              /* [immutable while allocated] */
	_Atomic uint32_t t_state;    /* [j_state_lock; racy reads ok] enum jbd_tstate */
	uint32_t t_log_start;        /* [j_state_lock] log block of its first block */
	uint32_t t_nr_buffers;       /* [j_list_lock] on JBD_METADATA */
	uint32_t t_lists[JBD_NLISTS];       /* [j_list_lock] */
	uint32_t t_checkpoint_list;  /* [j_list_lock] logged buffers not yet home */
	uint32_t t_cpnext, t_cpprev; /* [j_list_lock] on j_checkpoint_transactions */
	_Atomic uint32_t t_revoke_records; /* [j_revoke_lock; racy reads ok: 0 skips the
				      * lock when write access cancels a revoke, and
				      * whether it is full of revokes is a hint] */
	uint64_t t_start_ns;         /* [immutable while allocated] */
	uint64_t t_expires_ns;       /* [immutable while allocated] commit by then */
	int32_t t_updates;           /* [t_handle_lock] open handles */
	int32_t t_outstanding_credits; /* [t_handle_lock] used + held by open handles */
	uint32_t t_handle_count;     /* [t_handle_lock] handles ever started */
	uint32_t t_jcb;              /* [t_jcb_lock] first commit callback, index + 1 */
} jbd_transaction;

/* A handle: one atomic operation's share of the running transaction. It is
 * used by one thread at a time: its owner, or a joiner (another service
 * working inside it while the owner waits for that service's reply). */
typedef struct jbd_handle {
	uint32_t h_transaction;      /* [immutable while open] index + 1 */
	uint32_t h_tid;              /* [immutable while open] */
	int32_t h_buffer_credits;    /* [the thread using it] */
	int32_t h_ref;               /* [the thread using it] nesting and joins */
	uint32_t h_sync;             /* [the thread using it] stop waits for the commit */
	int32_t h_err;               /* [the thread using it] first error: stop returns it */
	_Atomic int32_t h_pid;       /* [atomic] owner's pid: a dead owner aborts the journal */
	_Atomic int32_t h_join_pid;  /* [atomic] joiner's pid while joined, else 0 */
} jbd_handle;

/* A revoke record: block blocknr revoked by transaction tid. */
typedef struct jbd_revoke_record {
	uint64_t blocknr;            /* [j_revoke_lock] */
	uint32_t tid;                /* [j_revoke_lock] */
	uint32_t next;               /* [j_revoke_lock] next in its bucket, index + 1 */
} jbd_revoke_record;

/* A commit callback: when its transaction is FINISHED, journald-svc puts
 * cookie into the completion queue of service slot `slot` and rings that
 * service's doorbell (jbd_take_callbacks drains it). */
typedef struct jbd_callback {
	uint64_t cookie;             /* [t_jcb_lock] */
	uint32_t slot;               /* [t_jcb_lock] */
	uint32_t next;               /* [t_jcb_lock] */
} jbd_callback;

/* Counters for `ext3d status` (as /proc/fs/jbd2/ * /info). */
typedef struct jbd_stats {
	_Atomic uint64_t commits;
	_Atomic uint64_t handles;        /* handles in committed transactions */
	_Atomic uint64_t blocks;         /* metadata blocks logged */
	_Atomic uint64_t log_blocks;     /* every log block written (descriptors too) */
	_Atomic uint64_t commit_ns;      /* total commit time */
	_Atomic uint64_t locked_wait_ns; /* total time handles waited for LOCKED */
	_Atomic uint64_t checkpoints;
	_Atomic uint64_t checkpoint_blocks;
	_Atomic uint64_t revokes;
	_Atomic uint64_t frozen;         /* frozen copies made */
	_Atomic uint64_t escaped;        /* log blocks escaped */
	_Atomic uint64_t space_waits;    /* starts that waited for log space */
	_Atomic uint64_t handle_starts;  /* added in batches of 64 per thread */
} jbd_stats;

typedef struct jbd_journal {
	uint64_t magic;              /* [immutable] JBD_MAGIC */
	uint32_t version;            /* [immutable] JBD_VERSION */
	uint32_t block_size;         /* [immutable] fs and log block size */
	uint32_t fs_blocks;          /* [immutable] s_blocks_count */
	uint32_t j_first;            /* [immutable] first log block (s_first) */
	uint32_t j_last;             /* [immutable] one past the last (s_maxlen) */
	uint32_t j_max_transaction_buffers; /* [immutable] j_last / 4 */
	uint32_t data_mode;          /* [immutable] enum jbd_data_mode */
	uint32_t commit_interval_ms; /* [immutable] */
	uint32_t fs_sb_block;        /* [immutable] block holding the ext3 superblock */
	uint32_t fs_sb_offset;       /* [immutable] its offset in that block */
	uint8_t uuid[16];            /* [immutable] the journal superblock's */
	cm_off logmap;               /* [immutable] uint32_t[j_last]: log -> fs block */
	cm_off transactions;         /* [immutable] cm_pool of jbd_transaction */
	cm_off handles;              /* [immutable] cm_pool of jbd_handle */
	cm_off revokes;              /* [immutable] cm_pool of jbd_revoke_record */
	cm_off callbacks;            /* [immutable] cm_pool of jbd_callback */
	cm_off copies;               /* [immutable] cm_pool, data zone, block_size each */
	cm_off jheads;               /* [immutable] jbd_jh[njheads] */
	uint32_t njheads;            /* [immutable] the cache's buffer count */

	/* [j_state_lock] */
	_Atomic uint32_t j_flags;    /* [j_state_lock; racy reads ok] enum jbd_flag */
	int32_t j_errno;             /* why it aborted */
	_Atomic uint32_t j_running;  /* [j_state_lock; racy reads ok: a starter checks
				      * t_state under t_handle_lock] index + 1 */
	uint32_t j_committing;       /* transaction index + 1 */
	uint32_t j_head;             /* next log block to write */
	uint32_t j_tail;             /* oldest log block still needed (0: log empty) */
	_Atomic uint32_t j_free;     /* [j_state_lock; racy reads ok] log blocks free */
	uint32_t j_tail_sequence;    /* tid of the transaction at j_tail */
	uint32_t j_transaction_sequence; /* tid the next new transaction gets */
	_Atomic uint32_t j_commit_sequence; /* [j_state_lock; racy reads ok] last committed */
	uint32_t j_commit_request;   /* tid someone wants committed */
	uint32_t j_space_request;    /* log blocks a starter waits for: checkpoint */
	uint32_t j_sb_start;         /* s_start as last written */
	uint64_t j_average_commit_ns;

	uint32_t j_checkpoint_transactions; /* [j_list_lock] oldest FINISHED, circular */
	uint32_t j_revoke_cur;       /* [j_revoke_lock] table of the running transaction */
	uint32_t j_revoke_table[2][JBD_REVOKE_BUCKETS]; /* [j_revoke_lock] bucket heads */

	cm_event j_wait_transaction_locked; /* LOCKED ended: starters retry */
	cm_event j_wait_updates;     /* a transaction's t_updates reached 0 */
	cm_event j_wait_done_commit; /* j_commit_sequence moved */
	cm_event j_wait_commit;      /* wakes journald-svc: a commit is wanted */
	cm_event j_wait_unshadow;    /* a buffer left JBD_SHADOW */
	cm_event j_wait_space;       /* log space was freed by a checkpoint */

	/* Commit callbacks delivered to each service slot: journald-svc adds at
	 * tail, the service takes at head (under its own private lock). */
	struct {
		_Atomic uint32_t head, tail; /* [atomic] */
		uint64_t cookie[JBD_CBQ_LEN]; /* [between head and tail: the service] */
	} cbq[CM_MAX_SVCS];

	jbd_stats stats;
} jbd_journal;

typedef struct jbd_ctx jbd_ctx;
/* The pre-commit hook of a process that commits (journald-svc: the
 * superblock's free counts): see jbd_set_precommit in commit.h. */
typedef void jbd_precommit_fn(void *ctx, jbd_ctx *jc, jbd_handle *h);
#define JBD_PRECOMMIT_CREDITS 1 /* the hook's handle holds as many */

/* One process's handle on the journal (private memory). */
struct jbd_ctx {
	cm_arena *a;
	cm_layout *l;
	cm_lockset *ls;
	cm_bcache *cache;
	jbd_journal *j;
	cm_pool *tpool, *hpool, *rpool, *cbpool, *cpool;
	jbd_jh *jheads;
	uint32_t *logmap;
	bool big;                    /* --locking=big */
	uint32_t slot;               /* this service's slot, for callbacks */
	_Atomic uint32_t spare;      /* [atomic] a stopped handle this process keeps
				      * for its next start, pool index + 1: the
				      * shared pool's head stays out of the fast path */
	jbd_precommit_fn *precommit; /* [the committing thread] or NULL */
	void *precommit_ctx;         /* [the committing thread] */
	struct cm_bdev *data_bd;     /* [the committing thread] the channel ordered
				      * data goes home on, beside the log's; opened
				      * at the first commit, NULL until then */
};

/* What journald-svc knows after recovery, to create the journal. */
typedef struct jbd_geometry {
	uint32_t block_size, fs_blocks;
	uint32_t first, last;        /* s_first, s_maxlen */
	uint32_t sequence;           /* the tid the first transaction gets */
	const uint32_t *logmap;      /* last entries: log block -> fs block */
	uint32_t fs_sb_block, fs_sb_offset;
	uint8_t uuid[16];
	enum jbd_data_mode data_mode;
	uint32_t commit_interval_ms; /* 0: JBD_DEFAULT_COMMIT_MS */
} jbd_geometry;

/* journald-svc: creates the journal in the arena for the cache at
 * layout->bcache (which must exist) and publishes it in layout->journal.
 * The log starts empty: recovery has run. */
int jbd_create(cm_arena *a, const jbd_geometry *g, cm_off *ret);
/* Any service: a private handle on the journal of the arena's layout;
 * -ENOENT when there is none yet, -EPROTO when it is not one. */
int jbd_attach(cm_arena *a, cm_bcache *cache, uint32_t slot, jbd_ctx **ret);
jbd_ctx *jbd_detach(jbd_ctx *jc);

/* ---- handles (transaction.c) ----
 * Errors: -ENOSPC for more credits than one transaction may hold, -EROFS
 * once the journal aborted, -EOWNERDEAD when a lock's holder died, -ENOMEM
 * when a pool is empty. A thread that starts a handle while it already
 * has one open gets the same handle back with h_ref raised (nesting). */
int jbd_start(jbd_ctx *jc, int nblocks, jbd_handle **ret);
/* Ends the handle (the last reference returns its unused credits and
 * wakes the commit if it was the last update). Returns h_err or the
 * commit's error for a sync handle. */
int jbd_stop(jbd_ctx *jc, jbd_handle *h);
/* 0 when granted, 1 when the transaction cannot take nblocks more. */
int jbd_extend(jbd_ctx *jc, jbd_handle *h, int nblocks);
/* Commits what h did so far as its own transaction's part and continues
 * in a new one with nblocks credits. */
int jbd_restart(jbd_ctx *jc, jbd_handle *h, int nblocks);
/* Makes stop wait until the handle's transaction is committed. */
void jbd_handle_set_sync(jbd_handle *h);
uint32_t jbd_handle_tid(const jbd_handle *h);
/* A handle named across processes: its arena offset. */
cm_off jbd_handle_token(jbd_ctx *jc, const jbd_handle *h);
/* A second process works inside the handle named by token (the owner
 * waits for it); jbd_stop ends the join. -EINVAL for a token that names
 * no open handle. */
int jbd_join(jbd_ctx *jc, cm_off token, jbd_handle **ret);

/* ---- buffers (access.c; revoke in revoke.c, callbacks in transaction.c,
 * the bh_state wrappers in locks.c) ----
 * bh is referenced by the caller and UPTODATE (get_create_access: a new
 * block the caller fills). Each may wait (for a buffer under log I/O). */
int jbd_get_write_access(jbd_ctx *jc, jbd_handle *h, cm_bh *bh);
int jbd_get_create_access(jbd_ctx *jc, jbd_handle *h, cm_bh *bh);
/* Write access plus a copy of the last committed contents (bitmaps: a
 * block freed by an uncommitted transaction stays unallocatable). */
int jbd_get_undo_access(jbd_ctx *jc, jbd_handle *h, cm_bh *bh);
/* The committed copy kept by get_undo_access, or NULL if none. The caller
 * holds bh_state (jbd_lock_bh_state). */
const void *jbd_committed_data(jbd_ctx *jc, cm_bh *bh);
int jbd_lock_bh_state(jbd_ctx *jc, cm_bh *bh);
void jbd_unlock_bh_state(jbd_ctx *jc, cm_bh *bh);
int jbd_dirty_metadata(jbd_ctx *jc, jbd_handle *h, cm_bh *bh);
/* Ordered mode: bh (file data) reaches home before the commit. */
int jbd_dirty_data(jbd_ctx *jc, jbd_handle *h, cm_bh *bh);
/* The block no longer matters to this transaction (freed metadata). */
int jbd_forget(jbd_ctx *jc, jbd_handle *h, cm_bh *bh);
/* Records that blocknr must not be replayed from earlier transactions;
 * bh is its buffer if cached, or NULL. A second revoke in one transaction
 * is -EIO, as in JBD. */
int jbd_revoke(jbd_ctx *jc, jbd_handle *h, uint64_t blocknr, cm_bh *bh);
/* Asks journald-svc for a commit callback: when the handle's transaction
 * is committed, cookie goes to this service's queue. */
int jbd_add_callback(jbd_ctx *jc, jbd_handle *h, uint64_t cookie);
/* Takes up to n cookies whose transactions committed; returns how many. */
int jbd_take_callbacks(jbd_ctx *jc, uint64_t *cookies, int n);

/* ---- commits (transaction.c) ---- */
/* Asks for the running transaction to commit; *tid gets its id (or the
 * last committed tid when nothing runs). */
int jbd_force_commit(jbd_ctx *jc, uint32_t *tid);
/* Asks for transaction tid (running or committing) to commit, without
 * committing a later one (jbd2_log_start_commit); 0 when it already has. */
int jbd_commit_tid(jbd_ctx *jc, uint32_t tid);
/* Waits until transaction tid is committed (or the journal aborts: -EIO;
 * the arena is discarded: -ESTALE). */
int jbd_wait_commit(jbd_ctx *jc, uint32_t tid);

/* ---- for journald-svc and tests ---- */
/* Stops the journal: no new handle; waiters get -EIO. */
void jbd_abort(jbd_ctx *jc, int err);
/* Checks every invariant above while nothing else runs; for assert(). */
bool jbd_check(jbd_ctx *jc);

#endif /* JD_JOURNAL_H */
