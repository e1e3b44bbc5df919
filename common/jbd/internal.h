/*
 * internal.h - what the recovery files share: the journal as found on the
 * device (jmap.c) and the revoke table (rtable.c).
 */
#ifndef JD_INTERNAL_H
#define JD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ondisk.h"
#include "recovery.h"

/* The journal of one filesystem, located and checked by jd_log_open(). */
typedef struct jd_log {
	const jd_dev *dev;
	uint32_t bs;			/* fs and journal block size */
	uint32_t fs_blocks;		/* s_blocks_count */
	uint32_t *map;			/* journal block -> fs block, maxlen */
	uint32_t *sorted;		/* map's blocks in ascending order */
	uint32_t first;			/* s_first */
	uint32_t maxlen;		/* s_maxlen: one past the last block */
	uint32_t start;			/* s_start, 0 = empty */
	uint32_t sequence;		/* s_sequence */
	bool recover_flag;		/* needs_recovery set in the fs */
	bool has_journal;		/* false: nothing below is set */
} jd_log;

/*
 * Reads and checks the ext3 superblock, finds the journal inode, maps its
 * blocks (no holes, every block inside the filesystem), reads and checks
 * the journal superblock and its features.  A filesystem without a journal
 * gives 0 with has_journal false.
 */
int jd_log_open(const jd_dev *dev, jd_log *log, char *why, size_t whylen);
void jd_log_close(jd_log *log);
/* True if fs block blk is one of the journal's. */
bool jd_log_contains(const jd_log *log, uint32_t blk);
/* Reads journal block lblk (< maxlen) into buf (bs bytes). */
int jd_log_read(const jd_log *log, uint32_t lblk, void *buf);
int jd_log_write(const jd_log *log, uint32_t lblk, const void *buf);
/* Reads or writes the 1024-byte ext3 superblock. */
int jd_super_read(const jd_dev *dev, struct ext3_super_block *sb);
int jd_super_write(const jd_dev *dev, const struct ext3_super_block *sb);

/* Revoke table: home block -> the latest transaction that revoked it. */
typedef struct jd_rtable {
	struct jd_rentry *slots;	/* open addressing, linear probing */
	uint32_t nslots;		/* a power of two, or 0 */
	uint32_t used;
} jd_rtable;

void jd_rtable_init(jd_rtable *t);
void jd_rtable_free(jd_rtable *t);
/* Records that tid revokes blk, keeping the later tid. */
int jd_rtable_set(jd_rtable *t, uint32_t blk, uint32_t tid);
/* True if blk was revoked by tid or a later transaction. */
bool jd_rtable_revoked(const jd_rtable *t, uint32_t blk, uint32_t tid);

/* Transaction ids wrap: compare them by signed difference. */
static inline bool jd_tid_gt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

#endif /* JD_INTERNAL_H */
