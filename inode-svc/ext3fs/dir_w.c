/*
 * dir_w.c - directory entries written as ext3's namei.c writes them: an
 * add goes into the first block with room (an unused entry, or the slack
 * after one in use), else into a new block at the end; a one-block
 * directory that fills is indexed instead when the fs has dir_index
 * (htree_w.c); a removal merges the entry into the one before it in its
 * block, or clears its inode when it is first.  Entries are found through
 * the index when there is one (a corrupt index: linearly, as ext3).
 * Blocks are read through the read side and held for change only once the
 * change is known; every entry is checked (ino_dirent_parse) before use.
 */
#include "internal_w.h"

#include <errno.h>
#include <string.h>

#include "log.h"

/* Where an entry sits: its block, offset, and the entry before it. */
struct dir_slot {
	uint64_t pblk;
	uint32_t off;
	uint32_t prev;          /* offset of the entry before, UINT32_MAX: first */
	uint32_t ino;
};

void ino_dir_warn(const ino_inode *dir, uint64_t blocknr, const char *why)
{
	cm_warn("corrupt directory ino=%u blk=%llu: %s", dir->ino,
		(unsigned long long)blocknr, why);
}

static uint8_t ftype_of(const ino_fs *fs, uint16_t mode)
{
	static const uint8_t types[16] = {
		[EXT3_S_IFREG >> 12] = EXT3_FT_REG_FILE, [EXT3_S_IFDIR >> 12] = EXT3_FT_DIR,
		[EXT3_S_IFCHR >> 12] = EXT3_FT_CHRDEV,  [EXT3_S_IFBLK >> 12] = EXT3_FT_BLKDEV,
		[EXT3_S_IFIFO >> 12] = EXT3_FT_FIFO,    [EXT3_S_IFSOCK >> 12] = EXT3_FT_SOCK,
		[EXT3_S_IFLNK >> 12] = EXT3_FT_SYMLINK,
	};

	return fs->has_filetype ? types[(mode & EXT3_S_IFMT) >> 12] : EXT3_FT_UNKNOWN;
}

static bool is_dots(const char *name, size_t namelen)
{
	return (namelen == 1 && name[0] == '.') ||
	       (namelen == 2 && name[0] == '.' && name[1] == '.');
}

/* The checks every entry operation makes first. */
static int entry_args(const ino_fs *fs, const ino_inode *dir, const char *name,
		      size_t namelen)
{
	int r = ino_lookup_args(dir, namelen);

	if (r < 0)
		return r;
	if (is_dots(name, namelen))
		return -EINVAL;
	/* metadata_csum blocks carry checksums ext3 does not keep */
	return fs->has_csum_tail ? -EROFS : 0;
}

int ino_dirent_room(const ino_fs *fs, const uint8_t *block, const char *name,
		    size_t namelen, uint32_t *ret_off, char *why, size_t whylen)
{
	uint32_t need = EXT3_DIR_REC_LEN(namelen), off, used;
	ino_dirent de;
	int r;

	for (off = 0; off < fs->geom.block_size; off += de.rec_len) {
		r = ino_dirent_parse(fs, block, off, &de, why, whylen);
		if (r < 0)
			return r;
		if (de.ino && de.name_len == namelen && memcmp(de.name, name, namelen) == 0)
			return -EEXIST;
		used = de.ino ? EXT3_DIR_REC_LEN(de.name_len) : 0;
		if (de.rec_len - used >= need) {
			*ret_off = off;
			return 1;
		}
	}
	return 0;
}

static void dirent_set(uint8_t *block, uint32_t off, uint32_t rec_len, uint32_t ino,
		       const char *name, size_t namelen, uint8_t ftype)
{
	struct ext3_dir_entry_2 *de = (struct ext3_dir_entry_2 *)(block + off);

	cm_set_le32(&de->inode, ino);
	cm_set_le16(&de->rec_len, ino_rec_len_encode(rec_len));
	de->name_len = (uint8_t)namelen;
	de->file_type = ftype;
	memcpy(de->name, name, namelen);
}

