/* test-ring.c - arena rings between processes: a single-producer and a
 * multi-producer stream checked record by record (nothing lost, duplicated,
 * reordered or damaged); a consumer SIGKILLed mid-stream and restarted from
 * the ring's tail (deduplicating by sequence number); a producer SIGKILLed
 * mid-stream (nothing half-written is ever seen) or while holding the
 * producer lock; a not_empty event shared by two rings, seen from another
 * mapping; shape checks, argument checks and timeouts.
 * EXT3D_LONG=1 streams 10x the records; EXT3D_SEED=n repeats a run's kill
 * points (the seed is printed as a diagnostic).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "lock.h"
#include "ring.h"
#include "t_arena.h"
#include "t_env.h"
#include "tap.h"

#define T_VERSION 3
#define T_REC 64          /* bytes per record of the streaming tests */
#define T_CAP 4096        /* records per ring of the streaming tests */
#define T_BIG_REC 16384   /* producer-kill records: a longer copy to tear */
#define T_BIG_CAP 64
#define T_KILLS 5         /* consumers killed in one stream */
#define T_PROD_ROUNDS 20  /* producers killed, one per stream */
#define T_MAX_PRODUCERS 4

/* A record: this header, then a payload derived from (producer, seq). */
struct t_rec {
	uint64_t seq;      /* 1, 2, 3... per producer */
	uint32_t producer;
	uint32_t sum;      /* checksum of seq, producer and payload */
	uint64_t payload[];
};

/* One streaming test's shared state, in the arena: set up by the parent
 * before the children start, counters written by the children. */
struct t_ctl {
	cm_off ring;
	cm_off ring2;                /* doorbell test: a second ring */
	cm_off event;                /* doorbell test: their shared not_empty */
	cm_off hits;                 /* consumer-kill: uint8_t applications per seq */
	uint64_t nrecs;              /* records per producer; UINT64_MAX: until killed */
	uint32_t nproducers;
	uint32_t rec_size;
	_Atomic uint64_t last;       /* consumer progress: last seq applied */
	_Atomic uint64_t consumed;   /* records taken off the ring (applied or not) */
	_Atomic uint64_t dups;       /* records seen again after a consumer died */
	_Atomic uint64_t recovered;  /* applied records a killed consumer had not recorded */
	_Atomic uint64_t gaps;       /* a record out of order: loss or reordering */
	_Atomic uint64_t bad;        /* a record whose checksum failed */
	_Atomic uint64_t t_first;    /* ns: the first producer started */
	_Atomic uint64_t t_last;     /* ns: the consumer took the last record */
	_Atomic uint32_t producer_dead;
};

/* What a child process gets: its test's ctl and its own number. */
struct t_job {
	cm_off ctl;
	uint32_t id;
};

static cm_arena *t_a;
static uint64_t t_seed;
static uint64_t t_scale = 1;
static int t_wait_ms = 60000;

/* Uniform enough in [lo, hi). */
static uint64_t t_rand_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + t_rand(s) % (hi - lo);
}

static struct t_ctl *t_ctl_at(cm_arena *m, cm_off off)
{
	return cm_arena_ptr(m, off, sizeof(struct t_ctl));
}

static cm_ring *t_ring_at(cm_arena *m, cm_off off)
{
	return cm_arena_ptr(m, off, sizeof(cm_ring));
}

/* A new ring in the arena; bails out if the arena is full. */
static cm_off t_ring_new(uint32_t rec_size, uint32_t cap, bool mp, cm_event *not_empty)
{
	cm_off off = cm_arena_alloc(t_a, cm_ring_bytes(rec_size, cap), 64);

	if (!off || cm_ring_init(t_ring_at(t_a, off), T_VERSION, rec_size, cap, mp,
				 not_empty) < 0) {
		printf("Bail out! cannot make a ring of %u x %u\n", rec_size, cap);
		exit(1);
	}
	return off;
}

/* A ctl block with a fresh ring for a stream of nprod x nrecs records. */
static cm_off t_ctl_new(uint32_t rec_size, uint32_t cap, uint32_t nprod, uint64_t nrecs)
{
	cm_off off = cm_arena_alloc(t_a, sizeof(struct t_ctl), 64);
	struct t_ctl *c;

	if (!off) {
		printf("Bail out! arena full\n");
		exit(1);
	}
	c = t_ctl_at(t_a, off);
	c->ring = t_ring_new(rec_size, cap, nprod > 1, NULL);
	c->rec_size = rec_size;
	c->nproducers = nprod;
	c->nrecs = nrecs;
	return off;
}

