/*
 * file.c - reading file bytes: regular files and directories, block by
 * block through ino_bmap(), holes as zeros, never past i_size.
 *
 * The loop runs at most len / block_size + 2 times; each block is put
 * before the next is got.
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "log.h"

#define INO_PREFETCH_MAX 1024

/* Copies n bytes at boff of logical block lblk into dst. */
static int read_block_part(ino_fs *fs, const ino_inode *in, uint64_t lblk,
			   uint32_t boff, uint8_t *dst, size_t n)
{
	uint64_t pblk;
	ino_buf b = { 0 };
	int r;

	r = ino_bmap(fs, in, lblk, &pblk);
	if (r == -EFBIG) {
		cm_warn("corrupt inode ino=%u blk=%llu: size %llu beyond the block map",
			in->ino,
			(unsigned long long)ino_inode_blocknr(fs, in->ino),
			(unsigned long long)in->size);
		return -EUCLEAN;
	}
	if (r < 0)
		return r;
	if (pblk == 0) {
		memset(dst, 0, n);
		return 0;
	}
	r = ino_blk_get(fs, pblk, &b);
	if (r < 0)
		return r;
	memcpy(dst, b.data + boff, n);
	ino_blk_put(fs, &b);
	return 0;
}

/* Tells the source which blocks [first, last] the read will get, holes and
 * unmappable blocks left out, at most INO_PREFETCH_MAX of them. */
static void prefetch_range(ino_fs *fs, const ino_inode *in, uint64_t first, uint64_t last)
{
	uint64_t blocks[INO_PREFETCH_MAX], pblk;
	size_t n = 0;

	if (!fs->src.prefetch || last == first)
		return;
	for (uint64_t l = first; l <= last && n < INO_PREFETCH_MAX; l++)
		if (ino_bmap(fs, in, l, &pblk) == 0 && pblk)
			blocks[n++] = pblk;
	if (n > 1)
		fs->src.prefetch(fs->src.ctx, blocks, n);
}

ssize_t ino_file_read(ino_fs *fs, const ino_inode *in, void *buf, size_t len,
		      uint64_t off)
{
	uint32_t bs = fs->geom.block_size, boff;
	uint8_t *dst = buf;
	size_t done = 0, n;
	uint64_t pos;
	int r;

	if (!ino_is_type(in, EXT3_S_IFREG) && !ino_is_type(in, EXT3_S_IFDIR))
		return -EINVAL;
	if (off >= in->size)
		return 0;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (len > in->size - off)
		len = in->size - off;
	prefetch_range(fs, in, off / bs, (off + len - 1) / bs);
	while (done < len) {
		pos = off + done;
		boff = pos % bs;
		n = bs - boff;
		if (n > len - done)
			n = len - done;
		r = read_block_part(fs, in, pos / bs, boff, dst + done, n);
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += n;
	}
	return done;
}
