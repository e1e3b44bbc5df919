/*
 * dir.c - directory entries: checking them, walking a directory linearly
 * (readdir with byte-offset cookies), and the linear and dispatching
 * lookups.
 *
 * Every entry is checked before its fields are used (ino_dirent_parse), so
 * a walk through a block advances by at least 8 bytes per step and ends at
 * the block end; a walk through a directory visits at most i_size /
 * block_size blocks.  htree index blocks parse as one unused entry.
 */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

__attribute__((format(printf, 3, 4)))
static int bad_entry(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -EUCLEAN;
}

int ino_dirent_parse(const ino_fs *fs, const uint8_t *block, uint32_t off,
		     ino_dirent *ret, char *why, size_t whylen)
{
	uint32_t bs = fs->geom.block_size, rec_len, name_len, ino;
	const struct ext3_dir_entry_2 *de;

	if (off > bs - 8)
		return bad_entry(why, whylen, "offset %u: entry header crosses the block end",
				 off);
	de = (const struct ext3_dir_entry_2 *)(block + off);
	rec_len = ino_rec_len_decode(cm_le16(de->rec_len), bs);
	name_len = de->name_len;
	if (!fs->has_filetype)
		name_len |= (uint32_t)de->file_type << 8;	/* le16 */
	ino = cm_le32(de->inode);
	if (rec_len < 8 || rec_len % 4 || rec_len > bs - off)
		return bad_entry(why, whylen, "offset %u: rec_len %u (< 8, not a multiple of 4 or crossing the block end)",
				 off, rec_len);
	if (name_len > EXT3_NAME_LEN || EXT3_DIR_REC_LEN(name_len) > rec_len)
		return bad_entry(why, whylen, "offset %u: name_len %u > rec_len %u - 8",
				 off, name_len, rec_len);
	if (ino > fs->geom.inodes_count ||
	    (ino && ino < fs->first_ino && ino != EXT3_ROOT_INO))
		return bad_entry(why, whylen, "offset %u: inode %u out of range",
				 off, ino);
	if (ino && name_len == 0)
		return bad_entry(why, whylen, "offset %u: empty name for inode %u",
				 off, ino);
	ret->ino = ino;
	ret->rec_len = rec_len;
	ret->name_len = name_len;
	ret->file_type = fs->has_filetype && de->file_type < EXT3_FT_MAX ?
			 de->file_type : EXT3_FT_UNKNOWN;
	ret->name = de->name;
	return 0;
}

int ino_dirblock_search(const ino_fs *fs, const uint8_t *block,
			const char *name, size_t namelen, uint32_t *ret_ino,
			char *why, size_t whylen)
{
	ino_dirent de;
	uint32_t off;
	int r;

	for (off = 0; off < fs->geom.block_size; off += de.rec_len) {
		r = ino_dirent_parse(fs, block, off, &de, why, whylen);
		if (r < 0)
			return r;
		if (de.ino && de.name_len == namelen &&
		    memcmp(de.name, name, namelen) == 0) {
			*ret_ino = de.ino;
			return 1;
		}
	}
	return 0;
}

int64_t ino_dir_nblocks(const ino_fs *fs, const ino_inode *dir)
{
	if (!ino_is_type(dir, EXT3_S_IFDIR))
		return -ENOTDIR;
	if (dir->size % fs->geom.block_size) {
		cm_warn("corrupt directory ino=%u blk=%llu: size %llu not a multiple of the block size",
			dir->ino,
			(unsigned long long)ino_inode_blocknr(fs, dir->ino),
			(unsigned long long)dir->size);
		return -EUCLEAN;
	}
	return dir->size / fs->geom.block_size;
}

int ino_dir_block_get(ino_fs *fs, const ino_inode *dir, uint64_t lblk,
		      ino_buf *b)
{
	uint64_t pblk;
	int r;

	r = ino_bmap(fs, dir, lblk, &pblk);
	if (r == 0 && pblk == 0) {
		cm_warn("corrupt directory ino=%u blk=%llu: hole at block %llu",
			dir->ino,
			(unsigned long long)ino_inode_blocknr(fs, dir->ino),
			(unsigned long long)lblk);
		r = -EUCLEAN;
	}
	if (r == -EFBIG) {
		cm_warn("corrupt directory ino=%u blk=%llu: size %llu beyond the block map",
			dir->ino,
			(unsigned long long)ino_inode_blocknr(fs, dir->ino),
			(unsigned long long)dir->size);
		r = -EUCLEAN;
	}
	if (r < 0)
		return r;
	return ino_blk_get(fs, pblk, b);
}

