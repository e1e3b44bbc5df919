/*
 * truncate.c - ext3_truncate, ext3_delete_inode and the punching of holes
 * (fallocate's PUNCH_HOLE, as ext4_ind_remove_space) over the block map.
 * Blocks past the new end are freed from the map's end inward in steps,
 * each leaving the map consistent: up to TRUNC_RUNS runs of contiguous
 * data blocks freed (one ino_txn_free_blocks per run) with their pointers
 * cleared, or one indirect block that maps nothing any more (a partial one
 * too, as ext3's find_shared arranges) freed and unhooked; then i_blocks is
 * written.  Between steps ino_txn_ensure() may restart the transaction: the
 * inode is on the orphan list by then, so ino_orphans_process() finishes
 * what a crash interrupts.  A hole needs no orphan record: each step
 * leaves the file as it was with fewer blocks, and the size stays.
 */
#include "internal_w.h"
#include "xattr.h"

#include <errno.h>
#include <string.h>

#include "log.h"

#define TRUNC_RUNS	64	/* data runs one step frees */
#define CRED_FREE	2	/* a free: its group's bitmap and descriptor */

/* Pointer i of a holder's slots: p (an indirect block) or the inode's. */
static uint32_t ptr_at(const ino_inode *in, const cm_le32_t *p, unsigned i)
{
	return p ? cm_le32(p[i]) : in->block[i];
}

/* Blocks each pointer of a depth-d indirect block maps: apb^(d-1). */
static uint64_t child_span(const ino_fs *fs, int d)
{
	uint64_t span = 1;

	while (--d > 0)
		span *= fs->addr_per_block;
	return span;
}

/* Whether block b continues a run that ends at prev: next on disk, and in
 * the same group, so that one free touches one bitmap. */
static bool run_continues(const ino_fs *fs, uint32_t prev, uint32_t b)
{
	uint32_t first = fs->geom.first_data_block, bpg = fs->geom.blocks_per_group;

	return prev && b == prev + 1 && (b - first) / bpg == (prev - first) / bpg;
}

/* Takes n blocks off i_blocks (never below 0 on a corrupt count). */
static void drop_blocks(const ino_fs *fs, ino_inode *in, uint64_t n)
{
	n *= fs->geom.block_size >> 9;
	in->blocks512 = in->blocks512 > n ? in->blocks512 - n : 0;
}

static int read_ptr(ino_fs *fs, uint64_t blk, unsigned i, uint32_t *ret)
{
	ino_buf b = { 0 };
	int r;

	r = ino_blk_get(fs, blk, &b);
	if (r < 0)
		return r;
	*ret = cm_le32(((const cm_le32_t *)b.data)[i]);
	ino_blk_put(fs, &b);
	return 0;
}

/* The next step from slot i: up to TRUNC_RUNS runs; *ret_end is where it
 * stops.  Returns the runs, or -EUCLEAN for a pointer outside the fs. */
static int step_runs(ino_fs *fs, const ino_inode *in, uint64_t holder, const cm_le32_t *p,
		     unsigned i, unsigned to, unsigned *ret_end)
{
	uint32_t v, prev = 0;
	int runs = 0;

	for (; i < to; i++) {
		v = ptr_at(in, p, i);
		if (v && !run_continues(fs, prev, v)) {
			if (runs == TRUNC_RUNS)
				break;
			runs++;
		}
		prev = v;
	}
	*ret_end = i;
	return runs;
}

/* Frees the runs in slots [i, end) and clears their pointers. */
static int free_runs(ino_fs *fs, ino_txn *t, ino_inode *in, cm_le32_t *p, unsigned i,
		     unsigned end)
{
	uint32_t v, n, j;
	int r;

	while (i < end) {
		v = ptr_at(in, p, i);
		if (!v || !ino_blk_data(fs, v)) {
			/* Not a data block (ino_map_check): cut, not freed. */
			drop_blocks(fs, in, v ? 1 : 0);
			if (p)
				cm_set_le32(&p[i], 0);
			else
				in->block[i] = 0;
			i++;
			continue;
		}
		for (n = 1; i + n < end && ino_blk_data(fs, ptr_at(in, p, i + n)) &&
			    run_continues(fs, v + n - 1, ptr_at(in, p, i + n));
		     n++)
			;
		for (j = 0; j < n; j++) {
			r = ino_txn_forget(t, v + j, false);
			if (r < 0)
				return r;
		}
		r = ino_txn_free_blocks(t, v, n);
		if (r < 0)
			return r;
		for (j = 0; j < n; j++, i++) {
			if (p)
				cm_set_le32(&p[i], 0);
			else
				in->block[i] = 0;
		}
		drop_blocks(fs, in, n);
	}
	return 0;
}

