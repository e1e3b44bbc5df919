/* balloc.c - block allocation and freeing, ext3's way (ext3_new_blocks,
 * ext3_free_blocks_sb, without reservation windows): the goal's group
 * first, searched from the goal (bitmap.c), then every other group in
 * turn from its start, skipping groups whose descriptor says they are
 * full; a run grows past the first block while the next ones are usable.
 * A block is usable only if clear in the bitmap and in its committed copy,
 * and a free sets the committed copy's bit, so a block freed by a
 * transaction that has not committed is never handed out. The reserved
 * blocks go only to CM_AL_RESERVED requests. Locks: internal.h. */
#include <errno.h>

#include "byteorder.h"
#include "internal.h"

#define AL_BACKUP_MAX 7 /* free blocks ext3 backs up over, towards the goal */

/* How much of want the request may take: all the free blocks, or those
 * past s_r_blocks_count for requests without CM_AL_RESERVED (as
 * ext3_has_free_blocks). The approximate count decides unless it is
 * within the counters' fuzz of the limit; then the exact sum does. */
static int al_room(al_req *q, uint32_t *want)
{
	al_svc *s = q->w->s;
	cm_fcounter *c = &s->shared->free_blocks;
	int64_t root = (q->flags & CM_AL_RESERVED) ? 0 : s->r_blocks;
	int64_t free = cm_fc_read(c);
	int r;

	if (free - (int64_t)c->batch * CM_FC_SLOTS < root + *want &&
	    (r = cm_fc_sum(s->ls, c, &free)) < 0)
		return r;
	if (free <= root)
		return -ENOSPC;
	if (free - root < *want)
		*want = (uint32_t)(free - root);
	return 0;
}

/* A usable bit near goal, backed up over up to AL_BACKUP_MAX usable bits
 * after the goal (the first of a run of free blocks), or -1. Called with
 * the group locked. */
static int64_t al_pick(al_req *q, al_group *x, uint32_t goal)
{
	const uint8_t *committed = al_group_committed(q, x); /* asserts the lock */
	int64_t bit = al_find_usable(x->live, committed, x->nbits, goal);

	for (int i = 0; i < AL_BACKUP_MAX && bit > goal && goal < x->nbits &&
			al_bit_usable(x->live, committed, (uint32_t)bit - 1); i++)
		bit--;
	return bit;
}

/* Claims up to want usable bits from bit (usable) on, and takes them from
 * the descriptor: how many, or -EUCLEAN. Called with the group locked. */
static int al_claim_run(al_req *q, al_group *x, uint32_t bit, uint32_t want)
{
	al_svc *s = q->w->s;
	const uint8_t *committed = al_group_committed(q, x);
	uint32_t n = 0;
	int r;

	while (n < want && bit + n < x->nbits && al_claim(x->live, committed, bit + n))
		n++;
	if (al_system_zone(s, x, x->first + bit, n))
		r = al_corrupt(s, x->g, "block bitmap hands out system block", x->first + bit);
	else
		r = al_gd_add(q, x, &x->gd->bg_free_blocks_count, -(int)n, x->nbits);
	if (r < 0) {
		for (uint32_t i = 0; i < n; i++)
			x->live[(bit + i) >> 3] &= (uint8_t)~(1u << ((bit + i) & 7));
		return r;
	}
	return (int)n;
}

/* One group: 0 with *first and *got set, 1 when it has no usable block,
 * or an error. The locked look comes first, then the buffers are dirtied
 * (a handle short of credits fails here, before anything changed), then
 * the claim, which looks again. */
static int al_blocks_in_group(al_req *q, uint32_t g, uint32_t goal, uint32_t want,
			      uint64_t *first, uint32_t *got)
{
	al_gd_counts gc;
	al_group x;
	int64_t bit;
	int r, n = 0;

	if ((r = al_gd_peek(q, g, &gc)) < 0)
		return r;
	if (gc.free_blocks == 0)
		return 1;
	if ((r = al_group_open(q, g, false, &x)) < 0)
		return r;
	if ((r = al_group_lock(q, &x)) < 0)
		goto out;
	r = al_group_check(q, &x);
	bit = r < 0 ? -1 : al_pick(q, &x, goal);
	al_group_unlock(q, &x);
	if (r < 0)
		goto out;
	if (bit < 0) {
		r = 1;
		goto out;
	}
	/* Found now, not at the claim: no credit is spent on a bad group. */
	if (al_system_zone(q->w->s, &x, x.first + (uint64_t)bit, 1)) {
		r = al_corrupt(q->w->s, g, "block bitmap hands out system block", x.first + bit);
		goto out;
	}
	if ((r = al_group_dirty(q, &x)) < 0 || (r = al_group_lock(q, &x)) < 0)
		goto out;
	/* Another worker may have taken it meanwhile: look again. */
	bit = al_pick(q, &x, goal);
	n = bit >= 0 ? al_claim_run(q, &x, (uint32_t)bit, want) : 0;
	al_group_unlock(q, &x);
	if (n <= 0) {
		r = n < 0 ? n : 1;
		goto out;
	}
	r = cm_fc_add(q->w->s->ls, &q->w->s->shared->free_blocks, q->w->id, -n);
	*first = x.first + (uint64_t)bit;
	*got = (uint32_t)n;
out:
	al_group_close(q, &x);
	return r;
}

