/*
 * ext3fs_w.h - the write side of libext3fs (prefix ino_): inodes, file
 * block maps and data, truncation, the orphan list, directory entries and
 * the htree index, and the namespace operations built on them, each done
 * inside one journal transaction.
 *
 * The library changes blocks only through an ino_txn, which the embedding
 * provides (inode-svc/txn.c: a JBD handle on the shared buffer cache, and
 * alloc-svc for bitmaps and descriptors). It never allocates or frees a
 * block or an inode itself, and never writes a bitmap.
 *
 * Callers (inode-svc's handlers) hold the inode locks of every inode an
 * operation changes (ino_ilock, taken before the transaction starts: a
 * thread never waits for an inode lock while it holds a handle), check
 * permissions, and start the transaction with the credits the INO_CRED_*
 * helpers give. Functions here re-read the inodes they are given only when
 * they say so; an ino_inode passed in is the caller's copy, read under its
 * lock, and the functions that change it update that copy and write it
 * back with ino_inode_write.
 *
 * Errors are -errno; corrupt structures give -EUCLEAN (logged with the
 * inode and block, as the read side does). A failed operation may leave
 * changes in its transaction; the transaction still commits them as a
 * consistent whole (every function here leaves the on-disk structures
 * valid at each return), as ext3 does.
 */
#ifndef INO_EXT3FS_W_H
#define INO_EXT3FS_W_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ext3fs.h"

/* ---- the transaction (implemented by the embedding: inode-svc/txn.c) ---- */

typedef struct ino_txn ino_txn;

/* A block held for change inside a transaction. */
typedef struct ino_wbuf {
	uint8_t *data;          /* block_size bytes, writable */
	void *cookie;           /* the embedding's (a cm_bh) */
	uint64_t blocknr;
	bool data_block;        /* file data (ino_txn_get_data), not metadata */
} ino_wbuf;

/* A metadata block, read if needed, with write access. */
int ino_txn_get_write(ino_txn *t, uint64_t blocknr, ino_wbuf *b);
/* A metadata block just allocated: not read, zero-filled, create access. */
int ino_txn_get_new(ino_txn *t, uint64_t blocknr, ino_wbuf *b);
/* A file data block (or a symlink's slow target). fresh: just allocated,
 * so zero-filled instead of read; whole: the caller overwrites all of it,
 * so not read. In data=journal it is journalled like metadata; in ordered
 * mode it reaches home before the commit; in writeback it is only dirty. */
int ino_txn_get_data(ino_txn *t, uint64_t blocknr, bool fresh, bool whole, ino_wbuf *b);
/* Files the change (dirty_metadata, or as the data mode says). */
int ino_txn_dirty(ino_txn *t, ino_wbuf *b);
/* Gives the block back (accepts a zeroed ino_wbuf). */
void ino_txn_put(ino_txn *t, ino_wbuf *b);
/* A freed block: drops it from the transaction and, for metadata (and
 * data in data=journal), revokes it so replay never writes an old copy of
 * it over its next owner. */
int ino_txn_forget(ino_txn *t, uint64_t blocknr, bool metadata);
/* Makes sure the handle has credits more credits: extends it, or when the
 * transaction is full commits what it did so far and restarts in a new one
 * (returns 1 then; the caller's on-disk state must be consistent at that
 * point, as truncate's is with its orphan record). 0 when extended. */
int ino_txn_ensure(ino_txn *t, int credits);

/* Allocation, through alloc-svc inside this transaction (allocproto.h). */
int ino_txn_alloc_blocks(ino_txn *t, uint64_t goal, uint32_t want, uint64_t *first,
			 uint32_t *got);
int ino_txn_free_blocks(ino_txn *t, uint64_t first, uint32_t count);
int ino_txn_alloc_inode(ino_txn *t, uint32_t dir, uint16_t mode, uint32_t *ret);
int ino_txn_free_inode(ino_txn *t, uint32_t ino, uint16_t mode);

/* The transaction's clock: every time an operation sets is this one. */
struct timespec ino_txn_now(ino_txn *t);

/* ---- credits (ext3's rules of thumb, for one operation) ---- */

/* Blocks one inode change touches: its inode-table block. */
#define INO_CRED_INODE 1
/* Allocating one block for a file: bitmap + descriptor, and the indirect
 * blocks that may be made or changed on the way (three levels). */
