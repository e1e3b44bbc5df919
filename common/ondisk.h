/*
 * ondisk.h - decode and validate ext3 and JBD2 on-disk structures.
 *
 * Everything read from an image is untrusted: the checks return -EUCLEAN
 * with a one-line reason in `why` (may be NULL), never assert.  Check a
 * superblock before deriving geometry from it.
 */
#ifndef CM_ONDISK_H
#define CM_ONDISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ext3_disk.h"
#include "jbd2_disk.h"

/* The features ext3d itself handles (a subset of the kernel's ext3). */
#define CM_EXT3_INCOMPAT_SUPP	(EXT3_FEATURE_INCOMPAT_FILETYPE | \
				 EXT3_FEATURE_INCOMPAT_RECOVER)
#define CM_EXT3_RO_COMPAT_SUPP	(EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER | \
				 EXT3_FEATURE_RO_COMPAT_LARGE_FILE)
#define CM_JBD2_INCOMPAT_SUPP	JBD2_FEATURE_INCOMPAT_REVOKE

/* Geometry derived from a checked superblock (host byte order). */
typedef struct cm_ext3_geom {
	uint32_t block_size;
	uint32_t blocks_count;
	uint32_t inodes_count;
	uint32_t first_data_block;	/* 1 with 1K blocks, else 0 */
	uint32_t blocks_per_group;
	uint32_t inodes_per_group;
	uint32_t inode_size;
	uint32_t group_count;
	uint32_t desc_per_block;
	uint32_t gdt_block;		/* first block of the primary GDT */
	uint32_t gdt_blocks;		/* blocks of the GDT proper */
	uint32_t itable_blocks;		/* inode table blocks per group */
} cm_ext3_geom;

/* The three feature words, in dumpe2fs's listing order. */
enum cm_feat_word {
	CM_FEAT_COMPAT,
	CM_FEAT_INCOMPAT,
	CM_FEAT_RO_COMPAT,
};

/* Formats a reason into why (if not NULL) and returns r: the one way
 * the on-disk checks, the filesystem core and journal recovery say what is
 * wrong. */
__attribute__((format(printf, 4, 5)))
int cm_fail_why(int r, char *why, size_t whylen, const char *fmt, ...);

/*
 * Checks magic, block size, group sizes, first data block, inode size and
 * counts; device_bytes (0 = unknown) must hold blocks_count blocks.
 * Returns 0 or -EUCLEAN.
 */
int cm_ext3_super_check(const struct ext3_super_block *sb,
			uint64_t device_bytes, char *why, size_t whylen);

/* Fills *g from a superblock that passed cm_ext3_super_check. */
void cm_ext3_geom_from_super(const struct ext3_super_block *sb,
			     cm_ext3_geom *g);

/* True if bits [nbits, 8 * block_size) of a bitmap block, past its group's
 * last block or inode, are all set: mke2fs sets them and e2fsck checks
 * them ("padding at end of bitmap"), so a clear one says the block is
 * scribbled or not a bitmap at all. The bytes are read atomically: the
 * bitmap's other bits may be changing under alloc-svc's group lock. */
bool cm_ext3_bitmap_padded(const uint8_t *map, uint32_t nbits, uint32_t block_size);

/* Checks that group `group`'s bitmaps, inode table and counts fit it. */
int cm_ext3_group_desc_check(const cm_ext3_geom *g, uint32_t group,
			     const struct ext3_group_desc *gd, char *why,
			     size_t whylen);

/* Group and index within the group's inode table; -EINVAL if out of range. */
int cm_ext3_inode_locate(const cm_ext3_geom *g, uint32_t ino,
			 uint32_t *ret_group, uint32_t *ret_index);

/*
 * Checks magic, block type (v1/v2), block size (= fs_block_size),
 * maxlen > first >= 1, start inside the log, nr_users <= 1 (v2).
 * Returns 0 or -EUCLEAN.
 */
int cm_ext3_journal_super_check(const journal_superblock_t *jsb,
				uint32_t fs_block_size, char *why,
				size_t whylen);

/*
 * Appends the names of the bits of `mask` to the string in buf, each
 * preceded by a space, spelled as dumpe2fs does (FEATURE_I9 for bits it
 * cannot name); truncates to fit len.  Returns the number of names.
 */
unsigned cm_ext3_feature_names(enum cm_feat_word w, uint32_t mask, char *buf,
			       size_t len);
unsigned cm_jbd2_feature_names(enum cm_feat_word w, uint32_t mask, char *buf,
			       size_t len);

/*
 * Writes to buf the names of the features ext3d cannot handle: incompat
 * bits outside CM_EXT3_INCOMPAT_SUPP and, when `writable`, ro_compat bits
 * outside CM_EXT3_RO_COMPAT_SUPP.  Returns how many (0 = all supported).
 */
unsigned cm_ext3_features_unsupported(const struct ext3_super_block *sb,
				      bool writable, char *buf, size_t len);

/* Same for a journal: incompat bits other than REVOKE, any ro_compat bit. */
unsigned cm_jbd2_features_unsupported(const journal_superblock_t *jsb,
				      char *buf, size_t len);

#endif /* CM_ONDISK_H */
