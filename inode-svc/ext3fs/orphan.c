/*
 * orphan.c - the orphan list (ext3_orphan_add/del/cleanup): inodes unlinked
 * while open or in the middle of a truncate, chained from s_last_orphan
 * through i_dtime.  It is mirrored in memory (fs->orphans, head first, each
 * with the next inode its i_dtime names), so taking one off finds the one
 * before it without reading the chain, and ino_inode_write() writes the
 * list's link rather than a caller's stale i_dtime.  A process-private
 * mutex (fs->orphan_mtx) serialises every change of the chain.
 */
#include "internal_w.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct ino_orphan *ino_orphan_find(ino_fs *fs, uint32_t ino)
{
	uint32_t i;

	for (i = 0; i < fs->norphans; i++)
		if (fs->orphans[i].ino == ino)
			return &fs->orphans[i];
	return NULL;
}

/* Room for one more entry.  Called with fs->orphan_mtx held. */
static int reserve(ino_fs *fs)
{
	struct ino_orphan *v;
	uint32_t cap;

	if (fs->norphans < fs->orphans_cap)
		return 0;
	cap = fs->orphans_cap ? 2 * fs->orphans_cap : 16;
	v = realloc(fs->orphans, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	fs->orphans = v;
	fs->orphans_cap = cap;
	return 0;
}

/* Puts ino at position i of the memory list.  Called with the lock held
 * and room reserved. */
static void list_insert(ino_fs *fs, uint32_t i, uint32_t ino, uint32_t next)
{
	memmove(&fs->orphans[i + 1], &fs->orphans[i],
		(fs->norphans - i) * sizeof(*fs->orphans));
	fs->orphans[i] = (struct ino_orphan){ .ino = ino, .next = next };
	fs->norphans++;
	atomic_store_explicit(&fs->orphans_any, fs->norphans, memory_order_release);
}

int ino_orphan_add(ino_fs *fs, ino_txn *t, ino_inode *in)
{
	struct ext3_super_block *sb;
	ino_wbuf b = { 0 };
	int r;

	pthread_mutex_lock(&fs->orphan_mtx);
	if (ino_orphan_find(fs, in->ino)) {
		pthread_mutex_unlock(&fs->orphan_mtx);
		return 0;
	}
	r = reserve(fs);
	if (r == 0)
		r = ino_sb_get(fs, t, &b, &sb);
	if (r < 0) {
		pthread_mutex_unlock(&fs->orphan_mtx);
		return r;
	}
	list_insert(fs, 0, in->ino, cm_le32(sb->s_last_orphan));
	cm_set_le32(&sb->s_last_orphan, in->ino);
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	pthread_mutex_unlock(&fs->orphan_mtx);
	if (r < 0)
		return r;
	return ino_inode_write(fs, t, in);
}

/* Points the chain past entry i: the superblock for the head, else the
 * inode before it.  Called with the lock held. */
static int unlink_entry(ino_fs *fs, ino_txn *t, uint32_t i)
{
	uint32_t next = fs->orphans[i].next;
	struct ext3_super_block *sb;
	struct ext3_inode *raw;
	ino_wbuf b = { 0 };
	int r;

	if (i == 0) {
		r = ino_sb_get(fs, t, &b, &sb);
		if (r < 0)
			return r;
		cm_set_le32(&sb->s_last_orphan, next);
	} else {
		r = ino_slot_get(fs, t, fs->orphans[i - 1].ino, &b, &raw);
		if (r < 0)
			return r;
		cm_set_le32(&raw->i_dtime, next);
	}
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	if (r < 0)
		return r;
	if (i > 0)
		fs->orphans[i - 1].next = next;
	fs->norphans--;
	memmove(&fs->orphans[i], &fs->orphans[i + 1],
		(fs->norphans - i) * sizeof(*fs->orphans));
	atomic_store_explicit(&fs->orphans_any, fs->norphans, memory_order_release);
	return 0;
}

int ino_orphan_del(ino_fs *fs, ino_txn *t, ino_inode *in)
{
	struct ino_orphan *o;
	int r;

	pthread_mutex_lock(&fs->orphan_mtx);
	o = ino_orphan_find(fs, in->ino);
	r = o ? unlink_entry(fs, t, o - fs->orphans) : 0;
	pthread_mutex_unlock(&fs->orphan_mtx);
	if (r < 0 || !o)
		return r;
	in->dtime = 0;
	return ino_inode_write(fs, t, in);
}

/* Whether inode ino is marked in use in its group's inode bitmap. */
static int inode_in_use(ino_fs *fs, uint32_t ino, bool *ret)
{
	const cm_ext3_geom *g = &fs->geom;
	const struct ext3_group_desc *gd;
	uint32_t group = (ino - 1) / g->inodes_per_group, bit = (ino - 1) % g->inodes_per_group;
	uint32_t bitmap;
	ino_buf b = { 0 };
	int r;

	r = ino_blk_get(fs, (uint64_t)g->gdt_block + group / g->desc_per_block, &b);
	if (r < 0)
		return r;
	gd = (const struct ext3_group_desc *)b.data + group % g->desc_per_block;
	bitmap = cm_le32(gd->bg_inode_bitmap);
	ino_blk_put(fs, &b);
	if (!ino_blk_valid(fs, bitmap))
		return -EUCLEAN;
	r = ino_blk_get(fs, bitmap, &b);
	if (r < 0)
		return r;
	*ret = b.data[bit / 8] & (1u << (bit % 8));
	ino_blk_put(fs, &b);
	return 0;
}

static int bad_orphan(uint32_t ino, const char *why)
{
	cm_warn("corrupt orphan list: inode %u %s", ino, why);
	return -EUCLEAN;
}

/* Reads the chain from the superblock into the memory list (empty before),
 * checking each inode as ext3_orphan_get does; seen: one bit per inode. */
static int load_chain(ino_fs *fs, uint8_t *seen)
{
	struct ext3_super_block *sb;
	ino_buf b = { 0 };
	ino_inode in;
	uint32_t ino;
	bool used;
	int r;

	r = ino_blk_get(fs, EXT3_SUPERBLOCK_OFFSET / fs->geom.block_size, &b);
	if (r < 0)
		return r;
	sb = (struct ext3_super_block *)(b.data + EXT3_SUPERBLOCK_OFFSET % fs->geom.block_size);
	ino = cm_le32(sb->s_last_orphan);
	if (ino && (cm_le16(sb->s_state) & EXT3_ERROR_FS)) {
		cm_warn("errors on the filesystem: orphan list left to e2fsck");
		ino = 0;
	}
	ino_blk_put(fs, &b);
	while (ino) {
		if (ino < fs->first_ino || ino > fs->geom.inodes_count)
			return bad_orphan(ino, "out of range");
		if (seen[(ino - 1) / 8] & (1u << ((ino - 1) % 8)))
			return bad_orphan(ino, "on the list twice");
		seen[(ino - 1) / 8] |= 1u << ((ino - 1) % 8);
		r = inode_in_use(fs, ino, &used);
		if (r == 0 && !used)
			return bad_orphan(ino, "not in use");
		if (r == 0)
			r = ino_inode_read_any(fs, ino, &in);
		if (r == 0)
			r = reserve(fs);
		if (r < 0)
			return r;
		list_insert(fs, fs->norphans, ino, in.dtime);
		ino = in.dtime;
	}
	return 0;
}

/* Finishes the head of the list: deletes it, or finishes its truncate. */
static int fix_head(ino_fs *fs, ino_txn *t, uint32_t ino)
{
	ino_inode in;
	int r;

	r = ino_inode_read_any(fs, ino, &in);
	if (r < 0)
		return r;
	if (in.links == 0)
		return ino_inode_delete(fs, t, &in);
	if (ino_has_block_map(fs, &in)) {
		if (in.size > fs->max_size)
			return bad_orphan(ino, "has a size past the largest file");
		return ino_truncate(fs, t, &in, in.size);
	}
	return ino_orphan_del(fs, t, &in);
}

int ino_orphans_process(ino_fs *fs, ino_txn *(*start)(void *ctx, int credits),
			int (*stop)(void *ctx, ino_txn *t), void *ctx)
{
	uint32_t ino, prev = 0;
	uint8_t *seen;
	ino_txn *t;
	int r, s, done = 0;

	seen = calloc(fs->geom.inodes_count / 8 + 1, 1);
	if (!seen)
		return -ENOMEM;
	pthread_mutex_lock(&fs->orphan_mtx);
	r = fs->norphans ? -EBUSY : load_chain(fs, seen);
	if (r < 0) {
		fs->norphans = 0;
		atomic_store(&fs->orphans_any, 0);
	}
	pthread_mutex_unlock(&fs->orphan_mtx);
	free(seen);
	while (r == 0) {
		pthread_mutex_lock(&fs->orphan_mtx);
		ino = fs->norphans ? fs->orphans[0].ino : 0;
		pthread_mutex_unlock(&fs->orphan_mtx);
		if (!ino)
			break;
		if (ino == prev) {
			r = bad_orphan(ino, "stays on the list");
			break;
		}
		prev = ino;
		t = start(ctx, INO_CRED_TRUNCATE);
		if (!t)
			return -EIO;
		r = fix_head(fs, t, ino);
		s = stop(ctx, t);
		r = r < 0 ? r : s;
		done++;
	}
	return r < 0 ? r : done;
}
