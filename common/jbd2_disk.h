/*
 * jbd2_disk.h - the JBD2 journal on-disk format (all fields big-endian).
 *
 * Block header, journal superblock, descriptor tags, commit and revoke
 * blocks, with the kernel's names.  Fields are raw big-endian integers:
 * read them with cm_be32() and write them with cm_set_be32() from
 * byteorder.h.  ext3's JBD is the same format restricted to the REVOKE
 * feature.  Nothing here validates; see ondisk.h for that.
 */
#ifndef JBD2_DISK_H
#define JBD2_DISK_H

#include <stddef.h>
#include <stdint.h>

#include "byteorder.h"

#define JBD2_MAGIC_NUMBER	0xC03B3998U

/* h_blocktype */
#define JBD2_DESCRIPTOR_BLOCK	1
#define JBD2_COMMIT_BLOCK	2
#define JBD2_SUPERBLOCK_V1	3
#define JBD2_SUPERBLOCK_V2	4
#define JBD2_REVOKE_BLOCK	5
#define JBD2_FC_BLOCK		6	/* fast commit; never in ext3 */

/* Every metadata block of the log starts with this header. */
typedef struct journal_header_s {
	cm_be32_t h_magic;			/* 0x00 JBD2_MAGIC_NUMBER */
	cm_be32_t h_blocktype;			/* 0x04 */
	cm_be32_t h_sequence;			/* 0x08 transaction id */
} journal_header_t;

_Static_assert(sizeof(journal_header_t) == 12, "journal header");

/* Features.  JBD (ext3) knows only INCOMPAT_REVOKE. */
#define JBD2_FEATURE_COMPAT_CHECKSUM		0x00000001
#define JBD2_FEATURE_INCOMPAT_REVOKE		0x00000001
#define JBD2_FEATURE_INCOMPAT_64BIT		0x00000002
#define JBD2_FEATURE_INCOMPAT_ASYNC_COMMIT	0x00000004
#define JBD2_FEATURE_INCOMPAT_CSUM_V2		0x00000008
#define JBD2_FEATURE_INCOMPAT_CSUM_V3		0x00000010
#define JBD2_FEATURE_INCOMPAT_FAST_COMMIT	0x00000020

/* s_checksum_type and h_chksum_type */
#define JBD2_CRC32_CHKSUM	1
#define JBD2_MD5_CHKSUM		2
#define JBD2_SHA1_CHKSUM	3
#define JBD2_CRC32C_CHKSUM	4
#define JBD2_CRC32_CHKSUM_SIZE	4
#define JBD2_CHECKSUM_BYTES	(32 / sizeof(uint32_t))

#define JBD2_UUID_SIZE		16
#define JBD2_USERS_MAX		48
#define JBD2_USERS_SIZE		(JBD2_UUID_SIZE * JBD2_USERS_MAX)
#define JBD2_MIN_JOURNAL_BLOCKS	1024
#define JBD2_SUPERBLOCK_SIZE	1024

/* Journal superblock: block 0 of the journal.  V1 uses only up to s_errno. */
typedef struct journal_superblock_s {
	journal_header_t s_header;		/* 0x00 */
	cm_be32_t s_blocksize;			/* 0x0C = fs block size */
	cm_be32_t s_maxlen;			/* 0x10 blocks, incl. this one */
	cm_be32_t s_first;			/* 0x14 first log block (1) */
	cm_be32_t s_sequence;			/* 0x18 first tid expected */
	cm_be32_t s_start;			/* 0x1C log start; 0 = clean */
	cm_be32_t s_errno;			/* 0x20 */
	/* V2 only from here on */
	cm_be32_t s_feature_compat;		/* 0x24 */
	cm_be32_t s_feature_incompat;		/* 0x28 */
	cm_be32_t s_feature_ro_compat;		/* 0x2C */
	uint8_t s_uuid[JBD2_UUID_SIZE];		/* 0x30 */
	cm_be32_t s_nr_users;			/* 0x40 1 for an internal log */
	cm_be32_t s_dynsuper;			/* 0x44 unused */
	cm_be32_t s_max_transaction;		/* 0x48 unused */
	cm_be32_t s_max_trans_data;		/* 0x4C unused */
	uint8_t s_checksum_type;		/* 0x50 JBD2_CRC32C_CHKSUM */
	uint8_t s_padding2[3];			/* 0x51 */
	cm_be32_t s_num_fc_blks;		/* 0x54 fast commit blocks */
	cm_be32_t s_head;			/* 0x58 log head at clean stop */
	uint32_t s_padding[40];			/* 0x5C */
	cm_be32_t s_checksum;			/* 0xFC csum v2/v3 */
	uint8_t s_users[JBD2_USERS_SIZE];	/* 0x100 zero for internal */
} journal_superblock_t;

_Static_assert(sizeof(journal_superblock_t) == JBD2_SUPERBLOCK_SIZE,
	       "journal superblock is 1024 bytes");
_Static_assert(offsetof(journal_superblock_t, s_blocksize) == 0x0C,
	       "s_blocksize");
_Static_assert(offsetof(journal_superblock_t, s_start) == 0x1C, "s_start");
_Static_assert(offsetof(journal_superblock_t, s_errno) == 0x20, "s_errno");
_Static_assert(offsetof(journal_superblock_t, s_feature_incompat) == 0x28,
	       "s_feature_incompat");
