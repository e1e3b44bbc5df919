/*
 * ext3fs.h - libext3fs, the ext3 read core of inode-svc (prefix ino_).
 *
 * A pure library: no processes, no arena, no I/O of its own.  It reads fs
 * blocks through an ino_blksrc (inode-svc's buffer cache; a pread source in
 * the tests; a memory image in the fuzzer) and treats every byte it reads as
 * untrusted.  Corrupt structures give -EUCLEAN and one cm_warn() line naming
 * the inode and block; nothing asserts, reads out of bounds or loops without
 * a bound on them.
 *
 * Threads: an ino_fs is immutable after ino_fs_mount(), so any number of
 * threads may call these functions at once if the block source allows it.
 * Every get() the library makes is matched by one put() before it returns.
 */
#ifndef INO_EXT3FS_H
#define INO_EXT3FS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ondisk.h"

/*
 * Where blocks come from.  get() returns the bytes of fs block `blocknr`
 * (block_size bytes, aligned to at least 8 bytes), valid until
 * put(ctx, cookie); on failure it returns NULL with *err = -errno.  The
 * library never asks for a block at or beyond the superblock's block count,
 * except while reading the superblock itself (block 1024 / block_size).
 */
typedef struct ino_blksrc {
	const void *(*get)(void *ctx, uint64_t blocknr, void **cookie,
			   int *err);
	void (*put)(void *ctx, void *cookie);
	void *ctx;
	/*
	 * Size of the blocks get() returns: the fs block size, a power of two
	 * in [1024, 65536].  The source learns it before mounting (the cache
	 * is built for it); ino_fs_mount() refuses a superblock that says
	 * otherwise.  ino_probe_block_size() reads it from the raw bytes.
	 */
	uint32_t block_size;
	/*
	 * Optional (NULL: none): a hint that the listed blocks are about to
	 * be read, so the source can fetch them together. Errors are left to
	 * the get() that follows.
	 */
	void (*prefetch)(void *ctx, const uint64_t *blocks, size_t n);
} ino_blksrc;

/* A mounted filesystem (opaque): geometry, superblock copy, hash settings. */
typedef struct ino_fs ino_fs;

/*
 * Reads the block size from the 1024 bytes of a superblock (the bytes at
 * offset 1024 of the device).  Returns 0 and sets *ret, or -EUCLEAN if the
 * magic or the size field is bad.  For block sources that must know the
 * size before mounting.
 */
int ino_probe_block_size(const void *sb_bytes, uint32_t *ret);

/*
 * Reads and checks the superblock, the group descriptors and (with
 * has_journal) the journal superblock through the journal inode.
 * device_bytes is the device size (0 = unknown).  Returns 0 and sets *ret,
 * or:
 *   -EINVAL      src is incomplete or src->block_size is not a valid size;
 *   -EUCLEAN     a corrupt superblock, descriptor, journal inode or journal
 *                superblock, or a superblock whose block size is not
 *                src->block_size;
 *   -EOPNOTSUPP  an incompatible feature ext3d does not handle (extent,
 *                64bit, meta_bg, flex_bg, journal_dev...), a revision level
 *                above 1, or an unknown incompatible journal feature;
 *   -ENOMEM, or a get() error.
 * On failure `why` (may be NULL) holds one line saying which.
 */
int ino_fs_mount(const ino_blksrc *src, uint64_t device_bytes, ino_fs **ret,
		 char *why, size_t whylen);

/* Frees fs (NULL is fine).  Returns NULL. */
ino_fs *ino_fs_unmount(ino_fs *fs);

/* The geometry of a mounted fs (valid until unmount). */
const cm_ext3_geom *ino_fs_geom(const ino_fs *fs);
/* The largest file size the block map allows (ext3_max_size()). */
uint64_t ino_fs_max_size(const ino_fs *fs);
/* Who besides root may use the reserved blocks: the superblock's
 * s_def_resuid and s_def_resgid. */
void ino_fs_resid(const ino_fs *fs, uint32_t *uid, uint32_t *gid);
/* What an error on the fs leads to, from s_errors as the kernel reads it:
 * EXT3_ERRORS_CONTINUE, EXT3_ERRORS_PANIC, else EXT3_ERRORS_RO. */
uint16_t ino_fs_errors_behaviour(const ino_fs *fs);
/* Corruption met and cut around by an operation that goes on (a truncate
 * that drops a pointer to a block that is not a data block): noted for
 * the calling thread, taken (and cleared) by the dispatcher, which
 * records a filesystem error as for -EUCLEAN. */
void ino_fs_note_corrupt(void);
bool ino_fs_take_corrupt(void);

