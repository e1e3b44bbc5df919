/* layout.h - what an instance's arena holds, and where.
 *
 * The supervisor lays the arena out once (cm_layout_init); services find the
 * layout through the arena header. It holds the lock set, one slot per
 * service (pid, state, doorbell), the dead-owner mailbox, the channels
 * (request/response ring pairs, chan.h), the buffer cache (bcache.h),
 * which the first service that reads the filesystem creates, and the
 * instance's write-error sequence (errseq.h) and the device's state
 * (devstat.h).
 */
#ifndef CM_LAYOUT_H
#define CM_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>

#include "arena.h"
#include "devstat.h"
#include "errseq.h"
#include "futex.h"
#include "lockset.h"

#define CM_MAX_SVCS 8
#define CM_SVC_NAME_MAX 32
#define CM_MAX_CHANS 256
#define CM_CHAN_REC_SIZE 128   /* bytes per channel record */
#define CM_CHAN_DEPTH 128      /* records per channel ring */

enum cm_svc_state {
	CM_SVC_EMPTY = 0,
	CM_SVC_STARTING = 1,  /* started, not ready yet */
	CM_SVC_READY = 2,     /* set by the service itself */
	CM_SVC_STOPPING = 3,
	CM_SVC_EXITED = 4,    /* not running; restart policy decides */
	CM_SVC_FAILED = 5,    /* crashed by itself in a loop: not restarted */
	CM_SVC_RESTARTING = 6, /* dead, waiting out its restart delay */
	CM_SVC_STALLED = 7,   /* missed its heartbeat deadline: being killed */
};

/* Each service beats its slot's heartbeat every CM_HEARTBEAT_MS from a
 * thread of its own (service.c); the supervisor's watchdog kills one whose
 * beat is older than the instance's deadline. */
#define CM_HEARTBEAT_MS 100

typedef struct cm_svc_slot {
	char name[CM_SVC_NAME_MAX]; /* [immutable] */
	_Atomic int32_t pid;        /* [supervisor] 0 when not running */
	_Atomic uint32_t state;     /* [supervisor; the service sets READY] */
	cm_event doorbell;          /* wakes the service: work on one of its channels */
	_Atomic uint64_t heartbeat_ns; /* [the service] cm_now_ns() of its last beat */
} cm_svc_slot;

/* Dead lock owners found by any process, for the supervisor to act on. */
typedef struct cm_dead_box {
	_Atomic uint32_t reports;          /* [atomic] how many so far */
	_Atomic int32_t pid;               /* [racy read ok: diagnostics] last dead owner */
	char lock[CM_LOCK_NAME_MAX];       /* [racy read ok: diagnostics] its lock */
} cm_dead_box;

/* Corruption met by writes (inode-svc/fserror.c), for status. */
#define CM_FS_ERROR_MAX 128
typedef struct cm_fs_errors {
	_Atomic uint32_t count;            /* [atomic] errors recorded in the superblock */
	_Atomic uint32_t read_only;        /* [atomic] 1: remount-ro, every write gets EROFS */
	char last[CM_FS_ERROR_MAX];        /* [racy read ok: diagnostics] the last one */
} cm_fs_errors;

/* journald-svc's replay of the journal at start (journald-svc/recover.c),
 * for status and ext3d start's progress line; all 0 when none was needed.
 * The counts are those of jd_progress (common/jbd/recovery.h): log blocks
 * walked in the pass, of the pass's total (0 while the scan finds it). */
enum cm_recovery_state {
	CM_RECOVERY_NONE = 0,
	CM_RECOVERY_SCAN = 1,    /* CM_RECOVERY_SCAN + enum jd_pass while running */
	CM_RECOVERY_REVOKE = 2,
	CM_RECOVERY_REPLAY = 3,
	CM_RECOVERY_DONE = 4,
};

typedef struct cm_recovery {
	_Atomic uint32_t state;            /* [atomic] enum cm_recovery_state */
	_Atomic uint64_t done;             /* [racy read ok: progress] */
	_Atomic uint64_t total;            /* [racy read ok: progress] */
	_Atomic uint64_t blocks_written;   /* [atomic] home writes, set with DONE */
} cm_recovery;

typedef struct cm_layout {
	cm_lockset locks;
	cm_svc_slot svcs[CM_MAX_SVCS];     /* name set by the supervisor before exec */
	cm_dead_box dead;
	uint32_t nchans;                   /* [immutable] */
	cm_off chans;                      /* [immutable] cm_chan[nchans] */
	_Atomic cm_off bcache;             /* [atomic] the buffer cache, 0 until made */
	_Atomic cm_off journal;            /* [atomic] the journal (jbd/journal.h), 0 until made */
	_Atomic cm_off alloc;              /* [atomic] cm_alloc_shared (allocproto.h), 0 until made */
	cm_errseq errseq;                  /* as errseq.h says; seeded by the supervisor */
	cm_fs_errors fs_errors;            /* written by inode-svc only */
	cm_recovery recovery;              /* written by journald-svc only */
	cm_device device;                  /* written by blockdev-svc only */
} cm_layout;

/* Supervisor: lays out a new arena. */
int cm_layout_init(cm_arena *a, enum cm_locking_mode mode);
/* NULL if the arena has no layout. */
cm_layout *cm_layout_get(cm_arena *a);
/* Slot index of the named service, or -ENOENT. */
int cm_layout_find_svc(cm_layout *l, const char *name);
/* Makes dead lock owners found in this process go to the arena's mailbox. */
void cm_layout_report_dead_owners(cm_layout *l);

#endif
