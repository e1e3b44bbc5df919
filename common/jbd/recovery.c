/*
 * recovery.c - JBD's three passes over the log, then the journal and
 * filesystem superblocks brought back to "clean".
 *
 * PASS_SCAN walks from s_start with s_sequence and finds the first
 * transaction without a valid commit block: a block without the magic, with
 * another sequence or an unknown type, a bad descriptor or revoke block, all
 * end the log there.  PASS_REVOKE records, for each revoked block, the
 * latest transaction revoking it.  PASS_REPLAY writes every logged block of
 * the complete transactions home, oldest first, unless a transaction at
 * least as new revoked it, restoring the magic of escaped blocks.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct jd_rec {
	jd_log *log;
	jd_rtable revokes;
	jd_recovery *info;
	const jd_progress *progress;	/* NULL: none wanted */
	uint64_t reported;	/* log blocks walked at the last report */
	uint8_t *hdr;		/* the descriptor, commit or revoke block */
	uint8_t *data;		/* a logged block on its way home */
	uint32_t end_tid;	/* set by the scan */
};

static uint32_t next_block(const jd_log *log, uint32_t blk)
{
	return blk + 1 >= log->maxlen ? log->first : blk + 1;
}

/* A descriptor's tags in order; false at the end of the block or after the
 * tag flagged LAST_TAG.  *pos starts at the first tag's offset. */
static bool next_tag(const jd_log *log, const uint8_t *desc, size_t *pos,
		     uint32_t *blocknr, uint16_t *flags)
{
	const journal_block_tag_t *tag;

	if (*pos == 0 || *pos + sizeof(*tag) > log->bs)
		return false;
	tag = (const journal_block_tag_t *)(desc + *pos);
	*blocknr = cm_be32(tag->t_blocknr);
	*flags = cm_be16(tag->t_flags);
	*pos += sizeof(*tag);
	if (!(*flags & JBD2_FLAG_SAME_UUID))
		*pos += JBD2_UUID_SIZE;
	if (*flags & JBD2_FLAG_LAST_TAG)
		*pos = 0;
	return true;
}

/* Counts a descriptor's tags; -EUCLEAN (with the reason) if one names a
 * block outside the filesystem or inside the journal. */
static int count_tags(struct jd_rec *rc, uint32_t lblk, uint32_t *ret)
{
	size_t pos = sizeof(journal_header_t);
	uint32_t n = 0, blocknr;
	uint16_t flags;

	while (next_tag(rc->log, rc->hdr, &pos, &blocknr, &flags)) {
		if (blocknr >= rc->log->fs_blocks)
			return cm_fail_why(-EUCLEAN, rc->info->end_reason,
				       sizeof(rc->info->end_reason),
				       "descriptor at log block %u: tag %u names block %u, outside the filesystem",
				       lblk, n, blocknr);
		if (jd_log_contains(rc->log, blocknr))
			return cm_fail_why(-EUCLEAN, rc->info->end_reason,
				       sizeof(rc->info->end_reason),
				       "descriptor at log block %u: tag %u names block %u, inside the journal",
				       lblk, n, blocknr);
		n++;
	}
	*ret = n;
	return 0;
}

/* The revoke block's byte count (at most a block), or -EUCLEAN. */
static int revoke_bytes(struct jd_rec *rc, uint32_t lblk)
{
	const jbd2_journal_revoke_header_t *h = (const void *)rc->hdr;
	uint32_t count = cm_be32(h->r_count);

	if (count < sizeof(*h) || count > rc->log->bs ||
	    (count - sizeof(*h)) % 4 != 0)
		return cm_fail_why(-EUCLEAN, rc->info->end_reason,
			       sizeof(rc->info->end_reason),
			       "revoke block at log block %u has a bad count %u",
			       lblk, count);
	return (int)count;
}

