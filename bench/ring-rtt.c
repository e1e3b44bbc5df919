/* ring-rtt.c - ext3d's arena rings against a pair of pipes and a unix
 * SOCK_SEQPACKET socketpair: round-trip latency, one-way records per second
 * and the wake-up latency of a consumer that has gone to sleep.
 *
 * Each transport gets a fresh child (fork) that echoes, counts or times the
 * fixed-size records the parent sends. The ring transport is a request and
 * a response ring (single producer each) in one memfd arena, driven through
 * cm_ring_push/cm_ring_pop: cm_wait (a spin fitted to the CPU count, then a futex sleep).
 * Pipes and the socket move one record per write() and per read().
 * A benchmark, not a test: it prints numbers and judges none (README.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "futex.h"
#include "io.h"
#include "ring.h"

#define RB_REC_MAX 4096
#define RB_RING_CAP 1024 /* records: 64 KiB at 64 bytes, a pipe's default buffer */
#define RB_VERSION 1
#define RB_WARMUP 2000

enum rb_kind { RB_ECHO = 1, RB_DATA, RB_SYNC, RB_QUIT };

/* The start of every record; the rest, up to rec_size, is padding. */
struct rb_hdr {
	uint32_t kind;     /* enum rb_kind */
	uint32_t errors;   /* SYNC reply: data records out of sequence */
	uint64_t seq;      /* DATA: 0, 1, ...; SYNC reply: data records counted */
	uint64_t stamp_ns; /* ECHO: the sender's clock at send, 0 for none */
	uint64_t delta_ns; /* ECHO reply: the receiver's clock minus stamp_ns */
};

typedef union rb_rec {
	struct rb_hdr h;
	uint8_t bytes[RB_REC_MAX];
} rb_rec;

struct rb_config {
	uint32_t rec_size;
	uint64_t iters;       /* round trips */
	uint64_t records;     /* one-way records, at most */
	double seconds;       /* bound on each rtt and each one-way run */
	uint64_t wakes;       /* records sent wake_gap_us apart */
	uint64_t wake_gap_us;
	const char *only;     /* run one transport, or NULL for all */
	bool pin, json;
	int cpu[2];           /* parent's and child's CPU when pinned (may be one) */
};

/* One end of a transport: what it sends on and what it receives from. */
typedef struct rb_chan rb_chan;
struct rb_chan {
	int (*send)(rb_chan *c, const void *rec);
	int (*recv)(rb_chan *c, void *rec);
	uint32_t size;
	cm_ring *tx, *rx;
	int txfd, rxfd;
};

/* Both ends: [0] the parent's, [1] the child's. */
struct rb_pair {
	rb_chan end[2];
	cm_arena *arena; /* ring transport only; the child inherits the mapping */
};

struct rb_transport {
	const char *key;
	const char *name;
	int (*open)(const struct rb_config *cfg, struct rb_pair *p);
};

struct rb_result {
	const char *name;
	bool done;
	uint64_t rtt_n;
	double rtt_p50, rtt_p99, rtt_mean;    /* microseconds */
	uint64_t oneway_n;
	double oneway_rps;
	double wake_p50, wake_p99, wake_mean; /* microseconds */
};

/* Transports ------------------------------------------------------------- */

static int rb_ring_send(rb_chan *c, const void *rec)
{
	return cm_ring_push(c->tx, rec, -1);
}

static int rb_ring_recv(rb_chan *c, void *rec)
{
	return cm_ring_pop(c->rx, rec, -1);
}

static int rb_fd_send(rb_chan *c, const void *rec)
{
	return cm_write_full(c->txfd, rec, c->size);
}