/* Frees the data blocks of slots [i, to) of holder (0: the inode). */
static int free_data(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t holder, unsigned i,
		     unsigned to)
{
	ino_buf rb = { 0 };
	ino_wbuf b = { 0 };
	unsigned end;
	int runs, r, w;

	while (i < to) {
		if (holder) {
			r = ino_blk_get(fs, holder, &rb);
			if (r < 0)
				return r;
			runs = step_runs(fs, in, holder, (const cm_le32_t *)rb.data, i, to, &end);
			ino_blk_put(fs, &rb);
		} else {
			runs = step_runs(fs, in, 0, NULL, i, to, &end);
		}
		if (runs <= 0)
			return runs;
		r = ino_txn_ensure(t, CRED_FREE * runs + 2);
		if (r < 0)
			return r;
		if (holder) {
			r = ino_txn_get_write(t, holder, &b);
			if (r < 0)
				return r;
		}
		r = free_runs(fs, t, in, holder ? (cm_le32_t *)b.data : NULL, i, end);
		if (holder) {
			w = ino_txn_dirty(t, &b);
			ino_txn_put(t, &b);
			r = r ? r : w;
		}
		w = ino_inode_write(fs, t, in);
		if (r < 0 || w < 0)
			return r ? r : w;
		i = end;
	}
	return 0;
}

/* Clears slot idx of holder (0: the inode), whose block is gone, and
 * counts it out of i_blocks. */
static int unhook(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t holder, unsigned idx)
{
	ino_wbuf b = { 0 };
	int r;

	drop_blocks(fs, in, 1);
	if (holder) {
		r = ino_txn_get_write(t, holder, &b);
		if (r < 0)
			return r;
		cm_set_le32(&((cm_le32_t *)b.data)[idx], 0);
		r = ino_txn_dirty(t, &b);
		ino_txn_put(t, &b);
		if (r < 0)
			return r;
	} else {
		in->block[idx] = 0;
	}
	return ino_inode_write(fs, t, in);
}

/* Frees indirect block blk, which maps nothing now, and clears slot idx
 * of its holder (0: the inode). */
static int free_node(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t holder, unsigned idx,
		     uint32_t blk)
{
	int r;

	r = ino_txn_ensure(t, CRED_FREE + 2);
	if (r >= 0)
		r = ino_txn_forget(t, blk, true);
	if (r >= 0)
		r = ino_txn_free_blocks(t, blk, 1);
	return r < 0 ? r : unhook(fs, t, in, holder, idx);
}

/* An indirect pointer to a block that is not a data block: cut from slot
 * idx of its holder, neither read nor freed (ino_map_check). */
static int cut_node(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t holder, unsigned idx)
{
	int r = ino_txn_ensure(t, 2);

	return r < 0 ? r : unhook(fs, t, in, holder, idx);
}

/* Frees everything under ptr (depth d >= 1), then ptr itself. */
static int free_tree(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t holder, unsigned idx,
		     uint32_t ptr, int d)
{
	uint32_t child;
	unsigned j;
	int r = 0;

	if (!ino_blk_data(fs, ptr))
		return cut_node(fs, t, in, holder, idx);
	if (d == 1)
		r = free_data(fs, t, in, ptr, 0, fs->addr_per_block);
	for (j = fs->addr_per_block; d > 1 && j-- > 0 && r == 0;) {
		r = read_ptr(fs, ptr, j, &child);
		if (r == 0 && child)
			r = free_tree(fs, t, in, ptr, j, child, d - 1);
	}
	return r ? r : free_node(fs, t, in, holder, idx, ptr);
}