int ino_dir_walk_block(const ino_fs *fs, const ino_inode *dir, const ino_buf *b,
		       uint64_t lblk, uint32_t boff, ino_dir_fn *fn, void *ctx)
{
	uint64_t base = lblk * fs->geom.block_size;
	char why[128];
	ino_dirent de;
	uint32_t off;
	int r;

	for (off = 0; off < fs->geom.block_size; off += de.rec_len) {
		r = ino_dirent_parse(fs, b->data, off, &de, why, sizeof(why));
		if (r < 0) {
			cm_warn("corrupt directory ino=%u blk=%llu: %s",
				dir->ino, (unsigned long long)b->blocknr, why);
			return r;
		}
		if (off < boff || de.ino == 0)
			continue;
		r = fn(ctx, de.ino, de.file_type, de.name, de.name_len,
		       base + off + de.rec_len);
		if (r)
			return r;
	}
	return 0;
}

int ino_dir_iterate(ino_fs *fs, const ino_inode *dir, uint64_t cookie,
		    ino_dir_fn *fn, void *ctx)
{
	uint32_t bs = fs->geom.block_size;
	uint64_t lblk = cookie / bs;
	uint32_t boff = cookie % bs;
	int64_t nblocks = ino_dir_nblocks(fs, dir);
	ino_buf b = { 0 };
	int r;

	if (nblocks < 0)
		return nblocks;
	for (; lblk < (uint64_t)nblocks; lblk++, boff = 0) {
		r = ino_dir_block_get(fs, dir, lblk, &b);
		if (r < 0)
			return r;
		r = ino_dir_walk_block(fs, dir, &b, lblk, boff, fn, ctx);
		ino_blk_put(fs, &b);
		if (r)
			return r;
	}
	return 0;
}

int ino_dir_lookup_linear(ino_fs *fs, const ino_inode *dir, const char *name,
			  size_t namelen, uint32_t *ret_ino)
{
	int64_t nblocks = ino_dir_nblocks(fs, dir);
	char why[128];
	ino_buf b = { 0 };
	uint64_t lblk;
	int r;

	if (nblocks < 0)
		return nblocks;
	for (lblk = 0; lblk < (uint64_t)nblocks; lblk++) {
		r = ino_dir_block_get(fs, dir, lblk, &b);
		if (r < 0)
			return r;
		r = ino_dirblock_search(fs, b.data, name, namelen, ret_ino,
					why, sizeof(why));
		if (r < 0)
			cm_warn("corrupt directory ino=%u blk=%llu: %s",
				dir->ino, (unsigned long long)b.blocknr, why);
		ino_blk_put(fs, &b);
		if (r < 0)
			return r;
		if (r > 0)
			return 0;
	}
	return -ENOENT;
}

int ino_lookup_args(const ino_inode *dir, size_t namelen)
{
	if (!ino_is_type(dir, EXT3_S_IFDIR))
		return -ENOTDIR;
	if (namelen == 0)
		return -ENOENT;
	if (namelen > EXT3_NAME_LEN)
		return -ENAMETOOLONG;
	return 0;
}

int ino_dir_lookup(ino_fs *fs, const ino_inode *dir, const char *name,
		   size_t namelen, uint32_t *ret_ino)
{
	ino_dx_bad bad;
	int r = ino_lookup_args(dir, namelen);

	if (r < 0)
		return r;
	if (ino_is_dx(fs, dir)) {
		r = ino_dx_find(fs, dir, name, namelen, ret_ino, NULL, &bad);
		if (r != INO_BAD_DX)
			return r;
		cm_warn("corrupt htree ino=%u blk=%llu: %s; searching linearly",
			dir->ino, (unsigned long long)bad.blk, bad.why);
	}
	return ino_dir_lookup_linear(fs, dir, name, namelen, ret_ino);
}
