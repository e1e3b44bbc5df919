/* errseq.c - the instance's write-error sequence (errseq.h). Lock-free:
 * acked and durable only move forward, in the wrapping order of tids. */
#include "errseq.h"

#include <errno.h>

void cm_errseq_init(cm_errseq *e, uint32_t seq, uint32_t seen)
{
	e->seq = seq;
	atomic_store(&e->seen, seen);
	atomic_store(&e->acked, 0);
	atomic_store(&e->durable, 0);
}

/* a names a newer transaction than b (either may be 0: none). */
static bool cm_errseq_newer(uint64_t a, uint64_t b)
{
	return a && (!b || (int32_t)((uint32_t)a - (uint32_t)b) > 0);
}

static void cm_errseq_raise(_Atomic uint64_t *mark, uint32_t tid)
{
	uint64_t v = CM_ERRSEQ_TID | tid, old = atomic_load(mark);

	while (cm_errseq_newer(v, old) && !atomic_compare_exchange_weak(mark, &old, v))
		;
}

void cm_errseq_ack(cm_errseq *e, uint32_t tid)
{
	cm_errseq_raise(&e->acked, tid);
}

void cm_errseq_durable(cm_errseq *e, uint32_t tid)
{
	cm_errseq_raise(&e->durable, tid);
}

bool cm_errseq_lost(cm_errseq *e, uint32_t *ret_tid)
{
	uint64_t acked = atomic_load(&e->acked);

	if (!cm_errseq_newer(acked, atomic_load(&e->durable)))
		return false;
	*ret_tid = (uint32_t)acked;
	return true;
}

uint32_t cm_errseq_since(cm_errseq *e)
{
	return atomic_load(&e->seen);
}

int cm_errseq_check(cm_errseq *e, uint32_t since)
{
	if (e->seq == since)
		return 0;
	atomic_store(&e->seen, e->seq);
	return -EIO;
}
