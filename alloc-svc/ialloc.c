/* ialloc.c - inode allocation and freeing, ext3's way (ext3_new_inode,
 * ext3_free_inode): a directory where find_group_orlov puts it (top-level
 * ones, under the root or a CM_AL_TOPDIR parent, spread to the group with
 * the fewest directories among those above the average free inodes and
 * blocks; deeper ones near their parent), any other inode in its
 * directory's group or where find_group_other's search finds room; then
 * the lowest free inode there or in the next groups. Placement reads the
 * counters' approximate values and the descriptors' racy ones, as ext3.
 * Inode bitmaps have no committed copy. Locks: internal.h. */
#include <errno.h>

#include "internal.h"

#define AL_IS_DIR(mode) (((mode) & 0xf000) == 0x4000)

static uint32_t al_group_of(al_svc *s, uint32_t ino)
{
	return (ino - 1) / s->g.inodes_per_group;
}

/* xorshift64*, seeded per worker: where a top-level directory's search
 * starts (ext3 takes random bytes). */
static uint32_t al_rand(al_worker *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return (uint32_t)((w->rng * 0x2545f4914f6cdd1dULL) >> 32);
}

/* Orlov's fallback: the first group from pg with at least avefreei free
 * inodes, then with any. -1 if none. */
static int64_t al_orlov_fallback(al_req *q, uint32_t pg, uint64_t avefreei)
{
	uint32_t n = q->w->s->g.group_count;
	al_gd_counts c;

	for (;;) {
		for (uint32_t i = 0; i < n; i++) {
			uint32_t g = (pg + i) % n;
			if (al_gd_peek(q, g, &c) == 0 && c.free_inodes && c.free_inodes >= avefreei)
				return g;
		}
		if (!avefreei)
			return -1;
		avefreei = 0; /* the counters are approximate: small filesystems */
	}
}

static int64_t al_orlov(al_req *q, uint32_t dir, bool topdir)
{
	al_svc *s = q->w->s;
	cm_alloc_shared *as = s->shared;
	uint32_t n = s->g.group_count, ipg = s->g.inodes_per_group, pg = al_group_of(s, dir);
	uint64_t freei = (uint64_t)cm_fc_read_positive(&as->free_inodes);
	uint64_t freeb = (uint64_t)cm_fc_read_positive(&as->free_blocks);
	uint64_t ndirs = (uint64_t)cm_fc_read_positive(&as->dirs);
	uint64_t avefreei = freei / n, avefreeb = freeb / n;
	int64_t min_inodes, min_blocks, best = -1;
	uint64_t max_dirs, best_ndir = ipg;
	al_gd_counts c;

	if (topdir) {
		pg = al_rand(q->w) % n;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t g = (pg + i) % n;
			if (al_gd_peek(q, g, &c) < 0 || !c.free_inodes || c.used_dirs >= best_ndir ||
			    c.free_inodes < avefreei || c.free_blocks < avefreeb)
				continue;
			best = g;
			best_ndir = c.used_dirs;
		}
		return best >= 0 ? best : al_orlov_fallback(q, pg, avefreei);
	}
	max_dirs = (ndirs ? ndirs : 1) / n + ipg / 16;
	min_inodes = (int64_t)avefreei - ipg / 4;
	min_blocks = (int64_t)avefreeb - s->g.blocks_per_group / 4;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t g = (pg + i) % n;
		if (al_gd_peek(q, g, &c) < 0 || !c.free_inodes || c.used_dirs >= max_dirs ||
		    c.free_inodes < min_inodes || c.free_blocks < min_blocks)
			continue;
		return g;
	}
	return al_orlov_fallback(q, pg, avefreei);
}

/* find_group_other: the parent's group if it has free inodes and blocks,
 * else a quadratic hash from it, else the next group with a free inode. */
static int64_t al_group_other(al_req *q, uint32_t dir)
{
	al_svc *s = q->w->s;
	uint32_t n = s->g.group_count, pg = al_group_of(s, dir), g = pg;
	al_gd_counts c;

	if (al_gd_peek(q, g, &c) == 0 && c.free_inodes && c.free_blocks)
		return g;
	g = (uint32_t)(((uint64_t)g + dir) % n);
	for (uint32_t i = 1; i < n; i <<= 1) {
		g = (g + i) % n;
		if (al_gd_peek(q, g, &c) == 0 && c.free_inodes && c.free_blocks)
			return g;
	}
	for (uint32_t i = 1; i <= n; i++) {
		g = (pg + i) % n;
		if (al_gd_peek(q, g, &c) == 0 && c.free_inodes)
			return g;
	}
	return -1;
}

/* The first bit of group x's inode bitmap that is not a reserved inode. */
static uint32_t al_first_usable(al_svc *s, const al_group *x)
{
	uint64_t reserved = s->first_ino - 1; /* inodes 1 .. first_ino - 1 */

	return reserved > x->first ? (uint32_t)(reserved - x->first < x->nbits ?
						reserved - x->first : x->nbits) : 0;
}

/* Claims the lowest free inode of x and counts it in the descriptor: the
 * bit, -1 if none is free, or -EUCLEAN. Called with the group locked. */
