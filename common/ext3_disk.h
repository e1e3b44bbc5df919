/*
 * ext3_disk.h - the ext3 on-disk format (all fields little-endian).
 *
 * Superblock, group descriptor, inode, directory entry and htree index
 * layouts, with the kernel's ext3_ names.  Fields are raw little-endian
 * integers: read them with cm_le16/32() and write them with cm_set_le*()
 * from byteorder.h.  Nothing here validates; see ondisk.h for that.
 */
#ifndef EXT3_DISK_H
#define EXT3_DISK_H

#include <stddef.h>
#include <stdint.h>

#include "byteorder.h"

#define EXT3_SUPER_MAGIC	0xEF53
#define EXT3_SUPERBLOCK_OFFSET	1024	/* byte offset of the primary copy */
#define EXT3_SUPERBLOCK_SIZE	1024

#define EXT3_MIN_BLOCK_LOG_SIZE	10
#define EXT3_MAX_BLOCK_LOG_SIZE	16
#define EXT3_MIN_BLOCK_SIZE	(1 << EXT3_MIN_BLOCK_LOG_SIZE)
#define EXT3_MAX_BLOCK_SIZE	(1 << EXT3_MAX_BLOCK_LOG_SIZE)

/* s_rev_level */
#define EXT3_GOOD_OLD_REV	0	/* fixed inode size and first inode */
#define EXT3_DYNAMIC_REV	1
#define EXT3_GOOD_OLD_INODE_SIZE 128
#define EXT3_GOOD_OLD_FIRST_INO	11

/* s_state */
#define EXT3_VALID_FS		0x0001
#define EXT3_ERROR_FS		0x0002
#define EXT3_ORPHAN_FS		0x0004

/* s_errors */
#define EXT3_ERRORS_CONTINUE	1
#define EXT3_ERRORS_RO		2
#define EXT3_ERRORS_PANIC	3

/* s_first_error_errcode, s_last_error_errcode (ext4's EXT4_ERR_*) */
#define EXT3_ERR_EFSCORRUPTED	5

/* s_feature_compat */
#define EXT3_FEATURE_COMPAT_DIR_PREALLOC	0x0001
#define EXT3_FEATURE_COMPAT_IMAGIC_INODES	0x0002
#define EXT3_FEATURE_COMPAT_HAS_JOURNAL		0x0004
#define EXT3_FEATURE_COMPAT_EXT_ATTR		0x0008
#define EXT3_FEATURE_COMPAT_RESIZE_INODE	0x0010
#define EXT3_FEATURE_COMPAT_DIR_INDEX		0x0020

/* s_feature_incompat */
#define EXT3_FEATURE_INCOMPAT_COMPRESSION	0x0001
#define EXT3_FEATURE_INCOMPAT_FILETYPE		0x0002
#define EXT3_FEATURE_INCOMPAT_RECOVER		0x0004	/* needs_recovery */
#define EXT3_FEATURE_INCOMPAT_JOURNAL_DEV	0x0008
#define EXT3_FEATURE_INCOMPAT_META_BG		0x0010

/* s_feature_ro_compat */
#define EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER	0x0001
#define EXT3_FEATURE_RO_COMPAT_LARGE_FILE	0x0002
#define EXT3_FEATURE_RO_COMPAT_BTREE_DIR	0x0004

/* What the kernel's ext3 driver accepts (ext3d's own set is in ondisk.h). */
#define EXT3_FEATURE_INCOMPAT_SUPP	(EXT3_FEATURE_INCOMPAT_FILETYPE | \
					 EXT3_FEATURE_INCOMPAT_RECOVER | \
					 EXT3_FEATURE_INCOMPAT_META_BG)
#define EXT3_FEATURE_RO_COMPAT_SUPP	(EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER | \
					 EXT3_FEATURE_RO_COMPAT_LARGE_FILE | \
					 EXT3_FEATURE_RO_COMPAT_BTREE_DIR)

/* s_default_mount_opts */
#define EXT3_DEFM_DEBUG		0x0001
#define EXT3_DEFM_BSDGROUPS	0x0002
#define EXT3_DEFM_XATTR_USER	0x0004
#define EXT3_DEFM_ACL		0x0008
#define EXT3_DEFM_UID16		0x0010
#define EXT3_DEFM_JMODE		0x0060
#define EXT3_DEFM_JMODE_DATA	0x0020
#define EXT3_DEFM_JMODE_ORDERED	0x0040
#define EXT3_DEFM_JMODE_WBACK	0x0060

