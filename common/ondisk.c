/*
 * ondisk.c - decoding and validation of ext3 and JBD2 on-disk structures.
 *
 * Owns the sanity checks run on superblocks, group descriptors and the
 * journal superblock before anything trusts them, the geometry derived
 * from a checked superblock, and feature-bit names (dumpe2fs spelling).
 * Pure functions on caller buffers: no I/O, no locks, no allocation.
 * Bad disk data gives -EUCLEAN and a reason, never an assert.
 */
#include "ondisk.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Feature names by word and bit, as e2fsprogs (lib/e2p) spells them. */
static const char *const ext3_feat_names[3][32] = {
	[CM_FEAT_COMPAT] = {
		[0] = "dir_prealloc", [1] = "imagic_inodes",
		[2] = "has_journal", [3] = "ext_attr", [4] = "resize_inode",
		[5] = "dir_index", [6] = "lazy_bg", [8] = "snapshot_bitmap",
		[9] = "sparse_super2", [10] = "fast_commit",
		[11] = "stable_inodes", [12] = "orphan_file",
	},
	[CM_FEAT_INCOMPAT] = {
		[0] = "compression", [1] = "filetype",
		[2] = "needs_recovery", [3] = "journal_dev", [4] = "meta_bg",
		[6] = "extent", [7] = "64bit", [8] = "mmp", [9] = "flex_bg",
		[10] = "ea_inode", [12] = "dirdata",
		[13] = "metadata_csum_seed", [14] = "large_dir",
		[15] = "inline_data", [16] = "encrypt", [17] = "casefold",
	},
	[CM_FEAT_RO_COMPAT] = {
		[0] = "sparse_super", [1] = "large_file", [3] = "huge_file",
		[4] = "uninit_bg", [5] = "dir_nlink", [6] = "extra_isize",
		[8] = "quota", [9] = "bigalloc", [10] = "metadata_csum",
		[11] = "replica", [12] = "read-only", [13] = "project",
		[14] = "shared_blocks", [15] = "verity",
		[16] = "orphan_present",
	},
};

static const char *const jbd2_feat_names[3][32] = {
	[CM_FEAT_COMPAT] = { [0] = "journal_checksum" },
	[CM_FEAT_INCOMPAT] = {
		[0] = "journal_incompat_revoke", [1] = "journal_64bit",
		[2] = "journal_async_commit", [3] = "journal_checksum_v2",
		[4] = "journal_checksum_v3",
	},
};

int cm_fail_why(int r, char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return r;
}

static uint32_t sb_inode_size(const struct ext3_super_block *sb)
{
	if (cm_le32(sb->s_rev_level) == EXT3_GOOD_OLD_REV)
		return EXT3_GOOD_OLD_INODE_SIZE;
	return cm_le16(sb->s_inode_size);
}

/* Checks each field on its own; shifts and divisions are safe after. */
static int super_check_fields(const struct ext3_super_block *sb, char *why,
			      size_t whylen)
{
	uint32_t log = cm_le32(sb->s_log_block_size), bs, isz, n;

	if (cm_le16(sb->s_magic) != EXT3_SUPER_MAGIC)
		return cm_fail_why(-EUCLEAN, why, whylen, "bad superblock magic 0x%04x (want 0x%04x)",
			   cm_le16(sb->s_magic), EXT3_SUPER_MAGIC);
	if (log > EXT3_MAX_BLOCK_LOG_SIZE - EXT3_MIN_BLOCK_LOG_SIZE)
		return cm_fail_why(-EUCLEAN, why, whylen, "bad block size: log %u", log);
	bs = EXT3_MIN_BLOCK_SIZE << log;
	n = cm_le32(sb->s_blocks_per_group);
	if (n == 0 || n > 8 * bs)
		return cm_fail_why(-EUCLEAN, why, whylen, "bad blocks per group %u", n);
	n = cm_le32(sb->s_inodes_per_group);
	if (n == 0 || n > 8 * bs)
		return cm_fail_why(-EUCLEAN, why, whylen, "bad inodes per group %u", n);
	n = cm_le32(sb->s_first_data_block);
	if (n != (bs == EXT3_MIN_BLOCK_SIZE ? 1u : 0u))
		return cm_fail_why(-EUCLEAN, why, whylen, "first data block %u with block size %u",
			   n, bs);
	isz = sb_inode_size(sb);
	if (isz < EXT3_GOOD_OLD_INODE_SIZE || isz > bs || (isz & (isz - 1)))
		return cm_fail_why(-EUCLEAN, why, whylen, "bad inode size %u", isz);
	n = cm_le16(sb->s_reserved_gdt_blocks);
	if (n > bs / 4)
		return cm_fail_why(-EUCLEAN, why, whylen, "bad reserved GDT blocks %u", n);
	if (cm_le32(sb->s_blocks_count) <= cm_le32(sb->s_first_data_block))
		return cm_fail_why(-EUCLEAN, why, whylen, "bad block count %u",
			   cm_le32(sb->s_blocks_count));
	return 0;
}

