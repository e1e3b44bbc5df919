/*
 * file_w.c - writing file bytes: block by block through ino_bmap_alloc()
 * (holes elsewhere kept), a partial block read, changed and written back
 * unless it was just allocated (then it starts zeroed), i_size grown and
 * mtime/ctime set in the caller's copy, which is then written.
 *
 * The transaction must hold the credits ino_cred_write() gives for the
 * range; the caller cuts a large write into chunks.  A failure after a
 * run was allocated gives back the blocks the write left past i_size.
 */
#include "internal_w.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

/* Copies src into the count blocks from pblk (fresh: just allocated) at
 * pos; *ret_done gets the bytes written, also on an error. */
static int write_run(ino_fs *fs, ino_txn *t, uint64_t pblk, uint32_t count, bool fresh,
		     const uint8_t *src, size_t len, uint64_t pos, size_t *ret_done)
{
	uint32_t bs = fs->geom.block_size, boff, n, i;
	ino_wbuf b = { 0 };
	int r = 0;

	*ret_done = 0;
	for (i = 0; i < count && *ret_done < len; i++) {
		boff = (pos + *ret_done) % bs;
		n = bs - boff;
		if (n > len - *ret_done)
			n = len - *ret_done;
		r = ino_txn_get_data(t, pblk + i, fresh, n == bs, &b);
		if (r < 0)
			break;
		memcpy(b.data + boff, src + *ret_done, n);
		r = ino_txn_dirty(t, &b);
		ino_txn_put(t, &b);
		if (r < 0)
			break;
		*ret_done += n;
	}
	return r;
}

ssize_t ino_file_write(ino_fs *fs, ino_txn *t, ino_inode *in, const void *buf, size_t len,
		       uint64_t off)
{
	uint32_t bs = fs->geom.block_size, count;
	uint64_t blocks = in->blocks512, pblk, lblk, last, want;
	size_t done = 0, n;
	bool fresh;
	int r = 0, w;

	if (!ino_is_type(in, EXT3_S_IFREG))
		return -EINVAL;
	if (len == 0)
		return 0;
	if (off >= fs->max_size)
		return -EFBIG;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (len > fs->max_size - off)
		len = fs->max_size - off;
	last = (off + len - 1) / bs;
	while (done < len && r == 0) {
		lblk = (off + done) / bs;
		want = last - lblk + 1;
		r = ino_bmap_alloc(fs, t, in, lblk, want > UINT32_MAX ? UINT32_MAX : want, &pblk,
				   &count, &fresh);
		if (r < 0)
			break;
		r = write_run(fs, t, pblk, count, fresh, (const uint8_t *)buf + done, len - done,
			      off + done, &n);
		done += n;
	}
	if (done == 0 && in->blocks512 == blocks)
		return r;
	if (off + done > in->size)
		in->size = off + done;
	if (done)
		ino_inode_touch(t, in, true);
	w = ino_inode_write(fs, t, in);
	if (w == 0 && r < 0 && in->blocks512 != blocks)
		w = ino_trunc_blocks(fs, t, in, (in->size + bs - 1) / bs);
	if (w < 0)
		return w;
	return done ? (ssize_t)done : r;
}
