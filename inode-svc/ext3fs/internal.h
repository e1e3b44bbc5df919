/*
 * internal.h - what libext3fs's files share: the ino_fs fields, the block
 * get/put wrappers, the directory-entry checks and the hash helpers.
 *
 * Every ino_fs field is [immutable]: set by ino_fs_mount() before the fs is
 * returned, never written after, so no lock protects them; the write
 * side's orphan list is the one exception and names its lock.
 */
#ifndef INO_INTERNAL_H
#define INO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ext3fs.h"
#include "ondisk.h"

/* ext4's metadata_csum (ro_compat): dx blocks end in an 8-byte tail. */
#define INO_RO_COMPAT_METADATA_CSUM	0x0400
#define INO_DX_TAIL_SIZE		8

/* htree frames: the root and at most one level of nodes (ext3). */
#define INO_DX_MAX_LEVELS	(EXT3_DX_MAX_INDIRECT + 1)

struct ino_fs {
	ino_blksrc src;				/* [immutable] */
	cm_ext3_geom geom;			/* [immutable] */
	struct ext3_super_block sb;		/* copy at mount [immutable] */
	uint32_t *itable;			/* per group [immutable] */
	uint32_t *bbitmap, *ibitmap;		/* per group, at mount [immutable] */
	struct ino_run *journal_runs;		/* the journal's data blocks, sorted [immutable] */
	uint32_t njournal_runs;			/* [immutable] */
	uint32_t addr_per_block;		/* block pointers per block */
	unsigned addr_bits;			/* log2(addr_per_block) */
	uint32_t first_ino;			/* first non-reserved inode */
	uint32_t journal_blocks;		/* internal journal's length, 0 without [immutable] */
	uint64_t max_size;			/* largest i_size, ext3_max_size() [immutable] */
	uint32_t hash_seed[4];			/* host order [immutable] */
	bool hash_unsigned;			/* s_flags, signed if unset */
	bool has_filetype;
	bool has_dir_index;
	bool has_csum_tail;			/* metadata_csum: dx tail */
	/* The orphan list in memory (orphan.c): the inodes on it, head
	 * first, each with the next inode its i_dtime names on disk. */
	pthread_mutex_t orphan_mtx;
	struct ino_orphan *orphans;		/* [orphan_mtx] */
	uint32_t norphans, orphans_cap;		/* [orphan_mtx] */
	_Atomic uint32_t orphans_any;		/* [orphan_mtx] to write; norphans */
};

/* Blocks [start, start + len). */
struct ino_run {
	uint32_t start, len;
};

/* A block held through the source; put it back with ino_blk_put(). */
typedef struct ino_buf {
	const uint8_t *data;			/* block_size bytes */
	void *cookie;
	uint64_t blocknr;
} ino_buf;

/*
 * Gets fs block `blocknr`.  The caller has checked that it is inside the
 * fs; a block beyond blocks_count still gives -EUCLEAN here, unlogged.
 * Returns 0 or -errno; on success the block must be put.
 */
int ino_blk_get(ino_fs *fs, uint64_t blocknr, ino_buf *b);
void ino_blk_put(ino_fs *fs, ino_buf *b);

/* True if blocknr may be a data or metadata block: [first_data, count). */
static inline bool ino_blk_valid(const ino_fs *fs, uint64_t blocknr)
{
	return blocknr >= fs->geom.first_data_block &&
	       blocknr < fs->geom.blocks_count;
}

/* True if blocknr is the filesystem's own: the primary superblock and
 * descriptors, a group's bitmaps or inode table as the descriptors named
 * them at mount, a block of the internal journal (the kernel's "system
 * zone"). A file that maps one is corrupt, and freeing it would hand it
 * out. */
bool ino_blk_system(const ino_fs *fs, uint64_t blocknr);

/* A block a file may map and a truncate may free. */
static inline bool ino_blk_data(const ino_fs *fs, uint64_t blocknr)
{
	return ino_blk_valid(fs, blocknr) && !ino_blk_system(fs, blocknr);
}

static inline bool ino_is_type(const ino_inode *in, uint16_t type)
{
	return (in->mode & EXT3_S_IFMT) == type;
}