/* s_flags */
#define EXT3_FLAGS_SIGNED_HASH		0x0001
#define EXT3_FLAGS_UNSIGNED_HASH	0x0002
#define EXT3_FLAGS_TEST_FILESYS		0x0004

/* s_jnl_backup_type; s_jnl_blocks = journal i_block[15], i_size_high, i_size */
#define EXT3_JNL_BACKUP_BLOCKS	1
#define EXT3_JNL_BLOCKS_SIZE	17

struct ext3_super_block {
	cm_le32_t s_inodes_count;		/* 0x00 */
	cm_le32_t s_blocks_count;		/* 0x04 */
	cm_le32_t s_r_blocks_count;		/* 0x08 reserved for root */
	cm_le32_t s_free_blocks_count;		/* 0x0C */
	cm_le32_t s_free_inodes_count;		/* 0x10 */
	cm_le32_t s_first_data_block;		/* 0x14 1 if 1K blocks, else 0 */
	cm_le32_t s_log_block_size;		/* 0x18 block size = 1024 << n */
	cm_le32_t s_log_frag_size;		/* 0x1C */
	cm_le32_t s_blocks_per_group;		/* 0x20 */
	cm_le32_t s_frags_per_group;		/* 0x24 */
	cm_le32_t s_inodes_per_group;		/* 0x28 */
	cm_le32_t s_mtime;			/* 0x2C last mount time */
	cm_le32_t s_wtime;			/* 0x30 last write time */
	cm_le16_t s_mnt_count;			/* 0x34 */
	cm_le16_t s_max_mnt_count;		/* 0x36 signed; -1 = no limit */
	cm_le16_t s_magic;			/* 0x38 EXT3_SUPER_MAGIC */
	cm_le16_t s_state;			/* 0x3A EXT3_VALID_FS... */
	cm_le16_t s_errors;			/* 0x3C EXT3_ERRORS_... */
	cm_le16_t s_minor_rev_level;		/* 0x3E */
	cm_le32_t s_lastcheck;			/* 0x40 */
	cm_le32_t s_checkinterval;		/* 0x44 */
	cm_le32_t s_creator_os;			/* 0x48 0 = Linux */
	cm_le32_t s_rev_level;			/* 0x4C */
	cm_le16_t s_def_resuid;			/* 0x50 */
	cm_le16_t s_def_resgid;			/* 0x52 */
	/* EXT3_DYNAMIC_REV only from here on */
	cm_le32_t s_first_ino;			/* 0x54 first non-reserved inode */
	cm_le16_t s_inode_size;			/* 0x58 */
	cm_le16_t s_block_group_nr;		/* 0x5A group of this copy */
	cm_le32_t s_feature_compat;		/* 0x5C */
	cm_le32_t s_feature_incompat;		/* 0x60 */
	cm_le32_t s_feature_ro_compat;		/* 0x64 */
	uint8_t s_uuid[16];			/* 0x68 */
	char s_volume_name[16];			/* 0x78 not NUL-terminated */
	char s_last_mounted[64];		/* 0x88 not NUL-terminated */
	cm_le32_t s_algorithm_usage_bitmap;	/* 0xC8 compression */
	uint8_t s_prealloc_blocks;		/* 0xCC */
	uint8_t s_prealloc_dir_blocks;		/* 0xCD */
	cm_le16_t s_reserved_gdt_blocks;	/* 0xCE per GDT copy, for resize */
	uint8_t s_journal_uuid[16];		/* 0xD0 external journal only */
	cm_le32_t s_journal_inum;		/* 0xE0 normally 8 */
	cm_le32_t s_journal_dev;		/* 0xE4 */
	cm_le32_t s_last_orphan;		/* 0xE8 head of the orphan list */
	cm_le32_t s_hash_seed[4];		/* 0xEC htree hash seed */
	uint8_t s_def_hash_version;		/* 0xFC EXT3_DX_HASH_... */
	uint8_t s_jnl_backup_type;		/* 0xFD EXT3_JNL_BACKUP_BLOCKS */
	cm_le16_t s_desc_size;			/* 0xFE ext4 64bit only; 0 */
	cm_le32_t s_default_mount_opts;		/* 0x100 EXT3_DEFM_... */
	cm_le32_t s_first_meta_bg;		/* 0x104 */
	cm_le32_t s_mkfs_time;			/* 0x108 */
	cm_le32_t s_jnl_blocks[EXT3_JNL_BLOCKS_SIZE]; /* 0x10C */
	cm_le32_t s_blocks_count_hi;		/* 0x150 ext4 64bit only; 0 */
	cm_le32_t s_r_blocks_count_hi;		/* 0x154 ext4 64bit only; 0 */
	cm_le32_t s_free_blocks_hi;		/* 0x158 ext4 64bit only; 0 */
	cm_le16_t s_min_extra_isize;		/* 0x15C */
	cm_le16_t s_want_extra_isize;		/* 0x15E */
	cm_le32_t s_flags;			/* 0x160 EXT3_FLAGS_... */
	cm_le32_t s_reserved_ext4[12];		/* 0x164 ext4 fields; 0 on ext3 */
	/* The errors met while mounted, as ext4 records them and e2fsck and
	 * dumpe2fs read them on ext3 too. */
	cm_le32_t s_error_count;		/* 0x194 */
	cm_le32_t s_first_error_time;		/* 0x198 */
	cm_le32_t s_first_error_ino;		/* 0x19C */
	cm_le64_t s_first_error_block;		/* 0x1A0 */
	char s_first_error_func[32];		/* 0x1A8 not NUL-terminated */
	cm_le32_t s_first_error_line;		/* 0x1C8 */
	cm_le32_t s_last_error_time;		/* 0x1CC */
	cm_le32_t s_last_error_ino;		/* 0x1D0 */
	cm_le32_t s_last_error_line;		/* 0x1D4 */
	cm_le64_t s_last_error_block;		/* 0x1D8 */
	char s_last_error_func[32];		/* 0x1E0 not NUL-terminated */
	uint8_t s_reserved_ext4b[0x7A];		/* 0x200 ext4 fields; 0 on ext3 */
	uint8_t s_first_error_errcode;		/* 0x27A EXT3_ERR_... */
	uint8_t s_last_error_errcode;		/* 0x27B */
	cm_le32_t s_reserved[97];		/* 0x27C */
};

