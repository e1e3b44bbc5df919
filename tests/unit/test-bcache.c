/* test-bcache.c - the buffer cache against a real blockdev server: a forked
 * child serves an image file of seeded random bytes the way blockdev-svc does,
 * counting the requests it executes. Checks contents for three block sizes,
 * hits, eviction under pressure from threads of one process and from several
 * processes, one device read for concurrent readers of a block, pinning by
 * references, the write path (dirty buffers stay, sync writes them home), I/O
 * errors, a full cache, write-back of dirty buffers the journal does not own
 * (and neither write-back, sync nor eviction touching those it does), a
 * stripe lock whose owner died, and blockdev-svc's write log matching the
 * device for a buffer another thread keeps changing during the write.  Reports hit and
 * miss counts and reads/s as TAP diagnostics. EXT3D_LONG=1 runs longer. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../blockdev-svc/internal.h"
#include "bcache.h"
#include "bdclient.h"
#include "bwq.h"
#include "chan.h"
#include "t_arena.h"
#include "tap.h"

/* TSan cannot see locks another process takes, so it reports false races
 * between two threads of one process ordered through a third: under it each
 * reader process runs one thread (t_threads races threads in one process). */
#if defined(__SANITIZE_THREAD__)
#define T_PROC_THREADS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define T_PROC_THREADS 1
#endif
#endif
#ifndef T_PROC_THREADS
#define T_PROC_THREADS 2
#endif

#define T_IMG_BYTES (8u << 20)
#define T_BS 4096u
#define T_NBLK (T_IMG_BYTES / T_BS)

/* Shared with the children, in the arena. */
struct t_shared {
	_Atomic uint64_t reads, writes, flushes; /* executed by the server */
	_Atomic uint64_t readvs, writevs;        /* scatter reads, gathering writes */
	_Atomic uint32_t stop;                   /* the server exits */
	_Atomic uint32_t go, done;               /* round barrier of t_one_read */
};

static cm_arena *t_a;
static struct t_shared *t_sh;
static uint8_t *t_img;          /* what the image holds */
static char t_path[64] = "/tmp/test-bcache.XXXXXX";
static bool t_long;
static pid_t t_server_pid;

static uint64_t t_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int t_exec(void *ctx, const void *req, void *resp)
{
	const cm_bd_rec *rq = req;

	if (rq->hdr.op == CM_BD_READ)
		atomic_fetch_add(&t_sh->reads, 1);
	else if (rq->hdr.op == CM_BD_WRITE)
		atomic_fetch_add(&t_sh->writes, 1);
	else if (rq->hdr.op == CM_BD_FLUSH)
		atomic_fetch_add(&t_sh->flushes, 1);
	else if (rq->hdr.op == CM_BD_READV)
		atomic_fetch_add(&t_sh->readvs, 1);
	else if (rq->hdr.op == CM_BD_WRITEV)
		atomic_fetch_add(&t_sh->writevs, 1);
	return bd_exec(ctx, req, resp);
}

static int t_server(void *arg)
{
	bd_svc bd = {.arena = t_a, .dev.stat = &cm_layout_get(t_a)->device, .wlog.fd = -1};
	cm_chan_server s;
	char why[512];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	bd.bounce = malloc((size_t)CM_BD_MAX_SECTORS * CM_BD_SECTOR);
	if (!bd.bounce)
		return 2;
	if (bd_device_open(&bd.dev, t_path, why, sizeof(why)) < 0)
		return 2;
	cm_chan_server_init(&s, t_a, 0);
	while (!atomic_load(&t_sh->stop)) {
		uint32_t armed = cm_chan_server_arm(&s);
		if (cm_chan_server_poll(&s, 32, t_exec, &bd) == 0)
			cm_chan_server_wait(&s, armed, 100);
	}
	bd_device_close(&bd.dev);
	free(bd.bounce);
	return 0;
}

static void t_setup(void)
{
	uint64_t seed = 0x5eedb10c;
	int r, fd;

	r = cm_arena_create(64 << 20, 48 << 20, 0, &t_a);
	if (r == 0)
		r = cm_layout_init(t_a, CM_LOCKING_FINE);
	if (r == 0)
		t_sh = cm_arena_ptr(t_a, cm_arena_alloc(t_a, sizeof(*t_sh), 64), sizeof(*t_sh));
	t_img = malloc(T_IMG_BYTES);
	fd = mkstemp(t_path);
	for (uint32_t i = 0; t_img && i < T_IMG_BYTES / 8; i++)
		((uint64_t *)t_img)[i] = t_rand(&seed);
	if (!t_sh || !t_img || fd < 0 || pwrite(fd, t_img, T_IMG_BYTES, 0) != (ssize_t)T_IMG_BYTES) {
		printf("Bail out! setup: %d\n", r);
		exit(1);
	}
	close(fd);
	t_diag("image %s: %u bytes, seed 0x5eedb10c", t_path, T_IMG_BYTES);
	snprintf(cm_layout_get(t_a)->svcs[0].name, CM_SVC_NAME_MAX, "blockdev-svc");
	t_server_pid = t_fork(t_server, NULL);
}

/* A new cache of bytes / bs buffers, attached; bails out on failure. */
static cm_bcache *t_cache(uint64_t bytes, uint32_t bs, cm_off *ret_off)
{
	cm_off off, *o = ret_off ? ret_off : &off;
	cm_bcache *c;

	if (cm_bcache_create(t_a, bytes, bs, o) < 0 || cm_bcache_attach(t_a, *o, &c) < 0) {
		printf("Bail out! cache of %llu bytes\n", (unsigned long long)bytes);
		exit(1);
	}
	return c;
}

