/*
 * statfs.c - filesystem totals: block and inode counts from the
 * superblock copy, free counts summed from the group descriptors (read
 * again each time, so they follow the allocator), and the metadata
 * overhead the kernel subtracts from the block count.
 *
 * The GDT blocks were checked to lie inside group 0 at mount; a
 * descriptor whose free counts exceed its group is corruption.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

#include "log.h"

/* True if `n` is a power of `base` (1 included). */
static bool is_power_of(uint32_t n, uint32_t base)
{
	while (n > 1 && n % base == 0)
		n /= base;
	return n == 1;
}

/* ext3_bg_has_super(): groups 0, 1 and powers of 3, 5, 7 with sparse_super. */
static bool group_has_super(const ino_fs *fs, uint32_t group)
{
	if (!(cm_le32(fs->sb.s_feature_ro_compat) &
	      EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER))
		return true;
	return group <= 1 || is_power_of(group, 3) || is_power_of(group, 5) ||
	       is_power_of(group, 7);
}

/* Metadata blocks, as the kernel counts them for statfs today (ext3
 * images are mounted by the ext4 driver): superblock and descriptor copies
 * with their reserved GDT blocks, bitmaps, inode tables and the internal
 * journal. */
static uint64_t overhead_blocks(const ino_fs *fs)
{
	const cm_ext3_geom *g = &fs->geom;
	uint64_t n = g->first_data_block + fs->journal_blocks;
	uint32_t rsv = cm_le16(fs->sb.s_reserved_gdt_blocks);
	uint32_t group;

	for (group = 0; group < g->group_count; group++)
		if (group_has_super(fs, group))
			n += 1 + g->gdt_blocks + rsv;
	n += (uint64_t)g->group_count * (2 + g->itable_blocks);
	return n;
}

/* Adds one GDT block's free counts to *bfree and *ffree. */
static int sum_gdt_block(ino_fs *fs, uint32_t i, uint64_t *bfree,
			 uint64_t *ffree)
{
	const cm_ext3_geom *g = &fs->geom;
	const struct ext3_group_desc *gd;
	uint32_t group = i * g->desc_per_block, n, fb, fi;
	ino_buf b = { 0 };
	int r;

	r = ino_blk_get(fs, (uint64_t)g->gdt_block + i, &b);
	if (r < 0)
		return r;
	gd = (const struct ext3_group_desc *)b.data;
	for (n = 0; n < g->desc_per_block && group < g->group_count;
	     n++, group++) {
		fb = cm_le16(gd[n].bg_free_blocks_count);
		fi = cm_le16(gd[n].bg_free_inodes_count);
		if (fb > g->blocks_per_group || fi > g->inodes_per_group) {
			cm_warn("corrupt group descriptor group=%u blk=%llu: free blocks %u, free inodes %u",
				group, (unsigned long long)b.blocknr, fb, fi);
			r = -EUCLEAN;
			break;
		}
		*bfree += fb;
		*ffree += fi;
	}
	ino_blk_put(fs, &b);
	return r;
}

int ino_statfs(ino_fs *fs, struct ino_statfs *ret)
{
	struct ino_statfs st;
	uint32_t i;
	int r;

	memset(&st, 0, sizeof(st));
	for (i = 0; i < fs->geom.gdt_blocks; i++) {
		r = sum_gdt_block(fs, i, &st.bfree, &st.ffree);
		if (r < 0)
			return r;
	}
	st.blocks = fs->geom.blocks_count;
	st.overhead = overhead_blocks(fs);
	st.reserved = cm_le32(fs->sb.s_r_blocks_count);
	st.bavail = st.bfree > st.reserved ? st.bfree - st.reserved : 0;
	st.files = fs->geom.inodes_count;
	st.bsize = fs->geom.block_size;
	st.namemax = EXT3_NAME_LEN;
	*ret = st;
	return 0;
}