_Static_assert(sizeof(struct ext3_super_block) == EXT3_SUPERBLOCK_SIZE,
	       "ext3 superblock is 1024 bytes");
_Static_assert(offsetof(struct ext3_super_block, s_log_block_size) == 0x18,
	       "s_log_block_size");
_Static_assert(offsetof(struct ext3_super_block, s_magic) == 0x38, "s_magic");
_Static_assert(offsetof(struct ext3_super_block, s_rev_level) == 0x4C,
	       "s_rev_level");
_Static_assert(offsetof(struct ext3_super_block, s_inode_size) == 0x58,
	       "s_inode_size");
_Static_assert(offsetof(struct ext3_super_block, s_feature_compat) == 0x5C,
	       "s_feature_compat");
_Static_assert(offsetof(struct ext3_super_block, s_uuid) == 0x68, "s_uuid");
_Static_assert(offsetof(struct ext3_super_block, s_reserved_gdt_blocks) ==
	       0xCE, "s_reserved_gdt_blocks");
_Static_assert(offsetof(struct ext3_super_block, s_journal_inum) == 0xE0,
	       "s_journal_inum");
_Static_assert(offsetof(struct ext3_super_block, s_hash_seed) == 0xEC,
	       "s_hash_seed");
_Static_assert(offsetof(struct ext3_super_block, s_jnl_backup_type) == 0xFD,
	       "s_jnl_backup_type");
_Static_assert(offsetof(struct ext3_super_block, s_default_mount_opts) ==
	       0x100, "s_default_mount_opts");
_Static_assert(offsetof(struct ext3_super_block, s_jnl_blocks) == 0x10C,
	       "s_jnl_blocks");
_Static_assert(offsetof(struct ext3_super_block, s_min_extra_isize) == 0x15C,
	       "s_min_extra_isize");
