/*
 * fs.c - mounting: the superblock, the group descriptors, the journal
 * superblock, and the block get/put wrappers every other file uses.
 *
 * Invariants once ino_fs_mount() returns: the superblock passed
 * cm_ext3_super_check() with the device size, has no incompatible feature
 * outside CM_EXT3_INCOMPAT_SUPP and a block size equal to the source's;
 * every group's inode table lies inside its group (fs->itable); the
 * journal, if any, has a valid superblock with only features JBD knows;
 * the device holds every block the superblock counts.  Nothing in the
 * ino_fs changes afterwards.
 */
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* get() through a bare source: maps a NULL without an error to -EIO. */
static const void *src_get(const ino_blksrc *src, uint64_t blocknr,
			   void **cookie, int *err)
{
	const void *p;

	*err = -EIO;
	*cookie = NULL;
	p = src->get(src->ctx, blocknr, cookie, err);
	if (!p && *err >= 0)
		*err = -EIO;
	/* a misaligned buffer is the source's bug, not bad disk data */
	assert(!p || ((uintptr_t)p & 7) == 0);
	return p;
}

int ino_blk_get(ino_fs *fs, uint64_t blocknr, ino_buf *b)
{
	const void *p;
	int err;

	if (blocknr >= fs->geom.blocks_count) {
		cm_debug("ext3fs: block %llu beyond the fs (%u blocks)",
			 (unsigned long long)blocknr, fs->geom.blocks_count);
		return -EUCLEAN;
	}
	p = src_get(&fs->src, blocknr, &b->cookie, &err);
	if (!p)
		return err;
	b->data = p;
	b->blocknr = blocknr;
	return 0;
}

void ino_blk_put(ino_fs *fs, ino_buf *b)
{
	if (!b->data)
		return;
	fs->src.put(fs->src.ctx, b->cookie);
	b->data = NULL;
	b->cookie = NULL;
}

int ino_probe_block_size(const void *sb_bytes, uint32_t *ret)
{
	const struct ext3_super_block *sb = sb_bytes;
	uint32_t log;

	if (cm_le16(sb->s_magic) != EXT3_SUPER_MAGIC)
		return -EUCLEAN;
	log = cm_le32(sb->s_log_block_size);
	if (log > EXT3_MAX_BLOCK_LOG_SIZE - EXT3_MIN_BLOCK_LOG_SIZE)
		return -EUCLEAN;
	*ret = EXT3_MIN_BLOCK_SIZE << log;
	return 0;
}

/* Reads the primary superblock into fs->sb. */
static int read_super(ino_fs *fs, char *why, size_t whylen)
{
	uint32_t bs = fs->src.block_size;
	const uint8_t *p;
	void *cookie;
	int r;

	p = src_get(&fs->src, EXT3_SUPERBLOCK_OFFSET / bs, &cookie, &r);
	if (!p)
		return cm_fail_why(r, why, whylen, "cannot read the superblock: %s",
			    strerror(-r));
	memcpy(&fs->sb, p + EXT3_SUPERBLOCK_OFFSET % bs, sizeof(fs->sb));
	fs->src.put(fs->src.ctx, cookie);
	if (cm_le16(fs->sb.s_magic) != EXT3_SUPER_MAGIC)
		return cm_fail_why(-EUCLEAN, why, whylen,
			    "bad superblock magic 0x%04x (want 0x%04x)",
			    cm_le16(fs->sb.s_magic), EXT3_SUPER_MAGIC);
	return 0;
}

/* Before the geometry checks, so an ext4 image is named as such. */
static int check_features(ino_fs *fs, char *why, size_t whylen)
{
	char names[256];
	uint32_t rev = cm_le32(fs->sb.s_rev_level);

	if (rev > EXT3_DYNAMIC_REV)
		return cm_fail_why(-EOPNOTSUPP, why, whylen,
			    "unsupported revision level %u", rev);
	if (cm_ext3_features_unsupported(&fs->sb, false, names, sizeof(names)))
		return cm_fail_why(-EOPNOTSUPP, why, whylen,
			    "unsupported features:%s", names);
	return 0;
}

/*
 * The largest file the block map and i_blocks allow, as the kernel's
 * ext3_max_size() computes it: the blocks i_block[] reaches through the
 * triple indirect level, bounded so that data and indirect blocks together
 * stay within 2^32 - 1 sectors.  From 32 KiB blocks on, the indirect
 * blocks alone pass that bound and ext3_max_size() goes negative; there the
 * bound applies to the data blocks only.
 */