static bool t_same(cm_bcache *c, cm_bh *bh, uint32_t bs)
{
	return memcmp(cm_bh_data(c, bh), t_img + cm_bh_blocknr(bh) * bs, bs) == 0;
}

/* Reads blocknr and checks its bytes: 0, or -errno, or 1 on a mismatch. */
static int t_read_check(cm_bcache *c, cm_bdev *bd, uint64_t blocknr, uint32_t bs)
{
	cm_bh *bh;
	int r = cm_bcache_read(c, bd, blocknr, &bh);

	if (r < 0)
		return r;
	r = !(cm_bh_blocknr(bh) == blocknr && cm_bh_test(bh, CM_BH_UPTODATE) && t_same(c, bh, bs));
	cm_bcache_put(c, bh);
	return r;
}

static void t_params(void)
{
	cm_bcache *c;
	cm_arena *big;
	cm_off off;
	cm_bcache_stats st;
	cm_lockset *ls = &cm_layout_get(t_a)->locks;

	t_ok(cm_bh_state_lock(ls, 70) == &ls->bh_state[cm_bh_stripe(70)] &&
	     cm_bh_jh_lock(ls, 70) == &ls->journal_head[cm_bh_stripe(70)],
	     "bh_state and journal_head stripes by block number");
	{
		bool spread = true;

		/* Two runs of blocks 128 apart, walked in step, do not meet. */
		for (uint64_t b = 1000; b < 1064; b++)
			spread &= cm_bh_stripe(b) != cm_bh_stripe(b + 128);
		t_ok(spread, "runs of blocks in step fall on different stripes");
	}
	t_is_int(cm_bcache_create(t_a, 1 << 20, 512, &off), -EINVAL, "block size 512 refused");
	t_is_int(cm_bcache_create(t_a, 1 << 20, 3072, &off), -EINVAL, "block size 3072 refused");
	t_is_int(cm_bcache_create(t_a, 1 << 20, 131072, &off), -EINVAL, "block size 128K refused");
	t_is_int(cm_bcache_create(t_a, 1000, 1024, &off), -EINVAL, "cache smaller than a block");
	t_is_int(cm_bcache_attach(t_a, cm_layout_get(t_a)->chans, &c), -EPROTO,
		 "attach where there is no cache: -EPROTO");
	if (cm_arena_create(72 << 20, 68 << 20, 0, &big) < 0) {
		t_skip("no memory", "default size");
		return;
	}
	t_is_int(cm_bcache_create(big, 0, 4096, &off), 0, "default-sized cache created");
	t_is_int(cm_bcache_attach(big, off, &c), 0, "and attached");
	cm_bcache_stats_read(c, &st);
	t_is_int(st.nbufs, (64 << 20) / 4096, "default: 64 MiB of 4K buffers");
	cm_bcache_detach(c);
	t_is_int(cm_bcache_create(big, 0, 4096, &off), -ENOMEM, "a second one does not fit");
	cm_arena_free(big);
}

/* Random blocks read right; the second read of one is a hit, no I/O. */
static void t_contents(uint32_t bs)
{
	cm_bcache *c = t_cache(2 << 20, bs, NULL);
	uint64_t seed = 77 + bs, nblk = T_IMG_BYTES / bs, srv0 = atomic_load(&t_sh->reads);
	cm_bcache_stats s0, s1;
	int bad = 0, n = t_long ? 2000 : 300;
	cm_bdev *bd;
	cm_bh *bh;

	t_is_int(cm_bdev_open(t_a, &bd), 0, "bs=%u: blockdev opened", bs);
	for (int i = 0; i < n; i++)
		bad += t_read_check(c, bd, t_rand(&seed) % nblk, bs) != 0;
	t_is_int(bad, 0, "bs=%u: %d random blocks equal the image", bs, n);
	bad += t_read_check(c, bd, nblk - 1, bs) != 0;
	t_is_int(bad, 0, "bs=%u: the last block too", bs);
	cm_bcache_stats_read(c, &s0);
	t_is_int((int64_t)(s0.hits + s0.misses), n + 1, "bs=%u: every get a hit or a miss", bs);
	t_is_int((int64_t)s0.reads, (int64_t)s0.misses, "bs=%u: one device read per miss", bs);
	t_is_int((int64_t)(atomic_load(&t_sh->reads) - srv0), (int64_t)s0.reads,
		 "bs=%u: the server executed as many", bs);
	t_is_int(cm_bcache_read(c, bd, nblk - 1, &bh), 0, "bs=%u: read again", bs);
	cm_bcache_stats_read(c, &s1);
	t_ok(s1.hits == s0.hits + 1 && s1.reads == s0.reads, "bs=%u: that was a hit, no I/O", bs);
	cm_bcache_put(c, bh);
	t_diag("bs=%u: %llu hits, %llu misses, %llu evictions", bs,
	       (unsigned long long)s1.hits, (unsigned long long)s1.misses,
	       (unsigned long long)s1.evictions);
	t_ok(cm_bcache_check(c), "bs=%u: invariants hold", bs);
	cm_bdev_close(bd);
	cm_bcache_detach(c);
}

struct t_reader {
	cm_off off;
	uint64_t seed;
	int n;
	int bad;
};