int ino_dirent_fill(const ino_fs *fs, uint8_t *block, uint32_t off, const char *name,
		    size_t namelen, uint32_t ino, uint8_t ftype)
{
	uint32_t need = EXT3_DIR_REC_LEN(namelen), used;
	struct ext3_dir_entry_2 *raw;
	char why[128];
	ino_dirent de;

	if (ino_dirent_parse(fs, block, off, &de, why, sizeof(why)) < 0)
		return -EUCLEAN;
	used = de.ino ? EXT3_DIR_REC_LEN(de.name_len) : 0;
	if (de.rec_len - used < need)
		return -EUCLEAN;
	if (used) {
		raw = (struct ext3_dir_entry_2 *)(block + off);
		cm_set_le16(&raw->rec_len, ino_rec_len_encode(used));
		off += used;
	}
	dirent_set(block, off, de.rec_len - used, ino, name, namelen, ftype);
	return 0;
}

int ino_dir_append(ino_fs *fs, ino_txn *t, ino_inode *dir, uint32_t *ret_lblk,
		   ino_wbuf *b)
{
	uint32_t bs = fs->geom.block_size, count;
	uint64_t lblk = dir->size / bs, pblk;
	bool fresh;
	int r;

	/* a directory's i_size is 32 bits (i_size_high is i_dir_acl) */
	if (dir->size + bs > UINT32_MAX)
		return -ENOSPC;
	/* A block already mapped at i_size means the size is wrong: the
	 * entries there would be lost under the new block (the kernel's
	 * ext4_append: "Logical block already allocated"). */
	r = ino_bmap(fs, dir, lblk, &pblk);
	if (r == 0 && pblk) {
		cm_warn("corrupt directory ino=%u: block %llu at its size %llu is already mapped",
			dir->ino, (unsigned long long)lblk, (unsigned long long)dir->size);
		return -EUCLEAN;
	}
	if (r < 0 && r != -EFBIG)
		return r;
	r = ino_bmap_alloc(fs, t, dir, lblk, 1, &pblk, &count, &fresh);
	if (r == -EFBIG)
		r = -ENOSPC;
	if (r < 0)
		return r;
	r = fresh ? ino_txn_get_new(t, pblk, b) : ino_txn_get_write(t, pblk, b);
	if (r < 0) {
		ino_dir_unappend(fs, t, dir, (uint32_t)lblk);
		return r;
	}
	memset(b->data, 0, bs);
	cm_set_le16(&((struct ext3_dir_entry_2 *)b->data)->rec_len, ino_rec_len_encode(bs));
	dir->size += bs;
	*ret_lblk = (uint32_t)lblk;
	return 0;
}

int ino_dir_unappend(ino_fs *fs, ino_txn *t, ino_inode *dir, uint32_t lblk)
{
	dir->size = (uint64_t)lblk * fs->geom.block_size;
	return ino_trunc_blocks(fs, t, dir, lblk);
}

/* Writes name into the slot at off of the block at pblk. */
static int fill_at(ino_fs *fs, ino_txn *t, uint64_t pblk, uint32_t off, const char *name,
		   size_t namelen, uint32_t ino, uint8_t ftype)
{
	ino_wbuf b = { 0 };
	int r = ino_txn_get_write(t, pblk, &b);

	if (r < 0)
		return r;
	r = ino_dirent_fill(fs, b.data, off, name, namelen, ino, ftype);
	if (r == 0)
		r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	return r;
}

/* ext3_add_entry without the index: the first block with room, the index
 * made when the first block fills (may_index), else a new block. */
static int add_linear(ino_fs *fs, ino_txn *t, ino_inode *dir, const char *name,
		      size_t namelen, uint32_t ino, uint8_t ftype, bool may_index)
{
	int64_t nblocks = ino_dir_nblocks(fs, dir);
	ino_buf rb = { 0 };
	ino_wbuf b = { 0 };
	uint64_t lblk, pblk;
	uint32_t off, nl;
	char why[128];
	int r;

	if (nblocks < 0)
		return nblocks;
	for (lblk = 0; lblk < (uint64_t)nblocks; lblk++) {
		r = ino_dir_block_get(fs, dir, lblk, &rb);
		if (r < 0)
			return r;
		pblk = rb.blocknr;
		r = ino_dirent_room(fs, rb.data, name, namelen, &off, why, sizeof(why));
		ino_blk_put(fs, &rb);
		if (r == -EUCLEAN)
			ino_dir_warn(dir, pblk, why);
		if (r > 0)
			return fill_at(fs, t, pblk, off, name, namelen, ino, ftype);
		if (r < 0)
			return r;
		if (nblocks == 1 && may_index && fs->has_dir_index) {
			r = ino_dx_make(fs, t, dir, pblk, name, namelen, ino, ftype);
			if (r <= 0)
				return r;
		}
	}
	r = ino_dir_append(fs, t, dir, &nl, &b);
	if (r < 0)
		return r;
	r = ino_dirent_fill(fs, b.data, 0, name, namelen, ino, ftype);
	if (r == 0)
		r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	return r;
}