static uint64_t max_file_size(unsigned bits)
{
	uint64_t apb = 1ull << (bits - 2);
	uint64_t tree = EXT3_NDIR_BLOCKS + apb + apb * apb + apb * apb * apb;
	uint64_t upper = ((1ull << 32) - 1) >> (bits - 9);
	uint64_t meta = 1 + (1 + apb) + (1 + apb + apb * apb);

	if (upper > meta)
		upper -= meta;
	return (tree < upper ? tree : upper) << bits;
}

/* Checks the superblock's geometry and derives the fs settings. */
static int check_super(ino_fs *fs, uint64_t device_bytes, char *why,
		       size_t whylen)
{
	uint32_t compat = cm_le32(fs->sb.s_feature_compat);
	uint32_t incompat = cm_le32(fs->sb.s_feature_incompat);
	uint32_t ro = cm_le32(fs->sb.s_feature_ro_compat);
	uint64_t need;
	unsigned i;
	int r;

	r = cm_ext3_super_check(&fs->sb, 0, why, whylen);
	if (r < 0)
		return r;
	cm_ext3_geom_from_super(&fs->sb, &fs->geom);
	need = (uint64_t)fs->geom.blocks_count * fs->geom.block_size;
	if (device_bytes && need > device_bytes)
		return cm_fail_why(-EUCLEAN, why, whylen,
			    "image too small: %llu bytes, the superblock says %llu (%u blocks of %u)",
			    (unsigned long long)device_bytes,
			    (unsigned long long)need, fs->geom.blocks_count,
			    fs->geom.block_size);
	if (fs->geom.block_size != fs->src.block_size)
		return cm_fail_why(-EUCLEAN, why, whylen,
			    "superblock block size %u, block source serves %u",
			    fs->geom.block_size, fs->src.block_size);
	fs->first_ino = cm_le32(fs->sb.s_rev_level) == EXT3_GOOD_OLD_REV ?
			EXT3_GOOD_OLD_FIRST_INO : cm_le32(fs->sb.s_first_ino);
	if (fs->first_ino < EXT3_GOOD_OLD_FIRST_INO ||
	    fs->first_ino > fs->geom.inodes_count)
		return cm_fail_why(-EUCLEAN, why, whylen, "bad first inode %u",
			    fs->first_ino);
	fs->has_filetype = incompat & EXT3_FEATURE_INCOMPAT_FILETYPE;
	fs->has_dir_index = compat & EXT3_FEATURE_COMPAT_DIR_INDEX;
	fs->has_csum_tail = ro & INO_RO_COMPAT_METADATA_CSUM;
	for (i = 0; i < 4; i++)
		fs->hash_seed[i] = cm_le32(fs->sb.s_hash_seed[i]);
	/* like ext3 on a signed-char host: signed unless marked unsigned */
	fs->hash_unsigned = cm_le32(fs->sb.s_flags) &
			    EXT3_FLAGS_UNSIGNED_HASH;
	fs->addr_per_block = fs->geom.block_size / 4;
	for (fs->addr_bits = 0; (1u << fs->addr_bits) < fs->addr_per_block;
	     fs->addr_bits++)
		;
	fs->max_size = max_file_size(fs->addr_bits + 2);
	return 0;
}

/* Checks one GDT block's descriptors and records the inode tables. */
static int read_gdt_block(ino_fs *fs, uint32_t i, char *why, size_t whylen)
{
	const cm_ext3_geom *g = &fs->geom;
	const struct ext3_group_desc *gd;
	uint32_t group = i * g->desc_per_block, n;
	ino_buf b = { 0 };
	int r;

	r = ino_blk_get(fs, (uint64_t)g->gdt_block + i, &b);
	if (r < 0)
		return cm_fail_why(r, why, whylen, "cannot read GDT block %u: %s",
			    g->gdt_block + i, strerror(-r));
	gd = (const struct ext3_group_desc *)b.data;
	for (n = 0; n < g->desc_per_block && group < g->group_count;
	     n++, group++) {
		r = cm_ext3_group_desc_check(g, group, &gd[n], why, whylen);
		if (r < 0)
			break;
		fs->itable[group] = cm_le32(gd[n].bg_inode_table);
		fs->bbitmap[group] = cm_le32(gd[n].bg_block_bitmap);
		fs->ibitmap[group] = cm_le32(gd[n].bg_inode_bitmap);
	}
	ino_blk_put(fs, &b);
	return r;
}

