/* test-jbd-commit.c - commit and checkpoint on a real ext3 image (1 KiB
 * blocks, 8 MiB, 1024-block log) behind a forked blockdev server, e2fsck
 * the oracle: a copy taken without checkpoint (as after a crash) must
 * replay under `e2fsck -fy` to the model's blocks and then pass -fn. Plain
 * commits, escaped blocks, a commit callback, a frozen copy, a revoke,
 * ordered data, the log wrapping with checkpoints, group commit with
 * writer threads, clean shutdown; in both locking modes; then failing
 * writes abort the journal. Needs mke2fs, e2fsck; T_KEEP=1 keeps images. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../../blockdev-svc/internal.h"
#include "../../common/jbd/internal.h"
#include "commit.h"
#include "runtime.h"
#include "t_arena.h"
#include "t_sh.h"
#include "tap.h"

#define BS 1024u
#define NH 320u   /* home blocks the test writes: the last ones of the fs */
#define MAGIC_BE "\xc0\x3b\x39\x98"

static char dir[] = "/tmp/test-jbd-commit-XXXXXX";
static char img[80], copy[80];
static cm_arena *a;
static _Atomic uint32_t *stop_server, *fail_writes;
static pid_t server;
static cm_bcache *cache;
static cm_bdev *bd;
static jbd_ctx *jc;
static uint32_t fs_blocks;
static uint8_t pristine[NH][BS];   /* the home blocks as mke2fs left them */
static uint32_t committed[NH];     /* generation each block committed, 0: pristine */
static uint32_t live[NH];          /* generation in the cache */
static uint32_t next_gen = 1;

static uint32_t home(uint32_t i)
{
	return fs_blocks - 1 - i;
}

/* Generation gen of block i: words derived from both; odd generations of
 * the escape case begin with the journal magic. */
static void pattern(uint32_t i, uint32_t gen, uint8_t *b)
{
	uint32_t *w = (uint32_t *)b;

	if (!gen) {
		memcpy(b, pristine[i], BS);
		return;
	}
	for (uint32_t k = 0; k < BS / 4; k++)
		w[k] = (gen * 0x9e3779b1u) ^ (i * 131u) ^ (k * 0x01000193u);
	if (gen & 0x80000000u)
		memcpy(b, MAGIC_BE, 4);
}

/* blockdev requests, failing every write while *fail_writes is set. */
static int server_exec(void *ctx, const void *req, void *resp)
{
	const cm_bd_rec *rq = req;

	if (rq->hdr.op == CM_BD_WRITE && atomic_load(fail_writes)) {
		memcpy(resp, req, sizeof(*rq));
		return -EIO;
	}
	return bd_exec(ctx, req, resp);
}

static int server_main(void *arg)
{
	bd_svc s = {.arena = a, .dev.stat = &cm_layout_get(a)->device, .wlog.fd = -1};
	cm_chan_server srv;
	char why[256];

	(void)arg;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	s.bounce = malloc((size_t)CM_BD_MAX_SECTORS * CM_BD_SECTOR);
	if (!s.bounce || bd_device_open(&s.dev, img, why, sizeof(why)) < 0)
		return 2;
	cm_chan_server_init(&srv, a, 0);
	while (!atomic_load(stop_server)) {
		uint32_t armed = cm_chan_server_arm(&srv);

		if (cm_chan_server_poll(&srv, 32, server_exec, &s) == 0)
			cm_chan_server_wait(&srv, armed, 100);
	}
	bd_device_close(&s.dev);
	free(s.bounce);
	return 0;
}

