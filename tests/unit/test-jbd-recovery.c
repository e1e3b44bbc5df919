/* test-jbd-recovery.c - common/jbd recovery on journals written by hand into
 * the log of a fresh mke2fs image (1 KiB blocks, 1024-block journal): escaped
 * blocks, revoke records (a revoked block reused later is replayed from the
 * later transaction, a revoke in the block's own transaction wins), a torn
 * last transaction, stale blocks past the end, a transaction wrapping from
 * the end of the log to its start, tids wrapping at 2^32; bad revoke counts
 * and tags outside the filesystem or inside the journal end the log there;
 * a log that never ends, unknown features, holes in the journal inode, an
 * empty log, a dry run. Where the journal is valid, e2fsck -fy replays a
 * copy too and both images must be equal outside the superblock. Needs
 * mke2fs, debugfs and e2fsck. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/jbd/internal.h"
#include "t_sh.h"
#include "tap.h"

#define BS 1024

static char dir[] = "/tmp/test-jbd-XXXXXX";
static char pristine[64], img[64], oracle[64];
static jd_log lg;	/* the journal of the pristine image */
static int fd = -1;
static jd_dev dev;
static uint32_t pos;	/* next log block the writer fills */

static uint32_t home(int i)
{
	return lg.fs_blocks - 1 - (uint32_t)i;
}

/* Starts a case on a fresh copy of the pristine image, log written from
 * journal block `start`. */
static void fresh(uint32_t start)
{
	if (fd >= 0)
		close(fd);
	if (t_sh("cp %s %s", pristine, img) != 0)
		abort();
	fd = open(img, O_RDWR);
	if (fd < 0 || jd_dev_file(fd, &dev) < 0)
		abort();
	lg.dev = &dev;
	pos = start;
}

static void put(const void *blk)
{
	if (jd_log_write(&lg, pos, blk) < 0)
		abort();
	pos = pos + 1 >= lg.maxlen ? lg.first : pos + 1;
}

static void header(uint8_t *b, uint32_t type, uint32_t tid)
{
	journal_header_t *h = (void *)b;

	memset(b, 0, BS);
	cm_set_be32(&h->h_magic, JBD2_MAGIC_NUMBER);
	cm_set_be32(&h->h_blocktype, type);
	cm_set_be32(&h->h_sequence, tid);
}

/* The content a transaction logs for home block `blk`. */
static void pattern(uint8_t *b, uint32_t blk, uint32_t tid)
{
	memset(b, (int)(blk * 7 + tid), BS);
	memcpy(b, &blk, 4);
	memcpy(b + 4, &tid, 4);
}

/* A descriptor for n homes and their data blocks; homes flagged in
 * `escape` get a copy beginning with the magic, logged escaped. */
static void put_txn_blocks(uint32_t tid, const uint32_t *homes, int n,
			   unsigned escape)
{
	uint8_t d[BS], b[BS];
	size_t off = sizeof(journal_header_t);
	int i;

	header(d, JBD2_DESCRIPTOR_BLOCK, tid);
	for (i = 0; i < n; i++) {
		journal_block_tag_t *t = (void *)(d + off);
		uint16_t fl = (i ? JBD2_FLAG_SAME_UUID : 0) |
			      (i == n - 1 ? JBD2_FLAG_LAST_TAG : 0) |
			      (escape & (1U << i) ? JBD2_FLAG_ESCAPE : 0);

		cm_set_be32(&t->t_blocknr, homes[i]);
		cm_set_be16(&t->t_flags, fl);
		off += sizeof(*t) + (i ? 0 : JBD2_UUID_SIZE);
	}
	put(d);
	for (i = 0; i < n; i++) {
		pattern(b, homes[i], tid);
		if (escape & (1U << i))
			memset(b, 0, 4);	/* the magic, escaped */
		put(b);
	}
}

static void put_commit(uint32_t tid)
{
	uint8_t b[BS];

	header(b, JBD2_COMMIT_BLOCK, tid);
	put(b);
}

