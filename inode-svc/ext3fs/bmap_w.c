/*
 * bmap_w.c - mapping a logical block with allocation, as ext3_get_block
 * does with create: the walk finds the first missing pointer on the path,
 * the missing indirect blocks and a run of data blocks are allocated from
 * one goal (ext3_find_goal: right after the nearest mapped block before
 * the hole in the same holder, else after the holder itself, else the
 * start of the inode's group), the new indirect blocks are filled and
 * only then spliced into the map, so the map is whole at every step.  A
 * failure gives every block it allocated back.
 */
#include "internal_w.h"

#include <errno.h>

#include "log.h"

static int bad_pointer(ino_fs *fs, const ino_inode *in, uint64_t holder,
		       unsigned slot, uint32_t ptr)
{
	cm_warn("corrupt inode ino=%u blk=%llu: block pointer [%u] = %u outside [%u, %u)",
		in->ino, (unsigned long long)(holder ? holder : ino_inode_blocknr(fs, in->ino)),
		slot, ptr, fs->geom.first_data_block, fs->geom.blocks_count);
	return -EUCLEAN;
}

/* Length of the run at p[0] (at most n): blocks that follow p[0] on disk,
 * or holes when p[0] is one. */
static uint32_t run_len(const cm_le32_t *p, uint32_t n)
{
	uint32_t first = cm_le32(p[0]), i;

	for (i = 1; i < n; i++)
		if (cm_le32(p[i]) != (first ? first + i : 0))
			break;
	return i;
}

/*
 * Follows path down to depth.  *ret_k: the level whose pointer is missing,
 * or depth + 1 when lblk is mapped (*ret_ptr).  *ret_run: the run at the
 * leaf slot (mapped blocks in a row, or holes), when the leaf was reached.
 * holder[k] gets the indirect block holding level k's pointer (0: inode).
 */
static int walk(ino_fs *fs, const ino_inode *in, const unsigned *path, int depth,
		uint32_t want, uint64_t *holder, int *ret_k, uint32_t *ret_ptr,
		uint32_t *ret_run)
{
	cm_le32_t direct[EXT3_NDIR_BLOCKS];
	uint32_t ptr = in->block[path[0]], i;
	const cm_le32_t *p;
	ino_buf b = { 0 };
	int k, r;

	*ret_run = want;
	if (depth == 0) {
		for (i = 0; i < want; i++)
			cm_set_le32(&direct[i], in->block[path[0] + i]);
		*ret_run = run_len(direct, want);
	}
	holder[0] = 0;
	for (k = 0; ptr; k++) {
		if (!ino_blk_valid(fs, ptr))
			return bad_pointer(fs, in, holder[k], path[k], ptr);
		if (k == depth) {
			k++;
			break;
		}
		holder[k + 1] = ptr;
		r = ino_blk_get(fs, ptr, &b);
		if (r < 0)
			return r;
		p = (const cm_le32_t *)b.data + path[k + 1];
		ptr = cm_le32(*p);
		if (k + 1 == depth)
			*ret_run = run_len(p, want);
		ino_blk_put(fs, &b);
	}
	*ret_k = k;
	*ret_ptr = ptr;
	return 0;
}

/* ext3_find_goal: the block after the nearest pointer before slot idx of
 * the holder, else after the holder, else the inode's group start. */
static uint64_t find_goal(ino_fs *fs, const ino_inode *in, uint64_t holder, unsigned idx)
{
	const cm_ext3_geom *g = &fs->geom;
	const cm_le32_t *p;
	uint64_t goal = 0;
	ino_buf b = { 0 };

	if (holder == 0) {
		while (idx-- > 0 && !goal)
			if (in->block[idx])
				goal = in->block[idx] + 1ull;
	} else if (ino_blk_get(fs, holder, &b) == 0) {
		p = (const cm_le32_t *)b.data;
		while (idx-- > 0 && !goal)
			if (cm_le32(p[idx]))
				goal = cm_le32(p[idx]) + 1ull;
		ino_blk_put(fs, &b);
	}
	if (!goal && holder)
		goal = holder + 1;
	if (goal && ino_blk_valid(fs, goal))
		return goal;
	return g->first_data_block +
	       (uint64_t)((in->ino - 1) / g->inodes_per_group) * g->blocks_per_group;
}

/* Gives back what grow() allocated: the indirect blocks (dropped from the
 * transaction first, as they may have been filled) and the data run. */
static void undo(ino_txn *t, const uint64_t *ind, unsigned nind, uint64_t data,
		 uint32_t ndata)
{
	unsigned i;

	for (i = 0; i < nind; i++) {
		ino_txn_forget(t, ind[i], true);
		ino_txn_free_blocks(t, ind[i], 1);
	}
	if (ndata)
		ino_txn_free_blocks(t, data, ndata);
}

