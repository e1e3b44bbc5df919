/* lockset.h - the lock set shared by all processes of an instance: JBD's
 * locks one for one (docs/locking.md), their ranks, and why.
 *
 * Lock order, outermost first; a thread takes locks in increasing rank only
 * (lock.h checks it in debug builds; trylocks are exempt):
 *
 *   big_lock         --locking=big only: replaces every journal lock
 *                    (j_state_lock through j_revoke_lock: the ones JBD
 *                    brought in to replace the big kernel lock), so it is
 *                    outermost and no journal lock is taken in that mode.
 *                    The buffer-cache stripes and ring_producer are leaf
 *                    locks kept in both modes (as 2.5.72 kept its buffer
 *                    and page-cache locks under the BKL): they guard the
 *                    cache's hash chains and a ring's producers, not
 *                    journal state, are never held across a wait, and so
 *                    add nothing to what the big lock serialises.
 *   j_state_lock     journal state; held while starting a handle until
 *                    t_updates is raised, so it orders before t_handle_lock.
 *   t_handle_lock    a transaction's t_updates, outstanding credits, handle
 *                    count; taken under j_state_lock in start_this_handle.
 *   t_jcb_lock       a transaction's commit callbacks; taken under
 *                    t_handle_lock when a handle adds one (JBD 2.6.0).
 *   bh_state         a buffer's journal list, frozen/committed copies,
 *                    b_modified; taken under j_state_lock, and it must be
 *                    held to move a buffer between lists, so it orders before
 *                    j_list_lock. Holding j_list_lock and needing bh_state
 *                    means a trylock and back off.
 *   j_list_lock      every transaction buffer list and checkpoint list.
 *   journal_head     attaching/detaching a buffer's journal head and its
 *                    refcount; innermost of the journal locks.
 *   j_revoke_lock    revoke hash tables: a leaf.
 *   group            one block group's bitmaps and descriptor counts: a leaf
 *                    (two groups are never locked together).
 *   counter          folding a fuzzy counter's slot deltas: a leaf, may be
 *                    taken under a group lock.
 *   bcache           a buffer-cache hash stripe (bcache.c): a leaf, never two
 *                    at once, never held across I/O or any wait; taken in
 *                    both locking modes, under the big lock too.
 *   ring_producer    serialises producers of a multi-producer ring: a leaf,
 *                    never held while waiting.
 *
 * The per-transaction locks (t_handle_lock, t_jcb_lock) live in each
 * transaction; bh_state and journal_head are striped by block number.
 *
 * No lock of any rank is held while waiting on a ring, an event or a LOCKED
 * buffer: the lock-order checker asserts it at every such wait (lock.h,
 * cm_lockdep_assert_none_held).
 */
#ifndef CM_LOCKSET_H
#define CM_LOCKSET_H

#include <stdint.h>

#include "lock.h"

enum cm_lock_rank {
	CM_RANK_BIG = 10,
	CM_RANK_J_STATE = 20,
	CM_RANK_T_HANDLE = 30,
	CM_RANK_T_JCB = 40,
	CM_RANK_BH_STATE = 50,
	CM_RANK_J_LIST = 60,
	CM_RANK_JOURNAL_HEAD = 70,
	CM_RANK_J_REVOKE = 80,
	CM_RANK_GROUP = 90,
	CM_RANK_COUNTER = 100,
	CM_RANK_BCACHE = 105,
	CM_RANK_RING_PRODUCER = 110,
};

enum cm_locking_mode {
	CM_LOCKING_FINE = 1, /* the JBD lock set (Linux 2.5.73 and later) */
	CM_LOCKING_BIG = 2,  /* one arena-wide lock: the 2.5.72 baseline */
};

#define CM_BH_STRIPES 256    /* bh_state and journal_head stripes, by hashed block nr */
#define CM_GROUP_LOCKS 128   /* hashed like sb_bgl_lock(): group & (N - 1) */
#define CM_COUNTERS 3        /* free blocks, free inodes, directories */

typedef struct cm_lockset {
	uint32_t mode;                          /* [immutable] enum cm_locking_mode */
	cm_mutex big_lock;
	cm_mutex j_state_lock;
	cm_mutex j_list_lock;
	cm_mutex j_revoke_lock;
	cm_mutex bh_state[CM_BH_STRIPES];
	cm_mutex journal_head[CM_BH_STRIPES];
	cm_mutex group[CM_GROUP_LOCKS];
	cm_mutex counter[CM_COUNTERS];
} cm_lockset;

int cm_lockset_init(cm_lockset *ls, enum cm_locking_mode mode);
/* Calls fn for every lock of the set, in declaration order. */
void cm_lockset_foreach(cm_lockset *ls, void (*fn)(cm_mutex *m, void *ctx), void *ctx);

#endif
