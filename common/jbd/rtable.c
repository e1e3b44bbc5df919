/*
 * rtable.c - the revoke table recovery builds in its second pass: for each
 * revoked home block, the latest transaction that revoked it.  Replay
 * skips a logged copy of a block when a transaction at least as new as the
 * copy's revoked it.  A hash with linear probing, doubled at half load.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>

struct jd_rentry {
	uint32_t blk;
	uint32_t tid;
	bool used;
};

void jd_rtable_init(jd_rtable *t)
{
	t->slots = NULL;
	t->nslots = 0;
	t->used = 0;
}

void jd_rtable_free(jd_rtable *t)
{
	free(t->slots);
	jd_rtable_init(t);
}

static uint32_t slot_of(const jd_rtable *t, uint32_t blk)
{
	return (blk * 0x9E3779B1U) & (t->nslots - 1);
}

static struct jd_rentry *find(const jd_rtable *t, uint32_t blk)
{
	uint32_t i;

	if (t->nslots == 0)
		return NULL;
	for (i = slot_of(t, blk); t->slots[i].used; i = (i + 1) & (t->nslots - 1))
		if (t->slots[i].blk == blk)
			return &t->slots[i];
	return &t->slots[i];
}

static int grow(jd_rtable *t)
{
	jd_rtable bigger = {.nslots = t->nslots ? t->nslots * 2 : 256};
	uint32_t i;

	if (bigger.nslots > (1U << 30))
		return -ENOMEM;
	bigger.slots = calloc(bigger.nslots, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (i = 0; i < t->nslots; i++) {
		if (t->slots[i].used) {
			*find(&bigger, t->slots[i].blk) = t->slots[i];
			bigger.used++;
		}
	}
	free(t->slots);
	*t = bigger;
	return 0;
}

int jd_rtable_set(jd_rtable *t, uint32_t blk, uint32_t tid)
{
	struct jd_rentry *e;
	int r;

	if ((t->used + 1) * 2 > t->nslots) {
		r = grow(t);
		if (r < 0)
			return r;
	}
	e = find(t, blk);
	if (e->used) {
		if (jd_tid_gt(tid, e->tid))
			e->tid = tid;
		return 0;
	}
	*e = (struct jd_rentry){.blk = blk, .tid = tid, .used = true};
	t->used++;
	return 0;
}

bool jd_rtable_revoked(const jd_rtable *t, uint32_t blk, uint32_t tid)
{
	const struct jd_rentry *e = find(t, blk);

	return e && e->used && !jd_tid_gt(tid, e->tid);
}