static int node_empty(ino_fs *fs, uint64_t blk, bool *ret)
{
	static const uint8_t zero[256];
	ino_buf b = { 0 };
	uint32_t off;
	int r;

	r = ino_blk_get(fs, blk, &b);
	if (r < 0)
		return r;
	*ret = true;
	for (off = 0; off < fs->geom.block_size && *ret; off += sizeof(zero))
		*ret = memcmp(b.data + off, zero, sizeof(zero)) == 0;
	ino_blk_put(fs, &b);
	return 0;
}

/* Cuts the subtree under ptr (depth d, mapping from logical block base)
 * at last, which falls inside it; frees ptr too if it maps nothing then. */
static int trunc_tree(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t holder, unsigned idx,
		      uint32_t ptr, int d, uint64_t base, uint64_t last)
{
	uint64_t span = child_span(fs, d);
	unsigned c = (last - base) / span, j;
	bool partial = (last - base) % span != 0, empty;
	uint32_t child;
	int r = 0;

	if (!ino_blk_data(fs, ptr))
		return cut_node(fs, t, in, holder, idx);
	if (d == 1)
		r = free_data(fs, t, in, ptr, c, fs->addr_per_block);
	for (j = fs->addr_per_block; d > 1 && j-- > c + partial && r == 0;) {
		r = read_ptr(fs, ptr, j, &child);
		if (r == 0 && child)
			r = free_tree(fs, t, in, ptr, j, child, d - 1);
	}
	if (r == 0 && d > 1 && partial) {
		r = read_ptr(fs, ptr, c, &child);
		if (r == 0 && child)
			r = trunc_tree(fs, t, in, ptr, c, child, d - 1, base + c * span, last);
	}
	if (r == 0)
		r = node_empty(fs, ptr, &empty);
	if (r == 0 && empty)
		r = free_node(fs, t, in, holder, idx, ptr);
	return r;
}

/* The three indirect trees of i_block[]: slot, depth, first block mapped. */
static void tree_at(const ino_fs *fs, int level, unsigned *slot, uint64_t *base,
		    uint64_t *span)
{
	uint64_t apb = fs->addr_per_block;

	*slot = EXT3_IND_BLOCK + level;
	*base = EXT3_NDIR_BLOCKS;
	*span = apb;
	while (level-- > 0) {
		*base += *span;
		*span *= apb;
	}
}

int ino_trunc_blocks(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t last)
{
	uint64_t base, span;
	unsigned slot;
	int level, r = 0;

	for (level = 2; level >= 0 && r == 0; level--) {
		tree_at(fs, level, &slot, &base, &span);
		if (!in->block[slot])
			continue;
		if (last <= base)
			r = free_tree(fs, t, in, 0, slot, in->block[slot], level + 1);
		else if (last < base + span)
			r = trunc_tree(fs, t, in, 0, slot, in->block[slot], level + 1, base, last);
	}
	if (r == 0 && last < EXT3_NDIR_BLOCKS)
		r = free_data(fs, t, in, 0, last, EXT3_NDIR_BLOCKS);
	return r;
}

/* Whether the subtree under ptr (depth d, from base; last inside it) maps
 * anything at or past last. */
static int maps_past(ino_fs *fs, const ino_inode *in, uint64_t holder, unsigned idx,
		     uint32_t ptr, int d, uint64_t base, uint64_t last, bool *any)
{
	uint64_t span = child_span(fs, d);
	unsigned c = (last - base) / span, j;
	bool partial = (last - base) % span != 0;
	const cm_le32_t *p;
	uint32_t child = 0;
	ino_buf b = { 0 };
	int r;

	if (!ino_blk_data(fs, ptr)) {
		*any = true; /* a pointer the truncate cuts */
		return 0;
	}
	r = ino_blk_get(fs, ptr, &b);
	if (r < 0)
		return r;
	p = (const cm_le32_t *)b.data;
	for (j = c + partial; j < fs->addr_per_block && !*any; j++)
		*any = p[j] != 0;
	if (partial)
		child = cm_le32(p[c]);
	ino_blk_put(fs, &b);
	if (*any || !child)
		return 0;
	return maps_past(fs, in, ptr, c, child, d - 1, base + c * span, last, any);
}

