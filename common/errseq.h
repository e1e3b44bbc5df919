/* errseq.h - the instance's write-error sequence: how a sync in any
 * session learns that a group restart threw away changes that some client
 * was told had succeeded (the kernel's errseq_t, kept for the instance
 * instead of for each open file, because sessions come and go).
 *
 * One record in the arena (layout.h). Before it answers a change, inode-svc
 * raises acked to the transaction that holds it; durable is raised when a
 * transaction and all before it are on disk with their data: by the
 * journal as its commit block is durable (ordered and journal modes), by
 * inode-svc after the data flush of an fsync or sync (writeback). When the
 * group dies, the supervisor, which outlives it, reads the dead arena's
 * record once every process that wrote it is gone: acked newer than
 * durable means the restart discards acknowledged changes, and the next
 * arena starts with seq one higher; seen carries over as it is.
 *
 * A sync notes seen when it starts (cm_errseq_since) and, once its commit
 * is durable, returns -EIO if seq differs (cm_errseq_check), raising seen
 * to seq: the loss goes to the syncs in progress and to the next one to
 * start, whatever their sessions, and to no sync after those.
 */
#ifndef CM_ERRSEQ_H
#define CM_ERRSEQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct cm_errseq {
	uint32_t seq;             /* [immutable] restarts that discarded acknowledged
				   * changes; the supervisor's, set before the services start */
	_Atomic uint32_t seen;    /* [atomic] seq as the last sync that reported it */
	_Atomic uint64_t acked;   /* [atomic] CM_ERRSEQ_TID | tid: the newest transaction
				   * holding an acknowledged change; 0: none */
	_Atomic uint64_t durable; /* [atomic] CM_ERRSEQ_TID | tid: it and every earlier
				   * transaction are on disk; 0: none */
} cm_errseq;

/* Marks acked and durable as holding a tid (tids wrap, 0 among them). */
#define CM_ERRSEQ_TID (1ULL << 32)

/* Supervisor: the record of a new arena. */
void cm_errseq_init(cm_errseq *e, uint32_t seq, uint32_t seen);
/* inode-svc, before it acknowledges a change made in transaction tid. */
void cm_errseq_ack(cm_errseq *e, uint32_t tid);
/* Transaction tid and every one before it are on disk. */
void cm_errseq_durable(cm_errseq *e, uint32_t tid);
/* Supervisor, once nothing writes e any more: an acknowledged change is
 * not on disk (*ret_tid: its transaction). */
bool cm_errseq_lost(cm_errseq *e, uint32_t *ret_tid);
/* A sync, before its commit: what it will compare with. */
uint32_t cm_errseq_since(cm_errseq *e);
/* A sync whose commit is durable: -EIO if a restart discarded
 * acknowledged changes since since was noted, else 0. */
int cm_errseq_check(cm_errseq *e, uint32_t since);

#endif