/* Writes dir when the operation changed it (or succeeded): times on
 * success, and the index flag dropped on a fs without dir_index
 * (ext3_update_dx_flag). */
static int dir_done(ino_fs *fs, ino_txn *t, ino_inode *dir, const ino_inode *before, int r)
{
	int w;

	if (r == 0) {
		if (!fs->has_dir_index)
			dir->flags &= ~EXT3_INDEX_FL;
		ino_inode_touch(t, dir, true);
	} else if (dir->flags == before->flags && dir->size == before->size &&
		   dir->blocks512 == before->blocks512) {
		return r;
	}
	w = ino_inode_write(fs, t, dir);
	return r < 0 ? r : w;
}

int ino_dir_add(ino_fs *fs, ino_txn *t, ino_inode *dir, const char *name, size_t namelen,
		uint32_t ino, uint16_t mode)
{
	ino_inode before = *dir;
	bool fallback = false;
	uint8_t ftype;
	int r = entry_args(fs, dir, name, namelen);

	if (r < 0)
		return r;
	if (ino == 0 || ino > fs->geom.inodes_count)
		return -EINVAL;
	ftype = ftype_of(fs, mode);
	if (ino_is_dx(fs, dir)) {
		r = ino_dx_add(fs, t, dir, name, namelen, ino, ftype);
		if (r != INO_BAD_DX)
			return dir_done(fs, t, dir, &before, r);
		/* ext3_add_entry on ERR_BAD_DX_DIR: the directory goes linear */
		dir->flags &= ~EXT3_INDEX_FL;
		fallback = true;
	}
	r = add_linear(fs, t, dir, name, namelen, ino, ftype, !fallback);
	return dir_done(fs, t, dir, &before, r);
}

/* Finds name in one block: 1 with its offset and the entry before it. */
static int block_find(const ino_fs *fs, const uint8_t *block, const char *name,
		      size_t namelen, struct dir_slot *s, char *why, size_t whylen)
{
	uint32_t off, prev = UINT32_MAX;
	ino_dirent de;
	int r;

	for (off = 0; off < fs->geom.block_size; prev = off, off += de.rec_len) {
		r = ino_dirent_parse(fs, block, off, &de, why, whylen);
		if (r < 0)
			return r;
		if (de.ino && de.name_len == namelen && memcmp(de.name, name, namelen) == 0) {
			s->off = off;
			s->prev = prev;
			s->ino = de.ino;
			return 1;
		}
	}
	return 0;
}

/* Looks for name in directory block lblk. */
static int find_in(ino_fs *fs, const ino_inode *dir, uint64_t lblk, const char *name,
		   size_t namelen, struct dir_slot *s)
{
	ino_buf b = { 0 };
	char why[128];
	int r = ino_dir_block_get(fs, dir, lblk, &b);

	if (r < 0)
		return r;
	s->pblk = b.blocknr;
	r = block_find(fs, b.data, name, namelen, s, why, sizeof(why));
	ino_blk_put(fs, &b);
	if (r < 0)
		ino_dir_warn(dir, s->pblk, why);
	return r;
}

/* ext3_find_entry: through the index, else (none, or corrupt) linearly. */
static int dir_find(ino_fs *fs, const ino_inode *dir, const char *name, size_t namelen,
		    struct dir_slot *s)
{
	int64_t nblocks = ino_dir_nblocks(fs, dir);
	uint32_t ino, leaf;
	ino_dx_bad bad;
	uint64_t lblk;
	int r;