static void *t_reader_thread(void *arg)
{
	struct t_reader *rd = arg;
	cm_bcache *c;
	cm_bdev *bd;

	rd->bad = 1000000;
	if (cm_bcache_attach(t_a, rd->off, &c) < 0 || cm_bdev_open(t_a, &bd) < 0)
		return NULL;
	rd->bad = 0;
	for (int i = 0; i < rd->n; i++)
		rd->bad += t_read_check(c, bd, t_rand(&rd->seed) % T_NBLK, T_BS) != 0;
	cm_bdev_close(bd);
	cm_bcache_detach(c);
	return NULL;
}

/* Runs n (at most 4) reader threads like proto, with their own seeds, in
 * this process; returns how many of their reads went wrong. */
static int t_run_readers(const struct t_reader *proto, int n)
{
	struct t_reader rd[4];
	pthread_t th[4];
	int bad = 0;

	for (int i = 0; i < n; i++) {
		rd[i] = *proto;
		rd[i].seed += (uint64_t)i * 7919 + 1;
		if (pthread_create(&th[i], NULL, t_reader_thread, &rd[i]) != 0)
			return 1000000;
	}
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		bad += rd[i].bad;
	}
	return bad;
}

/* A child process of t_pressure: exits 0 if every read was right. */
static int t_reader_proc(void *arg)
{
	return t_run_readers(arg, T_PROC_THREADS) ? 1 : 0;
}

/* 3 processes x T_PROC_THREADS threads on 64 buffers over 2048 blocks. */
static void t_pressure(void)
{
	struct t_reader rd = {.n = t_long ? 300000 : 10000};
	cm_bcache *c = t_cache(64 * T_BS, T_BS, &rd.off);
	cm_bcache_stats st;
	pid_t pid[3];
	uint64_t t0 = cm_now_ns();
	double secs;
	int ok = 1;

	for (int i = 0; i < 3; i++) {
		rd.seed = 1000 + (uint64_t)i * 104729;
		pid[i] = t_fork(t_reader_proc, &rd);
	}
	for (int i = 0; i < 3; i++)
		ok &= t_exited_ok(t_wait(pid[i], 100000));
	secs = (double)(cm_now_ns() - t0) / 1e9;
	cm_bcache_stats_read(c, &st);
	t_ok(ok, "3 processes x %d threads, %d random reads each, all bytes right",
	     T_PROC_THREADS, rd.n);
	t_is_int((int64_t)(st.hits + st.misses), 3 * T_PROC_THREADS * rd.n, "every get counted");
	t_ok(st.evictions > 0 && st.evictions <= st.misses, "evicted under pressure (%llu)",
	     (unsigned long long)st.evictions);
	t_is_int((int64_t)st.reads, (int64_t)st.misses, "one device read per miss");
	t_ok(cm_bcache_check(c), "invariants hold after the storm");
	t_diag("pressure: %.2f s, %.0f gets/s, %.0f device reads/s, hits %llu misses %llu "
	       "evictions %llu waits %llu", secs, 3.0 * T_PROC_THREADS * rd.n / secs, (double)st.reads / secs,
	       (unsigned long long)st.hits, (unsigned long long)st.misses,
	       (unsigned long long)st.evictions, (unsigned long long)st.waits);
	cm_bcache_detach(c);
}

/* 4 threads of this process on a cache of 32 buffers: the whole race is in
 * one process, where TSan sees every lock (see T_PROC_THREADS). */
static void t_threads(void)
{
	struct t_reader rd = {.seed = 31, .n = t_long ? 20000 : 2000};
	cm_bcache *c = t_cache(32 * T_BS, T_BS, &rd.off);
	cm_bcache_stats st;
	int bad = t_run_readers(&rd, 4);

	cm_bcache_stats_read(c, &st);
	t_is_int(bad, 0, "4 threads, %d random reads each, all bytes right", rd.n);
	t_ok(st.evictions > 0 && st.reads == st.misses, "evictions %llu, one read per miss",
	     (unsigned long long)st.evictions);
	t_ok(cm_bcache_check(c), "invariants hold");
	cm_bcache_detach(c);
}

struct t_rounds {
	int rounds;
	cm_off off;
};

/* Child of t_one_read: round k reads block k, together with the others. */
static int t_round_proc(void *arg)
{
	struct t_rounds *tr = arg;
	cm_bcache *c;
	cm_bdev *bd;
	int bad = 0;

	if (cm_bcache_attach(t_a, tr->off, &c) < 0 || cm_bdev_open(t_a, &bd) < 0)
		return 2;
	for (int k = 1; k <= tr->rounds; k++) {
		while (atomic_load(&t_sh->go) < (uint32_t)k)
			sched_yield();
		bad += t_read_check(c, bd, (uint64_t)k, T_BS) != 0;
		atomic_fetch_add(&t_sh->done, 1);
	}
	cm_bdev_close(bd);
	return bad ? 1 : 0;
}