static int rb_fd_recv(rb_chan *c, void *rec)
{
	uint8_t *p = rec;
	size_t left = c->size;

	while (left > 0) {
		ssize_t n = read(c->rxfd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		left -= (size_t)n;
	}
	return 0;
}

static void rb_chan_fds(rb_chan *c, uint32_t size, int txfd, int rxfd)
{
	*c = (rb_chan){ .send = rb_fd_send, .recv = rb_fd_recv, .size = size,
			.txfd = txfd, .rxfd = rxfd };
}

static void rb_chan_close(rb_chan *c)
{
	if (c->txfd >= 0)
		close(c->txfd);
	if (c->rxfd >= 0 && c->rxfd != c->txfd)
		close(c->rxfd);
	c->txfd = c->rxfd = -1;
}

static int rb_ring_open(const struct rb_config *cfg, struct rb_pair *p)
{
	uint64_t bytes = cm_ring_bytes(cfg->rec_size, RB_RING_CAP);
	uint64_t size = (2 * bytes + 2 * 4096 + 4095) & ~(uint64_t)4095;
	cm_ring *ring[2];
	int r = cm_arena_create(size, 0, 0, &p->arena);

	for (int i = 0; r == 0 && i < 2; i++) {
		ring[i] = cm_arena_ptr(p->arena, cm_arena_alloc(p->arena, bytes, 64), bytes);
		if (!ring[i])
			return -ENOMEM;
		r = cm_ring_init(ring[i], RB_VERSION, cfg->rec_size, RB_RING_CAP, false, NULL);
	}
	if (r < 0)
		return r;
	for (int i = 0; i < 2; i++)
		p->end[i] = (rb_chan){ .send = rb_ring_send, .recv = rb_ring_recv,
				       .size = cfg->rec_size, .tx = ring[i], .rx = ring[!i],
				       .txfd = -1, .rxfd = -1 };
	return 0;
}

static int rb_pipe_open(const struct rb_config *cfg, struct rb_pair *p)
{
	int down[2], up[2];

	if (pipe2(down, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(up, O_CLOEXEC) < 0) {
		int r = -errno;
		close(down[0]);
		close(down[1]);
		return r;
	}
	rb_chan_fds(&p->end[0], cfg->rec_size, down[1], up[0]);
	rb_chan_fds(&p->end[1], cfg->rec_size, up[1], down[0]);
	return 0;
}

static int rb_socket_open(const struct rb_config *cfg, struct rb_pair *p)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	rb_chan_fds(&p->end[0], cfg->rec_size, sv[0], sv[0]);
	rb_chan_fds(&p->end[1], cfg->rec_size, sv[1], sv[1]);
	return 0;
}

static const struct rb_transport rb_transports[] = {
	{ "ring", "ext3d ring", rb_ring_open },
	{ "pipe", "pipe", rb_pipe_open },
	{ "socket", "unix seqpacket", rb_socket_open },
};
#define RB_NTRANSPORTS (sizeof(rb_transports) / sizeof(rb_transports[0]))

/* The child: echo, count and check ------------------------------------- */

static int rb_serve(rb_chan *c)
{
	rb_rec rec;
	uint64_t count = 0;
	uint32_t errors = 0;

	for (;;) {
		int r = c->recv(c, &rec);
		if (r < 0)
			return r;
		switch (rec.h.kind) {
		case RB_ECHO:
			if (rec.h.stamp_ns)
				rec.h.delta_ns = cm_now_ns() - rec.h.stamp_ns;
			r = c->send(c, &rec);
			break;
		case RB_DATA:
			if (rec.h.seq != count++)
				errors++;
			break;
		case RB_SYNC:
			rec.h.seq = count;
			rec.h.errors = errors;
			count = errors = 0;
			r = c->send(c, &rec);
			break;
		case RB_QUIT:
			return 0;
		default:
			return -EPROTO;
		}
		if (r < 0)
			return r;
	}
}

static void rb_pin(const struct rb_config *cfg, int who)
{
	cpu_set_t set;

	if (!cfg->pin)
		return;
	CPU_ZERO(&set);
	CPU_SET(cfg->cpu[who], &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		fprintf(stderr, "ring-rtt: pin to cpu %d: %s, ignoring\n", cfg->cpu[who],
			strerror(errno));
}

static void rb_child(struct rb_pair *p, const struct rb_config *cfg)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	rb_chan_close(&p->end[0]);
	rb_pin(cfg, 1);
	_exit(rb_serve(&p->end[1]) < 0 ? 1 : 0);
}

/* The parent: the three measurements ------------------------------------ */

static int rb_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts ns[0..n) and returns its p50, p99 and mean in microseconds. */
static void rb_stats(uint64_t *ns, uint64_t n, double *p50, double *p99, double *mean)
{
	double sum = 0;

	qsort(ns, n, sizeof(*ns), rb_cmp_u64);
	for (uint64_t i = 0; i < n; i++)
		sum += (double)ns[i];
	*p50 = (double)ns[n / 2] / 1e3;
	*p99 = (double)ns[n * 99 / 100] / 1e3;
	*mean = sum / (double)n / 1e3;
}

/* Up to n round trips until deadline; the count done, or -errno. */
static int64_t rb_round_trips(rb_chan *c, uint64_t n, uint64_t deadline, uint64_t *ns)
{
	rb_rec out = { .h.kind = RB_ECHO }, in;
	uint64_t i;

	for (i = 0; i < n; i++) {
		uint64_t t0 = cm_now_ns();
		int r;

		if ((i & 255) == 0 && i > 0 && t0 >= deadline)
			break;
		out.h.seq = i;
		r = c->send(c, &out);
		if (r == 0)
			r = c->recv(c, &in);
		if (r < 0)
			return r;
		ns[i] = cm_now_ns() - t0;
		if (in.h.kind != RB_ECHO || in.h.seq != i)
			return -EPROTO;
	}
	return (int64_t)i;
}

static int rb_measure_rtt(rb_chan *c, const struct rb_config *cfg, uint64_t *ns,
			  struct rb_result *res)
{
	uint64_t bound = (uint64_t)(cfg->seconds * 1e9);
	int64_t n = rb_round_trips(c, RB_WARMUP, cm_now_ns() + bound / 10, ns);

	if (n >= 0)
		n = rb_round_trips(c, cfg->iters, cm_now_ns() + bound, ns);
	if (n < 0)
		return (int)n;
	res->rtt_n = (uint64_t)n;
	rb_stats(ns, res->rtt_n, &res->rtt_p50, &res->rtt_p99, &res->rtt_mean);
	return 0;
}

static int rb_measure_oneway(rb_chan *c, const struct rb_config *cfg, struct rb_result *res)
{
	rb_rec rec = { .h.kind = RB_DATA };
	uint64_t t0 = cm_now_ns(), limit = t0 + (uint64_t)(cfg->seconds * 1e9), n;
	int r = 0;

	for (n = 0; n < cfg->records && r == 0; n++) {
		if ((n & 1023) == 0 && n > 0 && cm_now_ns() >= limit)
			break;
		rec.h.seq = n;
		r = c->send(c, &rec);
	}
	rec.h.kind = RB_SYNC;
	if (r == 0)
		r = c->send(c, &rec);
	if (r == 0)
		r = c->recv(c, &rec);
	if (r < 0)
		return r;
	if (rec.h.kind != RB_SYNC || rec.h.seq != n || rec.h.errors) {
		fprintf(stderr, "ring-rtt: %s: sent %llu records, the consumer counted %llu, %u out of order\n",
			res->name, (unsigned long long)n, (unsigned long long)rec.h.seq, rec.h.errors);
		return -EPROTO;
	}
	res->oneway_n = n;
	res->oneway_rps = (double)n / ((double)(cm_now_ns() - t0) / 1e9);
	return 0;
}

static void rb_ts_add_us(struct timespec *ts, uint64_t us)
{
	ts->tv_nsec += (long)(us % 1000000) * 1000;
	ts->tv_sec += (time_t)(us / 1000000) + ts->tv_nsec / 1000000000;
	ts->tv_nsec %= 1000000000;
}

/* One record every wake_gap_us: the child has long stopped spinning and
 * sleeps in the kernel, so each record measures a wake-up, one way. */
static int rb_measure_wake(rb_chan *c, const struct rb_config *cfg, uint64_t *ns,
			   struct rb_result *res)
{
	rb_rec rec = { .h.kind = RB_ECHO };
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (uint64_t i = 0; i < cfg->wakes; i++) {
		int r;

		rb_ts_add_us(&next, cfg->wake_gap_us);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		rec.h.seq = i;
		rec.h.stamp_ns = cm_now_ns();
		r = c->send(c, &rec);
		if (r == 0)
			r = c->recv(c, &rec);
		if (r < 0)
			return r;
		ns[i] = rec.h.delta_ns;
	}
	rb_stats(ns, cfg->wakes, &res->wake_p50, &res->wake_p99, &res->wake_mean);
	return 0;
}

/* The hardware floor under any shared-memory transport: two processes bounce
 * one cache line by spinning on it, no ring, no clock, no futex. */
static void rb_floor_child(_Atomic uint64_t *w, uint64_t n, const struct rb_config *cfg)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	rb_pin(cfg, 1);
	for (uint64_t i = 1; i <= n; i++) {
		while (atomic_load_explicit(w, memory_order_acquire) != 2 * i - 1)
			cm_cpu_relax();
		atomic_store_explicit(w, 2 * i, memory_order_release);
	}
	_exit(0);
}