static void put_revoke(uint32_t tid, const uint32_t *blks, int n, uint32_t count)
{
	uint8_t b[BS];
	int i;

	header(b, JBD2_REVOKE_BLOCK, tid);
	for (i = 0; i < n; i++)
		cm_set_be32((cm_be32_t *)(b + 16 + 4 * i), blks[i]);
	cm_set_be32((cm_be32_t *)(b + 12), count ? count : 16 + 4 * (uint32_t)n);
	put(b);
}

static void put_zero(void)
{
	uint8_t b[BS] = {0};

	put(b);
}

static void read_jsb(journal_superblock_t *jsb)
{
	if (jd_log_read(&lg, 0, jsb) < 0)
		abort();
}

/* Sets the log's start and sequence, incompat features and needs_recovery. */
static void set_log(uint32_t start, uint32_t seq, uint32_t incompat, bool recover)
{
	uint8_t b[BS];
	journal_superblock_t *jsb = (void *)b;
	struct ext3_super_block sb;
	uint32_t in;

	read_jsb(jsb);
	cm_set_be32(&jsb->s_start, start);
	cm_set_be32(&jsb->s_sequence, seq);
	cm_set_be32(&jsb->s_feature_incompat, incompat);
	if (jd_log_write(&lg, 0, b) < 0 || jd_super_read(&dev, &sb) < 0)
		abort();
	in = cm_le32(sb.s_feature_incompat) & ~EXT3_FEATURE_INCOMPAT_RECOVER;
	cm_set_le32(&sb.s_feature_incompat, in | (recover ? EXT3_FEATURE_INCOMPAT_RECOVER : 0));
	if (jd_super_write(&dev, &sb) < 0)
		abort();
}

/* True if home block blk holds what tid logged for it. */
static bool holds(uint32_t blk, uint32_t tid, bool escaped)
{
	uint8_t got[BS], want[BS];

	if (dev.read(dev.ctx, (uint64_t)blk * BS, got, BS) < 0)
		return false;
	pattern(want, blk, tid);
	if (escaped)
		cm_set_be32((cm_be32_t *)want, JBD2_MAGIC_NUMBER);
	return memcmp(got, want, BS) == 0;
}

/* True if home block blk still holds the zeros mke2fs left. */
static bool untouched(uint32_t blk)
{
	uint8_t got[BS], zero[BS] = {0};

	return dev.read(dev.ctx, (uint64_t)blk * BS, got, BS) == 0 &&
	       memcmp(got, zero, BS) == 0;
}

static bool recover_flag(void)
{
	struct ext3_super_block sb;

	return jd_super_read(&dev, &sb) == 0 &&
	       cm_le32(sb.s_feature_incompat) & EXT3_FEATURE_INCOMPAT_RECOVER;
}

static int run(unsigned flags, jd_recovery *info, char *why)
{
	why[0] = '\0';
	return jd_recover(&dev, flags, NULL, info, why, 256);
}

/* Replays a copy of the case's image with e2fsck -fy and compares it with
 * ours (replayed already) outside the superblock. */
static void against_e2fsck(const char *name, const char *before)
{
	FILE *a, *b;
	long off = 0;
	int ca, cb, diffs = 0;

	if (t_sh("e2fsck -fy %s >/dev/null 2>&1; [ $? -le 1 ]", before) != 0) {
		t_ok(false, "%s: e2fsck -fy replays the same log", name);
		return;
	}
	a = fopen(img, "rb");
	b = fopen(before, "rb");
	while (a && b && (ca = getc(a)) != EOF && (cb = getc(b)) != EOF) {
		if (ca != cb && (off < 1024 || off >= 2048))
			diffs++;
		off++;
	}
	if (a)
		fclose(a);
	if (b)
		fclose(b);
	t_is_int(diffs, 0, "%s: equal to e2fsck's replay outside the superblock", name);
}

/* Runs recovery on the case's image, after keeping a copy for e2fsck. */
static int run_checked(const char *name, jd_recovery *info, char *why)
{
	int r;

	fsync(fd);
	if (t_sh("cp %s %s", img, oracle) != 0)
		abort();
	r = run(0, info, why);
	t_is_int(r, 0, "%s: recovery succeeds%s%s", name, why[0] ? ": " : "", why);
	against_e2fsck(name, oracle);
	return r;
}

