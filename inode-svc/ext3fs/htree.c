/*
 * htree.c - name lookup through a dir_index (htree) directory index, as
 * ext3's dx_probe() and ext3_dx_find_entry(): hash the name, binary-search
 * the dx_root (and one level of dx_node), search the leaf, and continue to
 * the next leaf while its starting hash says the collision run goes on.
 *
 * The probe (ino_dx_probe) is shared with the write side (htree_w.c).
 * A malformed index is reported as INO_BAD_DX with the block and reason
 * (never logged here): ino_dir_lookup() logs it once and searches
 * linearly, as ext3 does on ERR_BAD_DX_DIR.  Depth is at most 2 frames
 * (EXT3_DX_MAX_INDIRECT), the leaf walk at most the directory's blocks;
 * every frame's block is put before returning (ino_dx_put for a probe).
 */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

bool ino_is_dx(const ino_fs *fs, const ino_inode *dir)
{
	return fs->has_dir_index && (dir->flags & EXT3_INDEX_FL);
}

__attribute__((format(printf, 3, 4)))
static int dx_bad(ino_dx_bad *bad, uint64_t blk, const char *fmt, ...)
{
	va_list ap;

	bad->blk = blk;
	va_start(ap, fmt);
	vsnprintf(bad->why, sizeof(bad->why), fmt, ap);
	va_end(ap);
	return INO_BAD_DX;
}

uint32_t ino_dx_hash_at(const ino_dx_frame *f, uint32_t i)
{
	return cm_le32(f->entries[i].hash);
}

/* ext3 keeps the top 8 bits of a dx block number for future flags. */
uint32_t ino_dx_block_at(const ino_dx_frame *f, uint32_t i)
{
	return cm_le32(f->entries[i].block) & 0x00ffffff;
}

static uint32_t dx_tail_entries(const ino_fs *fs)
{
	return fs->has_csum_tail ?
	       INO_DX_TAIL_SIZE / sizeof(struct ext3_dx_entry) : 0;
}

uint32_t ino_dx_root_limit(const ino_fs *fs)
{
	return (fs->geom.block_size - EXT3_DIR_REC_LEN(1) -
		EXT3_DIR_REC_LEN(2) - sizeof(struct ext3_dx_root_info)) /
	       sizeof(struct ext3_dx_entry) - dx_tail_entries(fs);
}

uint32_t ino_dx_node_limit(const ino_fs *fs)
{
	return (fs->geom.block_size - EXT3_DIR_REC_LEN(0)) /
	       sizeof(struct ext3_dx_entry) - dx_tail_entries(fs);
}

/* Checks the count/limit pair at byte `off` and sets up the frame. */
static int dx_frame_init(ino_dx_frame *f, uint32_t off, uint32_t want_limit,
			 ino_dx_bad *bad)
{
	const struct ext3_dx_countlimit *cl;

	cl = (const struct ext3_dx_countlimit *)(f->b.data + off);
	f->limit = cm_le16(cl->limit);
	f->count = cm_le16(cl->count);
	if (f->limit != want_limit)
		return dx_bad(bad, f->b.blocknr, "index limit %u, want %u",
			      f->limit, want_limit);
	if (f->count == 0 || f->count > f->limit)
		return dx_bad(bad, f->b.blocknr, "index count %u, limit %u",
			      f->count, f->limit);
	f->entries = (const struct ext3_dx_entry *)(f->b.data + off);
	f->off = off;
	f->at = 0;
	return 0;
}

/* Follows the last entry whose hash is <= hash (entry 0 covers 0). */
static void dx_search(ino_dx_frame *f, uint32_t hash)
{
	uint32_t lo = 1, hi = f->count, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ino_dx_hash_at(f, mid) > hash)
			hi = mid;
		else
			lo = mid + 1;
	}
	f->at = lo - 1;
}

