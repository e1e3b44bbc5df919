/*
 * recovery.h - replay an ext3 journal at start (JBD semantics, JBD2 on-disk
 * format), the way the kernel and e2fsck do.
 *
 * The library reads and writes the filesystem through a jd_dev: three calls
 * (read, write, flush) at byte offsets, so that the same code runs on an
 * image file (tests, ext3d-recover) and through blockdev-svc (journald-svc).
 * Everything read is untrusted: a bad journal gives -EUCLEAN with a reason,
 * a torn or corrupt tail ends the log where the last whole transaction ends.
 * See docs/journal.md for the format and the passes.
 */
#ifndef JD_RECOVERY_H
#define JD_RECOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Block I/O for the library.  off and len are multiples of 512, len at most
 * 64 KiB; calls return 0 or -errno.  size is the device size in bytes
 * (0 = unknown).
 */
typedef struct jd_dev {
	int (*read)(void *ctx, uint64_t off, void *buf, size_t len);
	int (*write)(void *ctx, uint64_t off, const void *buf, size_t len);
	int (*flush)(void *ctx);
	void *ctx;
	uint64_t size;
} jd_dev;

/* What recovery found and did. */
typedef struct jd_recovery {
	bool has_journal;	/* has_journal set and the journal found */
	bool recover_flag;	/* needs_recovery was set */
	bool needed;		/* needs_recovery set or the log not empty */
	uint32_t log_start;	/* s_start as found (0 = empty) */
	uint32_t first_tid;	/* s_sequence as found */
	uint32_t end_tid;	/* first tid not replayed */
	uint32_t transactions;	/* complete transactions (end - first) */
	uint32_t new_sequence;	/* s_sequence written back */
	uint64_t log_blocks;	/* log blocks the complete ones occupy */
	uint64_t blocks_written;	/* home writes done by replay */
	uint64_t revoke_records;	/* records in the revoke blocks */
	uint64_t revoked_skips;	/* logged blocks not written: revoked */
	char end_reason[160];	/* why the scan stopped where it did */
} jd_recovery;

/* Scan and report only: write nothing. */
#define JD_RECOVER_DRY_RUN	0x1

/* The passes over the log, in order. */
enum jd_pass { JD_PASS_SCAN, JD_PASS_REVOKE, JD_PASS_REPLAY };

/* "scan", "revoke", "replay". */
const char *jd_pass_name(enum jd_pass pass);

/*
 * Optional progress report: fn is called at the start and the end of each
 * pass and every JD_PROGRESS_EVERY log blocks in between, with the log
 * blocks walked in the pass and its total.  The scan is what finds the end
 * of the log, so its total is 0 until its last call, where done and total
 * are the log blocks of the complete transactions.
 */
#define JD_PROGRESS_EVERY	256
typedef struct jd_progress {
	void (*fn)(void *ctx, enum jd_pass pass, uint64_t done, uint64_t total);
	void *ctx;
} jd_progress;

/*
 * Replays the journal of the ext3 filesystem on dev if its needs_recovery
 * flag is set or its log is not empty: scan, revoke and replay passes,
 * flush, journal superblock (s_sequence past every replayed transaction,
 * s_start = 0), flush, needs_recovery cleared, flush.  Fills *ret (may be
 * NULL).  Returns 0 (also when nothing was to do), -EUCLEAN with a reason
 * in why for a filesystem or journal it cannot use (unknown journal
 * features are named there), or an I/O error.  progress may be NULL.
 */
int jd_recover(const jd_dev *dev, unsigned flags, const jd_progress *progress,
	       jd_recovery *ret, char *why, size_t whylen);

/* A jd_dev over an open image file (pread/pwrite/fdatasync). */
int jd_dev_file(int fd, jd_dev *ret);

#endif /* JD_RECOVERY_H */