static int scan_revoke_block(struct jd_rec *rc, uint32_t lblk, uint32_t tid)
{
	int count = revoke_bytes(rc, lblk), r = 0;

	if (count < 0)
		return count;
	for (uint32_t off = sizeof(jbd2_journal_revoke_header_t); r == 0 && off < (uint32_t)count;
	     off += 4) {
		r = jd_rtable_set(&rc->revokes,
				  cm_be32(*(const cm_be32_t *)(rc->hdr + off)),
				  tid);
		rc->info->revoke_records++;
	}
	return r;
}

/* Writes home the blocks tagged by the descriptor at log block lblk. */
static int replay_descriptor(struct jd_rec *rc, uint32_t lblk, uint32_t tid)
{
	const jd_log *log = rc->log;
	size_t pos = sizeof(journal_header_t);
	uint32_t blocknr;
	uint16_t flags;
	int r;

	while (next_tag(log, rc->hdr, &pos, &blocknr, &flags)) {
		lblk = next_block(log, lblk);
		if (jd_rtable_revoked(&rc->revokes, blocknr, tid)) {
			rc->info->revoked_skips++;
			continue;
		}
		r = jd_log_read(log, lblk, rc->data);
		if (r < 0)
			return r;
		if (flags & JBD2_FLAG_ESCAPE)
			cm_set_be32((cm_be32_t *)rc->data, JBD2_MAGIC_NUMBER);
		r = log->dev->write(log->dev->ctx, (uint64_t)blocknr * log->bs,
				    rc->data, log->bs);
		if (r < 0)
			return r;
		rc->info->blocks_written++;
	}
	return 0;
}

/* Where the log stops continuing: the normal end for the scan (the reason
 * kept for the report), an error for a later pass (the device changed). */
static int stop(struct jd_rec *rc, enum jd_pass pass, uint32_t lblk,
		const char *what, uint32_t value)
{
	if (pass != JD_PASS_SCAN)
		return cm_fail_why(-EIO, rc->info->end_reason,
			       sizeof(rc->info->end_reason),
			       "log block %u changed between passes", lblk);
	return cm_fail_why(0, rc->info->end_reason, sizeof(rc->info->end_reason),
		       "log block %u: %s %u", lblk, what, value);
}

/* Handles the descriptor, commit or revoke block in rc->hdr at lblk; sets
 * *used to the log blocks it takes (with the data blocks).  Returns 1 if
 * it ends the log (scan only). */
static int one_block(struct jd_rec *rc, enum jd_pass pass, uint32_t lblk,
		     uint32_t *tid, uint32_t *used)
{
	const journal_header_t *h = (const void *)rc->hdr;
	uint32_t n = 0, type = cm_be32(h->h_blocktype);
	int r;

	*used = 1;
	switch (type) {
	case JBD2_DESCRIPTOR_BLOCK:
		r = count_tags(rc, lblk, &n);
		if (r == 0 && pass == JD_PASS_REPLAY)
			r = replay_descriptor(rc, lblk, *tid);
		*used = 1 + n;
		break;
	case JBD2_COMMIT_BLOCK:
		++*tid;
		return 0;
	case JBD2_REVOKE_BLOCK:
		if (pass == JD_PASS_REVOKE)
			r = scan_revoke_block(rc, lblk, *tid);
		else if ((r = revoke_bytes(rc, lblk)) > 0)
			r = 0;
		break;
	default:
		r = stop(rc, pass, lblk, "unexpected block type", type);
		return r < 0 ? r : 1;
	}
	if (r == -EUCLEAN)	/* the reason is in info->end_reason */
		return pass == JD_PASS_SCAN ? 1 : -EIO;
	return r;
}

const char *jd_pass_name(enum jd_pass pass)
{
	static const char *const names[] = {"scan", "revoke", "replay"};

	return names[pass];
}

/* Reports walked blocks of total when forced (a pass's start and end) or
 * when JD_PROGRESS_EVERY more were walked: the callback may draw on a
 * terminal or publish to shared memory, too costly for every block. */
static void report(struct jd_rec *rc, enum jd_pass pass, uint64_t walked,
		   uint64_t total, bool force)
{
	if (!rc->progress)
		return;
	if (!force && walked - rc->reported < JD_PROGRESS_EVERY)
		return;
	rc->reported = walked;
	rc->progress->fn(rc->progress->ctx, pass, walked, total);
}