/* ---- records ---- */

/* Fletcher-style sum over the payload, mixed with the header: cheap, and a
 * record torn between two of its versions fails it. */
static uint32_t t_rec_sum(const struct t_rec *rec, uint32_t size)
{
	uint64_t x = rec->seq ^ ((uint64_t)rec->producer << 48), y = 0;

	for (uint32_t i = 0; i < (size - sizeof(*rec)) / 8; i++) {
		x += rec->payload[i];
		y += x;
	}
	y = (y ^ (y >> 29)) * 0xbf58476d1ce4e5b9ULL;
	return (uint32_t)(y ^ (y >> 32));
}

static void t_rec_fill(void *buf, uint32_t size, uint32_t producer, uint64_t seq)
{
	struct t_rec *rec = buf;
	uint64_t key = (seq ^ ((uint64_t)producer << 56)) * 0x9e3779b97f4a7c15ULL;

	rec->seq = seq;
	rec->producer = producer;
	for (uint32_t i = 0; i < (size - sizeof(*rec)) / 8; i++)
		rec->payload[i] = key + i * 0xd1b54a32d192ed03ULL;
	rec->sum = t_rec_sum(rec, size);
}

static bool t_rec_ok(const void *buf, uint32_t size)
{
	const struct t_rec *rec = buf;

	return rec->seq != 0 && rec->sum == t_rec_sum(rec, size);
}