	if (nblocks < 0)
		return nblocks;
	if (ino_is_dx(fs, dir)) {
		r = ino_dx_find(fs, dir, name, namelen, &ino, &leaf, &bad);
		if (r == 0) {
			r = find_in(fs, dir, leaf, name, namelen, s);
			return r == 0 ? -EUCLEAN : r < 0 ? r : 0;
		}
		if (r != INO_BAD_DX)
			return r;
		cm_warn("corrupt htree ino=%u blk=%llu: %s; searching linearly", dir->ino,
			(unsigned long long)bad.blk, bad.why);
	}
	for (lblk = 0; lblk < (uint64_t)nblocks; lblk++) {
		r = find_in(fs, dir, lblk, name, namelen, s);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	return -ENOENT;
}

/* Holds the block of s for change and checks the entry is still there. */
static int slot_get(ino_fs *fs, ino_txn *t, const ino_inode *dir, const char *name,
		    size_t namelen, struct dir_slot *s, ino_wbuf *b)
{
	struct dir_slot again;
	char why[128] = "the entry moved";
	int r = ino_txn_get_write(t, s->pblk, b);

	if (r < 0)
		return r;
	r = block_find(fs, b->data, name, namelen, &again, why, sizeof(why));
	if (r > 0 && again.off == s->off && again.prev == s->prev)
		return 0;
	ino_txn_put(t, b);
	ino_dir_warn(dir, s->pblk, why);
	return -EUCLEAN;
}

int ino_dir_remove(ino_fs *fs, ino_txn *t, ino_inode *dir, const char *name,
		   size_t namelen, uint32_t *ret_ino)
{
	struct ext3_dir_entry_2 *de, *prev;
	ino_inode before = *dir;
	struct dir_slot s;
	ino_wbuf b = { 0 };
	uint32_t bs = fs->geom.block_size;
	int r = entry_args(fs, dir, name, namelen);

	if (r == 0)
		r = dir_find(fs, dir, name, namelen, &s);
	if (r == 0)
		r = slot_get(fs, t, dir, name, namelen, &s, &b);
	if (r < 0)
		return r;
	de = (struct ext3_dir_entry_2 *)(b.data + s.off);
	if (s.prev == UINT32_MAX) {
		cm_set_le32(&de->inode, 0);
	} else {
		prev = (struct ext3_dir_entry_2 *)(b.data + s.prev);
		cm_set_le16(&prev->rec_len,
			    ino_rec_len_encode(ino_rec_len_decode(cm_le16(prev->rec_len), bs) +
					       ino_rec_len_decode(cm_le16(de->rec_len), bs)));
	}
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	if (r == 0)
		*ret_ino = s.ino;
	return dir_done(fs, t, dir, &before, r);
}

int ino_dir_retarget(ino_fs *fs, ino_txn *t, ino_inode *dir, const char *name,
		     size_t namelen, uint32_t ino, uint16_t mode)
{
	struct ext3_dir_entry_2 *de;
	ino_inode before = *dir;
	struct dir_slot s;
	ino_wbuf b = { 0 };
	int r = entry_args(fs, dir, name, namelen);

	if (r == 0 && (ino == 0 || ino > fs->geom.inodes_count))
		r = -EINVAL;
	if (r == 0)
		r = dir_find(fs, dir, name, namelen, &s);
	if (r == 0)
		r = slot_get(fs, t, dir, name, namelen, &s, &b);
	if (r < 0)
		return r;
	de = (struct ext3_dir_entry_2 *)(b.data + s.off);
	cm_set_le32(&de->inode, ino);
	if (fs->has_filetype)
		de->file_type = ftype_of(fs, mode);
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	return dir_done(fs, t, dir, &before, r);
}

int ino_dir_init(ino_fs *fs, ino_txn *t, ino_inode *newdir, uint32_t parent)
{
	uint32_t bs = fs->geom.block_size, count;
	uint8_t ft = ftype_of(fs, EXT3_S_IFDIR);
	ino_wbuf b = { 0 };
	uint64_t pblk;
	bool fresh;
	int r;

	if (!ino_is_type(newdir, EXT3_S_IFDIR))
		return -ENOTDIR;
	if (newdir->size || parent == 0 || parent > fs->geom.inodes_count)
		return -EINVAL;
	if (fs->has_csum_tail)
		return -EROFS;
	r = ino_bmap_alloc(fs, t, newdir, 0, 1, &pblk, &count, &fresh);
	if (r < 0)
		return r;
	r = fresh ? ino_txn_get_new(t, pblk, &b) : ino_txn_get_write(t, pblk, &b);
	if (r < 0)
		return r;
	memset(b.data, 0, bs);
	dirent_set(b.data, 0, EXT3_DIR_REC_LEN(1), newdir->ino, ".", 1, ft);
	dirent_set(b.data, EXT3_DIR_REC_LEN(1), bs - EXT3_DIR_REC_LEN(1), parent, "..", 2, ft);
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	if (r < 0)
		return r;
	newdir->size = bs;
	newdir->flags &= ~EXT3_INDEX_FL;
	return 0;
}

/* Not "." or "..": an entry that makes a directory non-empty. */
static int not_dots(void *ctx, uint32_t ino, uint8_t file_type, const char *name,
		    size_t namelen, uint64_t next_cookie)
{
	return !is_dots(name, namelen);
}

int ino_dir_is_empty(ino_fs *fs, const ino_inode *dir)
{
	int r;

	/* Too small for "." and "..": its entries are past its size, not gone
	 * (the kernel's ext4_empty_dir: "invalid size"). */
	if (dir->size < fs->geom.block_size) {
		cm_warn("corrupt directory ino=%u: size %llu cannot hold \".\" and \"..\"", dir->ino,
			(unsigned long long)dir->size);
		return -EUCLEAN;
	}
	r = ino_dir_iterate(fs, dir, 0, not_dots, NULL);

	return r < 0 ? r : r == 0;
}

/* Checks that block 0 starts with "." and ".."; *ret_off: the "..". */
static int dotdot_at(const ino_fs *fs, const ino_inode *dir, const ino_buf *b,
		     uint32_t *ret_off, uint32_t *ret_ino)
{
	char why[128] = "no \".\" and \"..\" at the start of block 0";
	ino_dirent dot, dotdot;

	if (ino_dirent_parse(fs, b->data, 0, &dot, why, sizeof(why)) == 0 &&
	    dot.name_len == 1 && dot.name[0] == '.' &&
	    ino_dirent_parse(fs, b->data, dot.rec_len, &dotdot, why, sizeof(why)) == 0 &&
	    dotdot.ino && dotdot.name_len == 2 && memcmp(dotdot.name, "..", 2) == 0) {
		*ret_off = dot.rec_len;
		*ret_ino = dotdot.ino;
		return 0;
	}
	ino_dir_warn(dir, b->blocknr, why);
	return -EUCLEAN;
}

int ino_dir_parent(ino_fs *fs, const ino_inode *dir, uint32_t *ret)
{
	ino_buf b = { 0 };
	uint32_t off, ino;
	int r;

	if (!ino_is_type(dir, EXT3_S_IFDIR))
		return -ENOTDIR;
	r = ino_dir_block_get(fs, dir, 0, &b);
	if (r < 0)
		return r;
	r = dotdot_at(fs, dir, &b, &off, &ino);
	ino_blk_put(fs, &b);
	if (r == 0)
		*ret = ino;
	return r;
}

int ino_dir_set_parent(ino_fs *fs, ino_txn *t, ino_inode *dir, uint32_t parent)
{
	struct ext3_dir_entry_2 *de;
	ino_buf rb = { 0 };
	ino_wbuf b = { 0 };
	uint32_t off, old;
	uint64_t pblk;
	int r;

	if (!ino_is_type(dir, EXT3_S_IFDIR))
		return -ENOTDIR;
	if (parent == 0 || parent > fs->geom.inodes_count)
		return -EINVAL;
	if (fs->has_csum_tail)
		return -EROFS;
	r = ino_dir_block_get(fs, dir, 0, &rb);
	if (r < 0)
		return r;
	pblk = rb.blocknr;
	ino_blk_put(fs, &rb);
	r = ino_txn_get_write(t, pblk, &b);
	if (r < 0)
		return r;
	rb = (ino_buf){ .data = b.data, .blocknr = pblk };
	r = dotdot_at(fs, dir, &rb, &off, &old);
	if (r == 0) {
		de = (struct ext3_dir_entry_2 *)(b.data + off);
		cm_set_le32(&de->inode, parent);
		r = ino_txn_dirty(t, &b);
	}
	ino_txn_put(t, &b);
	return r;
}
