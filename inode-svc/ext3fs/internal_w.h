/*
 * internal_w.h - what the write side's files share: the raw inode slot and
 * the superblock held for change, the orphan list's lock and lookup, and
 * the block freeing of truncation.
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

#endif /* INO_INTERNAL_W_H */
