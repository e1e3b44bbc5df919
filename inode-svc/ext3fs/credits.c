/*
 * credits.c - the journal credits of a write, by ext3's rules of thumb
 * (ext3_writepage_trans_blocks) stretched over a range: every data block
 * (journalled in data=journal), the indirect blocks the range may make or
 * change at each level, a bitmap and a descriptor per allocation bounded
 * by the groups and descriptor blocks there are, the inode, and the
 * superblock (the first file over 2 GiB sets large_file).
 */
#include "internal_w.h"

#include <limits.h>

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

int ino_cred_write(const ino_fs *fs, uint64_t off, size_t len)
{
	uint64_t bs = fs->geom.block_size, apb = fs->addr_per_block, nblk, meta, allocs, total;

	if (len == 0)
		return INO_CRED_INODE;
	if (off > fs->max_size)
		off = fs->max_size;
	if (len > fs->max_size)
		len = fs->max_size;
	nblk = (off + len - 1) / bs - off / bs + 1;
	/* leaves (one per apb blocks, plus both ends), their parents, TIND */
	meta = nblk / apb + 2 + nblk / (apb * apb) + 2 + 1;
	allocs = nblk + meta;
	total = nblk + meta + min64(allocs, fs->geom.group_count) +
		min64(allocs, fs->geom.gdt_blocks) + INO_CRED_INODE + INO_CRED_SB;
	return total > INT_MAX ? INT_MAX : (int)total;
}