void cm_ext3_geom_from_super(const struct ext3_super_block *sb,
			     cm_ext3_geom *g)
{
	uint64_t data;

	g->block_size = EXT3_MIN_BLOCK_SIZE << cm_le32(sb->s_log_block_size);
	g->blocks_count = cm_le32(sb->s_blocks_count);
	g->inodes_count = cm_le32(sb->s_inodes_count);
	g->first_data_block = cm_le32(sb->s_first_data_block);
	g->blocks_per_group = cm_le32(sb->s_blocks_per_group);
	g->inodes_per_group = cm_le32(sb->s_inodes_per_group);
	g->inode_size = sb_inode_size(sb);
	data = g->blocks_count - g->first_data_block;
	g->group_count = (data + g->blocks_per_group - 1) / g->blocks_per_group;
	g->desc_per_block = g->block_size / EXT3_DESC_SIZE;
	g->gdt_block = g->first_data_block + 1;
	g->gdt_blocks = (g->group_count + g->desc_per_block - 1) /
			g->desc_per_block;
	g->itable_blocks = ((uint64_t)g->inodes_per_group * g->inode_size +
			    g->block_size - 1) / g->block_size;
}

int cm_ext3_super_check(const struct ext3_super_block *sb,
			uint64_t device_bytes, char *why, size_t whylen)
{
	cm_ext3_geom g;
	uint64_t need, group0;
	int r;

	r = super_check_fields(sb, why, whylen);
	if (r < 0)
		return r;
	cm_ext3_geom_from_super(sb, &g);
	need = (uint64_t)g.blocks_count * g.block_size;
	if (device_bytes && need > device_bytes)
		return cm_fail_why(-EUCLEAN, why, whylen,
			   "image too small: %llu bytes, the superblock says %llu (%u blocks of %u)",
			   (unsigned long long)device_bytes, (unsigned long long)need,
			   g.blocks_count, g.block_size);
	need = (uint64_t)g.group_count * g.inodes_per_group;
	if (g.inodes_count != need)
		return cm_fail_why(-EUCLEAN, why, whylen, "inode count %u, want %llu (%u groups)",
			   g.inodes_count, (unsigned long long)need,
			   g.group_count);
	group0 = g.blocks_count - g.first_data_block;
	if (group0 > g.blocks_per_group)
		group0 = g.blocks_per_group;
	/* superblock, GDT (spread over the groups with meta_bg), bitmaps */
	need = 1 + (uint64_t)cm_le16(sb->s_reserved_gdt_blocks) + 2 +
	       g.itable_blocks;
	if (!(cm_le32(sb->s_feature_incompat) & EXT3_FEATURE_INCOMPAT_META_BG))
		need += g.gdt_blocks;
	if (need > group0)
		return cm_fail_why(-EUCLEAN, why, whylen, "group 0 (%llu blocks) cannot hold its metadata (%llu)",
			   (unsigned long long)group0, (unsigned long long)need);
	return 0;
}