static int rb_measure_floor(const struct rb_config *cfg, double *p50)
{
	uint64_t n = cfg->iters < 20000 ? cfg->iters : 20000, *ns = malloc(n * sizeof(*ns));
	_Atomic uint64_t *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double p99, mean;
	pid_t pid = -1;

	if (w == MAP_FAILED || !ns) {
		free(ns);
		return w == MAP_FAILED ? -errno : -ENOMEM;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		rb_floor_child(w, n, cfg);
	for (uint64_t i = 1; pid > 0 && i <= n; i++) {
		uint64_t t0 = cm_now_ns();

		atomic_store_explicit(w, 2 * i - 1, memory_order_release);
		while (atomic_load_explicit(w, memory_order_acquire) != 2 * i)
			cm_cpu_relax();
		ns[i - 1] = cm_now_ns() - t0;
	}
	if (pid > 0)
		(void)waitpid(pid, NULL, 0);
	munmap((void *)w, 4096);
	if (pid > 0)
		rb_stats(ns, n, p50, &p99, &mean);
	free(ns);
	return pid > 0 ? 0 : -ECHILD;
}

/* Spinning on one CPU against a process that cannot run would only measure
 * the scheduler's time slice. */
static bool rb_floor_possible(const struct rb_config *cfg)
{
	if (cfg->only && strcmp(cfg->only, "ring") != 0)
		return false;
	if (cfg->pin)
		return cfg->cpu[0] != cfg->cpu[1];
	return sysconf(_SC_NPROCESSORS_ONLN) >= 2;
}

static int rb_measure(rb_chan *c, const struct rb_config *cfg, struct rb_result *res)
{
	uint64_t n = cfg->iters > RB_WARMUP ? cfg->iters : RB_WARMUP;
	uint64_t *ns = malloc((n > cfg->wakes ? n : cfg->wakes) * sizeof(*ns));
	int r;

	if (!ns)
		return -ENOMEM;
	r = rb_measure_rtt(c, cfg, ns, res);
	if (r == 0)
		r = rb_measure_oneway(c, cfg, res);
	if (r == 0 && cfg->wakes)
		r = rb_measure_wake(c, cfg, ns, res);
	free(ns);
	return r;
}

static int rb_run(const struct rb_transport *t, const struct rb_config *cfg, struct rb_result *res)
{
	struct rb_pair p = { .end = { { .txfd = -1, .rxfd = -1 }, { .txfd = -1, .rxfd = -1 } } };
	rb_rec quit = { .h.kind = RB_QUIT };
	int r = t->open(cfg, &p), status = 0;
	pid_t pid = -1;

	res->name = t->name;
	if (r == 0) {
		fflush(NULL);
		pid = fork();
		if (pid < 0)
			r = -errno;
		if (pid == 0)
			rb_child(&p, cfg);
	}
	rb_chan_close(&p.end[1]);
	if (r == 0)
		r = rb_measure(&p.end[0], cfg, res);
	if (r == 0)
		r = p.end[0].send(&p.end[0], &quit);
	if (pid > 0) {
		if (r < 0)
			kill(pid, SIGKILL);
		(void)waitpid(pid, &status, 0);
		if (r == 0 && status != 0)
			r = -ECHILD;
	}
	rb_chan_close(&p.end[0]);
	p.arena = cm_arena_free(p.arena);
	res->done = r == 0;
	return r;
}

/* Output ---------------------------------------------------------------- */

static const struct rb_result *rb_find(const struct rb_result *res, const char *key)
{
	for (size_t i = 0; i < RB_NTRANSPORTS; i++)
		if (res[i].done && strcmp(rb_transports[i].key, key) == 0)
			return &res[i];
	return NULL;
}

static void rb_cpus(const struct rb_config *cfg, char *buf, size_t len)
{
	if (cfg->pin && cfg->cpu[0] == cfg->cpu[1])
		snprintf(buf, len, "pinned to one cpu (%d), both processes", cfg->cpu[0]);
	else if (cfg->pin)
		snprintf(buf, len, "pinned (parent cpu %d, child cpu %d)", cfg->cpu[0], cfg->cpu[1]);
	else
		snprintf(buf, len, "unpinned (%ld cpus online)", sysconf(_SC_NPROCESSORS_ONLN));
}

static void rb_print_ratio(const struct rb_result *res, const char *key)
{
	const struct rb_result *ring = rb_find(res, "ring"), *o = rb_find(res, key);

	if (!ring || !o)
		return;
	printf("ring vs %s: %.1fx records/s, rtt p50 %.1fx lower", key,
	       ring->oneway_rps / o->oneway_rps, o->rtt_p50 / ring->rtt_p50);
	if (ring->wake_p50 > 0)
		printf(", wake p50 %.1fx lower", o->wake_p50 / ring->wake_p50);
	printf("\n");
}

static void rb_print_table(const struct rb_config *cfg, const struct rb_result *res,
			   double floor_p50)
{
	const struct rb_result *ring = rb_find(res, "ring"), *sock = rb_find(res, "socket");
	char cpus[80];

	rb_cpus(cfg, cpus, sizeof(cpus));
	printf("ring-rtt: %u-byte records; rtt up to %llu round trips, one-way up to %llu records, "
	       "each within %.1f s; "
	       "wake-up %llu records %llu us apart; ring capacity %u, spin %llu ns; cpus %s\n",
	       cfg->rec_size, (unsigned long long)cfg->iters, (unsigned long long)cfg->records,
	       cfg->seconds, (unsigned long long)cfg->wakes, (unsigned long long)cfg->wake_gap_us,
	       RB_RING_CAP, (unsigned long long)cm_wait_spin_ns(), cpus);
	printf("%-15s %10s %10s %11s %14s %11s %11s %8s %9s\n", "transport", "rtt p50 us",
	       "rtt p99 us", "rtt mean us", "one-way rec/s", "wake p50 us", "wake p99 us", "rtt n",
	       "one-way n");
	for (size_t i = 0; i < RB_NTRANSPORTS; i++)
		if (res[i].done)
			printf("%-15s %10.2f %10.2f %11.2f %14.0f %11.1f %11.1f %8llu %9llu\n",
			       res[i].name, res[i].rtt_p50, res[i].rtt_p99, res[i].rtt_mean,
			       res[i].oneway_rps, res[i].wake_p50, res[i].wake_p99,
			       (unsigned long long)res[i].rtt_n, (unsigned long long)res[i].oneway_n);
	rb_print_ratio(res, "socket");
	rb_print_ratio(res, "pipe");
	if (floor_p50 > 0)
		printf("floor: one cache line bounced between the two processes, spinning: "
		       "rtt p50 %.2f us\n", floor_p50);
	if (ring && sock)
		printf("aims: ring/socket records/s %.1fx (aim >= 5x); ring rtt p50 %.2f us (aim < 5 us)\n",
		       ring->oneway_rps / sock->oneway_rps, ring->rtt_p50);
}

static void rb_print_json(const struct rb_config *cfg, const struct rb_result *res,
			  double floor_p50)
{
	const char *sep = "";

	printf("{\"bench\":\"ring-rtt\",\"rec_size\":%u,\"iters\":%llu,\"records\":%llu,"
	       "\"wakes\":%llu,\"wake_gap_us\":%llu,\"ring_capacity\":%u,\"spin_ns\":%llu,"
	       "\"pinned\":%s,\"same_cpu\":%s,\"socket\":\"SOCK_SEQPACKET\",\"floor_rtt_p50_us\":%.3f,"
	       "\"results\":[",
	       cfg->rec_size, (unsigned long long)cfg->iters, (unsigned long long)cfg->records,
	       (unsigned long long)cfg->wakes, (unsigned long long)cfg->wake_gap_us, RB_RING_CAP,
	       (unsigned long long)cm_wait_spin_ns(), cfg->pin ? "true" : "false",
	       cfg->pin && cfg->cpu[0] == cfg->cpu[1] ? "true" : "false", floor_p50);
	for (size_t i = 0; i < RB_NTRANSPORTS; i++) {
		if (!res[i].done)
			continue;
		printf("%s{\"transport\":\"%s\",\"rtt_p50_us\":%.3f,\"rtt_p99_us\":%.3f,"
		       "\"rtt_mean_us\":%.3f,\"rtt_n\":%llu,\"oneway_records\":%llu,\"oneway_rps\":%.0f,"
		       "\"wake_p50_us\":%.2f,\"wake_p99_us\":%.2f}",
		       sep, rb_transports[i].key, res[i].rtt_p50, res[i].rtt_p99, res[i].rtt_mean,
		       (unsigned long long)res[i].rtt_n, (unsigned long long)res[i].oneway_n,
		       res[i].oneway_rps, res[i].wake_p50, res[i].wake_p99);
		sep = ",";
	}
	printf("]}\n");
}

/* Flags ----------------------------------------------------------------- */

static void rb_usage(FILE *f)
{
	fprintf(f, "usage: ring-rtt [--quick] [--iters=N] [--records=M] [--seconds=S] [--wakes=K]\n"
		   "                [--gap-us=US] [--size=BYTES] [--only=ring|pipe|socket]\n"
		   "                [--pin | --same-cpu] [--json]\n"
		   "Round trips, one-way records/s and wake-up latency of ext3d rings, pipes and a\n"
		   "unix SOCK_SEQPACKET socketpair between two processes. See bench/README.md.\n");
}

static int rb_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* The first two CPUs this process may run on, for --pin (one if that is all). */
static int rb_pick_cpus(struct rb_config *cfg)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return -errno;
	for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
		if (CPU_ISSET(i, &set))
			cfg->cpu[n++] = i;
	if (n == 1)
		cfg->cpu[1] = cfg->cpu[0];
	return n > 0 ? 0 : -ENODEV;
}