static void t_one_read(void)
{
	struct t_rounds arg = {.rounds = t_long ? 2000 : 1000};
	cm_bcache *c = t_cache(1 << 20, T_BS, &arg.off);
	uint64_t srv0 = atomic_load(&t_sh->reads);
	cm_bcache_stats st;
	pid_t pid[4];
	int ok = 1;

	atomic_store(&t_sh->go, 0);
	atomic_store(&t_sh->done, 0);
	for (int i = 0; i < 4; i++)
		pid[i] = t_fork(t_round_proc, &arg);
	for (int k = 1, w = 0; k <= arg.rounds && w < 100000; k++) {
		atomic_store(&t_sh->go, (uint32_t)k);
		for (w = 0; atomic_load(&t_sh->done) < 4u * (uint32_t)k && w < 100000; w++)
			usleep(100); /* a child that died would stall the round: 10 s at most */
	}
	for (int i = 0; i < 4; i++)
		ok &= t_exited_ok(t_wait(pid[i], 30000));
	cm_bcache_stats_read(c, &st);
	t_ok(ok, "4 processes read the same block together, %d rounds, bytes right", arg.rounds);
	t_is_int((int64_t)st.misses, arg.rounds, "one miss per round");
	t_is_int((int64_t)st.reads, arg.rounds, "one device read per round (cache stats)");
	t_is_int((int64_t)(atomic_load(&t_sh->reads) - srv0), arg.rounds,
		 "one device read per round (the server's count)");
	t_diag("same block: %llu readers waited for another's read",
	       (unsigned long long)st.waits);
	cm_bcache_detach(c);
}

/* A referenced buffer survives churn; an unreferenced one does not. */
static void t_pin(cm_bdev *bd)
{
	cm_bcache *c = t_cache(16 * T_BS, T_BS, NULL);
	cm_bcache_stats st;
	cm_bh *pinned, *again;
	uint64_t seed = 4242;
	int bad = 0;

	t_is_int(cm_bcache_read(c, bd, 100, &pinned), 0, "read block 100 and hold it");
	for (int i = 0; i < 500; i++)
		bad += t_read_check(c, bd, 200 + t_rand(&seed) % 1000, T_BS) != 0;
	cm_bcache_stats_read(c, &st);
	t_ok(bad == 0 && st.evictions > 400, "churned 500 blocks through 16 buffers (%llu evictions)",
	     (unsigned long long)st.evictions);
	t_ok(cm_bh_blocknr(pinned) == 100 && cm_bh_test(pinned, CM_BH_UPTODATE) &&
	     t_same(c, pinned, T_BS), "the held buffer kept its block and bytes");
	again = cm_bcache_get(c, 100);
	t_ok(again == pinned, "a get of block 100 finds the same buffer");
	cm_bcache_put(c, again);
	cm_bcache_put(c, pinned);
	for (int i = 0; i < 100; i++)
		bad += t_read_check(c, bd, 200 + t_rand(&seed) % 1000, T_BS) != 0;
	again = cm_bcache_get(c, 100);
	t_ok(again && !cm_bh_test(again, CM_BH_UPTODATE), "released, it was evicted by churn");
	cm_bcache_put(c, again);
	t_ok(cm_bcache_check(c), "invariants hold");
	cm_bcache_detach(c);
}

static bool t_file_is(uint64_t blocknr, const uint8_t *want)
{
	uint8_t buf[T_BS];
	int fd = open(t_path, O_RDONLY);
	bool same = pread(fd, buf, T_BS, (off_t)(blocknr * T_BS)) == T_BS &&
		    memcmp(buf, want, T_BS) == 0;

	close(fd);
	return same;
}

/* Modify, mark dirty, churn: the dirty buffer stays; sync writes it home. */
static void t_write(cm_bdev *bd)
{
	cm_bcache *c = t_cache(16 * T_BS, T_BS, NULL);
	uint64_t w0 = atomic_load(&t_sh->writes), f0 = atomic_load(&t_sh->flushes), seed = 99;
	cm_bcache_stats st;
	cm_bh *bh, *again;
	uint8_t *d;
	int bad = 0;

	t_is_int(cm_bcache_read(c, bd, 1500, &bh), 0, "read block 1500");
	d = cm_bh_data(c, bh);
	for (uint32_t i = 0; i < T_BS; i++)
		d[i] ^= 0xa5;
	cm_bh_mark_dirty(bh);
	cm_bcache_put(c, bh);
	for (int i = 0; i < 300; i++)
		bad += t_read_check(c, bd, t_rand(&seed) % 1000, T_BS) != 0;
	again = cm_bcache_get(c, 1500);
	t_ok(bad == 0 && again == bh && cm_bh_test(bh, CM_BH_DIRTY),
	     "after churning 300 blocks the dirty buffer is still cached, still dirty");
	cm_bcache_put(c, again);
	t_ok(!t_file_is(1500, d), "not written before sync");
	t_is_int(cm_bcache_sync(c, bd), 0, "sync");
	t_ok(t_file_is(1500, d) && !cm_bh_test(bh, CM_BH_DIRTY), "the image has the new bytes, "
	     "the buffer is clean");
	memcpy(t_img + 1500 * T_BS, d, T_BS);
	t_is_int((int64_t)(atomic_load(&t_sh->writes) - w0), 1, "one device write");
	t_is_int((int64_t)(atomic_load(&t_sh->flushes) - f0), 1, "one flush");
	t_is_int(cm_bcache_read(c, bd, 1501, &bh), 0, "read block 1501");
	t_is_int(cm_bcache_write(c, bd, bh), 0, "write of a clean buffer");
	cm_bcache_stats_read(c, &st);
	t_is_int((int64_t)st.writes, 1, "does no I/O");
	d = cm_bh_data(c, bh);
	memset(d, 0x3c, 100);
	cm_bh_mark_dirty(bh);
	t_is_int(cm_bcache_write(c, bd, bh), 0, "cm_bcache_write of a dirty one");
	t_ok(t_file_is(1501, d) && !cm_bh_test(bh, CM_BH_DIRTY), "written home, clean");
	memcpy(t_img + 1501 * T_BS, d, T_BS);
	cm_bcache_put(c, bh);
	t_ok(cm_bcache_check(c), "invariants hold");
	cm_bcache_detach(c);
}