/* True for inodes whose i_block[] is a block map (not a fast symlink). */
bool ino_has_block_map(const ino_fs *fs, const ino_inode *in);

/* bmap.c: splits lblk into the i_block[] slot and the index inside each
 * indirect level.  Returns the depth (0 = direct) or -EFBIG. */
int ino_block_to_path(const ino_fs *fs, uint64_t lblk, unsigned path[4]);

/* inode.c: decodes raw on-disk inode bytes into *ret. */
/* itime.c: a time's seconds and nanoseconds from i_[acm]time or i_crtime
 * and its *_extra field (NULL where i_extra_isize does not cover it). */
int64_t ino_time_decode(cm_le32_t sec, const cm_le32_t *extra, uint32_t *ret_ns);
/* The reverse; with ret_extra NULL the seconds are clamped to 32 bits. */
void ino_time_encode(int64_t sec, uint32_t ns, cm_le32_t *ret_sec, cm_le32_t *ret_extra);
void ino_inode_decode(const struct ext3_inode *raw, uint32_t ino,
		      ino_inode *ret);

/* inode.c: the inode-table block holding inode ino (0 if out of range). */
uint64_t ino_inode_blocknr(const ino_fs *fs, uint32_t ino);

/* symlink.c: true for a symlink whose target sits in i_block[]. */
bool ino_is_fast_symlink(const ino_fs *fs, const ino_inode *in);

/* rec_len as stored; 64 KiB blocks keep 65536 as 0 or 65535 (ext4). */
static inline uint32_t ino_rec_len_decode(uint16_t v, uint32_t bs)
{
	if (bs < 65536)
		return v;
	if (v == 65535 || v == 0)
		return 65536;
	return (v & 65532) | (uint32_t)(v & 3) << 16;
}

/* rec_len to store: 65536 (a whole 64 KiB block) as 65535, as ext3. */
static inline uint16_t ino_rec_len_encode(uint32_t len)
{
	return len >= 65536 ? 65535 : (uint16_t)len;
}

/* A checked directory entry, host order; name points into the block. */
typedef struct ino_dirent {
	uint32_t ino;			/* 0 = unused entry */
	uint32_t rec_len;		/* decoded, >= 8, fits the block */
	uint8_t name_len;
	uint8_t file_type;		/* EXT3_FT_UNKNOWN if not known */
	const char *name;
} ino_dirent;

/*
 * dir.c: decodes and checks the entry at byte `off` of a directory block
 * (rec_len, name_len, inode number).  Returns 0, or -EUCLEAN with the
 * reason in why.  Never logs: the caller names the inode and block.
 */
int ino_dirent_parse(const ino_fs *fs, const uint8_t *block, uint32_t off,
		     ino_dirent *ret, char *why, size_t whylen);

/* dir.c: delivers the in-use entries of directory block lblk (held in b)
 * that start at or after byte boff, as ino_dir_iterate does. */
int ino_dir_walk_block(const ino_fs *fs, const ino_inode *dir, const ino_buf *b,
		       uint64_t lblk, uint32_t boff, ino_dir_fn *fn, void *ctx);

/*
 * dir.c: searches one directory block for name.  Returns 1 and sets
 * *ret_ino when found, 0 when not, -EUCLEAN with the reason in why.
 */
int ino_dirblock_search(const ino_fs *fs, const uint8_t *block,
			const char *name, size_t namelen, uint32_t *ret_ino,
			char *why, size_t whylen);

/*
 * dir.c: gets logical block lblk of directory dir; a hole is corruption
 * (-EUCLEAN, logged).  Returns 0 or -errno; on success the block must be
 * put.
 */
int ino_dir_block_get(ino_fs *fs, const ino_inode *dir, uint64_t lblk,
		      ino_buf *b);

/* dir.c: a directory's block count; -ENOTDIR, or -EUCLEAN (logged). */
int64_t ino_dir_nblocks(const ino_fs *fs, const ino_inode *dir);

/* The checks every lookup makes first: dir is a directory (-ENOTDIR), the
 * name is not empty (-ENOENT) nor too long (-ENAMETOOLONG). */
int ino_lookup_args(const ino_inode *dir, size_t namelen);

