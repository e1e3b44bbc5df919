/*
 * jmap.c - find the journal of an ext3 filesystem: the superblock, the
 * journal inode (s_journal_inum, 8 on mke2fs images) through its group's
 * descriptor, the inode's block map walked once into a table of every
 * journal block's home, and the journal superblock, checked.  The journal
 * is an ordinary indirect-mapped file: its blocks are usually contiguous,
 * but nothing here assumes so.  A hole or a pointer outside the filesystem
 * makes the journal unusable.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Journals longer than this are refused (mke2fs makes at most 2^18). */
#define JD_MAX_JOURNAL_BLOCKS	(1U << 24)

int jd_super_read(const jd_dev *dev, struct ext3_super_block *sb)
{
	return dev->read(dev->ctx, EXT3_SUPERBLOCK_OFFSET, sb, sizeof(*sb));
}

int jd_super_write(const jd_dev *dev, const struct ext3_super_block *sb)
{
	return dev->write(dev->ctx, EXT3_SUPERBLOCK_OFFSET, sb, sizeof(*sb));
}

static int read_fs_block(const jd_log *log, uint32_t blk, void *buf)
{
	return log->dev->read(log->dev->ctx, (uint64_t)blk * log->bs, buf,
			      log->bs);
}

int jd_log_read(const jd_log *log, uint32_t lblk, void *buf)
{
	return read_fs_block(log, log->map[lblk], buf);
}

int jd_log_write(const jd_log *log, uint32_t lblk, const void *buf)
{
	return log->dev->write(log->dev->ctx,
			       (uint64_t)log->map[lblk] * log->bs, buf,
			       log->bs);
}

/* Walks the mapping below block `blk` at indirection `level` (0 = blk is
 * itself a journal block), appending to log->map until `want` blocks. */
struct walk {
	jd_log *log;
	uint32_t first_data_block;
	uint32_t want;
	uint32_t have;
	uint8_t *bufs[3];	/* one per indirect level */
	char *why;
	size_t whylen;
};

static int walk(struct walk *w, uint32_t blk, int level)
{
	uint32_t i, per = w->log->bs / 4;
	const cm_le32_t *ptrs;
	int r;

	if (blk == 0)
		return cm_fail_why(-EUCLEAN, w->why, w->whylen,
			       "journal inode has a hole at block %u", w->have);
	if (blk < w->first_data_block || blk >= w->log->fs_blocks)
		return cm_fail_why(-EUCLEAN, w->why, w->whylen,
			       "journal inode maps block %u to %u, outside the filesystem",
			       w->have, blk);
	if (level == 0) {
		w->log->map[w->have++] = blk;
		return 0;
	}
	r = read_fs_block(w->log, blk, w->bufs[level - 1]);
	if (r < 0)
		return cm_fail_why(r, w->why, w->whylen,
			       "reading journal indirect block %u", blk);
	ptrs = (const cm_le32_t *)w->bufs[level - 1];
	for (i = 0; i < per && w->have < w->want; i++) {
		r = walk(w, cm_le32(ptrs[i]), level - 1);
		if (r < 0)
			return r;
	}
	return 0;
}

static int map_inode(jd_log *log, const struct ext3_inode *in,
		     uint32_t first_data_block, uint32_t want, char *why,
		     size_t whylen)
{
	struct walk w = {.log = log, .first_data_block = first_data_block,
			 .want = want, .why = why, .whylen = whylen};
	uint8_t *bufs;
	int i, r = 0;

	log->map = calloc(want, sizeof(*log->map));
	bufs = malloc(3 * (size_t)log->bs);
	if (!log->map || !bufs) {
		free(bufs);
		return -ENOMEM;
	}
	for (i = 0; i < 3; i++)
		w.bufs[i] = bufs + (size_t)i * log->bs;
	for (i = 0; i < EXT3_N_BLOCKS && r == 0 && w.have < want; i++)
		r = walk(&w, cm_le32(in->i_block[i]),
			 i < EXT3_NDIR_BLOCKS ? 0 : i - EXT3_NDIR_BLOCKS + 1);
	free(bufs);
	if (r == 0 && w.have < want)
		r = cm_fail_why(-EUCLEAN, why, whylen,
			    "journal inode maps only %u of %u blocks", w.have, want);
	return r;
}