static int t_bad_reader(void *arg)
{
	cm_bcache *c;
	cm_bdev *bd;
	cm_bh *bh;

	if (cm_bcache_attach(t_a, *(cm_off *)arg, &c) < 0 || cm_bdev_open(t_a, &bd) < 0)
		return 2;
	return cm_bcache_read(c, bd, T_NBLK + 5, &bh) == -ERANGE ? 0 : 1;
}

/* Past the device end: the error reaches every reader, the buffer stays
 * !UPTODATE; a failed write leaves it dirty. */
static void t_errors(cm_bdev *bd)
{
	cm_off off;
	cm_bcache *c = t_cache(16 * T_BS, T_BS, &off);
	cm_bh *bh = NULL;
	pid_t pid[3];
	int ok = 1;

	t_is_int(cm_bcache_read(c, bd, T_NBLK, &bh), -ERANGE, "read past the end: -ERANGE");
	bh = cm_bcache_get(c, T_NBLK);
	t_ok(bh && !cm_bh_test(bh, CM_BH_UPTODATE | CM_BH_LOCKED) && bh->b_error == -ERANGE,
	     "its buffer is cached, not uptodate, not locked");
	t_is_int(cm_bcache_read(c, bd, T_NBLK, &bh), -ERANGE, "a second read tries again, fails");
	cm_bcache_put(c, bh);
	t_is_int(cm_bcache_read(c, bd, UINT64_MAX, &bh), -ERANGE, "block 2^64-1: -ERANGE, no I/O");
	for (int i = 0; i < 3; i++)
		pid[i] = t_fork(t_bad_reader, &off);
	for (int i = 0; i < 3; i++)
		ok &= t_exited_ok(t_wait(pid[i], 30000));
	t_ok(ok, "3 processes reading a bad block together all get -ERANGE");
	bh = cm_bcache_get(c, T_NBLK + 9);
	memset(cm_bh_data(c, bh), 0, T_BS);
	cm_bh_set_uptodate(bh);
	cm_bh_mark_dirty(bh);
	t_is_int(cm_bcache_write(c, bd, bh), -ERANGE, "writing past the end fails");
	t_ok(cm_bh_test(bh, CM_BH_DIRTY), "and leaves the buffer dirty");
	t_is_int(cm_bcache_sync(c, bd), -ERANGE, "sync reports it");
	cm_bh_clear_dirty(bh);
	cm_bcache_put(c, bh);
	t_is_int(cm_bcache_sync(c, bd), 0, "forgotten, sync is clean");
	t_is_int(t_read_check(c, bd, 7, T_BS), 0, "good blocks still read");
	t_ok(cm_bcache_check(c), "invariants hold");
	cm_bcache_detach(c);
}

/* Every buffer referenced, then every one dirty: get fails, cleanly. */
static void t_full(cm_bdev *bd)
{
	cm_bcache *c = t_cache(8 * T_BS, T_BS, NULL);
	cm_bh *held[8], *bh;
	int ok = 1;

	for (int i = 0; i < 8; i++)
		ok &= cm_bcache_read(c, bd, 10 + (uint64_t)i, &held[i]) == 0;
	t_ok(ok, "8 buffers of 8 held");
	t_is_int(cm_bcache_getblk(c, 50, &bh), -ENOMEM, "a ninth block: -ENOMEM");
	t_ok(cm_bcache_get(c, 50) == NULL, "cm_bcache_get: NULL");
	t_is_int(cm_bcache_read(c, bd, 13, &bh), 0, "a held block is still a hit");
	cm_bcache_put(c, bh);
	cm_bcache_put(c, held[3]);
	t_is_int(t_read_check(c, bd, 50, T_BS), 0, "one released: the ninth block reads");
	t_is_int(cm_bcache_read(c, bd, 13, &held[3]), 0, "and the released one again");
	for (int i = 0; i < 8; i++) {
		cm_bh_mark_dirty(held[i]); /* same bytes: the image does not change */
		cm_bcache_put(c, held[i]);
	}
	t_is_int(cm_bcache_getblk(c, 51, &bh), -ENOMEM, "all dirty, none held: -ENOMEM");
	t_is_int(cm_bcache_sync(c, bd), 0, "sync");
	t_is_int(t_read_check(c, bd, 51, T_BS), 0, "then a new block reads");
	t_ok(cm_bcache_check(c), "invariants hold");
	cm_bcache_detach(c);
}

/* Dirties the 8 buffers of blocks first.., each byte flipped, and puts
 * them; held[] keeps the pointers (not references). */
static void t_dirty_all(cm_bcache *c, cm_bdev *bd, uint64_t first, cm_bh **held)
{
	for (uint64_t i = 0; i < 8; i++) {
		uint8_t *d;
		if (cm_bcache_read(c, bd, first + i, &held[i]) < 0) {
			printf("Bail out! read %llu\n", (unsigned long long)(first + i));
			exit(1);
		}
		d = cm_bh_data(c, held[i]);
		for (uint32_t k = 0; k < T_BS; k++)
			d[k] ^= 0x5a;
		cm_bh_mark_dirty(held[i]);
		cm_bcache_put(c, held[i]);
	}
}

/* Write-back: a cache full of dirty buffers makes room by writing home
 * those without a journal head, at most max of them, in one pipelined
 * burst; buffers with b_jh set (the journal's) are never written back,
 * synced or evicted, dirty or clean. */