static int rb_parse_size(const char *arg, struct rb_config *cfg)
{
	uint64_t v;
	int r = rb_parse_u64(arg, sizeof(struct rb_hdr), RB_REC_MAX, &v);

	if (r == 0 && v % 8)
		r = -EINVAL;
	if (r == 0)
		cfg->rec_size = (uint32_t)v;
	return r;
}

static int rb_parse_one(struct rb_config *cfg, int opt, const char *arg)
{
	uint64_t v;
	int r;

	switch (opt) {
	case 'q':
		cfg->iters = 20000;
		cfg->records = 500000;
		cfg->seconds = 0.5;
		cfg->wakes = 100;
		return 0;
	case 'i':
		return rb_parse_u64(arg, 1, 1ULL << 28, &cfg->iters);
	case 'r':
		return rb_parse_u64(arg, 1, 1ULL << 40, &cfg->records);
	case 'w':
		return rb_parse_u64(arg, 0, 1ULL << 24, &cfg->wakes);
	case 'g':
		return rb_parse_u64(arg, 1, 1000000, &cfg->wake_gap_us);
	case 's':
		r = rb_parse_u64(arg, 1, 3600, &v);
		cfg->seconds = r == 0 ? (double)v : cfg->seconds;
		return r;
	case 'b':
		return rb_parse_size(arg, cfg);
	case 'o':
		cfg->only = arg;
		for (size_t i = 0; i < RB_NTRANSPORTS; i++)
			if (strcmp(arg, rb_transports[i].key) == 0)
				return 0;
		return -EINVAL;
	case 'p':
		cfg->pin = true;
		return rb_pick_cpus(cfg);
	case 'S':
		cfg->pin = true;
		r = rb_pick_cpus(cfg);
		cfg->cpu[1] = cfg->cpu[0];
		return r;
	case 'j':
		cfg->json = true;
		return 0;
	}
	return -EINVAL;
}