static void check_jsb(const char *name, uint32_t seq)
{
	journal_superblock_t jsb[BS / sizeof(journal_superblock_t) + 1];

	read_jsb(jsb);
	t_ok(cm_be32(jsb->s_start) == 0 && cm_be32(jsb->s_sequence) == seq && !recover_flag(),
	     "%s: log empty, sequence %u, needs_recovery clear (got start %u, sequence %u)",
	     name, seq, cm_be32(jsb->s_start), cm_be32(jsb->s_sequence));
}

static void case_basic(void)
{
	uint32_t h[3] = {home(0), home(1), home(2)};
	jd_recovery info;
	char why[256];

	fresh(1);
	put_txn_blocks(10, h, 2, 0x2);
	put_commit(10);
	put_txn_blocks(11, h + 2, 1, 0);
	put_commit(11);
	set_log(1, 10, 0, true);
	run_checked("basic", &info, why);
	t_ok(info.transactions == 2 && info.blocks_written == 3 && info.end_tid == 12,
	     "basic: 2 transactions, 3 blocks written, end at tid 12");
	t_ok(holds(h[0], 10, false) && holds(h[2], 11, false), "basic: blocks at home");
	t_ok(holds(h[1], 10, true), "basic: the escaped block has its magic back");
	check_jsb("basic", 13);
	t_ok(run(0, &info, why) == 0 && !info.needed, "basic: a second recovery has nothing to do");
}

static void case_revoke(void)
{
	uint32_t h[4] = {home(0), home(1), home(2), home(3)};
	jd_recovery info;
	char why[256];

	fresh(1);
	put_txn_blocks(10, h, 3, 0);
	put_commit(10);
	put_revoke(11, h, 2, 0);
	put_commit(11);
	put_txn_blocks(12, h + 1, 1, 0);	/* h1 reused after its revoke */
	put_commit(12);
	put_revoke(13, h + 3, 1, 0);		/* revoked in its own transaction */
	put_txn_blocks(13, h + 3, 1, 0);
	put_commit(13);
	set_log(1, 10, JBD2_FEATURE_INCOMPAT_REVOKE, true);
	run_checked("revoke", &info, why);
	t_ok(untouched(h[0]), "revoke: a block revoked later is not replayed");
	t_ok(holds(h[1], 12, false), "revoke: a block revoked, then reused, comes from the later transaction");
	t_ok(holds(h[2], 10, false), "revoke: a block not revoked is replayed");
	t_ok(untouched(h[3]), "revoke: a revoke in the block's own transaction wins");
	t_ok(info.revoke_records == 3 && info.revoked_skips == 3 && info.blocks_written == 2,
	     "revoke: 3 records, 3 skips, 2 writes (got %llu, %llu, %llu)",
	     (unsigned long long)info.revoke_records, (unsigned long long)info.revoked_skips,
	     (unsigned long long)info.blocks_written);
	check_jsb("revoke", 15);
}

static void case_torn(void)
{
	uint32_t h[2] = {home(0), home(1)};
	jd_recovery info;
	char why[256];

	fresh(1);
	put_txn_blocks(10, h, 1, 0);
	put_commit(10);
	put_txn_blocks(11, h + 1, 1, 0);
	put_zero();	/* no commit block */
	set_log(1, 10, 0, true);
	run_checked("torn", &info, why);
	t_ok(info.transactions == 1 && holds(h[0], 10, false) && untouched(h[1]),
	     "torn: only the committed transaction is replayed");
	check_jsb("torn", 12);

	fresh(1);
	put_txn_blocks(10, h, 1, 0);
	put_commit(10);
	put_txn_blocks(11, h + 1, 1, 0);
	put_commit(5);	/* a stale commit block from an earlier pass */
	set_log(1, 10, 0, true);
	run_checked("stale commit", &info, why);
	t_ok(info.transactions == 1 && untouched(h[1]),
	     "stale commit: a commit block with an old tid does not commit");
}