bool cm_ext3_bitmap_padded(const uint8_t *map, uint32_t nbits, uint32_t block_size)
{
	/* The part byte's high bits, then whole bytes: a delete checks it. */
	uint32_t byte = nbits >> 3;
	uint8_t want = (uint8_t)(0xff << (nbits & 7));

	if (nbits & 7 && (__atomic_load_n(&map[byte++], __ATOMIC_RELAXED) & want) != want)
		return false;
	for (; byte < block_size; byte++)
		if (__atomic_load_n(&map[byte], __ATOMIC_RELAXED) != 0xff)
			return false;
	return true;
}

int cm_ext3_group_desc_check(const cm_ext3_geom *g, uint32_t group,
			     const struct ext3_group_desc *gd, char *why,
			     size_t whylen)
{
	uint64_t first, end, it;
	uint32_t bb = cm_le32(gd->bg_block_bitmap);
	uint32_t ib = cm_le32(gd->bg_inode_bitmap);

	if (group >= g->group_count)
		return -EINVAL;
	first = g->first_data_block + (uint64_t)group * g->blocks_per_group;
	end = first + g->blocks_per_group;
	if (end > g->blocks_count)
		end = g->blocks_count;
	it = cm_le32(gd->bg_inode_table);
	if (bb < first || bb >= end)
		return cm_fail_why(-EUCLEAN, why, whylen, "group %u: block bitmap %u outside the group",
			   group, bb);
	if (ib < first || ib >= end)
		return cm_fail_why(-EUCLEAN, why, whylen, "group %u: inode bitmap %u outside the group",
			   group, ib);
	if (it < first || it + g->itable_blocks > end)
		return cm_fail_why(-EUCLEAN, why, whylen, "group %u: inode table %llu outside the group",
			   group, (unsigned long long)it);
	/* the kernel's "overlaps superblock": group 0 starts with the primary
	 * superblock and descriptors */
	if (group == 0 && (bb < g->gdt_block + g->gdt_blocks || ib < g->gdt_block + g->gdt_blocks ||
			   it < g->gdt_block + g->gdt_blocks))
		return cm_fail_why(-EUCLEAN, why, whylen,
			   "group 0: a bitmap or the inode table over the superblock or descriptors");
	if (cm_le16(gd->bg_free_blocks_count) > end - first ||
	    cm_le16(gd->bg_free_inodes_count) > g->inodes_per_group ||
	    cm_le16(gd->bg_used_dirs_count) > g->inodes_per_group)
		return cm_fail_why(-EUCLEAN, why, whylen, "group %u: free/used counts too large",
			   group);
	return 0;
}

int cm_ext3_inode_locate(const cm_ext3_geom *g, uint32_t ino,
			 uint32_t *ret_group, uint32_t *ret_index)
{
	if (ino == 0 || ino > g->inodes_count)
		return -EINVAL;
	*ret_group = (ino - 1) / g->inodes_per_group;
	*ret_index = (ino - 1) % g->inodes_per_group;
	return 0;
}