/* The image, the arena, the server, the cache and the journal. */
static int setup(enum cm_locking_mode mode)
{
	jd_dev dev;
	jd_log lg;
	jbd_geometry g = {0};
	uint8_t jsb[BS];
	char why[256];
	cm_off off;
	int fd, r;

	if (t_sh("mke2fs -q -F -t ext3 -b 1024 -J size=1 %s 8M >/dev/null 2>&1", img) != 0)
		return -EIO;
	fd = open(img, O_RDWR);
	if (fd < 0 || jd_dev_file(fd, &dev) < 0 || jd_log_open(&dev, &lg, why, sizeof(why)) < 0)
		return -EIO;
	fs_blocks = lg.fs_blocks;
	for (uint32_t i = 0; i < NH; i++)
		if (jd_log_contains(&lg, home(i)) ||
		    pread(fd, pristine[i], BS, (off_t)home(i) * BS) != BS)
			return -EEXIST;
	if (jd_log_read(&lg, 0, jsb) < 0)
		return -EIO;
	g = (jbd_geometry){.block_size = BS, .fs_blocks = lg.fs_blocks, .first = lg.first,
			   .last = lg.maxlen, .sequence = lg.sequence + 1, .logmap = lg.map,
			   .fs_sb_block = 1, .fs_sb_offset = 0, .data_mode = JBD_DATA_ORDERED};
	memcpy(g.uuid, ((journal_superblock_t *)jsb)->s_uuid, 16);
	close(fd);
	a = t_arena_new(mode);
	stop_server = cm_arena_ptr(a, cm_arena_alloc(a, sizeof(*stop_server), 64), 4);
	fail_writes = cm_arena_ptr(a, cm_arena_alloc(a, sizeof(*fail_writes), 64), 4);
	snprintf(cm_layout_get(a)->svcs[0].name, CM_SVC_NAME_MAX, "blockdev-svc");
	server = t_fork(server_main, NULL);
	if ((r = cm_bcache_create(a, 1 << 20, BS, &off)) < 0)
		return r;
	atomic_store(&cm_layout_get(a)->bcache, off);
	if ((r = cm_bcache_attach(a, off, &cache)) < 0 || (r = jbd_create(a, &g, &off)) < 0 ||
	    (r = jbd_attach(a, cache, 1, &jc)) < 0 || (r = cm_bdev_open(a, &bd)) < 0)
		return r;
	jd_log_close(&lg);
	return jbd_jsb_open(jc, bd);
}

/* One handle writing generation gen (or a fresh one per block, gen 0)
 * into the blocks idx[0..n). */
static int write_blocks(const uint32_t *idx, uint32_t n, bool escape)
{
	jbd_handle *h;
	int r = jbd_start(jc, (int)n, &h);

	if (r < 0)
		return r;
	for (uint32_t k = 0; r == 0 && k < n; k++) {
		uint32_t i = idx[k], gen = next_gen++ | (escape ? 0x80000000u : 0);
		cm_bh *bh;

		if ((r = cm_bcache_read(cache, bd, home(i), &bh)) < 0)
			break;
		r = jbd_get_write_access(jc, h, bh);
		if (r == 0) {
			pattern(i, gen, cm_bh_data(cache, bh));
			r = jbd_dirty_metadata(jc, h, bh);
			live[i] = gen;
		}
		cm_bcache_put(cache, bh);
	}
	return jbd_stop(jc, h) < 0 && r == 0 ? -EIO : r;
}

static void mark_committed(void)
{
	memcpy(committed, live, sizeof(committed));
}

/* e2fsck replays a copy of the image; then it must be clean and hold the
 * model. Returns the number of blocks that differ (-1: e2fsck failed). */
static int oracle(const char *what, bool *recovered)
{
	uint8_t got[BS], want[BS], sb[BS];
	int fd, bad = 0, r;

	r = t_sh("cp --sparse=always %s %s", img, copy);
	fd = open(copy, O_RDONLY);
	if (r != 0 || fd < 0 || pread(fd, sb, BS, 1024) != BS)
		return -1;
	*recovered = cm_le32(((struct ext3_super_block *)sb)->s_feature_incompat) &
		     EXT3_FEATURE_INCOMPAT_RECOVER;
	close(fd);
	r = t_sh("e2fsck -fy %s >%s/fsck-y.log 2>&1", copy, dir);
	if (r < 0 || WEXITSTATUS(r) > 1) {
		t_diag("%s: e2fsck -fy exit %d", what, WEXITSTATUS(r));
		t_sh("sed 's/^/# /' %s/fsck-y.log", dir);
		return -1;
	}
	r = t_sh("e2fsck -fn %s >%s/fsck-n.log 2>&1", copy, dir);
	if (r != 0) {
		t_diag("%s: e2fsck -fn after the replay exit %d", what, WEXITSTATUS(r));
		t_sh("sed 's/^/# /' %s/fsck-n.log", dir);
		return -1;
	}
	fd = open(copy, O_RDONLY);
	for (uint32_t i = 0; fd >= 0 && i < NH; i++) {
		pattern(i, committed[i], want);
		if (pread(fd, got, BS, (off_t)home(i) * BS) != BS || memcmp(got, want, BS)) {
			if (bad++ < 3)
				t_diag("%s: block %u (index %u) differs from generation %#x", what,
				       home(i), i, committed[i]);
		}
	}
	if (fd >= 0)
		close(fd);
	return bad;
}

static void check_oracle(const char *what)
{
	bool rec = false;
	int bad = oracle(what, &rec);

	t_ok(rec, "%s: the image needs recovery", what);
	t_is_int(bad, 0, "%s: e2fsck replays the log to the committed blocks", what);
}

