/*
 * bmap.c - logical to physical block mapping through i_block[]: 12 direct
 * pointers, then single, double and triple indirect blocks.
 *
 * Every pointer is checked against [first_data_block, blocks_count) before
 * it is followed or returned; a bad one is logged once, naming the inode
 * and the block that holds it (its inode-table block for i_block[]).  The
 * walk is at most four reads deep; each indirect block is put before the
 * next one is got.
 */
#include "internal.h"

#include <errno.h>

#include "log.h"

bool ino_has_block_map(const ino_fs *fs, const ino_inode *in)
{
	switch (in->mode & EXT3_S_IFMT) {
	case EXT3_S_IFREG:
	case EXT3_S_IFDIR:
		return true;
	case EXT3_S_IFLNK:
		return !ino_is_fast_symlink(fs, in);
	default:
		return false;
	}
}

int ino_block_to_path(const ino_fs *fs, uint64_t lblk, unsigned path[4])
{
	uint64_t apb = fs->addr_per_block, mask = apb - 1;
	unsigned bits = fs->addr_bits;

	if (lblk < EXT3_NDIR_BLOCKS) {
		path[0] = lblk;
		return 0;
	}
	lblk -= EXT3_NDIR_BLOCKS;
	if (lblk < apb) {
		path[0] = EXT3_IND_BLOCK;
		path[1] = lblk;
		return 1;
	}
	lblk -= apb;
	if (lblk < apb * apb) {
		path[0] = EXT3_DIND_BLOCK;
		path[1] = lblk >> bits;
		path[2] = lblk & mask;
		return 2;
	}
	lblk -= apb * apb;
	if (lblk < apb * apb * apb) {
		path[0] = EXT3_TIND_BLOCK;
		path[1] = lblk >> (2 * bits);
		path[2] = (lblk >> bits) & mask;
		path[3] = lblk & mask;
		return 3;
	}
	return -EFBIG;
}

static int bad_pointer(const ino_fs *fs, const ino_inode *in, uint64_t holder,
		       unsigned slot, uint32_t ptr)
{
	cm_warn("corrupt inode ino=%u blk=%llu: block pointer [%u] = %u outside [%u, %u)",
		in->ino, (unsigned long long)holder, slot, ptr,
		fs->geom.first_data_block, fs->geom.blocks_count);
	return -EUCLEAN;
}

/* Reads entry `slot` of indirect block `blk`. */
static int read_pointer(ino_fs *fs, uint64_t blk, unsigned slot,
			uint32_t *ret)
{
	ino_buf b = { 0 };
	int r;

	r = ino_blk_get(fs, blk, &b);
	if (r < 0)
		return r;
	*ret = cm_le32(((const cm_le32_t *)b.data)[slot]);
	ino_blk_put(fs, &b);
	return 0;
}

int ino_bmap(ino_fs *fs, const ino_inode *in, uint64_t lblk,
	     uint64_t *ret_pblk)
{
	uint64_t span;

	return ino_bmap_span(fs, in, lblk, ret_pblk, &span);
}

int ino_bmap_span(ino_fs *fs, const ino_inode *in, uint64_t lblk,
		  uint64_t *ret_pblk, uint64_t *ret_span)
{
	unsigned path[4];
	uint64_t holder;
	uint32_t ptr;
	int depth, level, r;

	if (!ino_has_block_map(fs, in))
		return -EINVAL;
	depth = ino_block_to_path(fs, lblk, path);
	if (depth < 0)
		return depth;
	ptr = in->block[path[0]];
	holder = ino_inode_blocknr(fs, in->ino);
	for (level = 0;; level++) {
		if (ptr == 0)
			break;	/* a hole at any level */
		if (!ino_blk_valid(fs, ptr))
			return bad_pointer(fs, in, holder, path[level], ptr);
		if (level == depth)
			break;
		holder = ptr;
		r = read_pointer(fs, holder, path[level + 1], &ptr);
		if (r < 0)
			return r;
	}
	*ret_pblk = ptr;
	/* A hole: the missing pointer at `level` would map a whole subtree;
	 * lblk is `into` blocks inside it. */
	*ret_span = 1;
	if (ptr == 0) {
		uint64_t span = 1, into = 0;

		for (int k = depth; k > level; k--) {
			into += path[k] * span;
			span *= fs->addr_per_block;
		}
		*ret_span = span - into;
	}
	return 0;
}
