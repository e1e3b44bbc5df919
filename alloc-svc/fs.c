/* fs.c - what alloc-svc allocates in: the shared buffer cache and journal
 * (made by journald-svc, which starts first), the geometry from the
 * superblock, every group descriptor checked once (a group whose
 * descriptor is wrong is never used), and the shared counters of
 * allocproto.h: made from the descriptors' counts by the first instance,
 * found and used as they are by an instance restarted alone (its
 * predecessor's changes are in them, committed or not). Single-threaded,
 * at start. */
#include <errno.h>
#include <stdlib.h>

#include "byteorder.h"
#include "internal.h"
#include "log.h"

bool al_group_has_super(const al_svc *s, uint32_t g)
{
	if (g <= 1 || !s->sparse_super)
		return true;
	if (!(g & 1))
		return false;
	for (uint32_t p = 3; p <= 7; p += 2) {
		uint64_t v = p;
		while (v < g)
			v *= p;
		if (v == g)
			return true;
	}
	return false;
}

/* The superblock, through the cache: geometry and the fields placement
 * needs. */
static int al_read_super(al_svc *s, cm_bdev *bd)
{
	struct ext3_super_block *sb;
	char why[160];
	cm_bh *bh;
	int r;

	r = cm_bcache_read(s->cache, bd, s->jc->j->fs_sb_block, &bh);
	if (r < 0)
		return cm_log_errno(r, "reading the superblock: %m");
	sb = (void *)((char *)cm_bh_data(s->cache, bh) + s->jc->j->fs_sb_offset);
	r = cm_ext3_super_check(sb, cm_bdev_sectors(bd) * CM_BD_SECTOR, why, sizeof(why));
	if (r == 0) {
		cm_ext3_geom_from_super(sb, &s->g);
		s->first_ino = cm_le32(sb->s_rev_level) == EXT3_GOOD_OLD_REV
				       ? EXT3_GOOD_OLD_FIRST_INO : cm_le32(sb->s_first_ino);
		s->r_blocks = cm_le32(sb->s_r_blocks_count);
		s->sb_free_blocks = cm_le32(sb->s_free_blocks_count);
		s->sb_free_inodes = cm_le32(sb->s_free_inodes_count);
		s->sparse_super = cm_le32(sb->s_feature_ro_compat) &
				  EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER;
		s->sb_blocks = 1 + s->g.gdt_blocks;
		if (cm_le32(sb->s_feature_compat) & EXT3_FEATURE_COMPAT_RESIZE_INODE)
			s->sb_blocks += cm_le16(sb->s_reserved_gdt_blocks);
	}
	cm_bcache_put(s->cache, bh);
	if (r < 0)
		return cm_log_errno(r, "refusing the superblock: %s", why);
	if (s->g.block_size != s->jc->j->block_size || s->first_ino < EXT3_GOOD_OLD_FIRST_INO ||
	    s->first_ino > s->g.inodes_count || s->r_blocks > s->g.blocks_count)
		return cm_log_errno(-EUCLEAN, "refusing the superblock: block size %u, first inode "
				    "%u, reserved blocks %u", s->g.block_size, s->first_ino,
				    s->r_blocks);
	return 0;
}

/* The free bits of the bitmap at blk, of its first nbits. */
static int al_bitmap_free(al_svc *s, cm_bdev *bd, uint32_t blk, uint32_t nbits, uint32_t *ret)
{
	cm_bh *bh;
	int r = cm_bcache_read(s->cache, bd, blk, &bh);

	if (r < 0)
		return cm_log_errno(r, "reading the bitmap at block %u: %m", blk);
	*ret = al_count_zero(cm_bh_data(s->cache, bh), nbits);
	cm_bcache_put(s->cache, bh);
	return 0;
}

/* Whether group n's descriptor's free counts (in c) are its bitmaps':
 * 1, or 0 when they disagree (e2fsck's "free inodes count wrong for
 * group"), for one of the two is damaged and which is not known; or
 * -errno. Neither is changed here: the allocations made in the group
 * change them relative to their values, no more wrong than they came. */
static int al_group_agrees(al_svc *s, cm_bdev *bd, uint32_t n,
			   const struct ext3_group_desc *gd, const al_gd_counts *c)
{
	const cm_ext3_geom *g = &s->g;
	uint32_t first = g->first_data_block + n * g->blocks_per_group;
	uint32_t nblocks = g->blocks_count - first < g->blocks_per_group ?
				   g->blocks_count - first : g->blocks_per_group;
	uint32_t fb = 0, fi = 0;
	int r;

	if ((r = al_bitmap_free(s, bd, cm_le32(gd->bg_block_bitmap), nblocks, &fb)) < 0 ||
	    (r = al_bitmap_free(s, bd, cm_le32(gd->bg_inode_bitmap), g->inodes_per_group, &fi)) < 0)
		return r;
	if (fb == c->free_blocks && fi == c->free_inodes)
		return 1;
	cm_warn("group %u: its descriptor says %u free blocks and %u free inodes, its bitmaps "
		"%u and %u: the superblock's totals keep its share", n, c->free_blocks,
		c->free_inodes, fb, fi);
	return 0;
}

/* Checks every descriptor; sums the good ones' counts into *sum (the free
 * counts, when verify is set for new counters, only where the bitmaps
 * confirm them). */