int al_alloc_blocks(al_req *q, uint64_t goal, uint32_t want, uint64_t *first, uint32_t *got)
{
	al_svc *s = q->w->s;
	const cm_ext3_geom *g = &s->g;
	uint32_t start, bit;
	int r, bad = 0;

	if (want == 0)
		return -EINVAL;
	if (want > g->blocks_per_group)
		want = g->blocks_per_group;
	if ((r = al_room(q, &want)) < 0)
		return r;
	if (goal < g->first_data_block || goal >= g->blocks_count)
		goal = g->first_data_block;
	start = (uint32_t)((goal - g->first_data_block) / g->blocks_per_group);
	bit = (uint32_t)((goal - g->first_data_block) % g->blocks_per_group);
	for (uint32_t i = 0; i < g->group_count; i++) {
		r = al_blocks_in_group(q, (start + i) % g->group_count, i ? 0 : bit, want, first, got);
		if (r == -EUCLEAN)
			bad = r; /* logged: try the other groups */
		else if (r <= 0)
			return r;
	}
	return bad ? bad : -ENOSPC;
}

/* Blocks [blk, blk + n) of one group, all in use (and none a system
 * block): 0, or -EUCLEAN. apply frees them too. */
static int al_free_in_group(al_req *q, uint32_t g, uint64_t blk, uint32_t n, bool apply)
{
	al_svc *s = q->w->s;
	uint32_t bit, freed = 0;
	uint8_t *committed;
	bool garbled;
	al_group x;
	int r;

	if ((r = al_group_open(q, g, false, &x)) < 0)
		return r;
	bit = (uint32_t)(blk - x.first);
	if (al_system_zone(s, &x, blk, n)) {
		r = al_refuse("freeing system blocks, from", blk);
		goto out;
	}
	if (apply && (r = al_group_dirty(q, &x)) < 0)
		goto out;
	if ((r = al_group_lock(q, &x)) < 0)
		goto out;
	/* A bitmap that failed its check may say free what is in use: the
	 * owner's word is taken, the bit left clear, as ext3_free_blocks_sb
	 * goes on past a bit already cleared. In a good bitmap that is a
	 * request naming blocks it does not own. */
	garbled = al_group_check(q, &x) < 0;
	for (uint32_t i = 0; i < n && r == 0; i++) {
		if (al_test_bit(x.live, bit + i))
			freed++;
		else if (!garbled)
			r = al_refuse("freeing a free block,", blk + i);
	}
	if (r == 0 && apply) {
		r = al_gd_add(q, &x, &x.gd->bg_free_blocks_count, (int)freed, x.nbits);
		committed = (uint8_t *)al_group_committed(q, &x);
		for (uint32_t i = 0; i < n && r == 0; i++)
			(void)al_release(x.live, committed, bit + i);
	}
	al_group_unlock(q, &x);
	if (r == 0 && apply)
		r = cm_fc_add(s->ls, &s->shared->free_blocks, q->w->id, freed);
out:
	al_group_close(q, &x);
	return r;
}

int al_free_blocks(al_req *q, uint64_t first, uint32_t count)
{
	al_svc *s = q->w->s;
	const cm_ext3_geom *g = &s->g;
	uint64_t end = first + count;
	int r = 0;

	if (count == 0)
		return -EINVAL;
	if (first < g->first_data_block || end > g->blocks_count)
		return al_refuse("freeing blocks outside the data area, from", first);
	/* Every group's part is checked before any is freed. */
	for (int apply = 0; apply < 2 && r == 0; apply++) {
		for (uint64_t blk = first; blk < end && r == 0;) {
			uint32_t gno = (uint32_t)((blk - g->first_data_block) / g->blocks_per_group);
			uint64_t gend = g->first_data_block + (uint64_t)(gno + 1) * g->blocks_per_group;
			uint32_t n = (uint32_t)((gend < end ? gend : end) - blk);

			r = al_free_in_group(q, gno, blk, n, apply);
			blk += n;
		}
	}
	return r;
}