/* dir.c: the linear lookup of ino_dir_lookup(). */
int ino_dir_lookup_linear(ino_fs *fs, const ino_inode *dir, const char *name,
			  size_t namelen, uint32_t *ret_ino);

/*
 * htree.c: the index lookup.  Returns 0 (found), -ENOENT, -errno for a
 * block that cannot be read, or INO_BAD_DX with the index problem in
 * *bad (not logged): the caller logs and may search linearly.
 */
#define INO_BAD_DX	1
typedef struct ino_dx_bad {
	uint64_t blk;
	char why[128];
} ino_dx_bad;

/* One index block on a lookup path (ext3's dx_frame). */
typedef struct ino_dx_frame {
	ino_buf b;
	const struct ext3_dx_entry *entries;	/* [0] holds count/limit */
	uint32_t off;				/* of entries in the block */
	uint32_t count;				/* checked: 1..limit */
	uint32_t limit;
	uint32_t at;				/* entry followed */
} ino_dx_frame;

/* The path dx_probe walks from the root to a leaf for one hash. */
typedef struct ino_dx_path {
	ino_dx_frame frames[INO_DX_MAX_LEVELS];
	unsigned levels;			/* frames in use: 1 or 2 */
	unsigned version;			/* hash version, unsigned ones included */
	uint32_t hash;				/* of the name probed */
	uint64_t nblocks;			/* the directory's blocks */
} ino_dx_path;

/*
 * htree.c: dx_probe: hashes name with the root's version and reads the
 * index blocks down to the one that points at the name's leaf.  Returns 0,
 * INO_BAD_DX (*bad says why) or -errno; put the path with ino_dx_put()
 * whatever it returns.
 */
int ino_dx_probe(ino_fs *fs, const ino_inode *dir, const char *name,
		 size_t namelen, ino_dx_path *p, ino_dx_bad *bad);
void ino_dx_put(ino_fs *fs, ino_dx_path *p);
/* htree.c: ino_dx_probe for a hash instead of a name (name NULL). */
int ino_dx_probe_hash(ino_fs *fs, const ino_inode *dir, const char *name,
		      size_t namelen, uint32_t hash, ino_dx_path *p, ino_dx_bad *bad);
/* htree.c: moves the path to the next leaf in hash order, whatever its
 * hash: 0, -ENOENT after the last, INO_BAD_DX or -errno. */
int ino_dx_next_leaf(ino_fs *fs, const ino_inode *dir, ino_dx_path *p, ino_dx_bad *bad);
/* htree.c: the index hash at which the leaf after the path's starts (its
 * bit 0 set when that leaf continues a collision run): false after the
 * last leaf. */
bool ino_dx_next_start(const ino_dx_path *p, uint32_t *ret_hash);
/* htree.c: the leaf the path's last frame points at: 0 or INO_BAD_DX. */
int ino_dx_leaf(const ino_dx_path *p, uint32_t *ret_lblk, ino_dx_bad *bad);
/* htree.c: an index entry's hash and (24-bit) block. */
uint32_t ino_dx_hash_at(const ino_dx_frame *f, uint32_t i);
uint32_t ino_dx_block_at(const ino_dx_frame *f, uint32_t i);
/* htree.c: the entries a dx_root (info_length 8) and a dx_node hold. */
uint32_t ino_dx_root_limit(const ino_fs *fs);
uint32_t ino_dx_node_limit(const ino_fs *fs);

/* htree.c: the lookup; *ret_leaf (may be NULL) gets the leaf block that
 * holds the name. */
int ino_dx_find(ino_fs *fs, const ino_inode *dir, const char *name,
		size_t namelen, uint32_t *ret_ino, uint32_t *ret_leaf,
		ino_dx_bad *bad);

/* htree.c: the directory has an index ext3 would use. */
bool ino_is_dx(const ino_fs *fs, const ino_inode *dir);

/* dirhash.c: ext3fs_dirhash; -EINVAL for an unknown version. */
int ino_hash(unsigned version, const uint32_t seed[4], const char *name,
	     size_t namelen, uint32_t *ret_hash, uint32_t *ret_minor);

#endif /* INO_INTERNAL_H */