static int al_check_groups(al_svc *s, cm_bdev *bd, bool verify, al_gd_counts *sum)
{
	const cm_ext3_geom *g = &s->g;
	bool bad = false;
	char why[160];
	cm_bh *bh = NULL;
	int r = 0;

	*sum = (al_gd_counts){0};
	for (uint32_t n = 0; n < g->group_count && r == 0; n++) {
		const struct ext3_group_desc *gd;

		if (n % g->desc_per_block == 0) {
			cm_bcache_put(s->cache, bh);
			r = cm_bcache_read(s->cache, bd, g->gdt_block + n / g->desc_per_block, &bh);
			if (r < 0)
				return cm_log_errno(r, "reading the group descriptors: %m");
		}
		gd = (const struct ext3_group_desc *)cm_bh_data(s->cache, bh) +
		     n % g->desc_per_block;
		if (cm_ext3_group_desc_check(g, n, gd, why, sizeof(why)) < 0) {
			cm_err("%s: group %u is not used", why, n);
			s->bad[n] = 1;
			s->warned[n] = 1;
			bad = true;
			continue;
		}
		al_gd_counts c = {cm_le16(gd->bg_free_blocks_count),
				  cm_le16(gd->bg_free_inodes_count), cm_le16(gd->bg_used_dirs_count)};
		sum->used_dirs += c.used_dirs;
		r = verify ? al_group_agrees(s, bd, n, gd, &c) : 1;
		if (r <= 0) {
			bad = true;
			continue;
		}
		r = 0;
		sum->free_blocks += c.free_blocks;
		sum->free_inodes += c.free_inodes;
	}
	cm_bcache_put(s->cache, bh);
	/* The groups not used or not confirmed keep the share of the
	 * superblock's totals that the others leave: what cannot be counted
	 * is not changed. */
	if (bad && sum->free_blocks < s->sb_free_blocks)
		sum->free_blocks = s->sb_free_blocks;
	if (bad && sum->free_inodes < s->sb_free_inodes)
		sum->free_inodes = s->sb_free_inodes;
	return r;
}

/* Finds the counters a previous instance made, or makes them. */
static int al_shared(al_svc *s, const al_gd_counts *sum)
{
	cm_layout *l = s->svc.layout;
	cm_off off = atomic_load_explicit(&l->alloc, memory_order_acquire), none = 0;
	cm_alloc_shared *as;

	if (off) {
		as = cm_arena_ptr(s->svc.arena, off, sizeof(*as));
		if (!as || as->magic != CM_AL_MAGIC || as->groups != s->g.group_count)
			return cm_log_errno(-EPROTO, "the arena's allocator counters are not ours");
		s->shared = as;
		cm_info("counters kept from the last instance: %lld free blocks, %lld free inodes, "
			"%lld directories", (long long)cm_fc_read(&as->free_blocks),
			(long long)cm_fc_read(&as->free_inodes), (long long)cm_fc_read(&as->dirs));
		return 0;
	}
	off = cm_arena_alloc(s->svc.arena, sizeof(*as), 64);
	as = off ? cm_arena_ptr(s->svc.arena, off, sizeof(*as)) : NULL;
	if (!as)
		return cm_log_errno(-ENOMEM, "allocator counters: the arena is full");
	as->groups = s->g.group_count;
	cm_fc_init(&as->free_blocks, CM_FC_FREE_BLOCKS, sum->free_blocks, 0);
	cm_fc_init(&as->free_inodes, CM_FC_FREE_INODES, sum->free_inodes, 0);
	cm_fc_init(&as->dirs, CM_FC_DIRS, sum->used_dirs, 0);
	as->magic = CM_AL_MAGIC;
	if (!atomic_compare_exchange_strong(&l->alloc, &none, off))
		return cm_log_errno(-EEXIST, "another alloc-svc made the counters");
	s->shared = as;
	cm_info("%u groups: %u free blocks, %u free inodes, %u directories", s->g.group_count,
		sum->free_blocks, sum->free_inodes, sum->used_dirs);
	return 0;
}

int al_fs_open(al_svc *s, cm_bdev *bd)
{
	cm_off coff = atomic_load(&s->svc.layout->bcache);
	al_gd_counts sum;
	int r;

	s->ls = &s->svc.layout->locks;
	if (!coff || cm_bcache_attach(s->svc.arena, coff, &s->cache) < 0 ||
	    jbd_attach(s->svc.arena, s->cache, (uint32_t)s->svc.slot, &s->jc) < 0) {
		cm_warn("no journal: every request is refused (EROFS)");
		s->jc = NULL;
		return 0;
	}
	if ((r = al_read_super(s, bd)) < 0)
		return r;
	s->bad = calloc(s->g.group_count, 1);
	s->warned = calloc(s->g.group_count, 1);
	s->checked = calloc(s->g.group_count, 1);
	if (!s->bad || !s->warned || !s->checked)
		return -ENOMEM;
	/* Counters kept from the last instance are exact already, and the
	 * bitmaps may be changing under other workers' group locks now. */
	if ((r = al_check_groups(s, bd, atomic_load(&s->svc.layout->alloc) == 0, &sum)) < 0)
		return r;
	return al_shared(s, &sum);
}

void al_fs_close(al_svc *s)
{
	s->jc = jbd_detach(s->jc);
	s->cache = cm_bcache_detach(s->cache);
	free(s->bad);
	free((void *)s->warned);
	free((void *)s->checked);
	s->bad = NULL;
	s->warned = NULL;
	s->checked = NULL;
}