/* A decoded inode, host byte order. */
typedef struct ino_inode {
	uint32_t ino;
	uint16_t mode;		/* type and permission bits, EXT3_S_IF* */
	uint32_t uid, gid;	/* low and high halves joined */
	uint64_t size;		/* i_size_high counts for regular files only */
	int64_t atime, ctime, mtime;	/* seconds, 1901 to 2446 (itime.c) */
	uint32_t dtime;
	uint16_t links;
	uint64_t blocks512;	/* i_blocks: 512-byte units, indirect incl. */
	uint32_t flags;		/* EXT3_*_FL */
	uint32_t block[15];	/* i_block[], host order */
	uint32_t generation;
	uint32_t file_acl;	/* extended-attribute block, 0 = none */
	uint32_t atime_ns, ctime_ns, mtime_ns;	/* 0 without room for them */
	uint16_t extra_isize;	/* i_extra_isize: 0 on 128-byte inodes */
} ino_inode;

/* A time set from outside, made one fs's inodes hold, as the VFS's
 * timestamp_truncate: the seconds clamped (from -2^31 to 2^31-1 with
 * 128-byte inodes, else to 2446: the kernel's s_time_min, s_time_max),
 * the nanoseconds 0 at either end, on 128-byte inodes and when invalid. */
void ino_time_truncate(const ino_fs *fs, int64_t *sec, uint32_t *ns);

/*
 * Reads inode `ino`.  Returns 0 and fills *ret, or:
 *   -EINVAL   ino is 0 or above the inode count (a bad request);
 *   -ESTALE   the inode is not in use (links count 0), as ext3_iget says:
 *             a client's inode number that was since deleted;
 *   -EUCLEAN  a bad file type in i_mode, or a regular file, directory or
 *             symlink whose i_size is beyond the largest file the block
 *             size allows, as ext3_max_size() computes it (logged with
 *             the inode number);
 *   a get() error.
 */
int ino_inode_read(ino_fs *fs, uint32_t ino, ino_inode *ret);

/*
 * Same without the in-use check: also returns deleted and orphaned inodes
 * (links 0), for the orphan list and checkers.  Does not check the mode.
 */
int ino_inode_read_any(ino_fs *fs, uint32_t ino, ino_inode *ret);

/*
 * Maps logical block `lblk` of `in` through i_block[] (direct, IND, DIND,
 * TIND).  Returns 0 and sets *ret_pblk (0 = hole), or:
 *   -EINVAL   the inode has no block map (fast symlink, device, fifo,
 *             socket);
 *   -EFBIG    lblk is beyond what the triple-indirect map can address;
 *   -EUCLEAN  a block pointer outside [first_data_block, blocks_count)
 *             (logged with the inode and the block holding the pointer);
 *   a get() error.
 */
int ino_bmap(ino_fs *fs, const ino_inode *in, uint64_t lblk,
	     uint64_t *ret_pblk);
/* The same, and *ret_span: with a hole, the number of blocks from lblk on
 * that are a hole for the same missing pointer (an indirect block missing
 * makes all it would map one hole); 1 for a mapped block. */
int ino_bmap_span(ino_fs *fs, const ino_inode *in, uint64_t lblk,
		  uint64_t *ret_pblk, uint64_t *ret_span);

/*
 * Reads up to len bytes at off from a regular file or a directory, stopping
 * at i_size; holes read as zeros.  Returns the number of bytes read (0 at or
 * past the end), or -EINVAL (other file types), -EUCLEAN (a bad block
 * pointer or an i_size the block map cannot address), a get() error.  An
 * error after some bytes were read returns the short count instead; the
 * next call at the new offset returns the error.
 */
ssize_t ino_file_read(ino_fs *fs, const ino_inode *in, void *buf, size_t len,
		      uint64_t off);

/*
 * Called once per in-use directory entry with its inode number, file type
 * (EXT3_FT_*; EXT3_FT_UNKNOWN without the filetype feature or for an
 * unknown value), name (not NUL-terminated, valid during the call) and the
 * cookie of the entry after it.  A non-zero return stops the walk and is
 * returned by ino_dir_iterate().  It runs while the directory block is held
 * (one get() outstanding) and may call other ino_ functions.
 */
typedef int ino_dir_fn(void *ctx, uint32_t ino, uint8_t file_type,
		       const char *name, size_t namelen, uint64_t next_cookie);

/*
 * Walks the entries of directory `dir` linearly, block by block, from
 * `cookie` (a byte offset in the directory; 0 = start; an offset that is
 * not an entry boundary resumes at the first entry at or after it in that
 * block).  htree index blocks look empty and are skipped; "." and ".." are
 * included.  Returns 0 at the end of the directory, the callback's non-zero
 * value if it stopped the walk, or:
 *   -ENOTDIR  dir is not a directory;
 *   -EUCLEAN  a corrupt entry (rec_len, name_len, inode number), a hole in
 *             the directory or a size that is not a multiple of the block
 *             size (logged; the entries before it were delivered);
 *   a bmap or get() error.
 */