static void case_basic(void)
{
	uint32_t idx[10];
	int r = 0;

	for (uint32_t t = 0; r >= 0 && t < 3; t++) {
		for (uint32_t k = 0; k < 10; k++)
			idx[k] = t * 5 + k; /* overlapping: blocks logged twice */
		r = write_blocks(idx, 10, false);
		if (r == 0)
			r = jbd_commit(jc, bd);
		if (r == 1)
			mark_committed();
	}
	t_is_int(r, 1, "three transactions of 10 blocks committed");
	t_is_int(atomic_load(&jc->j->stats.commits), 3, "3 commits counted");
	t_is_int(atomic_load(&jc->j->stats.blocks), 30, "30 blocks logged");
	t_ok(jbd_check(jc), "invariants hold");
	check_oracle("basic");
}

static void case_escape(void)
{
	uint32_t idx[] = {40, 41, 42};
	uint64_t cookies[4] = {0};
	jbd_handle *h;
	int r = write_blocks(idx, 3, true);

	/* A commit callback rides along in an empty handle. */
	if (r == 0 && (r = jbd_start(jc, 1, &h)) == 0) {
		r = jbd_add_callback(jc, h, 0xc0ffee);
		if (jbd_stop(jc, h) < 0 && r == 0)
			r = -EIO;
	}
	t_is_int(jbd_take_callbacks(jc, cookies, 4), 0, "no callback before the commit");
	if (r == 0)
		r = jbd_commit(jc, bd);
	t_ok(jbd_take_callbacks(jc, cookies, 4) == 1 && cookies[0] == 0xc0ffee,
	     "the commit delivered the callback");
	if (r == 1)
		mark_committed();
	t_is_int(r, 1, "blocks beginning with the journal magic committed");
	t_is_int(atomic_load(&jc->j->stats.escaped), 3, "3 log blocks escaped");
	check_oracle("escape");
}

/* T1 logs block 50; while T1 commits, T2 changes it: T1 logs the frozen
 * copy, T2's change waits for T2's commit. */
static void case_frozen(void)
{
	uint32_t idx[] = {50, 51}, one[] = {50};
	uint32_t t1gen;
	jbd_transaction *t;
	int r = write_blocks(idx, 2, false);

	t1gen = live[50];
	if (r == 0)
		r = jbd_commit_lock(jc, &t);
	if (r == 0 && t)
		r = jbd_commit_switch(jc, t);
	if (r == 0)
		r = write_blocks(one, 1, false);
	t_is_int(r, 0, "T2 wrote block 50 while T1 commits");
	t_ok(atomic_load(&jc->j->stats.frozen) >= 1, "a frozen copy was made (%llu)",
	     (unsigned long long)atomic_load(&jc->j->stats.frozen));
	if (r == 0)
		r = jbd_commit_write_log(jc, bd, t);
	if (r == 0)
		r = jbd_commit_finish(jc, bd, t);
	t_is_int(r, 0, "T1 committed");
	committed[50] = t1gen;
	committed[51] = live[51];
	check_oracle("frozen, T1 only");
	t_is_int(jbd_commit(jc, bd), 1, "T2 committed");
	mark_committed();
	check_oracle("frozen, T2 too");
}

/* Block 60 logged by one transaction, revoked by the next: replay must
 * leave it as it was. */
static void case_revoke(void)
{
	uint32_t idx[] = {60};
	jbd_handle *h;
	cm_bh *bh = NULL;
	int r = write_blocks(idx, 1, false);

	if (r == 0)
		r = jbd_commit(jc, bd) == 1 ? 0 : -EIO;
	if (r == 0)
		r = jbd_start(jc, 1, &h);
	if (r == 0) {
		r = cm_bcache_read(cache, bd, home(60), &bh);
		if (r == 0)
			r = jbd_revoke(jc, h, home(60), bh);
		t_is_int(h->h_buffer_credits, 1,
			 "the revoke gives back no credit: the last transaction spent it");
		cm_bcache_put(cache, bh);
		if (jbd_stop(jc, h) < 0 && r == 0)
			r = -EIO;
	}
	if (r == 0)
		r = jbd_commit(jc, bd) == 1 ? 0 : -EIO;
	t_is_int(r, 0, "block 60 logged, then revoked in the next transaction");
	t_ok(atomic_load(&jc->j->stats.revokes) >= 1, "a revoke record was written");
	live[60] = committed[60] = 0;
	check_oracle("revoke");
	/* The revoke also cleaned the buffer that only a checkpoint list held
	 * (as JBD2 does): no checkpoint writes the freed block's stale
	 * contents home, over whatever its next owner puts there. */
}

