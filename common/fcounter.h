/* fcounter.h - fuzzy counters in the arena, as the kernel's percpu_counter:
 * the filesystem's free blocks, free inodes and directories, changed by
 * every allocation and free in any process without a shared write per
 * change.
 *
 * Each counter has a global value and CM_FC_SLOTS per-slot deltas (a slot
 * per worker thread; threads that share one stay correct, as deltas change
 * by atomic adds). An add changes the caller's slot; when a slot's delta
 * reaches the batch size it is folded into the global value under the
 * counter's lock (lockset.h: counter[which], a leaf that may be taken
 * under a group lock). cm_fc_read is the global value alone, off by at most
 * batch x slots in use (statfs, placement decisions); cm_fc_sum adds every
 * slot under the lock, the exact value that the superblock gets at commit
 * and unmount.
 */
#ifndef CM_FCOUNTER_H
#define CM_FCOUNTER_H

#include <stdatomic.h>
#include <stdint.h>

#include "lockset.h"

#define CM_FC_SLOTS 64
#define CM_FC_DEFAULT_BATCH 32

enum cm_fc_which {
	CM_FC_FREE_BLOCKS = 0,
	CM_FC_FREE_INODES = 1,
	CM_FC_DIRS = 2,
};

typedef struct cm_fcounter {
	_Atomic int64_t count;      /* [counter lock for folds; racy reads ok] */
	int32_t batch;              /* [immutable] fold past this many */
	uint32_t which;             /* [immutable] enum cm_fc_which: its lock */
	struct {
		_Atomic int64_t delta;  /* [atomic] not yet folded */
	} __attribute__((aligned(64))) slot[CM_FC_SLOTS];
} cm_fcounter;

/* Sets the counter to value with no deltas; batch 0 means the default. */
void cm_fc_init(cm_fcounter *c, enum cm_fc_which which, int64_t value, int32_t batch);
/* Adds n (negative to subtract) through slot (any number: it is taken
 * modulo CM_FC_SLOTS). 0, or -EOWNERDEAD when the counter's lock lost its
 * owner (the delta then stays in the slot). */
int cm_fc_add(cm_lockset *ls, cm_fcounter *c, uint32_t slot, int64_t n);
/* The global value: fast, approximate. */
int64_t cm_fc_read(const cm_fcounter *c);
/* The same, never below 0 (a free count read while frees are in slots). */
int64_t cm_fc_read_positive(const cm_fcounter *c);
/* The exact value, with every slot's delta: 0 or -EOWNERDEAD. */
int cm_fc_sum(cm_lockset *ls, cm_fcounter *c, int64_t *ret);

#endif
