/*
 * internal_w.h - what the write side's files share: the raw inode slot and
 * the superblock held for change, the orphan list's lock and lookup, the
 * block freeing of truncation, and the directory block helpers the htree
 * code uses.
 */
#ifndef INO_INTERNAL_W_H
#define INO_INTERNAL_W_H

#include "ext3fs_w.h"
#include "internal.h"

/* One inode on the orphan list (fs->orphans). */
struct ino_orphan {
	uint32_t ino;
	uint32_t next;		/* the i_dtime it has on disk: the next one */
};

/*
 * inode_w.c: gets inode ino's inode-table block for change; *raw points
 * at its slot inside b->data.  Returns 0 (put b afterwards) or -errno.
 */
int ino_slot_get(ino_fs *fs, ino_txn *t, uint32_t ino, ino_wbuf *b,
		 struct ext3_inode **raw);

/* inode_w.c: gets the primary superblock's block for change; *sb points
 * at the superblock inside b->data. */
int ino_sb_get(ino_fs *fs, ino_txn *t, ino_wbuf *b, struct ext3_super_block **sb);

/* orphan.c: the entry of ino on the orphan list, or NULL.  Called with
 * fs->orphan_mtx held. */
struct ino_orphan *ino_orphan_find(ino_fs *fs, uint32_t ino);

/*
 * truncate.c: frees every block of in mapped at or past logical block
 * last, and the indirect blocks left mapping nothing, updating in's
 * i_block[] and blocks512 and writing in.  Restarts the transaction
 * (ino_txn_ensure) between steps, each leaving the map consistent: the
 * caller has put in on the orphan list if a restart must be safe.
 */
int ino_trunc_blocks(ino_fs *fs, ino_txn *t, ino_inode *in, uint64_t last);

/*
 * dir_w.c: the directory block helpers htree_w.c shares.
 *
 * ino_dirent_room looks through a block for a slot that takes an entry of
 * namelen (an unused entry, or the slack after one in use), as ext3's
 * add_dirent_to_buf: 1 and *ret_off, 0 when the block is full, -EEXIST
 * when name is in the block before the slot, -EUCLEAN (why says what).
 */
int ino_dirent_room(const ino_fs *fs, const uint8_t *block, const char *name,
		    size_t namelen, uint32_t *ret_off, char *why, size_t whylen);
/* Writes name -> ino (file type ftype) into the slot at off; -EUCLEAN if
 * the slot is not an entry with room for it. */
int ino_dirent_fill(const ino_fs *fs, uint8_t *block, uint32_t off, const char *name,
		    size_t namelen, uint32_t ino, uint8_t ftype);
/* Appends a block to dir (its size grows by one block; the caller writes
 * dir): allocated, held for change in *b as one unused entry covering it.
 * -ENOSPC when dir is at its largest. */
int ino_dir_append(ino_fs *fs, ino_txn *t, ino_inode *dir, uint32_t *ret_lblk,
		   ino_wbuf *b);
/* Gives back the blocks of dir from lblk on (appended by a failed add)
 * and sets its size to lblk blocks; writes dir. */
int ino_dir_unappend(ino_fs *fs, ino_txn *t, ino_inode *dir, uint32_t lblk);
/* Logs a corrupt directory block (the read side's wording). */
void ino_dir_warn(const ino_inode *dir, uint64_t blocknr, const char *why);

/*
 * htree_w.c: adds name through dir's index (ext3_dx_add_entry): 0,
 * INO_BAD_DX when the index is corrupt (logged; the caller clears
 * EXT3_INDEX_FL and adds linearly), -ENOSPC when the index is full, or
 * -errno.
 */
int ino_dx_add(ino_fs *fs, ino_txn *t, ino_inode *dir, const char *name, size_t namelen,
	       uint32_t ino, uint8_t ftype);
/*
 * htree_w.c: turns the one-block linear directory dir, whose block 0 (at
 * pblk0) is full, into an indexed one and adds name (make_indexed_dir):
 * 0, 1 when block 0 is not shaped for it or the default hash is unknown
 * (nothing changed: the caller appends a block instead), or -errno.
 */
int ino_dx_make(ino_fs *fs, ino_txn *t, ino_inode *dir, uint64_t pblk0, const char *name,
		size_t namelen, uint32_t ino, uint8_t ftype);

#endif /* INO_INTERNAL_W_H */