/* Whether in maps any block at or past logical block last. */
static int blocks_past(ino_fs *fs, const ino_inode *in, uint64_t last, bool *any)
{
	uint64_t base, span;
	unsigned slot, i;
	int level, r = 0;

	*any = false;
	for (i = last; i < EXT3_NDIR_BLOCKS && !*any; i++)
		*any = in->block[i] != 0;
	for (level = 0; level < 3 && !*any && r == 0; level++) {
		tree_at(fs, level, &slot, &base, &span);
		if (!in->block[slot])
			continue;
		if (last <= base)
			*any = true;
		else if (last < base + span)
			r = maps_past(fs, in, 0, slot, in->block[slot], level + 1, base, last, any);
	}
	return r;
}

/* Zeroes bytes [from, to) of one block of in's, if mapped: the tail of
 * the block holding a new size (ext3's block_truncate_page, so a later
 * grow reads zeros there), or a partial block at an end of a hole. */
static int zero_part(ino_fs *fs, ino_txn *t, const ino_inode *in, uint64_t from, uint64_t to)
{
	uint32_t bs = fs->geom.block_size;
	ino_wbuf b = { 0 };
	uint64_t pblk;
	int r;

	r = ino_bmap(fs, in, from / bs, &pblk);
	if (r < 0 || pblk == 0)
		return r;
	r = ino_txn_get_data(t, pblk, false, false, &b);
	if (r < 0)
		return r;
	memset(b.data + from % bs, 0, (size_t)(to - from));
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	return r;
}

/* A shrink whose block freeing failed (a block alloc-svc refuses to free,
 * found only then): the size goes back to old, so that it covers every
 * block still mapped (those freed before the failure leave holes, inside
 * the part being cut), and the inode leaves the orphan list. Returns r. */
static int trunc_undo(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t old, int r)
{
	in->size = old;
	if (ino_txn_ensure(t, INO_CRED_SB + 2 * INO_CRED_INODE) >= 0 &&
	    ino_inode_write(fs, t, in) == 0 && in->links)
		(void)ino_orphan_del(fs, t, in);
	return r;
}

int ino_truncate(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t size)
{
	uint32_t bs = fs->geom.block_size;
	uint64_t old = in->size;
	bool changed = size != in->size, any;
	int r;

	if (!ino_has_block_map(fs, in))
		return -EINVAL;
	if (size > fs->max_size)
		return -EFBIG;
	if (size > in->size) {
		in->size = size;
		ino_inode_touch(t, in, true);
		return ino_inode_write(fs, t, in);
	}
	r = ino_map_check(fs, in, (size + bs - 1) / bs);
	if (r < 0)
		return r;
	if (changed && size % bs) {
		r = zero_part(fs, t, in, size, size - size % bs + bs);
		if (r < 0)
			return r;
	}
	r = blocks_past(fs, in, (size + bs - 1) / bs, &any);
	if (r < 0)
		return r;
	in->size = size;
	if (changed)
		ino_inode_touch(t, in, true);
	if (any)
		r = ino_orphan_add(fs, t, in);
	if (r == 0 && (changed || any))
		r = ino_inode_write(fs, t, in);
	if (r == 0 && any) {
		r = ino_trunc_blocks(fs, t, in, (size + bs - 1) / bs);
		if (r < 0)
			return trunc_undo(fs, t, in, old, r);
	}
	/* the steps may have restarted the transaction: room for the del */
	if (r == 0 && any)
		r = ino_txn_ensure(t, INO_CRED_SB + 2 * INO_CRED_INODE);
	if (r >= 0 && in->links)
		r = ino_orphan_del(fs, t, in);
	return r < 0 ? r : 0;
}

/* Frees the blocks of [first, stop) under ptr (depth d, mapping from
 * logical block base; the range cuts its span), then ptr if it maps
 * nothing any more. */
