/*
 * symlink.c - symlink targets: fast symlinks keep the target in the 60
 * bytes of i_block[], slow ones in data block 0.
 *
 * A symlink is fast when i_blocks counts no data block, as in ext3's
 * ext3_inode_is_fast_symlink(): i_blocks is 0, or exactly the EA block's
 * sectors when i_file_acl is set.  The target length is i_size, checked
 * against the space that holds it before anything is copied.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

#include "log.h"

#define FAST_SYMLINK_MAX	(EXT3_N_BLOCKS * 4)	/* 60 bytes */

bool ino_is_fast_symlink(const ino_fs *fs, const ino_inode *in)
{
	uint64_t ea = in->file_acl ? fs->geom.block_size >> 9 : 0;

	return ino_is_type(in, EXT3_S_IFLNK) && in->blocks512 == ea;
}

static int bad_symlink(const ino_fs *fs, const ino_inode *in, uint64_t blk,
		       const char *what)
{
	cm_warn("corrupt symlink ino=%u blk=%llu: %s (size %llu)", in->ino,
		(unsigned long long)blk, what, (unsigned long long)in->size);
	return -EUCLEAN;
}

static ssize_t read_fast(const ino_fs *fs, const ino_inode *in, char *buf,
			 size_t len)
{
	uint8_t raw[FAST_SYMLINK_MAX];
	cm_le32_t word;
	unsigned i;

	if (in->size > FAST_SYMLINK_MAX)
		return bad_symlink(fs, in, ino_inode_blocknr(fs, in->ino),
				   "fast symlink longer than i_block");
	for (i = 0; i < EXT3_N_BLOCKS; i++) {
		cm_set_le32(&word, in->block[i]);
		memcpy(raw + 4 * i, &word, sizeof(word));
	}
	if (len > in->size)
		len = in->size;
	memcpy(buf, raw, len);
	return len;
}

static ssize_t read_slow(ino_fs *fs, const ino_inode *in, char *buf,
			 size_t len)
{
	uint64_t pblk;
	ino_buf b = { 0 };
	int r;

	if (in->size >= fs->geom.block_size)
		return bad_symlink(fs, in, ino_inode_blocknr(fs, in->ino),
				   "target not shorter than a block");
	r = ino_bmap(fs, in, 0, &pblk);
	if (r < 0)
		return r;
	if (pblk == 0)
		return bad_symlink(fs, in, ino_inode_blocknr(fs, in->ino),
				   "no data block");
	r = ino_blk_get(fs, pblk, &b);
	if (r < 0)
		return r;
	if (len > in->size)
		len = in->size;
	memcpy(buf, b.data, len);
	ino_blk_put(fs, &b);
	return len;
}

ssize_t ino_readlink(ino_fs *fs, const ino_inode *in, char *buf, size_t len)
{
	if (!ino_is_type(in, EXT3_S_IFLNK))
		return -EINVAL;
	if (in->size == 0)
		return bad_symlink(fs, in, ino_inode_blocknr(fs, in->ino),
				   "empty target");
	if (ino_is_fast_symlink(fs, in))
		return read_fast(fs, in, buf, len);
	return read_slow(fs, in, buf, len);
}
