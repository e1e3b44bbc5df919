/* group.c - one block group as a request changes it: its bitmap and its
 * descriptor's block read through the cache with the journal access the
 * change needs, its locks (bh_state of the bitmap, then the group lock:
 * internal.h), its descriptor's counts, and where its system blocks are.
 * The descriptor counts are written under the group lock with atomic
 * 16-bit stores, so that the racy reads that choose groups see whole
 * values. */
#include <errno.h>
#include <string.h>

#include "byteorder.h"
#include "internal.h"

uint16_t al_load16(const cm_le16_t *f)
{
	return cm_le16(__atomic_load_n(f, __ATOMIC_RELAXED));
}

static struct ext3_group_desc *al_gd_in(al_svc *s, cm_bh *gdb, uint32_t g)
{
	return (struct ext3_group_desc *)cm_bh_data(s->cache, gdb) + g % s->g.desc_per_block;
}

static int al_gd_read(al_req *q, uint32_t g, cm_bh **ret)
{
	al_svc *s = q->w->s;

	if (g >= s->g.group_count)
		return -EINVAL;
	if (s->bad[g])
		return -EUCLEAN;
	return cm_bcache_read(s->cache, q->w->bd, s->g.gdt_block + g / s->g.desc_per_block, ret);
}

int al_gd_peek(al_req *q, uint32_t g, al_gd_counts *ret)
{
	al_svc *s = q->w->s;
	const struct ext3_group_desc *gd;
	cm_bh *gdb;
	int r;

	*ret = (al_gd_counts){0};
	if (g < s->g.group_count && s->bad[g])
		return 0; /* never used: as if full */
	if ((r = al_gd_read(q, g, &gdb)) < 0)
		return r;
	gd = al_gd_in(s, gdb, g);
	ret->free_blocks = al_load16(&gd->bg_free_blocks_count);
	ret->free_inodes = al_load16(&gd->bg_free_inodes_count);
	ret->used_dirs = al_load16(&gd->bg_used_dirs_count);
	cm_bcache_put(s->cache, gdb);
	return 0;
}

int al_group_open(al_req *q, uint32_t g, bool inodes, al_group *x)
{
	al_svc *s = q->w->s;
	jbd_ctx *jc = s->jc;
	uint64_t mapblk;
	int r;

	memset(x, 0, sizeof(*x));
	x->g = g;
	x->inodes = inodes;
	if ((r = al_gd_read(q, g, &x->gdb)) < 0)
		return r;
	x->gd = al_gd_in(s, x->gdb, g);
	if (inodes) {
		x->first = (uint64_t)g * s->g.inodes_per_group;
		x->nbits = s->g.inodes_per_group;
		mapblk = cm_le32(x->gd->bg_inode_bitmap);
	} else {
		x->first = s->g.first_data_block + (uint64_t)g * s->g.blocks_per_group;
		x->nbits = s->g.blocks_count - x->first < s->g.blocks_per_group
				   ? (uint32_t)(s->g.blocks_count - x->first) : s->g.blocks_per_group;
		mapblk = cm_le32(x->gd->bg_block_bitmap);
	}
	r = cm_bcache_read(s->cache, q->w->bd, mapblk, &x->map);
	if (r == 0)
		r = inodes ? jbd_get_write_access(jc, q->h, x->map)
			   : jbd_get_undo_access(jc, q->h, x->map);
	if (r == 0)
		r = jbd_get_write_access(jc, q->h, x->gdb);
	if (r < 0) {
		al_group_close(q, x);
		return r;
	}
	x->live = cm_bh_data(s->cache, x->map);
	return 0;
}

void al_group_close(al_req *q, al_group *x)
{
	cm_bcache *c = q->w->s->cache;

	cm_bcache_put(c, x->map);
	cm_bcache_put(c, x->gdb);
	x->map = x->gdb = NULL;
}

static cm_mutex *al_group_mutex(al_svc *s, uint32_t g)
{
	return &s->ls->group[g % CM_GROUP_LOCKS];
}

/* The first of the group's own blocks [blk, blk + n) that its block
 * bitmap says is free, or 0. */