/* Reads inode `ino` (in group 0's table or any other) into *in. */
static int read_inode(jd_log *log, const cm_ext3_geom *g, uint32_t ino,
		      struct ext3_inode *in, char *why, size_t whylen)
{
	struct ext3_group_desc gd;
	uint32_t group, index, dblk, iblk;
	uint64_t byte;
	uint8_t *buf;
	int r;

	if (cm_ext3_inode_locate(g, ino, &group, &index) < 0)
		return cm_fail_why(-EUCLEAN, why, whylen,
			       "journal inode %u out of range", ino);
	buf = malloc(log->bs);
	if (!buf)
		return -ENOMEM;
	dblk = g->gdt_block + group / g->desc_per_block;
	r = read_fs_block(log, dblk, buf);
	if (r < 0) {
		cm_fail_why(r, why, whylen, "reading group descriptor block %u", dblk);
		goto out;
	}
	memcpy(&gd, buf + (group % g->desc_per_block) * EXT3_DESC_SIZE,
	       sizeof(gd));
	r = cm_ext3_group_desc_check(g, group, &gd, why, whylen);
	if (r < 0)
		goto out;
	byte = (uint64_t)index * g->inode_size;
	iblk = cm_le32(gd.bg_inode_table) + (uint32_t)(byte / log->bs);
	r = read_fs_block(log, iblk, buf);
	if (r < 0) {
		cm_fail_why(r, why, whylen, "reading inode table block %u", iblk);
		goto out;
	}
	/* the base only: the large-inode fields may lie past the block */
	memset(in, 0, sizeof(*in));
	memcpy(in, buf + byte % log->bs, EXT3_GOOD_OLD_INODE_SIZE);
out:
	free(buf);
	return r;
}

static int check_jsb(jd_log *log, const journal_superblock_t *jsb,
		     uint32_t inode_blocks, char *why, size_t whylen)
{
	char names[200];
	int r;

	r = cm_ext3_journal_super_check(jsb, log->bs, why, whylen);
	if (r < 0)
		return r;
	if (cm_jbd2_features_unsupported(jsb, names, sizeof(names)) > 0)
		return cm_fail_why(-EUCLEAN, why, whylen,
			       "journal has features ext3d cannot replay:%s",
			       names);
	log->first = cm_be32(jsb->s_first);
	log->maxlen = cm_be32(jsb->s_maxlen);
	log->start = cm_be32(jsb->s_start);
	log->sequence = cm_be32(jsb->s_sequence);
	if (log->maxlen > inode_blocks)
		return cm_fail_why(-EUCLEAN, why, whylen,
			       "journal length %u blocks exceeds its inode (%u blocks)",
			       log->maxlen, inode_blocks);
	return 0;
}

/* Moves v[i] down the max-heap v[0..n). */
static void sift_down(uint32_t *v, uint32_t i, uint32_t n)
{
	for (;;) {
		uint32_t big = i, l = 2 * i + 1, r = l + 1, t;

		if (l < n && v[l] > v[big])
			big = l;
		if (r < n && v[r] > v[big])
			big = r;
		if (big == i)
			return;
		t = v[i];
		v[i] = v[big];
		v[big] = t;
		i = big;
	}
}

/* A sorted copy of the map for jd_log_contains().  Heapsort, not qsort():
 * glibc's qsort may call sysinfo(), which journald-svc's sandbox forbids. */
static int sort_map(jd_log *log)
{
	uint32_t *v, i, n = log->maxlen, t;

	v = log->sorted = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, log->map, n * sizeof(*v));
	for (i = n / 2; i-- > 0;)
		sift_down(v, i, n);
	for (i = n; i-- > 1;) {
		t = v[0];
		v[0] = v[i];
		v[i] = t;
		sift_down(v, 0, i);
	}
	return 0;
}