/* Ordered data: home before the commit is, without any checkpoint. */
static void case_ordered(void)
{
	uint32_t i = 70, gen = next_gen++;
	jbd_handle *h;
	cm_bh *bh = NULL;
	uint8_t got[BS], want[BS];
	int fd, r = jbd_start(jc, 1, &h);

	if (r == 0) {
		r = cm_bcache_read(cache, bd, home(i), &bh);
		if (r == 0) {
			pattern(i, gen, cm_bh_data(cache, bh));
			r = jbd_dirty_data(jc, h, bh);
		}
		cm_bcache_put(cache, bh);
		if (jbd_stop(jc, h) < 0 && r == 0)
			r = -EIO;
	}
	if (r == 0)
		r = jbd_commit(jc, bd);
	t_is_int(r, 1, "a handle with one ordered data block committed");
	live[i] = committed[i] = gen;
	pattern(i, gen, want);
	fd = open(img, O_RDONLY);
	t_ok(fd >= 0 && pread(fd, got, BS, (off_t)home(i) * BS) == BS && !memcmp(got, want, BS),
	     "the data block is home once the commit is");
	if (fd >= 0)
		close(fd);
}

/* Many more log blocks than the log holds: checkpoints move the tail and
 * the head wraps. */
static void case_wrap(void)
{
	uint32_t idx[60], wraps = 0, last_head = jc->j->j_head, cps = 0;
	uint64_t seed = 0x1234567, t0 = cm_now_ns(), lb0 = atomic_load(&jc->j->stats.log_blocks);
	uint64_t cp_ns = 0, hw0 = atomic_load(&jc->j->stats.checkpoint_blocks);
	double s;
	int r = 0, n = 60;

	for (int t = 0; r >= 0 && t < n; t++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		/* 60 distinct blocks of 220: a stride prime to 220 */
		for (uint32_t k = 0; k < 60; k++)
			idx[k] = 100 + (uint32_t)((seed >> 33) + k * 7) % 220;
		r = write_blocks(idx, 60, false);
		if (r == 0 && (r = jbd_commit(jc, bd)) == 1)
			mark_committed();
		if (r >= 0 && jbd_checkpoint_wanted(jc)) {
			uint64_t c0 = cm_now_ns();

			r = jbd_checkpoint(jc, bd, 0);
			cp_ns += cm_now_ns() - c0;
			cps++;
		}
		if (jc->j->j_head < last_head)
			wraps++;
		last_head = jc->j->j_head;
	}
	s = (double)(cm_now_ns() - t0) / 1e9;
	t_ok(r >= 0, "60 transactions of 60 blocks committed (%d)", r);
	t_diag("wrap: %.0f commits/s, %.0f log blocks/s with checkpoints (%.3f s); "
	       "checkpoints %.0f home blocks/s", 60 / s,
	       (double)(atomic_load(&jc->j->stats.log_blocks) - lb0) / s, s,
	       (double)(atomic_load(&jc->j->stats.checkpoint_blocks) - hw0) * 1e9 / (double)cp_ns);
	t_diag("log blocks written %llu, checkpoints %u, head wrapped %u times, %llu home writes",
	       (unsigned long long)atomic_load(&jc->j->stats.log_blocks), cps, wraps,
	       (unsigned long long)atomic_load(&jc->j->stats.checkpoint_blocks));
	t_ok(wraps >= 2, "the log wrapped (%u times)", wraps);
	t_ok(jbd_check(jc), "invariants hold");
	check_oracle("wrap");
}

struct writer {
	uint32_t base, ops;
	int err;
};

static _Atomic int writers_done;

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	for (uint32_t k = 0; k < w->ops && !w->err; k++) {
		uint32_t idx[] = {w->base + k % 20};

		w->err = write_blocks(idx, 1, false);
		usleep(100);
	}
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

/* Four writers while a commit loop commits back to back: buffers change
 * while their transaction commits (frozen copies, shadow waits). */