/*
 * One pass from s_start.  The scan stops where the log stops continuing
 * and sets rc->end_tid to the first transaction without a commit block;
 * the later passes stop at end_tid.
 */
static int do_pass(struct jd_rec *rc, enum jd_pass pass)
{
	const jd_log *log = rc->log;
	const journal_header_t *h = (const void *)rc->hdr;
	uint32_t lblk = log->start, tid = log->sequence, used;
	uint64_t walked = 0, loglen = log->maxlen - log->first;
	uint64_t total = pass == JD_PASS_SCAN ? 0 : rc->info->log_blocks;
	int r;

	report(rc, pass, 0, total, true);
	for (;;) {
		if (pass != JD_PASS_SCAN && tid == rc->end_tid) {
			report(rc, pass, walked, total, true);
			return 0;
		}
		if (walked >= loglen) {
			r = stop(rc, pass, lblk, "the log wraps onto itself at tid", tid);
			break;
		}
		r = jd_log_read(log, lblk, rc->hdr);
		if (r < 0)
			return r;
		if (cm_be32(h->h_magic) != JBD2_MAGIC_NUMBER) {
			r = stop(rc, pass, lblk, "no journal magic; expected tid", tid);
			break;
		}
		if (cm_be32(h->h_sequence) != tid) {
			r = stop(rc, pass, lblk, "sequence", cm_be32(h->h_sequence));
			break;
		}
		r = one_block(rc, pass, lblk, &tid, &used);
		if (r != 0)
			break;
		walked += used;
		if (pass == JD_PASS_SCAN && cm_be32(h->h_blocktype) == JBD2_COMMIT_BLOCK)
			rc->info->log_blocks = walked;
		lblk = (uint32_t)(log->first +
				  (lblk - log->first + (uint64_t)used) % loglen);
		report(rc, pass, walked, total, false);
	}
	if (r < 0)
		return r;
	if (pass != JD_PASS_SCAN)
		return -EIO;	/* the log ended before end_tid */
	rc->end_tid = tid;
	report(rc, pass, rc->info->log_blocks, rc->info->log_blocks, true);
	return 0;
}

/* Sets the superblock's free block and inode counts to the sums of the
 * group descriptors, as ext3 does whenever it writes its superblock: the
 * kernel does not log these summaries, so the replayed copy is stale. */
static int recount(const jd_log *log, struct ext3_super_block *sb,
		   uint8_t *buf, char *why, size_t whylen)
{
	const struct ext3_group_desc *gd = (const void *)buf;
	uint64_t free_blocks = 0, free_inodes = 0;
	cm_ext3_geom g;
	uint32_t group;
	int r;

	r = cm_ext3_super_check(sb, log->dev->size, why, whylen);
	if (r < 0 || cm_le32(sb->s_feature_incompat) & EXT3_FEATURE_INCOMPAT_META_BG)
		return r;
	cm_ext3_geom_from_super(sb, &g);
	for (group = 0; group < g.group_count; group++) {
		uint32_t i = group % g.desc_per_block;

		if (i == 0) {
			r = log->dev->read(log->dev->ctx,
					   (uint64_t)(g.gdt_block + group / g.desc_per_block) * g.block_size,
					   buf, g.block_size);
			if (r < 0)
				return cm_fail_why(r, why, whylen, "reading the group descriptors");
		}
		free_blocks += cm_le16(gd[i].bg_free_blocks_count);
		free_inodes += cm_le16(gd[i].bg_free_inodes_count);
	}
	if (free_blocks > g.blocks_count || free_inodes > g.inodes_count)
		return 0;	/* nonsense: leave it to e2fsck */
	cm_set_le32(&sb->s_free_blocks_count, (uint32_t)free_blocks);
	cm_set_le32(&sb->s_free_inodes_count, (uint32_t)free_inodes);
	return 0;
}

/* Marks the log empty past every replayed transaction, then clears
 * needs_recovery; each step made durable before the next. */