static int read_groups(ino_fs *fs, char *why, size_t whylen)
{
	uint32_t i;
	int r;

	fs->itable = calloc(fs->geom.group_count, sizeof(*fs->itable));
	fs->bbitmap = calloc(fs->geom.group_count, sizeof(*fs->bbitmap));
	fs->ibitmap = calloc(fs->geom.group_count, sizeof(*fs->ibitmap));
	if (!fs->itable || !fs->bbitmap || !fs->ibitmap)
		return cm_fail_why(-ENOMEM, why, whylen, "no memory for %u groups",
			    fs->geom.group_count);
	for (i = 0; i < fs->geom.gdt_blocks; i++) {
		r = read_gdt_block(fs, i, why, whylen);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Reads the journal inode's block 0 into *jsb. */
static int read_journal_super(ino_fs *fs, uint32_t inum,
			      journal_superblock_t *jsb, uint64_t *ret_size,
			      char *why, size_t whylen)
{
	ino_inode ji;
	uint64_t pblk;
	ino_buf b = { 0 };
	int r;

	if (inum == 0 || inum > fs->geom.inodes_count)
		return cm_fail_why(-EUCLEAN, why, whylen,
			    "journal inode %u out of range", inum);
	r = ino_inode_read(fs, inum, &ji);
	if (r == -ESTALE || (r == 0 && !ino_is_type(&ji, EXT3_S_IFREG)))
		r = -EUCLEAN;
	if (r == 0)
		r = ino_bmap(fs, &ji, 0, &pblk);
	if (r == 0 && pblk == 0)
		r = -EUCLEAN;
	if (r == 0)
		r = ino_blk_get(fs, pblk, &b);
	if (r < 0)
		return cm_fail_why(r, why, whylen, "journal inode %u unusable: %s",
			    inum, strerror(-r));
	memcpy(jsb, b.data, sizeof(*jsb));
	ino_blk_put(fs, &b);
	*ret_size = ji.size;
	return 0;
}

static int run_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct ino_run *)a)->start, y = ((const struct ino_run *)b)->start;

	return x < y ? -1 : x > y;
}

/* fs->journal_runs: the blocks of the journal inode's first s_maxlen
 * logical blocks, in runs. */
static int map_journal(ino_fs *fs, uint32_t inum, char *why, size_t whylen)
{
	struct ino_run *runs = NULL, *grown;
	uint32_t n = 0, cap = 0;
	ino_inode ji;
	uint64_t pblk;
	int r = ino_inode_read(fs, inum, &ji);

	for (uint32_t l = 0; r == 0 && l < fs->journal_blocks; l++) {
		r = ino_bmap(fs, &ji, l, &pblk);
		if (r < 0 || !pblk)
			continue;
		if (n && runs[n - 1].start + runs[n - 1].len == pblk) {
			runs[n - 1].len++;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			grown = realloc(runs, cap * sizeof(*runs));
			if (!grown) {
				r = -ENOMEM;
				break;
			}
			runs = grown;
		}
		runs[n++] = (struct ino_run){(uint32_t)pblk, 1};
	}
	if (r < 0) {
		free(runs);
		return cm_fail_why(r, why, whylen, "cannot map journal inode %u: %s", inum,
				   strerror(-r));
	}
	if (n > 1)
		qsort(runs, n, sizeof(*runs), run_cmp);
	fs->journal_runs = runs;
	fs->njournal_runs = n;
	return 0;
}