_Static_assert(offsetof(journal_superblock_t, s_uuid) == 0x30, "s_uuid");
_Static_assert(offsetof(journal_superblock_t, s_nr_users) == 0x40,
	       "s_nr_users");
_Static_assert(offsetof(journal_superblock_t, s_checksum_type) == 0x50,
	       "s_checksum_type");
_Static_assert(offsetof(journal_superblock_t, s_num_fc_blks) == 0x54,
	       "s_num_fc_blks");
_Static_assert(offsetof(journal_superblock_t, s_head) == 0x58, "s_head");
_Static_assert(offsetof(journal_superblock_t, s_checksum) == 0xFC,
	       "s_checksum");
_Static_assert(offsetof(journal_superblock_t, s_users) == 0x100, "s_users");

/*
 * Descriptor block: a header, then tags from byte 12, one per logged
 * block; data blocks follow the descriptor in tag order.  Each tag without
 * JBD2_FLAG_SAME_UUID is followed by a 16-byte UUID.  The tag size depends
 * on the journal's incompat features:
 *   none        8   journal_block_tag_t (JBD: be32 blocknr, be32 flags)
 *   64BIT      12   + be32 t_blocknr_high
 *   CSUM_V2    10 / 14 with 64BIT (+ be16 checksum)
 *   CSUM_V3    16   journal_block_tag3_t
 * With CSUM_V2/V3 a struct jbd2_journal_block_tail ends the block.
 */
#define JBD2_TAG_SIZE32		8
#define JBD2_TAG_SIZE64		12
#define JBD2_TAG_SIZE_CSUM_V2	10	/* 14 with 64BIT */
#define JBD2_TAG_SIZE_CSUM_V3	16

/* t_flags */
#define JBD2_FLAG_ESCAPE	1	/* first 4 bytes were the magic */
#define JBD2_FLAG_SAME_UUID	2	/* no UUID follows this tag */
#define JBD2_FLAG_DELETED	4	/* unused */
#define JBD2_FLAG_LAST_TAG	8	/* last tag of this descriptor */

/* The plain tag (no 64BIT, no CSUM_V3); t_checksum is 0 without CSUM_V2. */
typedef struct journal_block_tag_s {
	cm_be32_t t_blocknr;			/* 0x00 home block */
	cm_be16_t t_checksum;			/* 0x04 low 16 bits, csum v2 */
	cm_be16_t t_flags;			/* 0x06 JBD2_FLAG_... */
} journal_block_tag_t;

_Static_assert(sizeof(journal_block_tag_t) == JBD2_TAG_SIZE32, "plain tag");
_Static_assert(offsetof(journal_block_tag_t, t_flags) == 6, "t_flags");

typedef struct journal_block_tag3_s {
	cm_be32_t t_blocknr;			/* 0x00 */
	cm_be32_t t_flags;			/* 0x04 */
	cm_be32_t t_blocknr_high;		/* 0x08 with 64BIT */
	cm_be32_t t_checksum;			/* 0x0C crc32c */
} journal_block_tag3_t;

_Static_assert(sizeof(journal_block_tag3_t) == JBD2_TAG_SIZE_CSUM_V3,
	       "csum v3 tag");

struct jbd2_journal_block_tail {
	cm_be32_t t_checksum;
};

_Static_assert(sizeof(struct jbd2_journal_block_tail) == 4, "block tail");

/* Commit block.  JBD writes only the header; the rest is zero. */
struct commit_header {
	cm_be32_t h_magic;			/* 0x00 */
	cm_be32_t h_blocktype;			/* 0x04 JBD2_COMMIT_BLOCK */
	cm_be32_t h_sequence;			/* 0x08 */
	uint8_t h_chksum_type;			/* 0x0C */
	uint8_t h_chksum_size;			/* 0x0D */
	uint8_t h_padding[2];			/* 0x0E */
	cm_be32_t h_chksum[JBD2_CHECKSUM_BYTES]; /* 0x10 */
	cm_be64_t h_commit_sec;			/* 0x30 */
	cm_be32_t h_commit_nsec;		/* 0x38 */
};

_Static_assert(offsetof(struct commit_header, h_chksum_type) == 0x0C,
	       "h_chksum_type");
_Static_assert(offsetof(struct commit_header, h_chksum) == 0x10, "h_chksum");
_Static_assert(offsetof(struct commit_header, h_commit_sec) == 0x30,
	       "h_commit_sec");
_Static_assert(offsetof(struct commit_header, h_commit_nsec) == 0x38,
	       "h_commit_nsec");
_Static_assert(sizeof(struct commit_header) == 0x40, "commit header");

/*
 * Revoke block: r_count is the bytes used, header included; the records
 * (be32 block numbers, be64 with 64BIT) start at byte 16.
 */
typedef struct jbd2_journal_revoke_header_s {
	journal_header_t r_header;		/* 0x00 */
	cm_be32_t r_count;			/* 0x0C */
} jbd2_journal_revoke_header_t;

_Static_assert(sizeof(jbd2_journal_revoke_header_t) == 16, "revoke header");

#endif /* JBD2_DISK_H */