/* Reads and checks the dx_root; returns its levels and hash version. */
static int dx_read_root(ino_fs *fs, const ino_inode *dir, ino_dx_frame *f,
			unsigned *ret_levels, unsigned *ret_version,
			ino_dx_bad *bad)
{
	uint32_t bs = fs->geom.block_size;
	const struct ext3_dx_root *root;
	const struct ext3_dx_root_info *info;
	int r;

	r = ino_dir_block_get(fs, dir, 0, &f->b);
	if (r < 0)
		return r;
	root = (const struct ext3_dx_root *)f->b.data;
	info = &root->info;
	if (cm_le16(root->dot.rec_len) != 12 ||
	    cm_le16(root->dotdot.rec_len) != bs - 12)
		return dx_bad(bad, f->b.blocknr, "block 0 is not a dx_root");
	if (info->hash_version > EXT3_DX_HASH_TEA)
		return dx_bad(bad, f->b.blocknr, "unknown hash version %u",
			      info->hash_version);
	if (info->unused_flags & 1)
		return dx_bad(bad, f->b.blocknr, "unknown hash flags 0x%x",
			      info->unused_flags);
	if (info->indirect_levels > EXT3_DX_MAX_INDIRECT)
		return dx_bad(bad, f->b.blocknr, "indirect_levels %u > %u",
			      info->indirect_levels, EXT3_DX_MAX_INDIRECT);
	if (info->info_length != sizeof(*info))
		return dx_bad(bad, f->b.blocknr, "info_length %u, want %zu",
			      info->info_length, sizeof(*info));
	r = dx_frame_init(f, offsetof(struct ext3_dx_root, entries),
			  ino_dx_root_limit(fs), bad);
	if (r)
		return r;
	*ret_levels = info->indirect_levels + 1;
	*ret_version = info->hash_version;
	return 0;
}

/* Reads the dx_node the parent's current entry points at into f. */
static int dx_read_node(ino_fs *fs, const ino_inode *dir, uint64_t nblocks,
			const ino_dx_frame *parent, ino_dx_frame *f,
			ino_dx_bad *bad)
{
	uint32_t bs = fs->geom.block_size;
	uint32_t lblk = ino_dx_block_at(parent, parent->at);
	const struct ext3_fake_dirent *fake;
	int r;

	if (lblk == 0 || lblk >= nblocks)
		return dx_bad(bad, parent->b.blocknr,
			      "index entry %u points to block %u of %llu",
			      parent->at, lblk, (unsigned long long)nblocks);
	ino_blk_put(fs, &f->b);
	r = ino_dir_block_get(fs, dir, lblk, &f->b);
	if (r < 0)
		return r;
	fake = (const struct ext3_fake_dirent *)f->b.data;
	if (cm_le32(fake->inode) != 0 ||
	    ino_rec_len_decode(cm_le16(fake->rec_len), bs) != bs)
		return dx_bad(bad, f->b.blocknr, "block %u is not a dx_node",
			      lblk);
	return dx_frame_init(f, offsetof(struct ext3_dx_node, entries),
			     ino_dx_node_limit(fs), bad);
}

int ino_dx_leaf(const ino_dx_path *p, uint32_t *ret_lblk, ino_dx_bad *bad)
{
	const ino_dx_frame *last = &p->frames[p->levels - 1];
	uint32_t leaf = ino_dx_block_at(last, last->at);

	if (leaf == 0 || leaf >= p->nblocks)
		return dx_bad(bad, last->b.blocknr,
			      "index entry %u points to block %u of %llu",
			      last->at, leaf, (unsigned long long)p->nblocks);
	*ret_lblk = leaf;
	return 0;
}

int ino_dx_next_leaf(ino_fs *fs, const ino_inode *dir, ino_dx_path *p, ino_dx_bad *bad)
{
	ino_dx_frame *frames = p->frames;
	unsigned i = p->levels - 1;
	int r;

	while (frames[i].at + 1 >= frames[i].count) {
		if (i == 0)
			return -ENOENT;
		i--;
	}
	frames[i].at++;
	for (i++; i < p->levels; i++) {
		r = dx_read_node(fs, dir, p->nblocks, &frames[i - 1], &frames[i], bad);
		if (r)
			return r;
	}
	return 0;
}

bool ino_dx_next_start(const ino_dx_path *p, uint32_t *ret_hash)
{
	for (unsigned i = p->levels; i-- > 0;) {
		const ino_dx_frame *f = &p->frames[i];
		if (f->at + 1 < f->count) {
			*ret_hash = ino_dx_hash_at(f, f->at + 1);
			return true;
		}
	}
	return false;
}

/*
 * Moves to the next leaf if it continues the collision run of the path's
 * hash (ext3_htree_next_block).  Returns 0 (moved), -ENOENT (the run
 * ends), INO_BAD_DX or -errno.
 */
static int dx_next(ino_fs *fs, const ino_inode *dir, ino_dx_path *p,
		   ino_dx_bad *bad)
{
	uint32_t next;

	if (!ino_dx_next_start(p, &next) || (next & ~1u) != p->hash)
		return -ENOENT;
	return ino_dx_next_leaf(fs, dir, p, bad);
}