bool ino_blk_system(const ino_fs *fs, uint64_t b)
{
	const cm_ext3_geom *g = &fs->geom;
	uint32_t grp, lo = 0, hi = fs->njournal_runs;

	if (b < g->gdt_block + g->gdt_blocks + cm_le16(fs->sb.s_reserved_gdt_blocks))
		return true;
	if (b >= g->blocks_count)
		return false;
	grp = (uint32_t)((b - g->first_data_block) / g->blocks_per_group);
	if (b == fs->bbitmap[grp] || b == fs->ibitmap[grp] ||
	    (b >= fs->itable[grp] && b - fs->itable[grp] < g->itable_blocks))
		return true;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct ino_run *m = &fs->journal_runs[mid];

		if (b < m->start)
			hi = mid;
		else if (b - m->start >= m->len)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

static _Thread_local bool corrupt_met;

void ino_fs_note_corrupt(void)
{
	corrupt_met = true;
}

bool ino_fs_take_corrupt(void)
{
	bool met = corrupt_met;

	corrupt_met = false;
	return met;
}

static int check_journal(ino_fs *fs, char *why, size_t whylen)
{
	journal_superblock_t jsb;
	uint32_t inum = cm_le32(fs->sb.s_journal_inum);
	uint64_t size = 0;
	char names[256];
	int r;

	if (!(cm_le32(fs->sb.s_feature_compat) &
	      EXT3_FEATURE_COMPAT_HAS_JOURNAL))
		return 0;
	r = read_journal_super(fs, inum, &jsb, &size, why, whylen);
	if (r < 0)
		return r;
	r = cm_ext3_journal_super_check(&jsb, fs->geom.block_size, why,
					whylen);
	if (r < 0)
		return r;
	if (cm_jbd2_features_unsupported(&jsb, names, sizeof(names)))
		return cm_fail_why(-EOPNOTSUPP, why, whylen,
			    "unsupported journal features:%s", names);
	if ((uint64_t)cm_be32(jsb.s_maxlen) * fs->geom.block_size > size)
		return cm_fail_why(-EUCLEAN, why, whylen,
			    "journal length %u blocks exceeds inode %u (%llu bytes)",
			    cm_be32(jsb.s_maxlen), inum,
			    (unsigned long long)size);
	fs->journal_blocks = cm_be32(jsb.s_maxlen);
	return map_journal(fs, inum, why, whylen);
}

/* The root must be a directory with a size and blocks, or the kernel
 * refuses the mount ("corrupt root inode, run e2fsck"): every name would
 * otherwise be served from an empty root, and the first create would lay
 * a new block over the old entries. */
static int check_root(ino_fs *fs, char *why, size_t whylen)
{
	ino_inode root;
	int r = ino_inode_read(fs, EXT3_ROOT_INO, &root);

	if (r == -ESTALE)
		return cm_fail_why(-EUCLEAN, why, whylen, "corrupt root inode: not in use");
	if (r < 0)
		return cm_fail_why(r, why, whylen, "root inode unreadable: %s", strerror(-r));
	if (!ino_is_type(&root, EXT3_S_IFDIR) || !root.size || !root.blocks512)
		return cm_fail_why(-EUCLEAN, why, whylen,
				   "corrupt root inode (mode %o, size %llu, %llu blocks)",
				   (unsigned)root.mode, (unsigned long long)root.size,
				   (unsigned long long)root.blocks512);
	return 0;
}

int ino_fs_mount(const ino_blksrc *src, uint64_t device_bytes, ino_fs **ret,
		 char *why, size_t whylen)
{
	ino_fs *fs;
	uint32_t bs;
	int r;

	if (why && whylen)
		why[0] = '\0';
	if (!src || !src->get || !src->put || !ret)
		return cm_fail_why(-EINVAL, why, whylen, "incomplete block source");
	bs = src->block_size;
	if (bs < EXT3_MIN_BLOCK_SIZE || bs > EXT3_MAX_BLOCK_SIZE ||
	    (bs & (bs - 1)))
		return cm_fail_why(-EINVAL, why, whylen,
			    "block source serves %u-byte blocks", bs);
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return cm_fail_why(-ENOMEM, why, whylen, "no memory");
	fs->src = *src;
	pthread_mutex_init(&fs->orphan_mtx, NULL);
	r = read_super(fs, why, whylen);
	if (r == 0)
		r = check_features(fs, why, whylen);
	if (r == 0)
		r = check_super(fs, device_bytes, why, whylen);
	if (r == 0)
		r = read_groups(fs, why, whylen);
	if (r == 0)
		r = check_journal(fs, why, whylen);
	if (r == 0)
		r = check_root(fs, why, whylen);
	if (r < 0) {
		cm_debug("ext3fs: mount failed: %s", why ? why : "");
		ino_fs_unmount(fs);
		return r;
	}
	*ret = fs;
	return 0;
}

ino_fs *ino_fs_unmount(ino_fs *fs)
{
	if (!fs)
		return NULL;
	free(fs->itable);
	free(fs->bbitmap);
	free(fs->ibitmap);
	free(fs->journal_runs);
	free(fs->orphans);
	pthread_mutex_destroy(&fs->orphan_mtx);
	free(fs);
	return NULL;
}

const cm_ext3_geom *ino_fs_geom(const ino_fs *fs)
{
	return &fs->geom;
}

uint64_t ino_fs_max_size(const ino_fs *fs)
{
	return fs->max_size;
}

void ino_fs_resid(const ino_fs *fs, uint32_t *uid, uint32_t *gid)
{
	*uid = cm_le16(fs->sb.s_def_resuid);
	*gid = cm_le16(fs->sb.s_def_resgid);
}

uint16_t ino_fs_errors_behaviour(const ino_fs *fs)
{
	uint16_t e = cm_le16(fs->sb.s_errors);

	return e == EXT3_ERRORS_CONTINUE || e == EXT3_ERRORS_PANIC ? e : EXT3_ERRORS_RO;
}