static void case_wrap(void)
{
	uint32_t h[4] = {home(0), home(1), home(2), home(3)};
	jd_recovery info;
	char why[256];

	fresh(lg.maxlen - 2);
	put_txn_blocks(20, h, 3, 0x4);	/* descriptor, data, then wraps to s_first */
	put_commit(20);
	put_txn_blocks(21, h + 3, 1, 0);
	put_commit(21);
	put_txn_blocks(3, h, 1, 0);	/* stale: a transaction of the last pass */
	put_commit(3);
	set_log(lg.maxlen - 2, 20, 0, true);
	run_checked("wrap", &info, why);
	t_ok(info.transactions == 2 && holds(h[0], 20, false) && holds(h[1], 20, false) &&
	     holds(h[2], 20, true) && holds(h[3], 21, false),
	     "wrap: a transaction across the end of the log is replayed");
	check_jsb("wrap", 23);

	fresh(1);
	put_txn_blocks(0xFFFFFFFFU, h, 1, 0);
	put_commit(0xFFFFFFFFU);
	put_txn_blocks(0, h + 1, 1, 0);
	put_commit(0);
	set_log(1, 0xFFFFFFFFU, 0, true);
	run_checked("tid wrap", &info, why);
	t_ok(info.transactions == 2 && holds(h[0], 0xFFFFFFFFU, false) && holds(h[1], 0, false),
	     "tid wrap: tids 0xffffffff and 0 are both replayed");
	check_jsb("tid wrap", 2);
}

static void case_bad_tail(void)
{
	uint32_t h[2] = {home(0), lg.fs_blocks + 5};
	jd_recovery info;
	char why[256];
	int r;

	fresh(1);
	put_txn_blocks(10, h, 1, 0);
	put_commit(10);
	put_revoke(11, h, 1, BS + 4);
	put_commit(11);
	set_log(1, 10, JBD2_FEATURE_INCOMPAT_REVOKE, true);
	r = run(0, &info, why);
	t_ok(r == 0 && info.transactions == 1 && strstr(info.end_reason, "bad count"),
	     "bad revoke count: the log ends there (%s)", info.end_reason);

	fresh(1);
	put_txn_blocks(10, h, 1, 0);
	put_commit(10);
	put_txn_blocks(11, h + 1, 1, 0);
	put_commit(11);
	set_log(1, 10, 0, true);
	r = run(0, &info, why);
	t_ok(r == 0 && info.transactions == 1 && strstr(info.end_reason, "outside the filesystem"),
	     "tag outside the filesystem: the log ends there (%s)", info.end_reason);

	fresh(1);
	h[1] = lg.map[lg.maxlen / 2];
	put_txn_blocks(10, h, 1, 0);
	put_commit(10);
	put_txn_blocks(11, h + 1, 1, 0);
	put_commit(11);
	set_log(1, 10, 0, true);
	r = run(0, &info, why);
	t_ok(r == 0 && info.transactions == 1 && strstr(info.end_reason, "inside the journal"),
	     "tag naming a journal block: the log ends there (%s)", info.end_reason);

	fresh(1);
	for (uint32_t i = lg.first; i < lg.maxlen; i++)
		put_revoke(10, h, 0, 0);
	set_log(1, 10, JBD2_FEATURE_INCOMPAT_REVOKE, true);
	r = run(0, &info, why);
	t_ok(r == 0 && info.transactions == 0 && strstr(info.end_reason, "wraps onto itself"),
	     "a log without a commit block anywhere ends (%s)", info.end_reason);
}

static void case_features(void)
{
	static const struct { uint32_t bit; const char *name; } f[] = {
		{0x100, "FEATURE_I8"},
		{JBD2_FEATURE_INCOMPAT_64BIT, "journal_64bit"},
		{JBD2_FEATURE_INCOMPAT_CSUM_V3, "journal_checksum_v3"},
		{JBD2_FEATURE_INCOMPAT_ASYNC_COMMIT, "journal_async_commit"},
	};
	uint32_t h = home(0);
	jd_recovery info;
	char why[256];

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		fresh(1);
		put_txn_blocks(10, &h, 1, 0);
		put_commit(10);
		set_log(1, 10, JBD2_FEATURE_INCOMPAT_REVOKE | f[i].bit, true);
		t_ok(run(0, &info, why) == -EUCLEAN && strstr(why, f[i].name) &&
		     untouched(h) && recover_flag(),
		     "incompat %s refused by name, nothing written (%s)", f[i].name, why);
	}
}