/* Searches the leaf the path points at, then its continuations. */
static int dx_search_leaves(ino_fs *fs, const ino_inode *dir, ino_dx_path *p,
			    const char *name, size_t namelen,
			    uint32_t *ret_ino, uint32_t *ret_leaf,
			    ino_dx_bad *bad)
{
	char why[sizeof(bad->why) - 16];
	ino_buf b = { 0 };
	uint64_t n, blocknr;
	uint32_t leaf;
	int r;

	for (n = 0; n < p->nblocks; n++) {
		r = ino_dx_leaf(p, &leaf, bad);
		if (r)
			return r;
		r = ino_dir_block_get(fs, dir, leaf, &b);
		if (r < 0)
			return r;
		blocknr = b.blocknr;
		r = ino_dirblock_search(fs, b.data, name, namelen, ret_ino,
					why, sizeof(why));
		ino_blk_put(fs, &b);
		if (r < 0)
			return dx_bad(bad, blocknr, "leaf %u: %s", leaf, why);
		if (r > 0) {
			if (ret_leaf)
				*ret_leaf = leaf;
			return 0;
		}
		r = dx_next(fs, dir, p, bad);
		if (r)
			return r;
	}
	return dx_bad(bad, p->frames[0].b.blocknr, "more leaves than blocks");
}

void ino_dx_put(ino_fs *fs, ino_dx_path *p)
{
	unsigned i;

	for (i = 0; i < INO_DX_MAX_LEVELS; i++)
		ino_blk_put(fs, &p->frames[i].b);
}

int ino_dx_probe(ino_fs *fs, const ino_inode *dir, const char *name,
		 size_t namelen, ino_dx_path *p, ino_dx_bad *bad)
{
	return ino_dx_probe_hash(fs, dir, name, namelen, 0, p, bad);
}

int ino_dx_probe_hash(ino_fs *fs, const ino_inode *dir, const char *name,
		      size_t namelen, uint32_t hash, ino_dx_path *p, ino_dx_bad *bad)
{
	int64_t nblocks;
	unsigned i;
	int r;

	memset(p, 0, sizeof(*p));
	nblocks = ino_dir_nblocks(fs, dir);
	if (nblocks < 0)
		return nblocks;
	p->nblocks = nblocks;
	r = dx_read_root(fs, dir, &p->frames[0], &p->levels, &p->version, bad);
	if (r)
		return r;
	if (fs->hash_unsigned)
		p->version += EXT3_DX_HASH_LEGACY_UNSIGNED;
	p->hash = hash;
	if (name)
		(void)ino_hash(p->version, fs->hash_seed, name, namelen, &p->hash,
			       NULL);
	dx_search(&p->frames[0], p->hash);
	for (i = 1; i < p->levels; i++) {
		r = dx_read_node(fs, dir, p->nblocks, &p->frames[i - 1],
				 &p->frames[i], bad);
		if (r)
			return r;
		dx_search(&p->frames[i], p->hash);
	}
	return 0;
}

int ino_dx_find(ino_fs *fs, const ino_inode *dir, const char *name,
		size_t namelen, uint32_t *ret_ino, uint32_t *ret_leaf,
		ino_dx_bad *bad)
{
	ino_dx_path p;
	int r;

	/* "." and ".." live in block 0 only (ext3_dx_find_entry) */
	if ((namelen == 1 && name[0] == '.') ||
	    (namelen == 2 && name[0] == '.' && name[1] == '.')) {
		if (ret_leaf)
			*ret_leaf = 0;
		return ino_dir_lookup_linear(fs, dir, name, namelen, ret_ino);
	}
	r = ino_dx_probe(fs, dir, name, namelen, &p, bad);
	if (r == 0)
		r = dx_search_leaves(fs, dir, &p, name, namelen, ret_ino,
				     ret_leaf, bad);
	ino_dx_put(fs, &p);
	return r;
}

int ino_dx_lookup(ino_fs *fs, const ino_inode *dir, const char *name,
		  size_t namelen, uint32_t *ret_ino)
{
	ino_dx_bad bad;
	int r = ino_lookup_args(dir, namelen);

	if (r < 0)
		return r;
	if (!ino_is_dx(fs, dir))
		return -ENODATA;
	r = ino_dx_find(fs, dir, name, namelen, ret_ino, NULL, &bad);
	if (r != INO_BAD_DX)
		return r;
	cm_warn("corrupt htree ino=%u blk=%llu: %s", dir->ino,
		(unsigned long long)bad.blk, bad.why);
	return -EUCLEAN;
}

int ino_dirhash(const ino_fs *fs, unsigned version, const char *name,
		size_t namelen, uint32_t *ret_hash, uint32_t *ret_minor)
{
	return ino_hash(version, fs->hash_seed, name, namelen, ret_hash,
			ret_minor);
}