static void t_writeback(cm_bdev *bd)
{
	cm_bcache *c = t_cache(8 * T_BS, T_BS, NULL);
	uint64_t w0 = atomic_load(&t_sh->writes), seed = 7;
	cm_bh *b[8], *bh;
	int home = 0, bad = 0;

	t_dirty_all(c, bd, 1700, b);
	b[2]->b_jh = 1; /* the journal's, dirty */
	b[3]->b_jh = 1;
	t_is_int(cm_bcache_getblk(c, 1800, &bh), -ENOMEM, "writeback: all dirty: getblk -ENOMEM");
	t_is_int(cm_bcache_writeback(c, bd, 3), 3, "writeback of at most 3 writes 3");
	t_is_int(cm_bcache_writeback(c, bd, 100), 3, "then the 3 others without a journal head");
	t_is_int((int64_t)(atomic_load(&t_sh->writes) - w0), 6, "6 device writes");
	for (int i = 0; i < 8; i++) {
		bool jh = i == 2 || i == 3;
		if (!jh && t_file_is(1700 + (uint64_t)i, cm_bh_data(c, b[i])) &&
		    !cm_bh_test(b[i], CM_BH_DIRTY)) {
			memcpy(t_img + (1700 + (uint64_t)i) * T_BS, cm_bh_data(c, b[i]), T_BS);
			home++;
		}
		if (jh && !t_file_is(1700 + (uint64_t)i, cm_bh_data(c, b[i])) &&
		    cm_bh_test(b[i], CM_BH_DIRTY))
			home += 10;
	}
	t_is_int(home, 26, "the 6 are home and clean; the journal's 2 are dirty, not written");
	t_is_int(cm_bcache_writeback(c, bd, 100), 0, "nothing more to write back");
	b[4]->b_jh = 1; /* the journal's, clean */
	for (int i = 0; i < 200; i++)
		bad += t_read_check(c, bd, 1000 + t_rand(&seed) % 500, T_BS) != 0;
	t_ok(bad == 0, "200 reads churn the 5 other buffers");
	bh = cm_bcache_get(c, 1702);
	t_ok(bh == b[2] && cm_bh_test(bh, CM_BH_DIRTY), "the journal's dirty buffer stayed");
	cm_bcache_put(c, bh);
	bh = cm_bcache_get(c, 1704);
	t_ok(bh == b[4] && cm_bh_test(bh, CM_BH_UPTODATE), "the journal's clean unreferenced "
	     "buffer stayed");
	cm_bcache_put(c, bh);
	w0 = atomic_load(&t_sh->writes);
	t_is_int(cm_bcache_sync(c, bd), 0, "sync");
	t_ok(atomic_load(&t_sh->writes) == w0 && cm_bh_test(b[2], CM_BH_DIRTY) &&
	     !t_file_is(1702, cm_bh_data(c, b[2])), "sync leaves the journal's buffers alone");
	for (int i = 2; i <= 4; i++) {
		bh = cm_bcache_get(c, 1700 + (uint64_t)i);
		cm_bh_clear_dirty(bh); /* the journal drops them: the image is unchanged */
		memcpy(cm_bh_data(c, bh), t_img + (1700 + (uint64_t)i) * T_BS, T_BS);
		bh->b_jh = 0;
		cm_bcache_put(c, bh);
	}
	t_ok(cm_bcache_check(c), "writeback: invariants hold");
	cm_bcache_detach(c);

	c = t_cache(8 * T_BS, T_BS, NULL);
	t_dirty_all(c, bd, 1710, b);
	for (uint64_t i = 0; i < 8; i++) /* before a read reuses one of them */
		memcpy(t_img + (1710 + i) * T_BS, cm_bh_data(c, b[i]), T_BS);
	w0 = atomic_load(&t_sh->writes);
	t_is_int(t_read_check(c, bd, 1800, T_BS), 0, "a read in a cache full of dirty buffers "
		 "writes back and succeeds");
	t_ok(atomic_load(&t_sh->writes) - w0 == 8, "having written the 8 home in one burst");
	for (uint64_t i = 0; i < 8; i++)
		bad += !t_file_is(1710 + i, t_img + (1710 + i) * T_BS);
	t_is_int(bad, 0, "the image has every written-back block's new bytes");
	t_ok(cm_bcache_check(c), "writeback: invariants hold");
	cm_bcache_detach(c);
}

struct t_scribbler {
	uint8_t *buf;
	size_t len;
	_Atomic bool stop;
};

static void *t_scribble(void *arg)
{
	struct t_scribbler *sc = arg;

	for (uint8_t v = 0; !atomic_load_explicit(&sc->stop, memory_order_relaxed); v++)
		for (size_t i = 0; i < sc->len; i += 64)
			__atomic_store_n(&sc->buf[i], v, __ATOMIC_RELAXED);
	return NULL;
}

/* Stable writes: blockdev-svc reads a written buffer once, so what its
 * write log records is what reached the device, even while a client
 * thread keeps changing the buffer. The device is opened here without
 * bd_device_open: the server thread of this process holds the image's
 * one-writer lock (imglock.h), which a second open would wait for. */