int ino_dir_iterate(ino_fs *fs, const ino_inode *dir, uint64_t cookie,
		    ino_dir_fn *fn, void *ctx);

/*
 * readdir: the entries of `dir` from `cookie` on, as ino_dir_iterate
 * delivers them, for a batch of about `batch` entries. An indexed
 * directory is listed in hash order with hash-position cookies (so a leaf
 * split between two batches neither repeats nor loses an entry), "." and
 * ".." first, reading only the leaves the batch needs; any other
 * directory, or one whose index root is corrupt, by byte offset
 * (ino_dir_iterate). Returns 0 once the directory is done, 1 (or the
 * callback's non-zero value) when the batch ended before, or an error as
 * ino_dir_iterate (-EUCLEAN too for an index found corrupt below its
 * root), or -ENOMEM. The caller keeps the directory from changing during
 * the call.
 */
int ino_dir_readdir(ino_fs *fs, const ino_inode *dir, uint64_t cookie, size_t batch,
		    ino_dir_fn *fn, void *ctx);

/*
 * Looks `name` up in `dir`.  Uses the htree index when the directory has
 * EXT3_INDEX_FL and the fs has dir_index; if the index is corrupt, logs it
 * and searches linearly (as ext3 does on ERR_BAD_DX_DIR).  Returns 0 and
 * sets *ret_ino, or:
 *   -ENOENT        no such entry (also for an empty name);
 *   -ENAMETOOLONG  namelen > 255;
 *   -ENOTDIR, -EUCLEAN, a get() error as for ino_dir_iterate().
 */
int ino_dir_lookup(ino_fs *fs, const ino_inode *dir, const char *name,
		   size_t namelen, uint32_t *ret_ino);

/*
 * The htree path of ino_dir_lookup() alone, without the linear fallback:
 * -EUCLEAN (logged) if the index is corrupt, -ENODATA if the directory is
 * not indexed (no EXT3_INDEX_FL or no dir_index), otherwise as
 * ino_dir_lookup().  For tests and checkers.
 */
int ino_dx_lookup(ino_fs *fs, const ino_inode *dir, const char *name,
		  size_t namelen, uint32_t *ret_ino);

/*
 * The htree hash (ext3fs_dirhash) of a name with this fs's seed.
 * version is EXT3_DX_HASH_* (0..5, the unsigned variants included).
 * Returns 0 and sets *ret_hash (bit 0 clear) and *ret_minor (may be NULL),
 * or -EINVAL for an unknown version.
 */
int ino_dirhash(const ino_fs *fs, unsigned version, const char *name,
		size_t namelen, uint32_t *ret_hash, uint32_t *ret_minor);

/*
 * Copies the target of symlink `in` into buf, at most len bytes, without a
 * NUL (like readlink(2)).  Fast symlinks (target in i_block[]: i_blocks
 * counts no data block, i.e. 0, or only the EA block with file_acl) and
 * slow ones (target in data block 0).  Returns the number of bytes copied,
 * or -EINVAL (not a symlink), -EUCLEAN (size 0, a fast target over 60
 * bytes, a slow one not shorter than a block, a hole), a get() error.
 */
ssize_t ino_readlink(ino_fs *fs, const ino_inode *in, char *buf, size_t len);

/*
 * The device number of a character or block device inode, in the Linux
 * 32-bit dev_t encoding (glibc's makedev(major, minor) for major < 4096;
 * read it with major()/minor()): the new encoding from i_block[1], or the
 * old 8:8 one from i_block[0] when that is non-zero.  0 for other types.
 */
uint32_t ino_rdev(const ino_inode *in);

struct ino_statfs {
	uint64_t blocks;	/* s_blocks_count */
	uint64_t overhead;	/* metadata blocks incl. journal (bsddf, as the kernel) */
	uint64_t bfree;		/* sum of the group descriptors' counts */
	uint64_t bavail;	/* bfree - reserved, not below 0 */
	uint64_t reserved;	/* s_r_blocks_count */
	uint64_t files;		/* s_inodes_count */
	uint64_t ffree;		/* sum of the group descriptors' counts */
	uint32_t bsize;
	uint32_t namemax;	/* 255 */
};

/*
 * Fills *ret, re-reading the group descriptors through the block source
 * (so it sees the allocator's current counts).  Returns 0, -EUCLEAN (a
 * descriptor count larger than its group, logged) or a get() error.
 */
int ino_statfs(ino_fs *fs, struct ino_statfs *ret);

#endif /* INO_EXT3FS_H */