static int finish(struct jd_rec *rc, char *why, size_t whylen)
{
	const jd_log *log = rc->log;
	journal_superblock_t *jsb = (void *)rc->hdr;
	struct ext3_super_block sb;
	int r;

	r = log->dev->flush(log->dev->ctx);
	if (r < 0)
		return cm_fail_why(r, why, whylen, "flushing the replayed blocks");
	r = jd_log_read(log, 0, rc->hdr);
	if (r < 0)
		return cm_fail_why(r, why, whylen, "reading the journal superblock");
	cm_set_be32(&jsb->s_sequence, rc->info->new_sequence);
	cm_set_be32(&jsb->s_start, 0);
	r = jd_log_write(log, 0, rc->hdr);
	if (r == 0)
		r = log->dev->flush(log->dev->ctx);
	if (r < 0)
		return cm_fail_why(r, why, whylen, "writing the journal superblock");
	/* Read again: replay may have written the superblock's block. */
	r = jd_super_read(log->dev, &sb);
	if (r < 0)
		return cm_fail_why(r, why, whylen, "reading the superblock");
	r = recount(log, &sb, rc->data, why, whylen);
	if (r < 0)
		return r;
	cm_set_le32(&sb.s_feature_incompat,
		    cm_le32(sb.s_feature_incompat) & ~EXT3_FEATURE_INCOMPAT_RECOVER);
	r = jd_super_write(log->dev, &sb);
	if (r == 0)
		r = log->dev->flush(log->dev->ctx);
	if (r < 0)
		return cm_fail_why(r, why, whylen, "clearing needs_recovery");
	return 0;
}

static int run_passes(struct jd_rec *rc, unsigned flags, char *why,
		      size_t whylen)
{
	jd_recovery *info = rc->info;
	int r = 0;

	if (rc->log->start != 0) {
		r = do_pass(rc, JD_PASS_SCAN);
		if (r == 0 && !(flags & JD_RECOVER_DRY_RUN))
			r = do_pass(rc, JD_PASS_REVOKE);
		if (r == 0 && !(flags & JD_RECOVER_DRY_RUN))
			r = do_pass(rc, JD_PASS_REPLAY);
		if (r < 0)
			return cm_fail_why(r, why, whylen, "journal replay: %s",
				       info->end_reason[0] ? info->end_reason :
				       "I/O error");
	} else {
		rc->end_tid = rc->log->sequence;
		cm_fail_why(0, info->end_reason, sizeof(info->end_reason),
			"the log is empty (s_start 0)");
	}
	info->end_tid = rc->end_tid;
	info->transactions = rc->end_tid - rc->log->sequence;
	/* As e2fsck and JBD do: the next transaction is end + 1, so that no
	 * commit block left in the log can match it. */
	info->new_sequence = rc->end_tid + 1;
	if (flags & JD_RECOVER_DRY_RUN)
		return 0;
	return finish(rc, why, whylen);
}

int jd_recover(const jd_dev *dev, unsigned flags, const jd_progress *progress,
	       jd_recovery *ret, char *why, size_t whylen)
{
	jd_recovery scratch;
	jd_log log;
	struct jd_rec rc = {.log = &log, .info = ret ? ret : &scratch, .progress = progress};
	int r;

	memset(rc.info, 0, sizeof(*rc.info));
	r = jd_log_open(dev, &log, why, whylen);
	if (r < 0)
		return r;
	rc.info->recover_flag = log.recover_flag;
	rc.info->has_journal = log.has_journal;
	if (!log.has_journal)
		return 0;
	rc.info->log_start = log.start;
	rc.info->first_tid = log.sequence;
	rc.info->end_tid = log.sequence;
	rc.info->needed = log.recover_flag || log.start != 0;
	if (rc.info->needed) {
		jd_rtable_init(&rc.revokes);
		rc.hdr = malloc(log.bs);
		rc.data = malloc(log.bs);
		r = rc.hdr && rc.data ? run_passes(&rc, flags, why, whylen) :
					-ENOMEM;
		free(rc.hdr);
		free(rc.data);
		jd_rtable_free(&rc.revokes);
	}
	jd_log_close(&log);
	return r;
}