static void t_stable_write(void)
{
	const uint32_t nsect = 128, len = nsect * CM_BD_SECTOR;
	const uint64_t sector = 1900ull * (T_BS / CM_BD_SECTOR);
	char wpath[64] = "/tmp/test-bcache-wlog.XXXXXX";
	struct t_scribbler sc = {.len = len};
	bd_svc bd = {.arena = t_a, .dev.stat = &cm_layout_get(t_a)->device, .wlog.fd = -1};
	uint8_t *logged = malloc(len), *dev = malloc(len);
	cm_off off = cm_arena_alloc_data(t_a, len, 4096);
	int wfd = mkstemp(wpath), differ = 0, failed = 0;
	pthread_t th;

	bd.bounce = malloc((size_t)CM_BD_MAX_SECTORS * CM_BD_SECTOR);
	bd.dev.sectors = T_IMG_BYTES / CM_BD_SECTOR;
	sc.buf = off ? cm_arena_ptr(t_a, off, len) : NULL;
	if (!logged || !dev || !sc.buf || wfd < 0 || !bd.bounce ||
	    (bd.dev.fd = open(t_path, O_RDWR | O_CLOEXEC)) < 0 ||
	    bd_wlog_open(&bd.wlog, wpath) < 0 || pthread_create(&th, NULL, t_scribble, &sc)) {
		printf("Bail out! stable-write setup\n");
		exit(1);
	}
	for (int i = 0; i < 300; i++) {
		cm_bd_rec rq = {.hdr = {.version = CM_BD_VERSION, .op = CM_BD_WRITE},
				.sector = sector, .nsect = nsect, .data_off = off};
		cm_bd_rec rs;
		off_t end;
		failed += bd_exec(&bd, &rq, &rs) != 0;
		end = lseek(bd.wlog.fd, 0, SEEK_END);
		if (pread(wfd, logged, len, end - (off_t)len) != (ssize_t)len ||
		    pread(bd.dev.fd, dev, len, (off_t)(sector * CM_BD_SECTOR)) != (ssize_t)len ||
		    memcmp(logged, dev, len) != 0)
			differ++;
	}
	atomic_store(&sc.stop, true);
	pthread_join(th, NULL);
	t_is_int(failed, 0, "stable writes: 300 writes of a buffer changing under them");
	t_is_int(differ, 0, "each write's log record equals what reached the device");
	t_ok(pwrite(bd.dev.fd, t_img + sector * CM_BD_SECTOR, len,
		    (off_t)(sector * CM_BD_SECTOR)) == (ssize_t)len, "stable writes: image restored");
	bd_device_close(&bd.dev);
	bd_wlog_close(&bd.wlog);
	close(wfd);
	unlink(wpath);
	free(bd.bounce);
	free(logged);
	free(dev);
}

static int t_die_holding(void *arg)
{
	if (cm_mutex_lock(arg) != 0)
		return 2;
	raise(SIGKILL);
	return 3;
}

static void t_dead_stripe(cm_bdev *bd)
{
	cm_bcache *c = t_cache(8 * T_BS, T_BS, NULL);
	cm_mutex *m = cm_bcache_stripe(c, 5);
	int status = t_wait(t_fork(t_die_holding, m), 10000);
	uint64_t other = 6;
	cm_bh *bh;

	while (cm_bcache_stripe(c, other) == m)
		other++;
	t_ok(status >= 0 && WIFSIGNALED(status), "a process died holding block 5's stripe");
	t_is_int(cm_bcache_getblk(c, 5, &bh), -EOWNERDEAD, "getblk: -EOWNERDEAD");
	t_ok(cm_bcache_get(c, 5) == NULL, "cm_bcache_get: NULL");
	t_is_int(cm_bcache_read(c, bd, 5, &bh), -EOWNERDEAD, "read: -EOWNERDEAD");
	t_ok(!cm_bcache_check(c), "the check reports the lost stripe");
	t_is_int(t_read_check(c, bd, other, T_BS), 0, "a block of another stripe still reads");
	cm_bcache_detach(c);
}

/* Prefetch: runs of consecutive blocks go out as scatter reads of at most
 * CM_BDEV_RUN_MAX blocks; a cached block, gaps, a repeat and a block past
 * the end are handled; every listed block is then a hit with the image's
 * bytes, and the one past the end still reports its error. */
static void t_prefetch(cm_bdev *bd)
{
	cm_bcache *c = t_cache(4 << 20, T_BS, NULL);
	uint64_t list[200], v0;
	cm_bcache_stats s0, s1;
	size_t n = 0;
	int bad = 0;

	t_is_int(t_read_check(c, bd, 5, T_BS), 0, "prefetch: block 5 read first");
	for (uint64_t b = 0; b < 100; b++)
		list[n++] = b;
	list[n++] = 300;
	list[n++] = 302;
	list[n++] = 301;
	list[n++] = 300;
	for (uint64_t b = T_NBLK - 40; b < T_NBLK; b++)
		list[n++] = b;
	list[n++] = T_NBLK + 3;
	cm_bcache_stats_read(c, &s0);
	v0 = atomic_load(&t_sh->readvs);
	cm_bcache_prefetch(c, bd, list, n);
	cm_bcache_stats_read(c, &s1);
	t_is_int((int64_t)(s1.reads - s0.reads), 99 + 3 + 40 + 1,
		 "prefetch: every uncached block read once");
	/* 0-4, 6-99 (4 runs of at most 32), 300, 302, 301, then the tail. */
	t_is_int((int64_t)(atomic_load(&t_sh->readvs) - v0), 1 + 3 + 3 + 2 + 1,
		 "prefetch: consecutive blocks share scatter reads");
	for (size_t i = 0; i + 1 < n; i++)
		bad += t_read_check(c, bd, list[i], T_BS) != 0;
	t_is_int(bad, 0, "prefetch: every block equals the image");
	cm_bcache_stats_read(c, &s0);
	t_is_int((int64_t)(s0.reads - s1.reads), 0, "prefetch: reading them did no more I/O");
	t_ok(t_read_check(c, bd, T_NBLK + 3, T_BS) < 0, "prefetch: past the end still fails");
	t_ok(cm_bcache_check(c), "prefetch: invariants hold");
	cm_bcache_detach(c);
}

