/* jd.h - journald-svc's parts: recovery at start (recover.c), the run-time
 * journal it creates and the commit thread's loop (commitd.c). */
#ifndef JD_SVC_H
#define JD_SVC_H

#include <stdint.h>

#include "bcache.h"
#include "bdclient.h"
#include "journal.h"
#include "recovery.h"
#include "service.h"

typedef struct jd_svc {
	cm_service svc;
	uint32_t commit_ms;     /* --commit-interval */
	uint64_t cache_bytes;   /* --cache-size, if journald-svc makes the cache */
	enum jbd_data_mode data_mode; /* --data */
	cm_bdev *bd;            /* [commit thread] */
	cm_bcache *cache;       /* [commit thread] */
	jbd_ctx *jc;            /* [commit thread] NULL: no journal */
	jd_dev dev;             /* [main thread] recovery's view of the device */
} jd_svc;

/* True if blockdev-svc serves a read-only device (a read-only NBD
 * export): the journal is then only read, never opened for writing. */
bool jd_device_read_only(const jd_svc *s);
/* Opens s->dev (a jd_dev over blockdev-svc through one arena buffer) and
 * replays the journal if needed, logging what it did. On a read-only
 * device a journal that needs replaying is refused instead. */
int jds_replay(jd_svc *s);
void jd_dev_close(jd_dev *dev);
/* After recovery: the buffer cache (made if none), the journal in the
 * arena, needs_recovery set durably. No journal on the image: 0, s->jc
 * NULL. */
int jd_journal_start(jd_svc *s);
/* Commits and checkpoints until SIGTERM, then shuts the journal down
 * cleanly. */
int jd_commit_loop(jd_svc *s);
void jd_stop(jd_svc *s);
/* sbcounts.c: the superblock's free counts. _start installs the
 * pre-commit hook that journals the exact sums with each commit;
 * _shutdown, with the log committed and checkpointed (empty), journals
 * them in a handle of its own if they still differ. */
void jd_sbcounts_start(jd_svc *s);
int jd_sbcounts_shutdown(jd_svc *s);

#endif