static int64_t al_claim_inode(al_req *q, al_group *x, bool dir)
{
	int64_t bit;
	int r;

	al_group_assert_locked(q, x);
	do {
		bit = al_find_zero(x->live, al_first_usable(q->w->s, x), x->nbits);
	} while (bit >= 0 && !al_claim(x->live, NULL, (uint32_t)bit));
	if (bit < 0)
		return -1;
	r = al_gd_add(q, x, &x->gd->bg_free_inodes_count, -1, x->nbits);
	if (r == 0 && dir && (r = al_gd_add(q, x, &x->gd->bg_used_dirs_count, 1, x->nbits)) < 0)
		(void)al_gd_add(q, x, &x->gd->bg_free_inodes_count, 1, x->nbits);
	if (r < 0) {
		(void)al_release(x->live, NULL, (uint32_t)bit);
		return r;
	}
	return bit;
}

/* One group: 0 with *ino set, 1 when it has no free inode, or an error. */
static int al_inode_in_group(al_req *q, uint32_t g, bool dir, uint32_t *ino)
{
	al_svc *s = q->w->s;
	al_gd_counts gc;
	al_group x;
	int64_t bit;
	int r;

	if ((r = al_gd_peek(q, g, &gc)) < 0)
		return r;
	if (gc.free_inodes == 0)
		return 1;
	if ((r = al_group_open(q, g, true, &x)) < 0)
		return r;
	if ((r = al_group_lock(q, &x)) < 0)
		goto out;
	r = al_group_check(q, &x);
	bit = r < 0 ? -1 : al_find_zero(x.live, al_first_usable(s, &x), x.nbits);
	al_group_unlock(q, &x);
	if (r < 0)
		goto out;
	if (bit < 0) {
		r = 1;
		goto out;
	}
	if ((r = al_group_dirty(q, &x)) < 0 || (r = al_group_lock(q, &x)) < 0)
		goto out;
	bit = al_claim_inode(q, &x, dir);
	al_group_unlock(q, &x);
	if (bit < 0) {
		r = bit == -1 ? 1 : (int)bit;
		goto out;
	}
	r = cm_fc_add(s->ls, &s->shared->free_inodes, q->w->id, -1);
	if (r == 0 && dir)
		r = cm_fc_add(s->ls, &s->shared->dirs, q->w->id, 1);
	*ino = (uint32_t)(x.first + (uint64_t)bit + 1);
out:
	al_group_close(q, &x);
	return r;
}

int al_alloc_inode(al_req *q, uint32_t dir, uint32_t mode, uint32_t *ino)
{
	al_svc *s = q->w->s;
	uint32_t n = s->g.group_count;
	bool isdir = AL_IS_DIR(mode);
	int64_t start;
	int r, bad = 0;

	if (dir == 0 || dir > s->g.inodes_count)
		return -EINVAL;
	if (isdir)
		start = al_orlov(q, dir, dir == EXT3_ROOT_INO || (q->flags & CM_AL_TOPDIR));
	else
		start = al_group_other(q, dir);
	if (start < 0)
		return -ENOSPC;
	for (uint32_t i = 0; i < n; i++) {
		r = al_inode_in_group(q, (uint32_t)(start + i) % n, isdir, ino);
		if (r == -EUCLEAN)
			bad = r; /* logged: try the other groups */
		else if (r <= 0)
			return r;
	}
	return bad ? bad : -ENOSPC;
}

int al_free_inode(al_req *q, uint32_t ino, uint32_t mode)
{
	al_svc *s = q->w->s;
	uint32_t bit;
	al_group x;
	int r;

	if (ino < s->first_ino || ino > s->g.inodes_count)
		return al_refuse("freeing a reserved or nonexistent inode", ino);
	if ((r = al_group_open(q, al_group_of(s, ino), true, &x)) < 0)
		return r;
	bit = (ino - 1) % s->g.inodes_per_group;
	/* Dirtied first: a bad request found below changes nothing. */
	if ((r = al_group_dirty(q, &x)) < 0 || (r = al_group_lock(q, &x)) < 0)
		goto out;
	if (!al_test_bit(x.live, bit))
		r = al_refuse("freeing a free inode", ino);
	if (r == 0)
		r = al_gd_add(q, &x, &x.gd->bg_free_inodes_count, 1, x.nbits);
	/* A directory count already 0 is the descriptor's damage, not the
	 * free's: the inode goes free and the count stays 0 (the kernel's
	 * ext4_free_inode does not check it; refusing would leave the freed
	 * inode's bit set), and the damage is logged. */
	if (r == 0 && AL_IS_DIR(mode) && al_load16(&x.gd->bg_used_dirs_count) == 0)
		(void)al_corrupt(s, x.g, "no directory counted at a directory's free, inode", ino);
	else if (r == 0 && AL_IS_DIR(mode) &&
		 (r = al_gd_add(q, &x, &x.gd->bg_used_dirs_count, -1, x.nbits)) < 0)
		(void)al_gd_add(q, &x, &x.gd->bg_free_inodes_count, -1, x.nbits);
	if (r == 0)
		(void)al_release(x.live, NULL, bit);
	al_group_unlock(q, &x);
	if (r == 0)
		r = cm_fc_add(s->ls, &s->shared->free_inodes, q->w->id, 1);
	if (r == 0 && AL_IS_DIR(mode))
		r = cm_fc_add(s->ls, &s->shared->dirs, q->w->id, -1);
out:
	al_group_close(q, &x);
	return r;
}