static void case_inode(void)
{
	jd_recovery info;
	char why[256], arg[64];

	fresh(1);
	t_sh("debugfs -w -R 'sif <8> block[5] 0' %s >/dev/null 2>&1", img);
	t_ok(run(0, &info, why) == -EUCLEAN && strstr(why, "hole at block 5"),
	     "a hole in the journal inode is refused (%s)", why);
	snprintf(arg, sizeof(arg), "%u", lg.fs_blocks + 100);
	t_sh("debugfs -w -R 'sif <8> block[5] %s' %s >/dev/null 2>&1", arg, img);
	t_ok(run(0, &info, why) == -EUCLEAN && strstr(why, "outside the filesystem"),
	     "a journal block outside the filesystem is refused (%s)", why);
}

static void case_empty_and_dry(void)
{
	uint32_t h[2] = {home(0), home(1)};
	jd_recovery info;
	char why[256];

	fresh(1);
	set_log(0, 7, 0, true);
	t_ok(run(0, &info, why) == 0 && info.needed && info.transactions == 0 &&
	     info.blocks_written == 0, "empty log with needs_recovery: nothing replayed");
	check_jsb("empty log", 8);

	fresh(1);
	set_log(0, 7, 0, false);
	t_ok(run(0, &info, why) == 0 && !info.needed, "clean journal: recovery not needed");
	{
		journal_superblock_t jsb[BS / sizeof(journal_superblock_t) + 1];

		read_jsb(jsb);
		t_is_int(cm_be32(jsb->s_sequence), 7, "clean journal: its superblock is left alone");
	}

	fresh(1);
	put_txn_blocks(10, h, 2, 0);
	put_commit(10);
	set_log(1, 10, 0, true);
	t_ok(run(JD_RECOVER_DRY_RUN, &info, why) == 0 && info.transactions == 1 &&
	     untouched(h[0]) && recover_flag(),
	     "dry run: finds the transaction, writes nothing");
}

int main(void)
{
	char why[256];
	int r;

	if (system("command -v mke2fs >/dev/null && command -v debugfs >/dev/null && "
		   "command -v e2fsck >/dev/null") != 0)
		t_skip_all("needs mke2fs, debugfs and e2fsck");
	if (!mkdtemp(dir))
		t_skip_all("mkdtemp: %s", strerror(errno));
	snprintf(pristine, sizeof(pristine), "%s/pristine", dir);
	snprintf(img, sizeof(img), "%s/img", dir);
	snprintf(oracle, sizeof(oracle), "%s/oracle", dir);
	r = t_sh("mke2fs -q -F -t ext3 -b 1024 -J size=1 %s 8M >/dev/null 2>&1", pristine);
	t_is_int(r, 0, "mke2fs -t ext3 -b 1024 -J size=1");
	fd = open(pristine, O_RDONLY);
	if (fd < 0 || jd_dev_file(fd, &dev) < 0)
		return t_done();
	r = jd_log_open(&dev, &lg, why, sizeof(why));
	t_ok(r == 0 && lg.has_journal && lg.maxlen == 1024 && lg.bs == BS,
	     "the journal is found and mapped (%d %s)", r, why);
	for (int i = 0; r == 0 && i < 4; i++)
		for (uint32_t j = 0; j < lg.maxlen; j++)
			if (lg.map[j] == home(i))
				r = -EEXIST;
	t_is_int(r, 0, "the test's home blocks lie outside the journal");
	if (r == 0) {
		case_basic();
		case_revoke();
		case_torn();
		case_wrap();
		case_bad_tail();
		case_features();
		case_empty_and_dry();
		case_inode();
	}
	if (fd >= 0)
		close(fd);
	jd_log_close(&lg);
	t_sh("rm -rf %s", dir);
	return t_done();
}