static int rb_parse(int argc, char **argv, struct rb_config *cfg)
{
	static const struct option opts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "iters", required_argument, NULL, 'i' },
		{ "records", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 's' },
		{ "wakes", required_argument, NULL, 'w' },
		{ "gap-us", required_argument, NULL, 'g' },
		{ "size", required_argument, NULL, 'b' },
		{ "only", required_argument, NULL, 'o' },
		{ "pin", no_argument, NULL, 'p' },
		{ "same-cpu", no_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (opt == 'h') {
			rb_usage(stdout);
			exit(EXIT_SUCCESS);
		}
		if (rb_parse_one(cfg, opt, optarg) < 0) {
			fprintf(stderr, "ring-rtt: bad option %s%s\n", argv[optind - 1],
				opt == 'p' || opt == 'S' ? " (cannot read the cpu set)" : "");
			return -EINVAL;
		}
	}
	return optind < argc ? -EINVAL : 0;
}

int main(int argc, char **argv)
{
	struct rb_config cfg = { .rec_size = 64, .iters = 200000, .records = 5000000,
				 .seconds = 3, .wakes = 1000, .wake_gap_us = 1000 };
	struct rb_result res[RB_NTRANSPORTS] = { { 0 } };
	double floor_p50 = 0;
	int r = 0;

	if (rb_parse(argc, argv, &cfg) < 0) {
		rb_usage(stderr);
		return EXIT_FAILURE;
	}
	rb_pin(&cfg, 0);
	for (size_t i = 0; i < RB_NTRANSPORTS && r == 0; i++) {
		if (cfg.only && strcmp(cfg.only, rb_transports[i].key) != 0)
			continue;
		r = rb_run(&rb_transports[i], &cfg, &res[i]);
		if (r < 0)
			fprintf(stderr, "ring-rtt: %s: %s\n", rb_transports[i].name, strerror(-r));
	}
	if (r == 0 && rb_floor_possible(&cfg))
		r = rb_measure_floor(&cfg, &floor_p50);
	if (cfg.json)
		rb_print_json(&cfg, res, floor_p50);
	else
		rb_print_table(&cfg, res, floor_p50);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
