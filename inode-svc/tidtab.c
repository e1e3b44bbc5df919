/* tidtab.c - the last transaction that changed each inode, for fsync and
 * fdatasync (ext3's i_sync_tid and i_datasync_tid): INO_TIDTAB_SLOTS
 * atomic slots chosen by inode number, each keeping the newest tid of any
 * inode that maps to it. Sharing a slot only makes an fsync wait for a
 * later commit than it needs, never an earlier one. A slot that was never
 * written (0) means nothing to wait for: at start every earlier change
 * is committed (recovery ran). Lock-free ([atomic] slots).
 */
#include "ops.h"

#define INO_TIDTAB_SLOTS 4096u

typedef struct ino_tidslot {
	_Atomic uint32_t any;   /* [atomic] last change of any kind, 0: none */
	_Atomic uint32_t data;  /* [atomic] last change that is not timestamps only */
} ino_tidslot;

static ino_tidslot ino_tidtab[INO_TIDTAB_SLOTS];

/* Raises *slot to tid (tids wrap: newer is a positive signed difference). */
static void ino_tid_raise(_Atomic uint32_t *slot, uint32_t tid)
{
	uint32_t old = atomic_load(slot);

	if (tid == 0)
		tid = 1; /* 0 is "none"; waiting for tid 1 instead waits no less */
	while ((old == 0 || (int32_t)(tid - old) > 0) &&
	       !atomic_compare_exchange_weak(slot, &old, tid))
		;
}

void ino_tid_note(uint32_t ino, uint32_t tid, bool data)
{
	ino_tidslot *s = &ino_tidtab[ino % INO_TIDTAB_SLOTS];

	ino_tid_raise(&s->any, tid);
	if (data)
		ino_tid_raise(&s->data, tid);
}

bool ino_tid_last(uint32_t ino, bool data, uint32_t *ret)
{
	ino_tidslot *s = &ino_tidtab[ino % INO_TIDTAB_SLOTS];
	uint32_t tid = atomic_load(data ? &s->data : &s->any);

	if (tid == 0)
		return false;
	*ret = tid;
	return true;
}