_Static_assert(offsetof(struct ext3_super_block, s_flags) == 0x160,
	       "s_flags");
_Static_assert(offsetof(struct ext3_super_block, s_error_count) == 0x194,
	       "s_error_count");
_Static_assert(offsetof(struct ext3_super_block, s_last_error_func) == 0x1E0,
	       "s_last_error_func");
_Static_assert(offsetof(struct ext3_super_block, s_first_error_errcode) == 0x27A,
	       "s_first_error_errcode");

/* Group descriptor: the table follows each superblock copy. */
struct ext3_group_desc {
	cm_le32_t bg_block_bitmap;		/* 0x00 block number */
	cm_le32_t bg_inode_bitmap;		/* 0x04 block number */
	cm_le32_t bg_inode_table;		/* 0x08 first block */
	cm_le16_t bg_free_blocks_count;		/* 0x0C */
	cm_le16_t bg_free_inodes_count;		/* 0x0E */
	cm_le16_t bg_used_dirs_count;		/* 0x10 */
	cm_le16_t bg_pad;			/* 0x12 */
	cm_le32_t bg_reserved[3];		/* 0x14 */
};

#define EXT3_DESC_SIZE	32
_Static_assert(sizeof(struct ext3_group_desc) == EXT3_DESC_SIZE,
	       "group descriptor is 32 bytes");
_Static_assert(offsetof(struct ext3_group_desc, bg_free_blocks_count) == 0x0C,
	       "bg_free_blocks_count");
_Static_assert(offsetof(struct ext3_group_desc, bg_used_dirs_count) == 0x10,
	       "bg_used_dirs_count");

/* Reserved inode numbers */
#define EXT3_BAD_INO		1	/* bad blocks */
#define EXT3_ROOT_INO		2
#define EXT3_ACL_IDX_INO	3	/* reserved */
#define EXT3_ACL_DATA_INO	4	/* reserved */
#define EXT3_BOOT_LOADER_INO	5
#define EXT3_UNDEL_DIR_INO	6
#define EXT3_RESIZE_INO		7	/* reserved GDT blocks */
#define EXT3_JOURNAL_INO	8
/* 9 and 10 are reserved too; s_first_ino (11) is lost+found on mke2fs. */

/* i_block[] slots */
#define EXT3_NDIR_BLOCKS	12
#define EXT3_IND_BLOCK		EXT3_NDIR_BLOCKS
#define EXT3_DIND_BLOCK		(EXT3_IND_BLOCK + 1)
#define EXT3_TIND_BLOCK		(EXT3_DIND_BLOCK + 1)
#define EXT3_N_BLOCKS		(EXT3_TIND_BLOCK + 1)

/* i_flags */
#define EXT3_SECRM_FL		0x00000001
#define EXT3_UNRM_FL		0x00000002
#define EXT3_COMPR_FL		0x00000004
#define EXT3_SYNC_FL		0x00000008
#define EXT3_IMMUTABLE_FL	0x00000010
#define EXT3_APPEND_FL		0x00000020
#define EXT3_NODUMP_FL		0x00000040
#define EXT3_NOATIME_FL		0x00000080
#define EXT3_INDEX_FL		0x00001000	/* htree directory */
#define EXT3_IMAGIC_FL		0x00002000
#define EXT3_JOURNAL_DATA_FL	0x00004000
#define EXT3_NOTAIL_FL		0x00008000
#define EXT3_DIRSYNC_FL		0x00010000
#define EXT3_TOPDIR_FL		0x00020000	/* Orlov top of hierarchy */
#define EXT3_RESERVED_FL	0x80000000
#define EXT3_FL_USER_VISIBLE	0x0003DFFF
#define EXT3_FL_USER_MODIFIABLE	0x000380FF

/* i_mode */
#define EXT3_S_IFMT	0xF000
#define EXT3_S_IFSOCK	0xC000
#define EXT3_S_IFLNK	0xA000
#define EXT3_S_IFREG	0x8000
#define EXT3_S_IFBLK	0x6000
#define EXT3_S_IFDIR	0x4000
#define EXT3_S_IFCHR	0x2000
#define EXT3_S_IFIFO	0x1000
#define EXT3_S_ISUID	0x0800
#define EXT3_S_ISGID	0x0400
#define EXT3_S_ISVTX	0x0200