#define INO_CRED_BLOCK 6
/* Allocating or freeing an inode: bitmap + descriptor. */
#define INO_CRED_IALLOC 2
/* The superblock (orphan list head). */
#define INO_CRED_SB 1
/* Adding a directory entry, at worst an htree split on two levels: the
 * leaf, the new leaf, the split index node, the new one and the root, two
 * block allocations (each with its map), the directory's inode. */
#define INO_CRED_DIR_ADD (5 + 2 * INO_CRED_BLOCK + INO_CRED_INODE)
/* Removing an entry: its block and the directory's inode. */
#define INO_CRED_DIR_DEL (1 + INO_CRED_INODE)

/* Starting a truncate or an inode delete: the tail block, the orphan list
 * (superblock, the inode, the one before it on the list), freeing the
 * inode and an xattr block; the functions extend the handle (or restart
 * it) with ino_txn_ensure for each step of block frees. */
#define INO_CRED_TRUNCATE (1 + INO_CRED_SB + 2 * INO_CRED_INODE + INO_CRED_IALLOC + 3)
/* Credits for writing len bytes at off of a file with blocks of bs. */
int ino_cred_write(const ino_fs *fs, uint64_t off, size_t len);

/* ---- inodes (inode_w.c) ---- */

/* Writes in back into its slot of the inode table (fields ino_inode does
 * not hold are kept; 256-byte inodes get the nanosecond times and
 * i_extra_isize). */
int ino_inode_write(ino_fs *fs, ino_txn *t, const ino_inode *in);
/* A newly allocated inode, zeroed in its slot and set up: mode, uid, gid,
 * times now, links 0, a new generation, i_extra_isize on large inodes;
 * *ret gets it (not written yet: the caller sets links and writes it). */
int ino_inode_new(ino_fs *fs, ino_txn *t, uint32_t ino, uint16_t mode, uint32_t uid,
		  uint32_t gid, ino_inode *ret);
/* Records an error in the superblock, as ext4's save_error_info: sets
 * s_state's ERROR_FS, counts it in s_error_count, and keeps its time,
 * inode, function name and code (EFSCORRUPTED) as the last error, and as
 * the first if none was recorded before. */
int ino_sb_error(ino_fs *fs, ino_txn *t, const char *func, uint32_t ino);
/* Sets ctime (and mtime when mtime is true) to the transaction's time. */
void ino_inode_touch(ino_txn *t, ino_inode *in, bool mtime);

/* ---- file blocks and data (bmap_w.c, file_w.c) ---- */

/* Maps lblk, allocating it (and the indirect blocks that lead to it) if it
 * is a hole: up to want blocks in a row, placed after the file's previous
 * block (ext3's goal). *ret_pblk, *ret_count (1 <= count <= want, all
 * new or all old), *ret_fresh (newly allocated). in's i_block and blocks
 * are updated in the caller's copy (the caller writes it). -EFBIG past
 * the triple-indirect map, -ENOSPC. */
int ino_bmap_alloc(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t lblk, uint32_t want,
		   uint64_t *ret_pblk, uint32_t *ret_count, bool *ret_fresh);
/* Writes len bytes at off (allocating, holes kept elsewhere), growing
 * i_size, setting mtime and ctime, in the caller's copy, then writes the
 * inode. Returns bytes written: short only when the transaction cannot
 * hold more (the caller continues in a new one) or on -ENOSPC after some
 * bytes. -EFBIG at or past the largest file size. */
ssize_t ino_file_write(ino_fs *fs, ino_txn *t, ino_inode *in, const void *buf, size_t len,
		       uint64_t off);

/* ---- truncation and the orphan list (truncate.c, orphan.c) ---- */

/* Sets i_size to size: shrinking frees the blocks past it (data, then the
 * indirect blocks that no longer map anything) and zeroes the tail of the
 * last partial block; growing leaves a hole. A shrink that does not fit
 * one transaction puts the inode on the orphan list first, restarts the
 * transaction as often as needed (ino_txn_ensure), and takes it off at the
 * end, as ext3_truncate does: a crash in between is finished by recovery.
 * Sets mtime and ctime when the size changes; writes the inode. */
int ino_truncate(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t size);
/* Punches a hole at [off, off + len) (fallocate's PUNCH_HOLE with
 * KEEP_SIZE, as ext3 on the ext4 driver does it): frees the blocks wholly
 * inside it, up to the block holding i_size at most (and the indirect
 * blocks left mapping nothing), zeroes the bytes of the partial blocks at
 * its ends; the size stays; sets mtime and ctime (a hole at or past
 * i_size too, as the kernel does) and writes the inode. Restarts the transaction
 * between steps as ino_truncate does. -EOPNOTSUPP without a block map. */