struct t_bwq_seen {
	int done, failed, locked, bad_tag;
};

static void t_bwq_done(void *ctx, cm_bh *bh, void *tag, int r)
{
	struct t_bwq_seen *seen = ctx;

	seen->done++;
	seen->failed += r < 0;
	seen->locked += cm_bh_test(bh, CM_BH_LOCKED);
	seen->bad_tag += tag != bh;
}

/* The home-write queue: 70 consecutive dirty blocks go as three gathering
 * writes (32 + 32 + 6), two lone blocks as plain writes, and a run across
 * the device's end fails as a whole: its buffers are dirty again, the
 * others home and clean, every one unlocked before its done call. */
static void t_home_writes(cm_bdev *bd)
{
	cm_bcache *c = t_cache(128 * T_BS, T_BS, NULL);
	uint64_t blocks[80], w0 = atomic_load(&t_sh->writes), v0 = atomic_load(&t_sh->writevs);
	struct t_bwq_seen seen = {0};
	uint32_t n = 0;
	cm_bh *bh[80];
	cm_bwq q;
	int home = 0, dirty = 0;

	for (uint64_t b = 400; b < 470; b++)
		blocks[n++] = b;
	blocks[n++] = 480;
	blocks[n++] = 482;
	for (uint64_t b = T_NBLK - 2; b < T_NBLK + 2; b++)
		blocks[n++] = b;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *d;
		if (cm_bcache_getblk(c, blocks[i], &bh[i]) < 0) {
			printf("Bail out! getblk %llu\n", (unsigned long long)blocks[i]);
			exit(1);
		}
		d = cm_bh_data(c, bh[i]);
		for (uint32_t k = 0; k < T_BS; k++)
			d[k] = (uint8_t)(blocks[i] * 7 + k);
		cm_bh_set_uptodate(bh[i]);
		cm_bh_mark_dirty(bh[i]);
	}
	cm_bwq_init(&q, c, bd, t_bwq_done, &seen);
	for (uint32_t i = 0; i < n; i++) {
		cm_bh_lock(c, bh[i]);
		cm_bh_clear_dirty(bh[i]);
		cm_bwq_add(&q, bh[i], bh[i]);
	}
	t_is_int(cm_bwq_finish(&q), -ERANGE, "bwq: the run across the end fails with -ERANGE");
	t_is_int((int64_t)q.requests, 6, "bwq: 76 buffers in 6 requests");
	t_is_int((int64_t)(atomic_load(&t_sh->writevs) - v0), 4,
		 "bwq: 3 gathering writes of 70 blocks and one across the end");
	t_is_int((int64_t)(atomic_load(&t_sh->writes) - w0), 2, "bwq: the lone blocks as plain writes");
	t_is_int(seen.done, 76, "bwq: done called for each buffer");
	t_is_int(seen.failed, 4, "bwq: with the error for the 4 across the end");
	t_is_int(seen.locked + seen.bad_tag, 0, "bwq: unlocked before done, with its own tag");
	for (uint32_t i = 0; i < n; i++) {
		if (blocks[i] < T_NBLK - 2) {
			home += t_file_is(blocks[i], cm_bh_data(c, bh[i])) &&
				!cm_bh_test(bh[i], CM_BH_DIRTY);
			memcpy(t_img + blocks[i] * T_BS, cm_bh_data(c, bh[i]), T_BS);
		} else {
			dirty += cm_bh_test(bh[i], CM_BH_DIRTY) && atomic_load(&bh[i]->b_error) == -ERANGE;
		}
	}
	t_is_int(home, 72, "bwq: the 72 written are on the device and clean");
	t_is_int(dirty, 4, "bwq: the 4 that failed are dirty, with their error");
	t_ok(t_file_is(T_NBLK - 2, t_img + (T_NBLK - 2) * T_BS),
	     "bwq: a failed run wrote nothing");
	for (uint32_t i = 0; i < n; i++) {
		cm_bh_clear_dirty(bh[i]);
		cm_bcache_put(c, bh[i]);
	}
	t_ok(cm_bcache_check(c), "bwq: invariants hold");
	cm_bcache_detach(c);
}

int main(void)
{
	cm_bdev *bd;

	t_long = getenv("EXT3D_LONG") != NULL;
	alarm(t_long ? 600 : 60);
	t_setup();
	t_params();
	t_contents(1024);
	t_contents(4096);
	t_contents(65536);
	t_threads();
	t_pressure();
	t_one_read();
	if (cm_bdev_open(t_a, &bd) < 0) {
		printf("Bail out! blockdev\n");
		return 1;
	}
	t_pin(bd);
	t_prefetch(bd);
	t_write(bd);
	t_errors(bd);
	t_full(bd);
	t_writeback(bd);
	t_home_writes(bd);
	t_stable_write();
	t_dead_stripe(bd);
	cm_bdev_close(bd);
	atomic_store(&t_sh->stop, 1);
	cm_event_signal(&cm_layout_get(t_a)->svcs[0].doorbell);
	t_ok(t_exited_ok(t_wait(t_server_pid, 10000)), "the blockdev server stopped cleanly");
	unlink(t_path);
	cm_arena_free(t_a);
	free(t_img);
	return t_done();
}