/* Inode: 128-byte base, then i_extra_isize bytes when s_inode_size > 128. */
struct ext3_inode {
	cm_le16_t i_mode;			/* 0x00 */
	cm_le16_t i_uid;			/* 0x02 low 16 bits */
	cm_le32_t i_size;			/* 0x04 low 32 bits */
	cm_le32_t i_atime;			/* 0x08 */
	cm_le32_t i_ctime;			/* 0x0C */
	cm_le32_t i_mtime;			/* 0x10 */
	cm_le32_t i_dtime;			/* 0x14 next orphan while orphaned */
	cm_le16_t i_gid;			/* 0x18 low 16 bits */
	cm_le16_t i_links_count;		/* 0x1A */
	cm_le32_t i_blocks;			/* 0x1C 512-byte units */
	cm_le32_t i_flags;			/* 0x20 EXT3_*_FL */
	cm_le32_t i_osd1;			/* 0x24 */
	cm_le32_t i_block[EXT3_N_BLOCKS];	/* 0x28 block map */
	cm_le32_t i_generation;			/* 0x64 */
	cm_le32_t i_file_acl;			/* 0x68 xattr block */
	cm_le32_t i_size_high;			/* 0x6C ext3 i_dir_acl */
	cm_le32_t i_faddr;			/* 0x70 */
	uint8_t i_frag;				/* 0x74 osd2 (Linux) */
	uint8_t i_fsize;			/* 0x75 */
	cm_le16_t i_osd2_pad;			/* 0x76 */
	cm_le16_t i_uid_high;			/* 0x78 */
	cm_le16_t i_gid_high;			/* 0x7A */
	cm_le32_t i_osd2_reserved;		/* 0x7C */
	/* Large inodes only, each field present when i_extra_isize covers it
	 * (EXT3_INODE_FITS). The *_extra times: epoch bits 0-1, nanoseconds
	 * << 2, as ext4 encodes them (inode-svc/ext3fs/itime.c). */
	cm_le16_t i_extra_isize;		/* 0x80 */
	cm_le16_t i_pad1;			/* 0x82 */
	cm_le32_t i_ctime_extra;		/* 0x84 */
	cm_le32_t i_mtime_extra;		/* 0x88 */
	cm_le32_t i_atime_extra;		/* 0x8C */
	cm_le32_t i_crtime;			/* 0x90 creation time */
	cm_le32_t i_crtime_extra;		/* 0x94 */
};

/* True when an inode with i_extra_isize extra holds field f entirely. */
#define EXT3_INODE_FITS(extra, f) \
	(offsetof(struct ext3_inode, f) + sizeof(((struct ext3_inode *)0)->f) <= \
	 EXT3_GOOD_OLD_INODE_SIZE + (size_t)(extra))
#define EXT3_EXTRA_NSEC_SHIFT	2	/* *_extra: nanoseconds << 2 */
#define EXT3_EXTRA_EPOCH_MASK	3u	/* *_extra: epochs of 2^32 s */

_Static_assert(sizeof(struct ext3_inode) == EXT3_GOOD_OLD_INODE_SIZE + 24,
	       "ext3 inode is 128 bytes + the large-inode fields up to i_crtime_extra");
_Static_assert(offsetof(struct ext3_inode, i_ctime_extra) == 0x84,
	       "i_ctime_extra");
_Static_assert(offsetof(struct ext3_inode, i_crtime_extra) == 0x94,
	       "i_crtime_extra");
_Static_assert(offsetof(struct ext3_inode, i_flags) == 0x20, "i_flags");
_Static_assert(offsetof(struct ext3_inode, i_block) == 0x28, "i_block");
_Static_assert(offsetof(struct ext3_inode, i_generation) == 0x64,
	       "i_generation");
_Static_assert(offsetof(struct ext3_inode, i_size_high) == 0x6C,
	       "i_size_high");
_Static_assert(offsetof(struct ext3_inode, i_uid_high) == 0x78, "i_uid_high");
_Static_assert(offsetof(struct ext3_inode, i_extra_isize) ==
	       EXT3_GOOD_OLD_INODE_SIZE, "i_extra_isize");