static int punch_tree(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t holder, unsigned idx,
		      uint32_t ptr, int d, uint64_t base, uint64_t first, uint64_t stop)
{
	uint64_t span = child_span(fs, d), end = base + span * fs->addr_per_block;
	unsigned c0 = (unsigned)(((first > base ? first : base) - base) / span);
	unsigned c1 = (unsigned)(((stop < end ? stop : end) - base + span - 1) / span);
	uint32_t child;
	bool empty;
	int r = 0;

	if (!ino_blk_data(fs, ptr))
		return cut_node(fs, t, in, holder, idx);
	if (d == 1)
		r = free_data(fs, t, in, ptr, c0, c1);
	for (unsigned j = c0; d > 1 && j < c1 && r == 0; j++) {
		uint64_t cb = base + j * span;
		r = read_ptr(fs, ptr, j, &child);
		if (r < 0 || !child)
			continue;
		if (first <= cb && cb + span <= stop)
			r = free_tree(fs, t, in, ptr, j, child, d - 1);
		else
			r = punch_tree(fs, t, in, ptr, j, child, d - 1, cb, first, stop);
	}
	if (r == 0)
		r = node_empty(fs, ptr, &empty);
	if (r == 0 && empty)
		r = free_node(fs, t, in, holder, idx, ptr);
	return r;
}

/* Frees the blocks mapped at logical blocks [first, stop). */
static int punch_blocks(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t first, uint64_t stop)
{
	uint64_t base, span;
	unsigned slot;
	int r = 0;

	if (first < EXT3_NDIR_BLOCKS)
		r = free_data(fs, t, in, 0, (unsigned)first,
			      (unsigned)(stop < EXT3_NDIR_BLOCKS ? stop : EXT3_NDIR_BLOCKS));
	for (int level = 0; level < 3 && r == 0; level++) {
		tree_at(fs, level, &slot, &base, &span);
		if (!in->block[slot] || stop <= base || first >= base + span)
			continue;
		if (first <= base && base + span <= stop)
			r = free_tree(fs, t, in, 0, slot, in->block[slot], level + 1);
		else
			r = punch_tree(fs, t, in, 0, slot, in->block[slot], level + 1, base, first,
				       stop);
	}
	return r;
}

int ino_punch(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t off, uint64_t len)
{
	uint32_t bs = fs->geom.block_size;
	uint64_t end, first, stop;
	int r = 0;

	if (!ino_has_block_map(fs, in))
		return -EOPNOTSUPP;
	ino_inode_touch(t, in, true);
	if (off >= in->size)
		return ino_inode_write(fs, t, in);
	end = len > in->size - off ? (in->size + bs - 1) / bs * bs : off + len;
	first = (off + bs - 1) / bs;
	stop = end / bs;
	if (off / bs == (end - 1) / bs && (off % bs || end % bs)) {
		r = zero_part(fs, t, in, off, end); /* within one block */
	} else {
		if (off % bs)
			r = zero_part(fs, t, in, off, off - off % bs + bs);
		if (r == 0 && end % bs)
			r = zero_part(fs, t, in, end - end % bs, end);
	}
	if (r == 0)
		r = ino_inode_write(fs, t, in);
	if (r == 0 && first < stop)
		r = punch_blocks(fs, t, in, first, stop);
	return r < 0 ? r : 0;
}

int ino_inode_delete(ino_fs *fs, ino_txn *t, ino_inode *in)
{
	bool any = false;
	int r = 0;

	if (in->links)
		return -EINVAL;
	r = ino_map_check(fs, in, 0);
	if (r < 0)
		return r;
	in->size = 0;
	if (ino_has_block_map(fs, in))
		r = blocks_past(fs, in, 0, &any);
	if (r == 0 && any) {
		r = ino_orphan_add(fs, t, in);
		if (r == 0)
			r = ino_trunc_blocks(fs, t, in, 0);
		if (r == 0)
			r = ino_txn_ensure(t, 2 * INO_CRED_INODE + INO_CRED_SB +
						      INO_CRED_IALLOC + CRED_FREE + 1);
	}
	if (r >= 0 && in->file_acl)
		r = ino_xattr_drop_block(fs, t, in);
	if (r >= 0)
		r = ino_orphan_del(fs, t, in);
	if (r < 0)
		return r;
	in->dtime = (uint32_t)ino_txn_now(t).tv_sec;
	r = ino_inode_write(fs, t, in);
	if (r == 0)
		r = ino_txn_free_inode(t, in->ino, in->mode);
	return r;
}