int cm_ext3_journal_super_check(const journal_superblock_t *jsb,
				uint32_t fs_block_size, char *why,
				size_t whylen)
{
	uint32_t type = cm_be32(jsb->s_header.h_blocktype);
	uint32_t first = cm_be32(jsb->s_first);
	uint32_t maxlen = cm_be32(jsb->s_maxlen);
	uint32_t start = cm_be32(jsb->s_start);

	if (cm_be32(jsb->s_header.h_magic) != JBD2_MAGIC_NUMBER)
		return cm_fail_why(-EUCLEAN, why, whylen, "bad journal magic 0x%08x (want 0x%08x)",
			   cm_be32(jsb->s_header.h_magic), JBD2_MAGIC_NUMBER);
	if (type != JBD2_SUPERBLOCK_V1 && type != JBD2_SUPERBLOCK_V2)
		return cm_fail_why(-EUCLEAN, why, whylen, "journal superblock has block type %u",
			   type);
	if (cm_be32(jsb->s_blocksize) != fs_block_size)
		return cm_fail_why(-EUCLEAN, why, whylen, "journal block size %u, fs block size %u",
			   cm_be32(jsb->s_blocksize), fs_block_size);
	if (first < 1 || maxlen <= first)
		return cm_fail_why(-EUCLEAN, why, whylen, "bad journal bounds: first %u, maxlen %u",
			   first, maxlen);
	if (start != 0 && (start < first || start >= maxlen))
		return cm_fail_why(-EUCLEAN, why, whylen, "journal start %u outside [%u, %u)",
			   start, first, maxlen);
	if (type == JBD2_SUPERBLOCK_V2 && cm_be32(jsb->s_nr_users) > 1)
		return cm_fail_why(-EUCLEAN, why, whylen, "journal has %u users (want <= 1)",
			   cm_be32(jsb->s_nr_users));
	return 0;
}

/* Appends " name" to the string in buf, truncating to fit len. */
static void append_name(char *buf, size_t len, const char *name)
{
	size_t n = strnlen(buf, len);

	if (n + 1 < len)
		snprintf(buf + n, len - n, " %s", name);
}

static unsigned feature_names(const char *const names[32],
			      enum cm_feat_word w, uint32_t mask, char *buf,
			      size_t len)
{
	char unknown[24];
	unsigned bit, count = 0;

	for (bit = 0; bit < 32; bit++) {
		if (!(mask & (UINT32_C(1) << bit)))
			continue;
		if (names[bit]) {
			append_name(buf, len, names[bit]);
		} else {
			snprintf(unknown, sizeof(unknown), "FEATURE_%c%u",
				 "CIR"[w], bit);
			append_name(buf, len, unknown);
		}
		count++;
	}
	return count;
}

unsigned cm_ext3_feature_names(enum cm_feat_word w, uint32_t mask, char *buf,
			       size_t len)
{
	return feature_names(ext3_feat_names[w], w, mask, buf, len);
}

unsigned cm_jbd2_feature_names(enum cm_feat_word w, uint32_t mask, char *buf,
			       size_t len)
{
	return feature_names(jbd2_feat_names[w], w, mask, buf, len);
}

unsigned cm_ext3_features_unsupported(const struct ext3_super_block *sb,
				      bool writable, char *buf, size_t len)
{
	uint32_t incompat = cm_le32(sb->s_feature_incompat);
	uint32_t ro = cm_le32(sb->s_feature_ro_compat);
	unsigned count;

	if (len > 0)
		buf[0] = '\0';
	count = cm_ext3_feature_names(CM_FEAT_INCOMPAT,
				      incompat & ~CM_EXT3_INCOMPAT_SUPP,
				      buf, len);
	if (writable)
		count += cm_ext3_feature_names(CM_FEAT_RO_COMPAT,
					       ro & ~CM_EXT3_RO_COMPAT_SUPP,
					       buf, len);
	return count;
}

unsigned cm_jbd2_features_unsupported(const journal_superblock_t *jsb,
				      char *buf, size_t len)
{
	uint32_t incompat = cm_be32(jsb->s_feature_incompat);
	uint32_t ro = cm_be32(jsb->s_feature_ro_compat);
	unsigned count;

	if (len > 0)
		buf[0] = '\0';
	if (cm_be32(jsb->s_header.h_blocktype) != JBD2_SUPERBLOCK_V2)
		return 0;	/* v1 has no feature fields */
	count = cm_jbd2_feature_names(CM_FEAT_INCOMPAT,
				      incompat & ~CM_JBD2_INCOMPAT_SUPP,
				      buf, len);
	count += cm_jbd2_feature_names(CM_FEAT_RO_COMPAT, ro, buf, len);
	return count;
}
