/*
 * t_wtxn.c - an image in memory and an ino_txn that changes it in place,
 * for the write side's unit tests (see t_wtxn.h). The allocator keeps the
 * bitmaps, descriptors and superblock counts exact so that e2fsck judges
 * only what the library wrote.
 */
#define _GNU_SOURCE
#include "t_wtxn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "byteorder.h"
#include "ext3_disk.h"

static const void *w_get(void *ctx, uint64_t blocknr, void **cookie, int *err)
{
	t_wimg *w = ctx;

	if ((blocknr + 1) * w->bs > w->size) {
		*err = -EIO;
		return NULL;
	}
	w->held++;
	*cookie = w;
	return w->mem + blocknr * w->bs;
}

static void w_put(void *ctx, void *cookie)
{
	t_wimg *w = ctx;

	w->held--;
}

int t_wimg_open(t_wimg *w, const char *path, char *why, size_t whylen)
{
	struct stat st;
	int fd, r;

	memset(w, 0, sizeof(*w));
	snprintf(w->path, sizeof(w->path), "%s", path);
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	w->size = (uint64_t)st.st_size;
	w->mem = malloc(w->size ? w->size : 1);
	r = w->mem && pread(fd, w->mem, w->size, 0) == (ssize_t)w->size ? 0 : -EIO;
	close(fd);
	if (r == 0 && w->size >= 2048)
		r = ino_probe_block_size(w->mem + 1024, &w->bs);
	else if (r == 0)
		r = -EUCLEAN;
	if (r < 0) {
		free(w->mem);
		w->mem = NULL;
		return r;
	}
	w->src = (ino_blksrc){.get = w_get, .put = w_put, .ctx = w, .block_size = w->bs};
	r = ino_fs_mount(&w->src, w->size, &w->fs, why, whylen);
	if (r < 0) {
		free(w->mem);
		w->mem = NULL;
	}
	return r;
}

