/*
 * mapcheck.c - what a truncate or a delete is about to free, checked
 * before it changes anything (ext3's ext3_free_branches trusts the map and
 * meets a bad pointer half way, with blocks already freed and a size
 * already set).  The walk visits every pointer the truncate will visit:
 * the direct ones at or past the cut, the indirect trees that reach past
 * it and, inside them, the children that reach past it.  A pointer to a
 * block that is not a data block (outside the filesystem, or one of its
 * own, ino_blk_system) is cut from the file and never freed, as the
 * kernel's ext4_free_branches skips an invalid block, and the operation
 * goes on with a filesystem error noted (ino_fs_note_corrupt); nothing
 * under such an indirect pointer is read. No block may appear twice (an
 * indirect block pointing at itself or at an ancestor, two pointers to
 * one block): freeing it once would hand out a block the file still
 * maps, so that refuses the whole operation with -EUCLEAN.  A delete
 * (last 0) also needs an xattr block inside the filesystem, and its
 * inode's bit set in an inode bitmap whose padding is set: alloc-svc
 * refuses to clear a clear bit, and an inode bitmap that is scribbled or
 * not one at all (a descriptor naming another block) cannot say which
 * inodes are in use.  Read only; no lock beyond the caller's inode lock.
 */
#include "internal_w.h"

#include <errno.h>
#include <stdlib.h>

#include "log.h"

struct mc_walk {
	ino_fs *fs;
	const ino_inode *in;
	uint64_t last;		/* the first logical block freed */
	uint32_t *blks;		/* every block visited, data and indirect */
	size_t n, cap;
	unsigned cuts;		/* pointers to blocks that are not data blocks */
};

static int mc_note(struct mc_walk *x, uint64_t holder, unsigned slot, uint32_t ptr)
{
	ino_fs *fs = x->fs;
	uint32_t *p;

	if (!ino_blk_data(fs, ptr)) {
		cm_warn("corrupt inode ino=%u blk=%llu: block pointer [%u] = %u is not a data "
			"block: cut from the file, not freed", x->in->ino,
			(unsigned long long)(holder ? holder : ino_inode_blocknr(fs, x->in->ino)),
			slot, ptr);
		x->cuts++;
		return 1;
	}
	if (x->n == x->cap) {
		if (x->cap >= fs->geom.blocks_count) {
			cm_warn("corrupt inode ino=%u: maps more blocks than the filesystem has, "
				"nothing freed", x->in->ino);
			return -EUCLEAN;
		}
		x->cap = x->cap ? 2 * x->cap : 64;
		p = realloc(x->blks, x->cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		x->blks = p;
	}
	x->blks[x->n++] = ptr;
	return 0;
}

/* ptr, in slot of holder (0: the inode), maps logical blocks from base
 * at depth d (0: a data block; d: apb^d blocks below it). */
static int mc_tree(struct mc_walk *x, uint64_t holder, unsigned slot, uint32_t ptr, int d,
		   uint64_t base)
{
	uint64_t span = 1;
	ino_buf b = {0};
	uint32_t child;
	int r;

	if (!ptr)
		return 0;
	r = mc_note(x, holder, slot, ptr);
	if (r != 0 || d == 0)
		return r < 0 ? r : 0;
	for (int i = 1; i < d; i++)
		span *= x->fs->addr_per_block;
	r = ino_blk_get(x->fs, ptr, &b);
	for (uint32_t j = 0; r == 0 && j < x->fs->addr_per_block; j++) {
		child = cm_le32(((const cm_le32_t *)b.data)[j]);
		if (base + (j + 1) * span > x->last)
			r = mc_tree(x, ptr, j, child, d - 1, base + j * span);
	}
	if (b.data)
		ino_blk_put(x->fs, &b);
	return r;
}

/* Whether in's bit may be cleared: 0, or -EUCLEAN, logged. Read without
 * alloc-svc's group lock: in's bit is held still by in's lock (no
 * allocation hands out a set bit), the padding by nothing changing it. */
static int mc_inode_bit(ino_fs *fs, const ino_inode *in)
{
	const cm_ext3_geom *g = &fs->geom;
	uint32_t group, index, blk;
	ino_buf b = {0};
	bool set;
	int r;

	if ((r = cm_ext3_inode_locate(g, in->ino, &group, &index)) < 0)
		return r;
	if ((r = ino_blk_get(fs, (uint64_t)g->gdt_block + group / g->desc_per_block, &b)) < 0)
		return r;
	blk = cm_le32(((const struct ext3_group_desc *)b.data)[group % g->desc_per_block]
			      .bg_inode_bitmap);
	ino_blk_put(fs, &b);
	if ((r = ino_blk_get(fs, blk, &b)) < 0)
		return r;
	set = __atomic_load_n(&b.data[index >> 3], __ATOMIC_RELAXED) & (1u << (index & 7));
	if (!cm_ext3_bitmap_padded(b.data, g->inodes_per_group, g->block_size) || !set) {
		cm_warn("corrupt inode bitmap blk=%u: ino=%u %s, nothing freed", blk, in->ino,
			set ? "in a bitmap whose padding is not set" : "marked free");
		r = -EUCLEAN;
	}
	ino_blk_put(fs, &b);
	return r;
}

static int mc_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int ino_map_check(ino_fs *fs, const ino_inode *in, uint64_t last)
{
	struct mc_walk x = {.fs = fs, .in = in, .last = last};
	uint64_t base = EXT3_NDIR_BLOCKS, span = fs->addr_per_block;
	int r = 0;

	if (last == 0 && (r = mc_inode_bit(fs, in)) < 0)
		return r;
	if (!ino_has_block_map(fs, in))
		return 0;
	for (unsigned i = 0; i < EXT3_NDIR_BLOCKS && r == 0; i++)
		if (i >= last)
			r = mc_tree(&x, 0, i, in->block[i], 0, i);
	for (int d = 1; d <= 3 && r == 0; d++) {
		if (base + span > last)
			r = mc_tree(&x, 0, EXT3_IND_BLOCK + d - 1, in->block[EXT3_IND_BLOCK + d - 1],
				    d, base);
		base += span;
		span *= fs->addr_per_block;
	}
	if (r == 0 && x.n > 1)
		qsort(x.blks, x.n, sizeof(*x.blks), mc_cmp);
	for (size_t i = 1; r == 0 && i < x.n; i++) {
		if (x.blks[i] == x.blks[i - 1]) {
			cm_warn("corrupt inode ino=%u blk=%u: block mapped twice by the file, "
				"nothing freed", in->ino, x.blks[i]);
			r = -EUCLEAN;
		}
	}
	if (r == 0 && last == 0 && in->file_acl && !ino_blk_valid(fs, in->file_acl)) {
		cm_warn("corrupt inode ino=%u: i_file_acl %u outside the filesystem, nothing freed",
			in->ino, in->file_acl);
		r = -EUCLEAN;
	}
	if (r == 0 && x.cuts)
		ino_fs_note_corrupt();
	free(x.blks);
	return r;
}
