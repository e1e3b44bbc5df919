/* sbcounts.c - the superblock's s_free_blocks_count and
 * s_free_inodes_count: the exact sums of alloc-svc's fuzzy counters
 * (allocproto.h, cm_alloc_shared at layout->alloc), written into the
 * cached superblock inside each transaction as it commits (the journal's
 * pre-commit hook, when no handle runs in it, so the counts match the
 * group descriptors that transaction commits), and at clean shutdown if
 * they still differ (an image whose counts were stale when it came, and
 * on which nothing was allocated), in a last handle of their own.
 * Runs on the commit thread; takes the counter locks (cm_fc_sum) alone. */
#include <errno.h>

#include "allocproto.h"
#include "byteorder.h"
#include "commit.h"
#include "ext3_disk.h"
#include "jd.h"
#include "log.h"

/* alloc-svc's counters, or NULL before it made them. */
static cm_alloc_shared *jd_alloc_shared(jd_svc *s)
{
	cm_off off = atomic_load_explicit(&s->svc.layout->alloc, memory_order_acquire);
	cm_alloc_shared *as = off ? cm_arena_ptr(s->svc.arena, off, sizeof(*as)) : NULL;

	return as && as->magic == CM_AL_MAGIC ? as : NULL;
}

/* The exact free counts, clamped to what the superblock holds. */
static int jd_free_sums(jd_svc *s, uint32_t *blocks, uint32_t *inodes)
{
	cm_alloc_shared *as = jd_alloc_shared(s);
	cm_lockset *ls = &s->svc.layout->locks;
	int64_t b, i;
	int r;

	if (!as)
		return -ENOENT;
	if ((r = cm_fc_sum(ls, &as->free_blocks, &b)) < 0 ||
	    (r = cm_fc_sum(ls, &as->free_inodes, &i)) < 0)
		return r;
	*blocks = b < 0 ? 0 : b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
	*inodes = i < 0 ? 0 : i > UINT32_MAX ? UINT32_MAX : (uint32_t)i;
	return 0;
}

static struct ext3_super_block *jd_sb_of(jd_svc *s, cm_bh *bh)
{
	return (void *)((char *)cm_bh_data(s->cache, bh) + s->jc->j->fs_sb_offset);
}

static bool jd_sb_counts_equal(struct ext3_super_block *sb, uint32_t blocks, uint32_t inodes)
{
	return cm_le32(sb->s_free_blocks_count) == blocks && cm_le32(sb->s_free_inodes_count) == inodes;
}

static void jd_sb_counts_set(struct ext3_super_block *sb, uint32_t blocks, uint32_t inodes)
{
	cm_set_le32(&sb->s_free_blocks_count, blocks);
	cm_set_le32(&sb->s_free_inodes_count, inodes);
}

/* The pre-commit hook (jbd_set_precommit): journals the superblock only
 * when its counts changed. */
static void jd_sbcounts_precommit(void *ctx, jbd_ctx *jc, jbd_handle *h)
{
	jd_svc *s = ctx;
	uint32_t blocks, inodes;
	cm_bh *bh;
	int r;

	if (jd_free_sums(s, &blocks, &inodes) < 0)
		return; /* no alloc-svc yet: nothing allocated */
	r = cm_bcache_read(s->cache, s->bd, jc->j->fs_sb_block, &bh);
	if (r < 0) {
		cm_log_errno(r, "reading the superblock for its free counts: %m, ignoring");
		return;
	}
	if (!jd_sb_counts_equal(jd_sb_of(s, bh), blocks, inodes)) {
		r = jbd_get_write_access(jc, h, bh);
		if (r == 0) {
			jd_sb_counts_set(jd_sb_of(s, bh), blocks, inodes);
			r = jbd_dirty_metadata(jc, h, bh);
		}
		if (r < 0)
			cm_log_errno(r, "journalling the superblock's free counts: %m, ignoring");
	}
	cm_bcache_put(s->cache, bh);
}

void jd_sbcounts_start(jd_svc *s)
{
	jbd_set_precommit(s->jc, jd_sbcounts_precommit, s);
}

int jd_sbcounts_shutdown(jd_svc *s)
{
	uint32_t blocks, inodes;
	jbd_handle *h;
	cm_bh *bh;
	int r, r2;

	if (jd_free_sums(s, &blocks, &inodes) < 0)
		return 0;
	r = cm_bcache_read(s->cache, s->bd, s->jc->j->fs_sb_block, &bh);
	if (r < 0)
		return r;
	if (jd_sb_counts_equal(jd_sb_of(s, bh), blocks, inodes))
		goto out;
	/* The log is empty (see jd.h): this start never waits for the
	 * commit thread, which is this one. */
	r = jbd_start(s->jc, 1, &h);
	if (r < 0)
		goto out;
	r = jbd_get_write_access(s->jc, h, bh);
	if (r == 0) {
		jd_sb_counts_set(jd_sb_of(s, bh), blocks, inodes);
		r = jbd_dirty_metadata(s->jc, h, bh);
	}
	r2 = jbd_stop(s->jc, h);
	r = r < 0 ? r : r2;
	if (r == 0)
		cm_info("superblock: %u free blocks, %u free inodes", blocks, inodes);
out:
	cm_bcache_put(s->cache, bh);
	return r;
}