/* Fills the new indirect blocks ind[0..need): each points at the next, the
 * last at the data run. */
static int fill_branch(ino_txn *t, const unsigned *path, int depth, int k,
		       const uint64_t *ind, unsigned need, uint64_t data, uint32_t ndata)
{
	ino_wbuf b = { 0 };
	cm_le32_t *p;
	unsigned j, i;
	int r;

	for (j = 0; j < need; j++) {
		r = ino_txn_get_new(t, ind[j], &b);
		if (r < 0)
			return r;
		p = (cm_le32_t *)b.data;
		if (j + 1 < need)
			cm_set_le32(&p[path[k + 1 + j]], (uint32_t)ind[j + 1]);
		else
			for (i = 0; i < ndata; i++)
				cm_set_le32(&p[path[depth] + i], (uint32_t)(data + i));
		r = ino_txn_dirty(t, &b);
		ino_txn_put(t, &b);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Sets n pointers from slot idx of the holder (0: the inode) to first,
 * first + 1, ... */
static int splice(ino_txn *t, ino_inode *in, uint64_t holder, unsigned idx,
		  uint64_t first, uint32_t n)
{
	ino_wbuf b = { 0 };
	uint32_t i;
	int r;

	if (holder == 0) {
		for (i = 0; i < n; i++)
			in->block[idx + i] = (uint32_t)(first + i);
		return 0;
	}
	r = ino_txn_get_write(t, holder, &b);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++)
		cm_set_le32(&((cm_le32_t *)b.data)[idx + i], (uint32_t)(first + i));
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	return r;
}

/* Allocates the depth - k missing indirect blocks and up to count data
 * blocks (at least one), fills and splices them (ext3_alloc_branch,
 * ext3_splice_branch). */
static int grow(ino_fs *fs, ino_txn *t, ino_inode *in, const unsigned *path, int depth,
		const uint64_t *holder, int k, uint32_t count, uint64_t *ret_pblk,
		uint32_t *ret_count)
{
	uint64_t ind[3], data = 0, first, goal;
	unsigned need = depth - k, nind = 0;
	uint32_t got, ndata = 0;
	int r;

	goal = find_goal(fs, in, holder[k], path[k]);
	while (ndata == 0) {
		r = ino_txn_alloc_blocks(t, goal, need - nind + count, &first, &got);
		if (r == 0 && got == 0)
			r = -ENOSPC;
		if (r < 0) {
			undo(t, ind, nind, 0, 0);
			return r;
		}
		for (; nind < need && got; got--)
			ind[nind++] = first++;
		data = first;
		ndata = got;
		goal = first;
	}
	r = fill_branch(t, path, depth, k, ind, need, data, ndata);
	if (r == 0)
		r = splice(t, in, holder[k], path[k], need ? ind[0] : data, need ? 1 : ndata);
	if (r < 0) {
		undo(t, ind, nind, data, ndata);
		return r;
	}
	in->blocks512 += (uint64_t)(need + ndata) * (fs->geom.block_size >> 9);
	*ret_pblk = data;
	*ret_count = ndata;
	return 0;
}

int ino_bmap_alloc(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t lblk, uint32_t want,
		   uint64_t *ret_pblk, uint32_t *ret_count, bool *ret_fresh)
{
	uint64_t holder[4];
	unsigned path[4];
	uint32_t ptr, run, limit;
	int depth, k, r;

	if (!ino_is_type(in, EXT3_S_IFREG) && !ino_is_type(in, EXT3_S_IFDIR) &&
	    !ino_is_type(in, EXT3_S_IFLNK))
		return -EINVAL;
	/* a fast symlink's i_block[] holds its target, not pointers */
	if (want == 0 || (ino_is_fast_symlink(fs, in) && in->size))
		return -EINVAL;
	depth = ino_block_to_path(fs, lblk, path);
	if (depth < 0)
		return depth;
	limit = (depth == 0 ? EXT3_NDIR_BLOCKS : fs->addr_per_block) - path[depth];
	if (want > limit)
		want = limit;
	r = walk(fs, in, path, depth, want, holder, &k, &ptr, &run);
	if (r < 0)
		return r;
	if (k > depth) {
		if (run > fs->geom.blocks_count - ptr)
			run = fs->geom.blocks_count - ptr;
		*ret_pblk = ptr;
		*ret_count = run;
		*ret_fresh = false;
		return 0;
	}
	r = grow(fs, t, in, path, depth, holder, k, k == depth ? run : want, ret_pblk,
		 ret_count);
	if (r < 0)
		return r;
	*ret_fresh = true;
	return 0;
}