/* Directory entry (with the filetype feature). */
#define EXT3_NAME_LEN		255
#define EXT3_DIR_PAD		4
#define EXT3_DIR_ROUND		(EXT3_DIR_PAD - 1)
#define EXT3_DIR_REC_LEN(name_len) \
	(((name_len) + 8 + EXT3_DIR_ROUND) & ~EXT3_DIR_ROUND)

struct ext3_dir_entry_2 {
	cm_le32_t inode;			/* 0x00 0 = unused entry */
	cm_le16_t rec_len;			/* 0x04 to the next entry */
	uint8_t name_len;			/* 0x06 */
	uint8_t file_type;			/* 0x07 EXT3_FT_... */
	char name[];				/* 0x08 not NUL-terminated */
};

_Static_assert(sizeof(struct ext3_dir_entry_2) == 8, "dirent header");
_Static_assert(offsetof(struct ext3_dir_entry_2, name) == 8, "dirent name");

/* file_type */
#define EXT3_FT_UNKNOWN		0
#define EXT3_FT_REG_FILE	1
#define EXT3_FT_DIR		2
#define EXT3_FT_CHRDEV		3
#define EXT3_FT_BLKDEV		4
#define EXT3_FT_FIFO		5
#define EXT3_FT_SOCK		6
#define EXT3_FT_SYMLINK		7
#define EXT3_FT_MAX		8

/*
 * htree (dir_index).  Block 0 of an indexed directory is a dx_root: "."
 * and a ".." whose rec_len hides the rest of the block, then the info and
 * the entries.  Interior blocks are dx_nodes: one empty dirent covering
 * the block, then the entries.  The first entry's hash field holds the
 * count/limit pair (struct ext3_dx_countlimit) instead of a hash.
 */
#define EXT3_DX_HASH_LEGACY		0
#define EXT3_DX_HASH_HALF_MD4		1
#define EXT3_DX_HASH_TEA		2
#define EXT3_DX_HASH_LEGACY_UNSIGNED	3
#define EXT3_DX_HASH_HALF_MD4_UNSIGNED	4
#define EXT3_DX_HASH_TEA_UNSIGNED	5
#define EXT3_DX_MAX_INDIRECT		1	/* ext3: root + one level */

struct ext3_fake_dirent {
	cm_le32_t inode;
	cm_le16_t rec_len;
	uint8_t name_len;
	uint8_t file_type;
};

struct ext3_dx_root_info {
	cm_le32_t reserved_zero;
	uint8_t hash_version;			/* EXT3_DX_HASH_... */
	uint8_t info_length;			/* 8 */
	uint8_t indirect_levels;
	uint8_t unused_flags;
};

struct ext3_dx_entry {
	cm_le32_t hash;
	cm_le32_t block;			/* directory-relative block */
};

struct ext3_dx_countlimit {
	cm_le16_t limit;			/* entries that fit */
	cm_le16_t count;			/* entries in use */
};

struct ext3_dx_root {
	struct ext3_fake_dirent dot;		/* 0x00 rec_len 12 */
	char dot_name[4];			/* 0x08 ".\0\0\0" */
	struct ext3_fake_dirent dotdot;		/* 0x0C rec_len bs - 12 */
	char dotdot_name[4];			/* 0x14 "..\0\0" */
	struct ext3_dx_root_info info;		/* 0x18 */
	struct ext3_dx_entry entries[];		/* 0x20 */
};

struct ext3_dx_node {
	struct ext3_fake_dirent fake;		/* inode 0, rec_len bs */
	struct ext3_dx_entry entries[];		/* 0x08 */
};

_Static_assert(sizeof(struct ext3_fake_dirent) == 8, "fake dirent");
_Static_assert(sizeof(struct ext3_dx_root_info) == 8, "dx_root_info");
_Static_assert(sizeof(struct ext3_dx_entry) == 8, "dx_entry");
_Static_assert(sizeof(struct ext3_dx_countlimit) == 4, "dx_countlimit");
_Static_assert(offsetof(struct ext3_dx_root, info) == 0x18, "dx_root info");
_Static_assert(offsetof(struct ext3_dx_root, entries) == 0x20,
	       "dx_root entries");
_Static_assert(offsetof(struct ext3_dx_node, entries) == 0x08,
	       "dx_node entries");

#endif /* EXT3_DISK_H */