static bool t_rec_zero(const void *buf, uint32_t size)
{
	const uint8_t *p = buf;

	for (uint32_t i = 0; i < size; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- child processes ---- */

/* A child running fn on a copy of a job. */
struct t_spawned {
	int (*fn)(const struct t_job *j);
	struct t_job job;
};

static int t_spawned_run(void *arg)
{
	const struct t_spawned *sp = arg;

	return sp->fn(&sp->job);
}

static pid_t t_spawn(int (*fn)(const struct t_job *j), cm_off ctl, uint32_t id)
{
	struct t_spawned sp = {.fn = fn, .job = {.ctl = ctl, .id = id}};

	return t_fork(t_spawned_run, &sp);
}

static void t_diag_status(const char *who, int status)
{
	if (status < 0)
		t_diag("%s: hung, killed by the test", who);
	else if (WIFEXITED(status))
		t_diag("%s: exit %d", who, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		t_diag("%s: signal %d", who, WTERMSIG(status));
}

/* Waits until *word >= target: 0, or -1 if pid exited or time ran out. */
static int t_wait_progress(pid_t pid, _Atomic uint64_t *word, uint64_t target)
{
	uint64_t deadline = cm_now_ns() + (uint64_t)t_wait_ms * 1000000ULL;

	while (atomic_load(word) < target) {
		if (waitpid(pid, NULL, WNOHANG) != 0 || cm_now_ns() >= deadline)
			return -1;
		usleep(50);
	}
	return 0;
}

/* A mapping of the arena of this child's own, as a service would make. */
static cm_arena *t_remap(void)
{
	char why[160];
	cm_arena *m;

	if (cm_arena_attach(dup(t_a->fd), &m, why, sizeof(why)) < 0)
		_exit(90);
	return m;
}

/* cm_ring_peek(), waiting for a record as cm_ring_pop() does. */
static int t_peek_wait(cm_ring *r, void *rec, int timeout_ms)
{
	uint64_t deadline = cm_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	cm_event *ev = cm_ring_not_empty(r);

	while (cm_ring_peek(r, rec) < 0) {
		if (cm_now_ns() >= deadline)
			return -ETIMEDOUT;
		uint32_t seq = cm_event_prepare(ev);
		if (!cm_ring_empty(r)) {
			cm_event_cancel(ev);
			continue;
		}
		(void)cm_event_wait(ev, seq, 10);
	}
	return 0;
}

/* Producer: records 1..nrecs of producer j->id, through the inherited
 * mapping; 2 if a push failed. */
static int t_produce(const struct t_job *j)
{
	struct t_ctl *c = t_ctl_at(t_a, j->ctl);
	cm_ring *r = t_ring_at(t_a, c->ring);
	uint64_t buf[T_BIG_REC / 8], zero = 0;

	(void)atomic_compare_exchange_strong(&c->t_first, &zero, cm_now_ns());
	for (uint64_t seq = 1; seq <= c->nrecs; seq++) {
		t_rec_fill(buf, c->rec_size, j->id, seq);
		if (cm_ring_push(r, buf, t_wait_ms) < 0)
			return 2;
	}
	return 0;
}

/* Checks one popped record against the next seq expected of its producer. */
static void t_take(struct t_ctl *c, const void *buf, uint64_t *next)
{
	const struct t_rec *rec = buf;

	atomic_fetch_add_explicit(&c->consumed, 1, memory_order_relaxed);
	if (!t_rec_ok(buf, c->rec_size) || rec->producer >= c->nproducers) {
		atomic_fetch_add(&c->bad, 1);
		return;
	}
	if (rec->seq != next[rec->producer])
		atomic_fetch_add(&c->gaps, 1);
	next[rec->producer] = rec->seq + 1;
}

/* Consumer of a whole stream, through a mapping of its own; 2 if a pop
 * timed out. */
static int t_consume(const struct t_job *j)
{
	cm_arena *m = t_remap();
	struct t_ctl *c = t_ctl_at(m, j->ctl);
	cm_ring *r = t_ring_at(m, c->ring);
	uint64_t buf[T_BIG_REC / 8], next[T_MAX_PRODUCERS];
	uint64_t total = c->nrecs * c->nproducers;

	for (int i = 0; i < T_MAX_PRODUCERS; i++)
		next[i] = 1;
	for (uint64_t n = 0; n < total; n++) {
		if (cm_ring_pop(r, buf, t_wait_ms) < 0)
			return 2;
		t_take(c, buf, next);
	}
	atomic_store(&c->t_last, cm_now_ns());
	return 0;
}

/* ---- shape, arguments, timeouts ---- */

static void t_shape(void)
{
	static const uint32_t bad_caps[] = {0, 3, 12, 100, 4097};
	static const uint32_t bad_sizes[] = {0, 4, 12, 63, 100};
	cm_off off = cm_arena_alloc(t_a, cm_ring_bytes(128, 16), 64);
	cm_ring *r = t_ring_at(t_a, off);

	t_is_int(cm_ring_check(r, T_VERSION, 64), -EPROTO, "check: zeroed memory is not a ring");
	t_is_int(cm_ring_init(r, T_VERSION, 64, 16, false, NULL), 0, "init: 64-byte records x 16");
	t_is_int(cm_ring_check(r, T_VERSION, 64), 0, "check: the expected shape is accepted");
	t_is_int(cm_ring_check(r, T_VERSION + 1, 64), -EPROTO, "check: wrong version -EPROTO");
	t_is_int(cm_ring_check(r, T_VERSION, 128), -EPROTO, "check: wrong record size -EPROTO");
	t_is_int(cm_ring_check(r, T_VERSION, 8), -EPROTO, "check: smaller record size -EPROTO");
	for (size_t i = 0; i < sizeof(bad_caps) / sizeof(bad_caps[0]); i++)
		t_is_int(cm_ring_init(r, T_VERSION, 64, bad_caps[i], false, NULL), -EINVAL,
			 "init: capacity %u (not a power of two) -EINVAL", bad_caps[i]);
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
		t_is_int(cm_ring_init(r, T_VERSION, bad_sizes[i], 16, false, NULL), -EINVAL,
			 "init: record size %u (not a multiple of 8) -EINVAL", bad_sizes[i]);
	t_is_int(cm_ring_check(r, T_VERSION, 64), 0, "refused inits left the ring as it was");
	t_is_int(cm_ring_init(r, T_VERSION, 8, 1, false, NULL), 0, "init: 8-byte records x 1");
}

static void t_timeouts(void)
{
	cm_ring *r = t_ring_at(t_a, t_ring_new(T_REC, 4, false, NULL));
	uint64_t buf[T_REC / 8], t0;
	int ret, pushed = 0;

	t_is_int(cm_ring_peek(r, buf), -EAGAIN, "peek on an empty ring: -EAGAIN");
	t0 = cm_now_ns();
	ret = cm_ring_pop(r, buf, 200);
	t_is_int(ret, -ETIMEDOUT, "pop with a 200 ms timeout on an empty ring: -ETIMEDOUT");
	t_diag("pop(200 ms) returned after %.1f ms", (double)(cm_now_ns() - t0) / 1e6);
	for (uint64_t seq = 1; seq <= 4; seq++) {
		t_rec_fill(buf, T_REC, 0, seq);
		pushed += cm_ring_try_push(r, buf) == 0;
	}
	t_is_int(pushed, 4, "try_push fills a ring of 4");
	t_is_int(cm_ring_try_push(r, buf), -EAGAIN, "try_push on a full ring: -EAGAIN");
	t0 = cm_now_ns();
	t_is_int(cm_ring_push(r, buf, 50), -ETIMEDOUT, "push(50 ms) on a full ring: -ETIMEDOUT");
	t_diag("push(50 ms) returned after %.1f ms", (double)(cm_now_ns() - t0) / 1e6);
	t_ok(cm_ring_pop(r, buf, 0) == 0 && ((struct t_rec *)buf)->seq == 1,
	     "pop(0) on a non-empty ring returns the oldest record");
	cm_ring_reset(r);
	t_ok(cm_ring_empty(r), "reset empties the ring");
	t_is_int(cm_ring_try_push(r, buf), 0, "and it takes records again");
}

/* ---- a not_empty event shared by two rings, from another mapping ---- */

static int t_doorbell_waiter(const struct t_job *j)
{
	cm_arena *m = t_remap();
	struct t_ctl *c = t_ctl_at(m, j->ctl);
	cm_ring *r1 = t_ring_at(m, c->ring), *r2 = t_ring_at(m, c->ring2);
	cm_event *ev = cm_arena_ptr(m, c->event, sizeof(cm_event));
	uint64_t buf[T_REC / 8];
	int ret = 0;

	if (cm_ring_not_empty(r1) != ev || cm_ring_not_empty(r2) != ev)
		return 5;
	uint32_t seq = cm_event_prepare(ev);
	if (cm_ring_empty(r1) && cm_ring_empty(r2))
		ret = cm_event_wait(ev, seq, 10000);
	else
		cm_event_cancel(ev);
	if (ret == -ETIMEDOUT)
		return 6;
	if (cm_ring_pop(r2, buf, 0) < 0 || !t_rec_ok(buf, T_REC))
		return 7;
	return cm_ring_empty(r1) ? 0 : 8;
}

static void t_doorbell(void)
{
	cm_off ctl = cm_arena_alloc(t_a, sizeof(struct t_ctl), 64);
	struct t_ctl *c = t_ctl_at(t_a, ctl);
	cm_event *ev;
	uint64_t buf[T_REC / 8];
	pid_t pid;
	int status;

	c->event = cm_arena_alloc(t_a, sizeof(cm_event), 64);
	ev = cm_arena_ptr(t_a, c->event, sizeof(cm_event));
	cm_event_init(ev);
	c->ring = t_ring_new(T_REC, 16, false, ev);
	c->ring2 = t_ring_new(T_REC, 16, false, ev);
	t_ok(cm_ring_not_empty(t_ring_at(t_a, c->ring)) == ev,
	     "doorbell: not_empty redirected to the shared event");
	pid = t_spawn(t_doorbell_waiter, ctl, 0);
	usleep(50000);
	t_rec_fill(buf, T_REC, 0, 1);
	(void)cm_ring_try_push(t_ring_at(t_a, c->ring2), buf);
	status = t_wait(pid, 15000);
	if (!t_exited_ok(status))
		t_diag_status("doorbell waiter", status);
	t_ok(t_exited_ok(status),
	     "doorbell: a waiter in another mapping, asleep on the shared event, "
	     "is woken by a push to the second ring");
}

/* ---- streams ---- */

static void t_stream_report(const char *name, cm_off ctl, int cs, const int *ps)
{
	struct t_ctl *c = t_ctl_at(t_a, ctl);
	uint64_t total = c->nrecs * c->nproducers;
	bool prod_ok = true;

	for (uint32_t i = 0; i < c->nproducers; i++) {
		if (!t_exited_ok(ps[i]))
			t_diag_status("producer", ps[i]);
		prod_ok &= t_exited_ok(ps[i]);
	}
	if (!t_exited_ok(cs))
		t_diag_status("consumer", cs);
	t_ok(prod_ok, "%s: %u producer(s) pushed %llu records each", name, c->nproducers,
	     (unsigned long long)c->nrecs);
	t_ok(t_exited_ok(cs), "%s: the consumer (own mapping) popped %llu records", name,
	     (unsigned long long)total);
	t_is_int((int64_t)atomic_load(&c->consumed), (int64_t)total,
		 "%s: as many records came out as went in", name);
	t_is_int((int64_t)atomic_load(&c->gaps), 0,
		 "%s: each producer's records in order, none lost or duplicated", name);
	t_is_int((int64_t)atomic_load(&c->bad), 0, "%s: every payload intact", name);
	t_ok(cm_ring_empty(t_ring_at(t_a, c->ring)), "%s: ring empty at the end", name);
	if (t_exited_ok(cs) && prod_ok) {
		double s = (double)(atomic_load(&c->t_last) - atomic_load(&c->t_first)) / 1e9;
		t_diag("%s: %llu records of %u bytes in %.3f s: %.0f records/s", name,
		       (unsigned long long)total, c->rec_size, s, (double)total / s);
	}
}

static void t_stream(const char *name, uint32_t nprod, uint64_t nrecs)
{
	cm_off ctl = t_ctl_new(T_REC, T_CAP, nprod, nrecs);
	pid_t cons, prod[T_MAX_PRODUCERS];
	int cs, ps[T_MAX_PRODUCERS];

	cons = t_spawn(t_consume, ctl, 0);
	for (uint32_t i = 0; i < nprod; i++)
		prod[i] = t_spawn(t_produce, ctl, i);
	for (uint32_t i = 0; i < nprod; i++)
		ps[i] = t_wait(prod[i], t_wait_ms);
	cs = t_wait(cons, t_wait_ms);
	t_stream_report(name, ctl, cs, ps);
}

/* ---- consumer SIGKILLed mid-stream ---- */

/* A predecessor killed between applying a record and recording that it
 * did left hits[last + 1] set: finish recording it. */
static uint64_t t_recover(struct t_ctl *c, const uint8_t *hits)
{
	uint64_t last = atomic_load(&c->last);

	while (last < c->nrecs && hits[last + 1]) {
		atomic_store(&c->last, ++last);
		atomic_fetch_add(&c->recovered, 1);
	}
	return last;
}

/* Spins for ns: the time applying a record takes, so that kills land in
 * the windows that matter (applied, not recorded; recorded, not consumed). */
static void t_busy(uint64_t ns)
{
	uint64_t end = cm_now_ns() + ns;

	while (cm_now_ns() < end)
		cm_cpu_relax();
}

/* Consumer that survives being killed: peek, apply (count the seq in hits,
 * then record it as the last applied), consume. A record applied but not
 * consumed by a killed predecessor comes back and is skipped. */
static int t_consume_resumable(const struct t_job *j)
{
	struct t_ctl *c = t_ctl_at(t_a, j->ctl);
	cm_ring *r = t_ring_at(t_a, c->ring);
	uint8_t *hits = cm_arena_ptr(t_a, c->hits, c->nrecs + 1);
	uint64_t buf[T_REC / 8], last = t_recover(c, hits);

	while (last < c->nrecs) {
		const struct t_rec *rec = (const struct t_rec *)buf;
		if (t_peek_wait(r, buf, t_wait_ms) < 0)
			return 2;
		if (!t_rec_ok(buf, T_REC)) {
			atomic_fetch_add(&c->bad, 1);
			return 3;
		}
		if (rec->seq <= last) {
			atomic_fetch_add(&c->dups, 1);
		} else if (rec->seq != last + 1) {
			atomic_fetch_add(&c->gaps, 1);
			return 4;
		} else {
			hits[rec->seq]++;
			t_busy(300);
			atomic_store(&c->last, rec->seq);
			last = rec->seq;
			t_busy(600);
		}
		cm_ring_consume(r);
	}
	return 0;
}

static int t_cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static void t_consumer_killed(void)
{
	uint64_t n = 500000 * t_scale, rnd = t_seed ^ 0xc0;
	cm_off ctl = t_ctl_new(T_REC, 1024, 1, n);
	struct t_ctl *c = t_ctl_at(t_a, ctl);
	uint64_t targets[T_KILLS], once = 0;
	int killed = 0, ps, cs;
	const uint8_t *hits;
	pid_t prod, cons;

	c->hits = cm_arena_alloc_data(t_a, n + 1, 64);
	hits = cm_arena_ptr(t_a, c->hits, n + 1);
	for (int k = 0; k < T_KILLS; k++)
		targets[k] = t_rand_range(&rnd, n / 20, n * 9 / 10);
	qsort(targets, T_KILLS, sizeof(targets[0]), t_cmp_u64);
	prod = t_spawn(t_produce, ctl, 0);
	for (int k = 0; k < T_KILLS; k++) {
		cons = t_spawn(t_consume_resumable, ctl, 0);
		if (t_wait_progress(cons, &c->last, targets[k]) == 0)
			kill(cons, SIGKILL);
		cs = t_wait(cons, t_wait_ms);
		if (t_was_killed(cs))
			killed++;
		else
			t_diag_status("consumer to be killed", cs);
	}
	cons = t_spawn(t_consume_resumable, ctl, 0);
	cs = t_wait(cons, t_wait_ms);
	ps = t_wait(prod, t_wait_ms);
	for (uint64_t s = 1; s <= n; s++)
		once += hits[s] == 1;
	t_is_int(killed, T_KILLS, "consumer-kill: %d consumers SIGKILLed mid-stream", T_KILLS);
	t_ok(t_exited_ok(cs), "consumer-kill: the last consumer finished the stream");
	t_ok(t_exited_ok(ps), "consumer-kill: the producer pushed %llu records",
	     (unsigned long long)n);
	t_is_int((int64_t)atomic_load(&c->last), (int64_t)n,
		 "consumer-kill: progress reached the last record");
	t_is_int((int64_t)once, (int64_t)n, "consumer-kill: every seq applied exactly once");
	t_is_int((int64_t)atomic_load(&c->gaps), 0,
		 "consumer-kill: records applied in order, none lost");
	t_is_int((int64_t)atomic_load(&c->bad), 0, "consumer-kill: every payload intact");
	t_ok(cm_ring_empty(t_ring_at(t_a, c->ring)), "consumer-kill: ring empty at the end");
	t_diag("consumer-kill: kill points %llu %llu %llu %llu %llu; %llu records came back "
	       "after a kill (applied, not consumed) and were skipped; %llu applied but "
	       "unrecorded were recovered",
	       (unsigned long long)targets[0], (unsigned long long)targets[1],
	       (unsigned long long)targets[2], (unsigned long long)targets[3],
	       (unsigned long long)targets[4], (unsigned long long)atomic_load(&c->dups),
	       (unsigned long long)atomic_load(&c->recovered));
}

/* ---- producer SIGKILLed mid-stream ---- */

/* Pops until the producer is dead and the ring is empty. */
static int t_consume_until_dead(const struct t_job *j)
{
	struct t_ctl *c = t_ctl_at(t_a, j->ctl);
	cm_ring *r = t_ring_at(t_a, c->ring);
	uint64_t buf[T_BIG_REC / 8], next[T_MAX_PRODUCERS] = {1, 1, 1, 1};

	for (;;) {
		if (cm_ring_pop(r, buf, 10) == 0) {
			t_take(c, buf, next);
			continue;
		}
		if (atomic_load(&c->producer_dead) && cm_ring_empty(r))
			return 0;
	}
}

/* What the producer left in the slot beyond head: 0 nothing or an old
 * complete record, 1 a complete unpublished record, 2 a torn one. */
static int t_beyond_head(cm_ring *r, uint64_t head)
{
	const uint8_t *slot = r->slots + (uint64_t)r->rec_size * (head & (r->capacity - 1));
	const struct t_rec *rec = (const struct t_rec *)slot;

	if (t_rec_zero(slot, r->rec_size))
		return 0;
	if (!t_rec_ok(slot, r->rec_size))
		return 2;
	return rec->seq == head + 1 ? 1 : 0;
}

/* One round: returns true if the consumer got exactly what was published. */
static bool t_producer_round(uint64_t *rnd, int *killed, int *cons_ok, int beyond[3])
{
	cm_off ctl = t_ctl_new(T_BIG_REC, T_BIG_CAP, 1, UINT64_MAX);
	struct t_ctl *c = t_ctl_at(t_a, ctl);
	cm_ring *r = t_ring_at(t_a, c->ring);
	uint64_t target = t_rand_range(rnd, 200, 5000 * t_scale), head;
	pid_t cons = t_spawn(t_consume_until_dead, ctl, 0), prod = t_spawn(t_produce, ctl, 0);
	int ps, cs;

	if (t_wait_progress(prod, &r->head, target) == 0)
		kill(prod, SIGKILL);
	ps = t_wait(prod, t_wait_ms);
	*killed += t_was_killed(ps);
	head = atomic_load(&r->head);
	beyond[t_beyond_head(r, head)]++;
	atomic_store(&c->producer_dead, 1);
	cm_event_signal(cm_ring_not_empty(r));
	cs = t_wait(cons, t_wait_ms);
	*cons_ok += t_exited_ok(cs);
	if (atomic_load(&c->consumed) != head || atomic_load(&c->gaps) || atomic_load(&c->bad)) {
		t_diag("producer-kill: head %llu consumed %llu gaps %llu bad %llu",
		       (unsigned long long)head, (unsigned long long)atomic_load(&c->consumed),
		       (unsigned long long)atomic_load(&c->gaps),
		       (unsigned long long)atomic_load(&c->bad));
		return false;
	}
	return true;
}

static void t_producer_killed(void)
{
	uint64_t rnd = t_seed ^ 0x9d;
	int killed = 0, cons_ok = 0, exact = 0, beyond[3] = {0};

	for (int k = 0; k < T_PROD_ROUNDS; k++)
		exact += t_producer_round(&rnd, &killed, &cons_ok, beyond);
	t_is_int(killed, T_PROD_ROUNDS, "producer-kill: %d producers SIGKILLed mid-stream",
		 T_PROD_ROUNDS);
	t_is_int(cons_ok, T_PROD_ROUNDS,
		 "producer-kill: each consumer drained the ring and finished");
	t_is_int(exact, T_PROD_ROUNDS,
		 "producer-kill: every record published before the kill consumed once, in "
		 "order, intact; nothing half-written seen");
	t_diag("producer-kill: slot beyond head after the kill: %d old/empty, %d complete "
	       "but unpublished, %d half-written (never read)", beyond[0], beyond[1], beyond[2]);
}

/* ---- a producer of a multi-producer ring dies holding its lock ---- */

static int t_die_holding_prod_lock(const struct t_job *j)
{
	struct t_ctl *c = t_ctl_at(t_a, j->ctl);

	if (cm_mutex_lock(&t_ring_at(t_a, c->ring)->prod_lock) != 0)
		return 2;
	raise(SIGKILL);
	return 3;
}

static void t_prod_lock_dead(void)
{
	cm_off ctl = t_ctl_new(T_REC, 16, 2, 1);
	cm_ring *r = t_ring_at(t_a, t_ctl_at(t_a, ctl)->ring);
	uint64_t buf[T_REC / 8];
	int status = t_wait(t_spawn(t_die_holding_prod_lock, ctl, 0), 10000);

	t_ok(t_was_killed(status), "prod_lock: a producer died holding the producer lock");
	t_rec_fill(buf, T_REC, 1, 1);
	t_is_int(cm_ring_try_push(r, buf), -EOWNERDEAD, "prod_lock: try_push then: -EOWNERDEAD");
	t_is_int(cm_ring_push(r, buf, 100), -EOWNERDEAD, "prod_lock: push then: -EOWNERDEAD");
	t_ok(cm_ring_empty(r), "prod_lock: nothing was published");
}

static void t_setup(void)
{
	t_env env;
	int r;

	t_env_start("test-ring", &env);
	t_seed = env.seed;
	t_scale = env.scale;
	t_wait_ms = env.wait_ms;
	r = cm_arena_create(64 << 20, 16 << 20, 0, &t_a);
	if (r < 0) {
		printf("Bail out! cm_arena_create: %s\n", strerror(-r));
		exit(1);
	}
}

int main(void)
{
	t_setup();
	t_shape();
	t_timeouts();
	t_doorbell();
	t_stream("spsc", 1, 2000000 * t_scale);
	t_stream("mpsc", 2, 1000000 * t_scale);
	t_consumer_killed();
	t_producer_killed();
	t_prod_lock_dead();
	t_a = cm_arena_free(t_a);
	return t_done();
}
