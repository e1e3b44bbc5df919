/* recover.c - journald-svc at start: replays the filesystem's journal
 * through blockdev-svc if needs_recovery is set or the log is not empty,
 * before it says it is ready (and so before the services after it in the
 * compose file start), and logs what it did; a journal it cannot replay
 * stops it with the reason. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jd.h"
#include "layout.h"
#include "log.h"

#define JDS_BUF_BYTES 65536 /* the largest jd_dev transfer */

/* jd_dev over blockdev-svc: data passes through one arena buffer. */
typedef struct jds_dev {
	cm_bdev *bd;
	cm_off buf;
	void *bufp;
} jds_dev;

static int jds_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	jds_dev *d = ctx;
	int r;

	if (len > JDS_BUF_BYTES || off % CM_BD_SECTOR || len % CM_BD_SECTOR)
		return -EINVAL;
	r = cm_bdev_read(d->bd, off / CM_BD_SECTOR, (uint32_t)(len / CM_BD_SECTOR), d->buf);
	if (r == 0)
		memcpy(buf, d->bufp, len);
	return r;
}

static int jds_write(void *ctx, uint64_t off, const void *buf, size_t len)
{
	jds_dev *d = ctx;

	if (len > JDS_BUF_BYTES || off % CM_BD_SECTOR || len % CM_BD_SECTOR)
		return -EINVAL;
	memcpy(d->bufp, buf, len);
	return cm_bdev_write(d->bd, off / CM_BD_SECTOR, (uint32_t)(len / CM_BD_SECTOR), d->buf, 0);
}

static int jds_flush(void *ctx)
{
	jds_dev *d = ctx;

	return cm_bdev_flush(d->bd);
}

static int jd_dev_open(cm_arena *a, jd_dev *dev)
{
	jds_dev *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	d->buf = cm_arena_alloc_data(a, JDS_BUF_BYTES, 4096);
	if (!d->buf) {
		free(d);
		return -ENOMEM;
	}
	d->bufp = cm_arena_ptr(a, d->buf, JDS_BUF_BYTES);
	r = cm_bdev_open(a, &d->bd);
	if (r < 0) {
		free(d);
		return r;
	}
	*dev = (jd_dev){.read = jds_read, .write = jds_write, .flush = jds_flush, .ctx = d,
			.size = cm_bdev_sectors(d->bd) * CM_BD_SECTOR};
	return 0;
}

void jd_dev_close(jd_dev *dev)
{
	jds_dev *d = dev->ctx;

	if (!d)
		return;
	cm_bdev_close(d->bd);
	free(d);
	dev->ctx = NULL;
}

/* Publishes the replay's progress in the arena for status: the counts
 * first, so that a reader that sees the new pass never pairs it with
 * counts much older than its own. */
static void jds_progress(void *ctx, enum jd_pass pass, uint64_t done, uint64_t total)
{
	cm_recovery *rec = ctx;

	atomic_store(&rec->done, done);
	atomic_store(&rec->total, total);
	atomic_store(&rec->state, CM_RECOVERY_SCAN + (uint32_t)pass);
}

/* What the replay came to, kept for status; the state of one that had
 * nothing to do is left as a replay before this process's made it. */
static void jds_progress_done(cm_recovery *rec, const jd_recovery *info)
{
	if (!info->needed)
		return;
	atomic_store(&rec->done, info->log_blocks);
	atomic_store(&rec->total, info->log_blocks);
	atomic_store(&rec->blocks_written, info->blocks_written);
	atomic_store(&rec->state, CM_RECOVERY_DONE);
}

bool jd_device_read_only(const jd_svc *s)
{
	return atomic_load(&s->svc.layout->device.read_only) != 0;
}

int jds_replay(jd_svc *s)
{
	cm_recovery *rec = &s->svc.layout->recovery;
	jd_progress progress = {.fn = jds_progress, .ctx = rec};
	bool ro = jd_device_read_only(s);
	jd_recovery info;
	char why[256];
	int r;

	r = jd_dev_open(s->svc.arena, &s->dev);
	if (r == -ENOMEM)
		return cm_log_errno(r, "no arena space for an I/O buffer");
	if (r < 0)
		return cm_log_errno(r, "blockdev-svc: %m");
	r = jd_recover(&s->dev, ro ? JD_RECOVER_DRY_RUN : 0, &progress, &info, why, sizeof(why));
	if (r < 0)
		return cm_log_errno(r, "journal recovery failed: %s", why);
	if (ro && info.needed)
		return cm_log_errno(-EROFS, "the journal needs recovery and the device is "
				    "read-only: serve it writable once (or run ext3d-recover on "
				    "the image) first");
	jds_progress_done(rec, &info);
	if (!info.has_journal)
		cm_info("no journal: nothing to recover%s",
			info.recover_flag ? " (needs_recovery is set without a journal)" : "");
	else if (!info.needed)
		cm_info("journal clean (sequence %u): no recovery needed", info.first_tid);
	else
		cm_info("journal recovered: %u transactions replayed (tids %u..%u, %llu log "
			"blocks), %llu blocks written, %llu revoke records, %llu revoked "
			"blocks skipped; sequence now %u; log ended at %s",
			info.transactions, info.first_tid, info.end_tid - 1,
			(unsigned long long)info.log_blocks, (unsigned long long)info.blocks_written,
			(unsigned long long)info.revoke_records,
			(unsigned long long)info.revoked_skips, info.new_sequence, info.end_reason);
	return 0;
}
