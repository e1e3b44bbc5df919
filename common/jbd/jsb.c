/*
 * jsb.c - the journal's control words on disk at run time: the journal
 * superblock (log block 0: s_start, s_sequence, the REVOKE feature) and
 * needs_recovery (INCOMPAT_RECOVER) in the ext3 superblock. Each write is
 * flushed before the call returns, so the caller can order the next write
 * after it (commit.h lists the orderings). The ext3 superblock is changed
 * in its cached buffer, never behind the cache's back. Called by the
 * commit thread only, holding no journal lock.
 */
#include <errno.h>
#include <string.h>

#include "byteorder.h"
#include "commit.h"
#include "ext3_disk.h"
#include "jbd2_disk.h"
#include "runtime.h"

int jbd_log_read(jbd_ctx *jc, cm_bdev *bd, uint32_t lblk, uint32_t ci)
{
	uint32_t spb = jc->j->block_size / CM_BD_SECTOR;

	if (lblk >= jc->j->j_last)
		return -EINVAL;
	return cm_bdev_read(bd, (uint64_t)jc->logmap[lblk] * spb, spb, jbd_copy_off(jc, ci));
}

int jbd_log_write(jbd_ctx *jc, cm_bdev *bd, uint32_t lblk, uint32_t ci, uint32_t flags)
{
	uint32_t spb = jc->j->block_size / CM_BD_SECTOR;

	if (lblk >= jc->j->j_last)
		return -EINVAL;
	return cm_bdev_write(bd, (uint64_t)jc->logmap[lblk] * spb, spb, jbd_copy_off(jc, ci), flags);
}

/* Reads the journal superblock into a new copy (*ci) and checks that it
 * is the one the journal was created from. */
static int jbd_jsb_read(jbd_ctx *jc, cm_bdev *bd, uint32_t *ci)
{
	journal_superblock_t *jsb;
	uint32_t type;
	int r;

	*ci = jbd_copy_alloc(jc);
	if (!*ci)
		return -ENOMEM;
	r = jbd_log_read(jc, bd, 0, *ci);
	if (r < 0)
		goto fail;
	jsb = jbd_copy_ptr(jc, *ci);
	type = cm_be32(jsb->s_header.h_blocktype);
	r = -EUCLEAN;
	if (cm_be32(jsb->s_header.h_magic) != JBD2_MAGIC_NUMBER ||
	    (type != JBD2_SUPERBLOCK_V1 && type != JBD2_SUPERBLOCK_V2) ||
	    cm_be32(jsb->s_blocksize) != jc->j->block_size ||
	    cm_be32(jsb->s_maxlen) != jc->j->j_last || cm_be32(jsb->s_first) != jc->j->j_first)
		goto fail;
	return 0;
fail:
	jbd_copy_free(jc, *ci);
	*ci = 0;
	return r;
}

int jbd_jsb_write(jbd_ctx *jc, cm_bdev *bd, uint32_t start, uint32_t sequence)
{
	journal_superblock_t *jsb;
	uint32_t ci;
	int r;

	if (jbd_commit_aborted(jc))
		return -EROFS;
	r = jbd_jsb_read(jc, bd, &ci);
	if (r < 0)
		return r;
	jsb = jbd_copy_ptr(jc, ci);
	cm_set_be32(&jsb->s_start, start);
	cm_set_be32(&jsb->s_sequence, sequence);
	/* JBD sets REVOKE lazily at the first revoke; every reader we know
	 * of (JBD, JBD2, e2fsck) accepts it, so it is simply always on. */
	if (cm_be32(jsb->s_header.h_blocktype) == JBD2_SUPERBLOCK_V2)
		cm_set_be32(&jsb->s_feature_incompat,
			    cm_be32(jsb->s_feature_incompat) | JBD2_FEATURE_INCOMPAT_REVOKE);
	/* One request: what was written before, then this, durable. */
	r = jbd_log_write(jc, bd, 0, ci, CM_BD_PREFLUSH | CM_BD_FUA);
	jbd_copy_free(jc, ci);
	if (r == 0 && (r = jbd_state_enter(jc)) == 0) {
		jc->j->j_sb_start = start;
		jbd_state_leave(jc);
	}
	return r;
}

/* Sets or clears INCOMPAT_RECOVER in the cached ext3 superblock and makes
 * it durable. -EBUSY while a transaction holds that buffer: writing it
 * home then would write uncommitted changes. */
static int jbd_set_recover(jbd_ctx *jc, cm_bdev *bd, bool on)
{
	jbd_journal *j = jc->j;
	struct ext3_super_block *sb;
	uint32_t old, val;
	cm_bh *bh;
	int r;

	r = cm_bcache_read(jc->cache, bd, j->fs_sb_block, &bh);
	if (r < 0)
		return r;
	r = cm_bh_lock(jc->cache, bh);
	if (r < 0)
		goto out;
	if (cm_bh_jh(bh) && jbd_jh_of(jc, bh)->b_transaction) {
		cm_bh_unlock(jc->cache, bh);
		r = -EBUSY;
		goto out;
	}
	sb = (void *)((char *)cm_bh_data(jc->cache, bh) + j->fs_sb_offset);
	old = cm_le32(sb->s_feature_incompat);
	val = on ? old | EXT3_FEATURE_INCOMPAT_RECOVER : old & ~EXT3_FEATURE_INCOMPAT_RECOVER;
	cm_set_le32(&sb->s_feature_incompat, val);
	if (val != old)
		cm_bh_mark_dirty(bh);
	cm_bh_unlock(jc->cache, bh);
	r = cm_bcache_write(jc->cache, bd, bh);
	if (r == 0)
		r = cm_bdev_flush(bd);
out:
	cm_bcache_put(jc->cache, bh);
	return r;
}

int jbd_jsb_open(jbd_ctx *jc, cm_bdev *bd)
{
	uint32_t ci;
	int r = jbd_jsb_read(jc, bd, &ci);

	if (r < 0)
		return r;
	jbd_copy_free(jc, ci);
	return jbd_set_recover(jc, bd, true);
}

int jbd_jsb_clear_recover(jbd_ctx *jc, cm_bdev *bd)
{
	if (jbd_commit_aborted(jc))
		return -EROFS;
	return jbd_set_recover(jc, bd, false);
}
