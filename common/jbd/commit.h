/*
 * commit.h - journald-svc's side of the run-time journal: commit
 * (commit.c), checkpoint and clean shutdown (checkpoint.c), and the
 * journal superblock and needs_recovery writes (jsb.c); logwrite.c has
 * the log writer of jbd_commit_write_log.
 *
 * One thread (journald-svc's commit thread, or a test) calls these; it is
 * the only one that moves a transaction past LOCKED, writes the log or
 * moves its tail. It takes the journal locks only around state changes
 * and holds none while it waits for I/O or for handles to finish. Every
 * call returns 0 or -errno; an I/O error aborts the journal (jbd_abort)
 * and gives -EIO, and later calls give -EROFS.
 *
 * Ordering on disk (the contract with recovery, e2fsck and the kernel):
 *   needs_recovery durable  before the first log write (jbd_jsb_open);
 *   s_start/s_sequence      durable before the first log block of the
 *                           first commit after a clean start (FLUSHED);
 *   descriptors, revokes
 *   and data blocks         durable before the commit block is written;
 *   commit block            durable before the commit is reported;
 *   home writes             durable before s_start moves past them;
 *   s_start = 0             durable before needs_recovery is cleared.
 */
#ifndef JD_COMMIT_H
#define JD_COMMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "bdclient.h"
#include "journal.h"

/* ---- commit.c: the transitions RUNNING -> LOCKED -> FLUSH -> COMMIT ->
 * FINISHED of journal.h, one call each, in this order. ---- */

/* RUNNING -> LOCKED: j_running stops taking handles, then waits (holding
 * no lock) until its t_updates is 0. *ret is the transaction, or NULL
 * (and 0) when nothing is running. */
int jbd_commit_lock(jbd_ctx *jc, jbd_transaction **ret);
/* LOCKED -> FLUSH: unused reserved buffers go back, the revoke table
 * switches, j_committing = t and j_running = 0, so that the next
 * jbd_start makes a new transaction at once. */
int jbd_commit_switch(jbd_ctx *jc, jbd_transaction *t);
/* FLUSH -> COMMIT: ordered data home; revoke, descriptor and data blocks
 * written to the log and flushed. */
int jbd_commit_write_log(jbd_ctx *jc, cm_bdev *bd, jbd_transaction *t);
/* COMMIT -> FINISHED: the commit block written and flushed; logged buffers
 * onto t's checkpoint list (dirty for their home write) or to the
 * transaction that waits for them; waiters and callbacks told. */
int jbd_commit_finish(jbd_ctx *jc, cm_bdev *bd, jbd_transaction *t);
/* The four above for the running transaction: 1 when one was committed, 0
 * when nothing was running. */
int jbd_commit(jbd_ctx *jc, cm_bdev *bd);
/* Sets the hook jbd_commit runs on each transaction once it is LOCKED
 * and its last handle stopped, before the switch: nothing else runs in the
 * transaction then, so what the hook writes matches the transaction's
 * changes exactly. It gets a handle on that transaction holding
 * JBD_PRECOMMIT_CREDITS credits, for write access and dirty_metadata on
 * as many buffers; it must not start, stop or join handles. */
void jbd_set_precommit(jbd_ctx *jc, jbd_precommit_fn *fn, void *ctx);
/* True when the running transaction should commit now: someone asked for
 * it, the journal is being unmounted, or it has handles and expired or a
 * starter waits for log space. */
bool jbd_commit_wanted(jbd_ctx *jc);

/* ---- checkpoint.c ---- */
/* Writes home the buffers of the FINISHED transactions, flushes, and moves
 * the log tail past every transaction that no longer needs the log,
 * freeing it (FINISHED -> freed, jbd_checkpoint_drop); the journal
 * superblock is durable before the space is reused. Wakes starters
 * waiting for space. need is what a starter asked for (0: as much as
 * possible). Returns the log blocks freed: 0 when the oldest transaction
 * waits for one that logged its buffers again (commit that one first). */
int jbd_checkpoint(jbd_ctx *jc, cm_bdev *bd, uint32_t need);
/* True when a checkpoint is due: a starter waits for space, or more than
 * half of the log is in use. */
bool jbd_checkpoint_wanted(jbd_ctx *jc);
/* Clean shutdown: commit everything, checkpoint everything, s_start = 0
 * durable, then needs_recovery cleared durably. No handle may start after. */
int jbd_shutdown(jbd_ctx *jc, cm_bdev *bd);

/* ---- jsb.c ---- */
/* Checks the journal superblock against the journal in the arena and sets
 * needs_recovery in the ext3 superblock, durably. Call once, after
 * jbd_create and before any handle starts (nothing else may hold the
 * superblock's buffer in a transaction then). */
int jbd_jsb_open(jbd_ctx *jc, cm_bdev *bd);
/* Writes s_start and s_sequence (and the REVOKE feature) into the journal
 * superblock and flushes. Refused once the journal aborted. */
int jbd_jsb_write(jbd_ctx *jc, cm_bdev *bd, uint32_t start, uint32_t sequence);
/* Clears needs_recovery durably: only after s_start = 0 is durable. */
int jbd_jsb_clear_recover(jbd_ctx *jc, cm_bdev *bd);

#endif /* JD_COMMIT_H */