int ino_punch(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t off, uint64_t len);
/* Checks the part of in's block map that a truncate to logical block last
 * (0: a delete) frees, before anything changes (mapcheck.c): every pointer
 * a data or indirect block inside the filesystem, none named twice; for a
 * delete, the inode's bit set in an inode bitmap whose padding is set. 0, or
 * -EUCLEAN (logged with the inode and block). ino_truncate and
 * ino_inode_delete call it first; a caller that must not change anything
 * else when the free would fail (an unlink, before it drops the name)
 * calls it too. */
int ino_map_check(ino_fs *fs, const ino_inode *in, uint64_t last);
/* Frees an inode whose links reached 0 and that nobody holds open: its
 * blocks (truncate to 0), then the inode itself (dtime set). in is on the
 * orphan list or not; it is taken off. */
int ino_inode_delete(ino_fs *fs, ino_txn *t, ino_inode *in);
/* The superblock's orphan list (s_last_orphan, chained through i_dtime):
 * add puts in at the head (no-op if it is on it), del takes it off (no-op
 * if it is not). Both write in. Serialised inside the library by a
 * process-private lock (the list is one chain). */
int ino_orphan_add(ino_fs *fs, ino_txn *t, ino_inode *in);
int ino_orphan_del(ino_fs *fs, ino_txn *t, ino_inode *in);
/* At start, before clients attach: walks the orphan list and, for each
 * inode, deletes it (links 0) or finishes its truncate to i_size (links >
 * 0), each in its own transaction made by start(ctx). Returns how many it
 * processed. Bounded by the inode count (a cycle is -EUCLEAN). */
int ino_orphans_process(ino_fs *fs, ino_txn *(*start)(void *ctx, int credits),
			int (*stop)(void *ctx, ino_txn *t), void *ctx);

/* ---- directories (dir_w.c, htree_w.c) ---- */

/* Adds the entry name -> ino (file type from mode) to dir, which the
 * caller checked has no such name: in the first block with room, else a
 * new block at the end (dir's size grows); an indexed directory gets the
 * entry through its htree, splitting a full leaf (or, where ext3 would,
 * the index flag is cleared); a one-block directory whose block is full
 * is indexed when the fs has dir_index. Sets dir's mtime and ctime and
 * writes dir. -ENOSPC (no block, or a full two-level index), -EEXIST (the
 * name found on the way), -EINVAL ("." or ".."), -ENAMETOOLONG; -EMLINK
 * never (the caller checks links). */
int ino_dir_add(ino_fs *fs, ino_txn *t, ino_inode *dir, const char *name, size_t namelen,
		uint32_t ino, uint16_t mode);
/* Removes the entry name, merging its space into the entry before it (or
 * clearing its inode when it is first in its block); *ret_ino gets the
 * inode it named. Sets dir's mtime and ctime and writes dir. -ENOENT. */
int ino_dir_remove(ino_fs *fs, ino_txn *t, ino_inode *dir, const char *name,
		   size_t namelen, uint32_t *ret_ino);
/* Points the existing entry name at ino (rename over a file): the file type
 * from mode. Sets dir's mtime and ctime and writes dir. -ENOENT. */
int ino_dir_retarget(ino_fs *fs, ino_txn *t, ino_inode *dir, const char *name,
		     size_t namelen, uint32_t ino, uint16_t mode);
/* A new directory's first block with "." and ".." (parent); sets size to
 * one block. The caller writes newdir after setting its links; its
 * transaction holds INO_CRED_BLOCK + 1 for this. */
int ino_dir_init(ino_fs *fs, ino_txn *t, ino_inode *newdir, uint32_t parent);
/* 1 if dir holds only "." and "..", 0 if not, or -errno. */
int ino_dir_is_empty(ino_fs *fs, const ino_inode *dir);
/* Points dir's ".." at parent (a directory moved by rename). */
int ino_dir_set_parent(ino_fs *fs, ino_txn *t, ino_inode *dir, uint32_t parent);
/* The inode ".." names in dir. */
int ino_dir_parent(ino_fs *fs, const ino_inode *dir, uint32_t *ret);

/* ---- symlinks (symlink_w.c) ---- */

/* Stores target (len bytes, 1 <= len < block size) in a new symlink's
 * inode: in i_block when it fits (fast, len < 60), else in a data block
 * (slow). Sets size. The caller writes the inode. */
int ino_symlink_store(ino_fs *fs, ino_txn *t, ino_inode *in, const char *target,
		      size_t len);

#endif /* INO_EXT3FS_W_H */