static void case_group(void)
{
	struct writer w[4];
	pthread_t th[4];
	uint64_t c0 = atomic_load(&jc->j->stats.commits), h0 = atomic_load(&jc->j->stats.handles);
	uint32_t tid;
	int r = 0;

	for (int i = 0; i < 4; i++) {
		w[i] = (struct writer){.base = 240 + 20 * (uint32_t)i, .ops = 2000};
		pthread_create(&th[i], NULL, writer_main, &w[i]);
	}
	while (r >= 0 && atomic_load(&writers_done) < 4) {
		if (jbd_commit_wanted(jc))
			r = jbd_commit(jc, bd);
		if (r >= 0 && jbd_checkpoint_wanted(jc))
			r = jbd_checkpoint(jc, bd, 0);
		if (r >= 0 && jbd_force_commit(jc, &tid) == 0)
			r = jbd_commit(jc, bd);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	if (r >= 0)
		r = jbd_commit(jc, bd);
	mark_committed();
	t_ok(r >= 0 && !w[0].err && !w[1].err && !w[2].err && !w[3].err,
	     "4 writers x 2000 handles with a commit loop (%d %d)", r, w[0].err);
	t_diag("average commit %.0f us over %llu commits",
	       (double)atomic_load(&jc->j->stats.commit_ns) / 1e3 /
		       (double)atomic_load(&jc->j->stats.commits),
	       (unsigned long long)atomic_load(&jc->j->stats.commits));
	t_diag("group commit: %llu handles in %llu commits, %llu frozen copies in all",
	       (unsigned long long)(atomic_load(&jc->j->stats.handles) - h0),
	       (unsigned long long)(atomic_load(&jc->j->stats.commits) - c0),
	       (unsigned long long)atomic_load(&jc->j->stats.frozen));
	check_oracle("group");
}

static void case_shutdown(void)
{
	bool rec = true;
	int bad;

	t_is_int(jbd_shutdown(jc, bd), 0, "clean shutdown");
	bad = oracle("shutdown", &rec);
	t_ok(!rec, "needs_recovery is cleared");
	t_is_int(bad, 0, "every block is home, e2fsck finds nothing");
	t_is_int(t_sh("e2fsck -fn %s >/dev/null 2>&1", img), 0, "e2fsck -fn on the image itself");
}

/* The device fails every write: the commit aborts the journal, new
 * handles get EROFS, commit waiters EIO, the shutdown is refused and the
 * image keeps needs_recovery; e2fsck replays what was committed before. */
static void case_ioerror(void)
{
	uint32_t idx[] = {0, 1, 2, 3}, tid = 0;
	jbd_handle *h;
	int r = write_blocks(idx, 4, false);

	atomic_store(fail_writes, 1);
	if (r == 0)
		r = jbd_force_commit(jc, &tid);
	t_is_int(r == 0 ? jbd_commit(jc, bd) : r, -EIO, "a commit whose writes fail gives EIO");
	t_ok(jbd_commit_aborted(jc), "and aborts the journal");
	r = jbd_start(jc, 1, &h);
	t_is_int(r, -EROFS, "a new handle gets EROFS");
	if (r == 0)
		jbd_stop(jc, h);
	t_is_int(jbd_wait_commit(jc, tid), -EIO, "waiting for that commit gives EIO");
	t_ok(jbd_shutdown(jc, bd) < 0, "no clean shutdown after an abort");
	atomic_store(fail_writes, 0);
	check_oracle("after the abort");
}

/* Every case on a fresh image and arena, in one locking mode. */
static void run(enum cm_locking_mode mode, bool ioerror)
{
	int r;

	t_diag("---- locking %s%s ----", mode == CM_LOCKING_BIG ? "big" : "fine",
	       ioerror ? ", I/O errors" : "");
	memset(committed, 0, sizeof(committed));
	memset(live, 0, sizeof(live));
	next_gen = 1;
	atomic_store(&writers_done, 0);
	r = setup(mode);
	t_is_int(r, 0, "image, blockdev server, cache and journal set up");
	if (r == 0 && ioerror) {
		case_basic();
		case_ioerror();
	} else if (r == 0) {
		case_basic();
		case_escape();
		case_frozen();
		case_revoke();
		case_ordered();
		case_wrap();
		case_group();
		case_shutdown();
	}
	bd = cm_bdev_close(bd);
	jc = jc ? jbd_detach(jc) : NULL;
	cache = cm_bcache_detach(cache);
	if (stop_server) {
		atomic_store(stop_server, 1);
		t_ok(t_exited_ok(t_wait(server, 10000)), "the blockdev server stopped");
		stop_server = NULL;
	}
	a = cm_arena_free(a);
}

int main(void)
{
	if (system("command -v mke2fs >/dev/null && command -v e2fsck >/dev/null") != 0)
		t_skip_all("needs mke2fs and e2fsck");
	if (!mkdtemp(dir))
		t_skip_all("mkdtemp: %s", strerror(errno));
	snprintf(img, sizeof(img), "%s/img", dir);
	snprintf(copy, sizeof(copy), "%s/copy", dir);
	run(CM_LOCKING_FINE, false);
	run(CM_LOCKING_BIG, false);
	run(CM_LOCKING_FINE, true);
	if (!getenv("T_KEEP"))
		t_sh("rm -rf %s", dir);
	return t_done();
}