static uint64_t al_meta_free(const al_group *x, uint64_t blk, uint32_t n)
{
	for (uint64_t b = blk; b < blk + n; b++)
		if (b >= x->first && b - x->first < x->nbits &&
		    !al_test_bit(x->live, (uint32_t)(b - x->first)))
			return b;
	return 0;
}

/* The bitmap's check: 0, or -EUCLEAN, logged. Called with the group
 * locked, so the bits are still. */
static int al_bitmap_check(al_svc *s, const al_group *x)
{
	const struct ext3_group_desc *gd = x->gd;
	uint64_t meta;

	if (!cm_ext3_bitmap_padded(x->live, x->nbits, s->g.block_size))
		return al_corrupt(s, x->g, x->inodes ? "inode bitmap padding not set, at block"
						     : "block bitmap padding not set, at block",
				  cm_bh_blocknr(x->map));
	if (x->inodes)
		return 0;
	if ((meta = al_meta_free(x, cm_le32(gd->bg_block_bitmap), 1)) ||
	    (meta = al_meta_free(x, cm_le32(gd->bg_inode_bitmap), 1)) ||
	    (meta = al_meta_free(x, cm_le32(gd->bg_inode_table), s->g.itable_blocks)))
		return al_corrupt(s, x->g, "block bitmap says its group's metadata is free, at",
				  meta);
	return 0;
}

int al_group_check(al_req *q, al_group *x)
{
	al_svc *s = q->w->s;
	uint8_t done = x->inodes ? AL_INODES_CHECKED : AL_BLOCKS_CHECKED;
	uint8_t bad = x->inodes ? AL_INODES_BAD : AL_BLOCKS_BAD;

	al_group_assert_locked(q, x);
	if (!(atomic_load(&s->checked[x->g]) & done))
		atomic_fetch_or(&s->checked[x->g], done | (al_bitmap_check(s, x) < 0 ? bad : 0));
	return (atomic_load(&s->checked[x->g]) & bad) ? -EUCLEAN : 0;
}

int al_group_lock(al_req *q, al_group *x)
{
	al_svc *s = q->w->s;
	int r = jbd_lock_bh_state(s->jc, x->map);

	if (r < 0)
		return r;
	r = cm_mutex_lock(al_group_mutex(s, x->g));
	if (r < 0)
		jbd_unlock_bh_state(s->jc, x->map);
	return r;
}

void al_group_unlock(al_req *q, al_group *x)
{
	al_svc *s = q->w->s;

	cm_mutex_unlock(al_group_mutex(s, x->g));
	jbd_unlock_bh_state(s->jc, x->map);
}

int al_group_dirty(al_req *q, al_group *x)
{
	jbd_ctx *jc = q->w->s->jc;
	int r = jbd_dirty_metadata(jc, q->h, x->map);

	return r < 0 ? r : jbd_dirty_metadata(jc, q->h, x->gdb);
}

void al_group_assert_locked(al_req *q, al_group *x)
{
	cm_mutex_assert_held(al_group_mutex(q->w->s, x->g));
}

const uint8_t *al_group_committed(al_req *q, al_group *x)
{
	al_group_assert_locked(q, x);
	return x->inodes ? NULL : jbd_committed_data(q->w->s->jc, x->map);
}

int al_gd_add(al_req *q, al_group *x, cm_le16_t *field, int delta, uint32_t max)
{
	int64_t v = (int64_t)al_load16(field) + delta;

	al_group_assert_locked(q, x);
	if (v < 0 || v > max)
		return al_corrupt(q->w->s, x->g, "descriptor count out of range, at", (uint64_t)v);
	__atomic_store_n(field, htole16((uint16_t)v), __ATOMIC_RELAXED);
	return 0;
}

static bool al_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

bool al_system_zone(al_svc *s, const al_group *x, uint64_t blk, uint32_t n)
{
	const struct ext3_group_desc *gd = x->gd;

	return al_overlap(blk, n, cm_le32(gd->bg_block_bitmap), 1) ||
	       al_overlap(blk, n, cm_le32(gd->bg_inode_bitmap), 1) ||
	       al_overlap(blk, n, cm_le32(gd->bg_inode_table), s->g.itable_blocks) ||
	       (al_group_has_super(s, x->g) && al_overlap(blk, n, x->first, s->sb_blocks));
}
