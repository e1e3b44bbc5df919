/*
 * symlink_w.c - storing a new symlink's target as ext3_symlink does: in
 * the 60 bytes of i_block[] when the target and its NUL fit there (fast),
 * else in one data block (slow), the rest of either zero.  i_size is the
 * target's length; the caller writes the inode.
 */
#include "internal_w.h"

#include <errno.h>
#include <string.h>

#define FAST_SYMLINK_MAX	(EXT3_N_BLOCKS * 4)	/* bytes of i_block[] */

int ino_symlink_store(ino_fs *fs, ino_txn *t, ino_inode *in, const char *target,
		      size_t len)
{
	uint8_t raw[FAST_SYMLINK_MAX] = { 0 };
	ino_wbuf b = { 0 };
	cm_le32_t word;
	uint64_t pblk;
	uint32_t count;
	unsigned i;
	bool fresh;
	int r;

	if (!ino_is_type(in, EXT3_S_IFLNK))
		return -EINVAL;
	if (len == 0)
		return -ENOENT;
	if (len >= fs->geom.block_size)
		return -ENAMETOOLONG;
	if (len < FAST_SYMLINK_MAX) {
		memcpy(raw, target, len);
		for (i = 0; i < EXT3_N_BLOCKS; i++) {
			memcpy(&word, raw + 4 * i, sizeof(word));
			in->block[i] = cm_le32(word);
		}
		in->size = len;
		return 0;
	}
	r = ino_bmap_alloc(fs, t, in, 0, 1, &pblk, &count, &fresh);
	if (r < 0)
		return r;
	r = ino_txn_get_data(t, pblk, fresh, false, &b);
	if (r < 0)
		return r;
	if (!fresh)
		memset(b.data, 0, fs->geom.block_size);
	memcpy(b.data, target, len);
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	if (r < 0)
		return r;
	in->size = len;
	return 0;
}