int jd_log_open(const jd_dev *dev, jd_log *log, char *why, size_t whylen)
{
	struct ext3_super_block sb;
	journal_superblock_t *jsb;
	struct ext3_inode in;
	cm_ext3_geom g;
	uint64_t size;
	uint32_t nblocks, ino;
	char names[200];
	int r;

	memset(log, 0, sizeof(*log));
	log->dev = dev;
	r = jd_super_read(dev, &sb);
	if (r < 0)
		return cm_fail_why(r, why, whylen, "reading the superblock");
	r = cm_ext3_super_check(&sb, dev->size, why, whylen);
	if (r < 0)
		return r;
	/* Extents, 64-bit descriptors and the like change how the journal
	 * inode is found and mapped: such a filesystem is not ext3. */
	if (cm_ext3_features_unsupported(&sb, false, names, sizeof(names)) > 0)
		return cm_fail_why(-EUCLEAN, why, whylen,
			       "unsupported features:%s", names);
	cm_ext3_geom_from_super(&sb, &g);
	log->bs = g.block_size;
	log->fs_blocks = g.blocks_count;
	log->recover_flag = cm_le32(sb.s_feature_incompat) &
			    EXT3_FEATURE_INCOMPAT_RECOVER;
	if (!(cm_le32(sb.s_feature_compat) & EXT3_FEATURE_COMPAT_HAS_JOURNAL))
		return 0;
	if (cm_le32(sb.s_feature_incompat) & EXT3_FEATURE_INCOMPAT_JOURNAL_DEV ||
	    cm_le32(sb.s_journal_dev) != 0)
		return cm_fail_why(-EUCLEAN, why, whylen,
			       "the journal is on another device: not supported");
	ino = cm_le32(sb.s_journal_inum);
	r = read_inode(log, &g, ino, &in, why, whylen);
	if (r < 0)
		return r;
	size = cm_le32(in.i_size) | (uint64_t)cm_le32(in.i_size_high) << 32;
	if ((cm_le16(in.i_mode) & EXT3_S_IFMT) != EXT3_S_IFREG)
		return cm_fail_why(-EUCLEAN, why, whylen,
			       "journal inode %u is not a regular file", ino);
	if (size / log->bs < JBD2_MIN_JOURNAL_BLOCKS / 8 ||
	    size / log->bs > JD_MAX_JOURNAL_BLOCKS)
		return cm_fail_why(-EUCLEAN, why, whylen,
			       "journal inode %u has a bad size (%llu bytes)",
			       ino, (unsigned long long)size);
	nblocks = (uint32_t)(size / log->bs);
	/* Block 0 first: the journal superblock says how much to map. */
	r = map_inode(log, &in, g.first_data_block, 1, why, whylen);
	jsb = malloc(log->bs);
	if (r == 0 && !jsb)
		r = -ENOMEM;
	if (r == 0) {
		r = jd_log_read(log, 0, jsb);
		if (r < 0)
			cm_fail_why(r, why, whylen, "reading the journal superblock");
	}
	if (r == 0)
		r = check_jsb(log, jsb, nblocks, why, whylen);
	free(jsb);
	free(log->map);
	log->map = NULL;
	if (r == 0)
		r = map_inode(log, &in, g.first_data_block, log->maxlen, why,
			      whylen);
	if (r == 0)
		r = sort_map(log);
	if (r < 0) {
		jd_log_close(log);
		return r;
	}
	log->has_journal = true;
	return 0;
}

void jd_log_close(jd_log *log)
{
	free(log->map);
	free(log->sorted);
	log->map = NULL;
	log->sorted = NULL;
	log->has_journal = false;
}

bool jd_log_contains(const jd_log *log, uint32_t blk)
{
	uint32_t lo = 0, hi = log->maxlen;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (log->sorted[mid] == blk)
			return true;
		if (log->sorted[mid] < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}