int t_wimg_save(t_wimg *w)
{
	int fd = open(w->path, O_WRONLY);
	int r;

	if (fd < 0)
		return -errno;
	r = pwrite(fd, w->mem, w->size, 0) == (ssize_t)w->size ? 0 : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

void t_wimg_close(t_wimg *w)
{
	w->fs = ino_fs_unmount(w->fs);
	free(w->mem);
	w->mem = NULL;
}

void t_wtxn_init(ino_txn *t, t_wimg *w)
{
	memset(t, 0, sizeof(*t));
	t->w = w;
	t->credits_left = -1;
}

/* ---- blocks ---- */

static int w_hold(ino_txn *t, uint64_t blocknr, bool data, ino_wbuf *b)
{
	t_wimg *w = t->w;
	const cm_ext3_geom *g = ino_fs_geom(w->fs);

	if (blocknr < g->first_data_block || blocknr >= g->blocks_count)
		return -EUCLEAN;
	*b = (ino_wbuf){.data = w->mem + blocknr * w->bs, .cookie = w, .blocknr = blocknr,
			.data_block = data};
	w->held++;
	return 0;
}

int ino_txn_get_write(ino_txn *t, uint64_t blocknr, ino_wbuf *b)
{
	return w_hold(t, blocknr, false, b);
}

int ino_txn_get_new(ino_txn *t, uint64_t blocknr, ino_wbuf *b)
{
	int r = w_hold(t, blocknr, false, b);

	if (r == 0)
		memset(b->data, 0, t->w->bs);
	return r;
}

int ino_txn_get_data(ino_txn *t, uint64_t blocknr, bool fresh, bool whole, ino_wbuf *b)
{
	int r = w_hold(t, blocknr, true, b);

	if (r == 0 && fresh)
		memset(b->data, 0, t->w->bs);
	return r;
}

int ino_txn_dirty(ino_txn *t, ino_wbuf *b)
{
	t->dirtied++;
	return 0;
}

void ino_txn_put(ino_txn *t, ino_wbuf *b)
{
	if (b->cookie)
		t->w->held--;
	memset(b, 0, sizeof(*b));
}

int ino_txn_forget(ino_txn *t, uint64_t blocknr, bool metadata)
{
	t->forgets++;
	return 0;
}

int ino_txn_ensure(ino_txn *t, int credits)
{
	if (t->credits_left < 0)
		return 0;
	if (credits <= t->credits_left) {
		t->credits_left -= credits;
		return 0;
	}
	t->restarts++;
	return 1;
}

struct timespec ino_txn_now(ino_txn *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

/* ---- the plain allocator ---- */

static struct ext3_super_block *w_sb(t_wimg *w)
{
	return (struct ext3_super_block *)(w->mem + 1024);
}

static struct ext3_group_desc *w_gd(t_wimg *w, uint32_t group)
{
	const cm_ext3_geom *g = ino_fs_geom(w->fs);
	uint64_t blk = g->gdt_block + group / g->desc_per_block;

	return (struct ext3_group_desc *)(w->mem + blk * w->bs) + group % g->desc_per_block;
}

static bool w_test(const uint8_t *map, uint32_t bit)
{
	return map[bit / 8] & (1u << (bit % 8));
}

static void w_flip(uint8_t *map, uint32_t bit)
{
	map[bit / 8] ^= (uint8_t)(1u << (bit % 8));
}

static void w_add16(cm_le16_t *f, int d)
{
	cm_set_le16(f, (uint16_t)(cm_le16(*f) + d));
}

static void w_add32(cm_le32_t *f, int d)
{
	cm_set_le32(f, (uint32_t)(cm_le32(*f) + (uint32_t)d));
}

/* Blocks in group (the last one may be short). */
static uint32_t w_group_blocks(const cm_ext3_geom *g, uint32_t group)
{
	uint64_t first = g->first_data_block + (uint64_t)group * g->blocks_per_group;
	uint64_t n = g->blocks_count - first;

	return n < g->blocks_per_group ? (uint32_t)n : g->blocks_per_group;
}

int ino_txn_alloc_blocks(ino_txn *t, uint64_t goal, uint32_t want, uint64_t *first,
			 uint32_t *got)
{
	t_wimg *w = t->w;
	const cm_ext3_geom *g = ino_fs_geom(w->fs);
	uint32_t g0, i, bit, n, nbits;

	if (goal < g->first_data_block || goal >= g->blocks_count)
		goal = g->first_data_block;
	g0 = (uint32_t)((goal - g->first_data_block) / g->blocks_per_group);
	for (i = 0; i < g->group_count; i++) {
		uint32_t grp = (g0 + i) % g->group_count;
		struct ext3_group_desc *gd = w_gd(w, grp);
		uint8_t *map = w->mem + (uint64_t)cm_le32(gd->bg_block_bitmap) * w->bs;

		if (cm_le16(gd->bg_free_blocks_count) == 0)
			continue;
		nbits = w_group_blocks(g, grp);
		bit = i == 0 ? (uint32_t)((goal - g->first_data_block) % g->blocks_per_group) : 0;
		while (bit < nbits && w_test(map, bit))
			bit++;
		if (bit >= nbits && i == 0) {
			for (bit = 0; bit < nbits && w_test(map, bit); bit++)
				;
		}
		if (bit >= nbits)
			continue;
		for (n = 0; n < want && bit + n < nbits && !w_test(map, bit + n); n++)
			w_flip(map, bit + n);
		w_add16(&gd->bg_free_blocks_count, -(int)n);
		w_add32(&w_sb(w)->s_free_blocks_count, -(int)n);
		*first = g->first_data_block + (uint64_t)grp * g->blocks_per_group + bit;
		*got = n;
		return 0;
	}
	return -ENOSPC;
}

int ino_txn_free_blocks(ino_txn *t, uint64_t first, uint32_t count)
{
	t_wimg *w = t->w;
	const cm_ext3_geom *g = ino_fs_geom(w->fs);

	for (uint64_t b = first; b < first + count; b++) {
		uint32_t grp, bit;
		struct ext3_group_desc *gd;
		uint8_t *map;

		if (b < g->first_data_block || b >= g->blocks_count)
			return -EUCLEAN;
		grp = (uint32_t)((b - g->first_data_block) / g->blocks_per_group);
		bit = (uint32_t)((b - g->first_data_block) % g->blocks_per_group);
		gd = w_gd(w, grp);
		map = w->mem + (uint64_t)cm_le32(gd->bg_block_bitmap) * w->bs;
		if (!w_test(map, bit))
			return -EUCLEAN;
		w_flip(map, bit);
		w_add16(&gd->bg_free_blocks_count, 1);
		w_add32(&w_sb(w)->s_free_blocks_count, 1);
	}
	return 0;
}

int ino_txn_alloc_inode(ino_txn *t, uint32_t dir, uint16_t mode, uint32_t *ret)
{
	t_wimg *w = t->w;
	const cm_ext3_geom *g = ino_fs_geom(w->fs);
	uint32_t first_ino = cm_le32(w_sb(w)->s_first_ino);
	uint32_t g0 = dir ? (dir - 1) / g->inodes_per_group : 0;
	bool isdir = (mode & EXT3_S_IFMT) == EXT3_S_IFDIR;

	if (first_ino == 0)
		first_ino = EXT3_GOOD_OLD_FIRST_INO;
	for (uint32_t i = 0; i < g->group_count; i++) {
		uint32_t grp = (g0 + i) % g->group_count;
		struct ext3_group_desc *gd = w_gd(w, grp);
		uint8_t *map = w->mem + (uint64_t)cm_le32(gd->bg_inode_bitmap) * w->bs;

		if (cm_le16(gd->bg_free_inodes_count) == 0)
			continue;
		for (uint32_t bit = 0; bit < g->inodes_per_group; bit++) {
			uint32_t ino = grp * g->inodes_per_group + bit + 1;

			if (ino < first_ino || w_test(map, bit))
				continue;
			w_flip(map, bit);
			w_add16(&gd->bg_free_inodes_count, -1);
			w_add32(&w_sb(w)->s_free_inodes_count, -1);
			if (isdir)
				w_add16(&gd->bg_used_dirs_count, 1);
			*ret = ino;
			return 0;
		}
	}
	return -ENOSPC;
}

int ino_txn_free_inode(ino_txn *t, uint32_t ino, uint16_t mode)
{
	t_wimg *w = t->w;
	const cm_ext3_geom *g = ino_fs_geom(w->fs);
	uint32_t grp, bit;
	struct ext3_group_desc *gd;
	uint8_t *map;

	if (ino == 0 || ino > g->inodes_count)
		return -EUCLEAN;
	grp = (ino - 1) / g->inodes_per_group;
	bit = (ino - 1) % g->inodes_per_group;
	gd = w_gd(w, grp);
	map = w->mem + (uint64_t)cm_le32(gd->bg_inode_bitmap) * w->bs;
	if (!w_test(map, bit))
		return -EUCLEAN;
	w_flip(map, bit);
	w_add16(&gd->bg_free_inodes_count, 1);
	w_add32(&w_sb(w)->s_free_inodes_count, 1);
	if ((mode & EXT3_S_IFMT) == EXT3_S_IFDIR)
		w_add16(&gd->bg_used_dirs_count, -1);
	return 0;
}
