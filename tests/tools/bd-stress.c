/* bd-stress - drives blockdev-svc for tests/integration/blockdev.t. It runs
 * as a compose service (policy never, after blockdev-svc): attaches the
 * arena, reports ready without confining itself (a test tool), does the work
 * of one --mode through cm_bdev, writes a summary to --done and exits 0 only
 * if every check passed. --mode=verify is run by hand instead: it maps no
 * arena and reads the image file directly, an oracle independent of
 * blockdev-svc's read path. Modes and flags: see bdx_usage_text.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdclient.h"
#include "io.h"
#include "log.h"
#include "service.h"

#define BDX_SECTOR CM_BD_SECTOR
#define BDX_STREAM_MAX 16 /* sectors per stream write: 1..8 KiB, 1 KiB aligned */
#define BDX_RANDOM_HOT 16384 /* random mode: most I/O in the first 8 MiB */

static const char bdx_usage_text[] =
	"usage: bd-stress --mode=MODE [FLAGS] --arena-fd=N --slot=K\n"
	"  stream  --count=N --seed=S --ack-log=FILE --done=FILE [--pipeline=D]\n"
	"          [--pause-every=K] [--pause-ms=M] [--fua-every=F]\n"
	"  random  --count=N --seed=S --done=FILE [--pipeline=D] [--model-out=FILE]\n"
	"  bad     --done=FILE\n"
	"  ioerr   --done=FILE --expect=transient|persistent [--fault-at=N] [--count=N]\n"
	"  verify  --image=PATH --ack-log=FILE --seed=S      (no arena)\n";

struct bdx_opts {
	const char *mode, *ack_log, *done, *image, *expect, *model_out;
	uint64_t count, seed, fault_at;
	uint64_t pipeline, pause_every, pause_ms, fua_every;
};

/* One request in flight: its arena buffer and what the mode must remember. */
struct bdx_slot {
	cm_bd_rec rec;
	uint8_t *buf;     /* arena data zone, rec.data_off */
	uint8_t *expect;  /* random mode: what a read must return */
	uint64_t wno;     /* stream: write number; ioerr: write number */
};

/* Requests are reaped in the order they were submitted, so a FIFO of slots
 * mirrors the channel's. */
typedef struct bdx_pipe {
	struct bdx_slot *slots;
	uint32_t depth;
	uint64_t head, tail; /* submitted, reaped */
} bdx_pipe;

typedef struct bdx {
	struct bdx_opts o;
	cm_service svc;
	cm_bdev *bd;
	uint64_t sectors;
	bdx_pipe pipe;
	FILE *done;      /* --done, written to a temporary name, renamed at exit */
	char done_tmp[4096];
	uint64_t resub0; /* resubmissions before the mode's work began */
	unsigned failures;
} bdx;

/* ---- deterministic content and randomness ---- */

static uint64_t bdx_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t bdx_rand(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ULL;
	return bdx_mix(*state);
}

static uint64_t bdx_below(uint64_t *state, uint64_t n)
{
	return n ? bdx_rand(state) % n : 0;
}

/* The content of sector `sector` as write `wno` of stream `seed` left it:
 * wno and sector in clear (for diagnostics), then a keyed pseudo-random tail. */
static void bdx_sector_fill(uint8_t *p, uint64_t seed, uint64_t wno, uint64_t sector)
{
	uint64_t w[BDX_SECTOR / 8];
	uint64_t key = bdx_mix(seed ^ bdx_mix(wno * 0x9e3779b97f4a7c15ULL ^ bdx_mix(sector + 1)));

	w[0] = wno;
	w[1] = sector;
	for (size_t i = 2; i < BDX_SECTOR / 8; i++)
		w[i] = bdx_mix(key + i);
	memcpy(p, w, sizeof(w));
}

/* True if p holds what bdx_sector_fill() put there; logs the first few
 * mismatches. */
static bool bdx_sector_check(const uint8_t *p, uint64_t seed, uint64_t wno, uint64_t sector)
{
	static unsigned logged;
	uint8_t want[BDX_SECTOR];
	uint64_t got[2];

	bdx_sector_fill(want, seed, wno, sector);
	if (memcmp(p, want, BDX_SECTOR) == 0)
		return true;
	if (++logged > 10)
		return false;
	memcpy(got, p, sizeof(got));
	cm_err("sector %" PRIu64 ": want write %" PRIu64 ", found header wno=%" PRIu64
	       " sector=%" PRIu64, sector, wno, got[0], got[1]);
	return false;
}

/* ---- the pipeline over cm_bdev ---- */

static int bdx_pipe_init(bdx *x, uint32_t depth, uint32_t max_sectors, bool expect)
{
	cm_arena *a = x->svc.arena;
	uint64_t len = (uint64_t)max_sectors * BDX_SECTOR;

	x->pipe.depth = depth;
	x->pipe.slots = calloc(depth, sizeof(*x->pipe.slots));
	if (!x->pipe.slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < depth; i++) {
		struct bdx_slot *s = &x->pipe.slots[i];
		cm_off off = cm_arena_alloc_data(a, len, 4096);
		if (!off)
			return cm_log_errno(-ENOMEM, "data zone full (%u x %" PRIu64 " bytes)",
					    depth, len);
		s->rec.data_off = off;
		s->buf = cm_arena_ptr(a, off, len);
		s->expect = expect ? malloc(len) : NULL;
		if (expect && !s->expect)
			return -ENOMEM;
	}
	return 0;
}

static void bdx_pipe_fini(bdx *x)
{
	for (uint32_t i = 0; x->pipe.slots && i < x->pipe.depth; i++)
		free(x->pipe.slots[i].expect);
	free(x->pipe.slots);
	x->pipe.slots = NULL;
}

static uint32_t bdx_pipe_inflight(const bdx *x)
{
	return (uint32_t)(x->pipe.head - x->pipe.tail);
}

/* The slot the next submission will use; its buffer is free. */
static struct bdx_slot *bdx_pipe_next(bdx *x)
{
	return &x->pipe.slots[x->pipe.head % x->pipe.depth];
}

static int bdx_pipe_submit(bdx *x, uint16_t op, uint64_t sector, uint32_t nsect,
			   uint32_t flags)
{
	struct bdx_slot *s = bdx_pipe_next(x);
	cm_bd_rec rec = {
		.hdr.op = op, .sector = sector, .nsect = nsect, .flags = flags,
		.data_off = s->rec.data_off,
	};
	int r;

	s->rec = rec;
	r = cm_bdev_submit(x->bd, &s->rec);
	if (r < 0)
		return cm_log_errno(r, "submit op %u sector %" PRIu64 ": %m", op, sector);
	x->pipe.head++;
	return 0;
}

/* Reaps the oldest request; its status is in (*ret)->rec.hdr.status. */
static int bdx_pipe_reap(bdx *x, struct bdx_slot **ret)
{
	struct bdx_slot *s = &x->pipe.slots[x->pipe.tail % x->pipe.depth];
	cm_bd_rec rec;
	int r = cm_bdev_reap(x->bd, &rec);

	if (r < 0) {
		/* Not "return cm_log_errno()": the caller's slot is set only if
		 * this returns 0, and the compiler cannot see that r < 0. */
		(void)cm_log_errno(r, "reap: %m");
		return r;
	}
	s->rec.hdr.status = rec.hdr.status;
	x->pipe.tail++;
	*ret = s;
	return 0;
}

/* One synchronous request; 0 and the status in *status, or a transport error. */
static int bdx_call(bdx *x, cm_bd_rec *rec, int *status)
{
	int r = cm_bdev_submit(x->bd, rec);

	if (r == 0)
		r = cm_bdev_reap(x->bd, rec);
	if (r < 0)
		return cm_log_errno(r, "request op %u: %m", rec->hdr.op);
	*status = rec->hdr.status;
	return 0;
}

static uint64_t bdx_resubmitted(bdx *x)
{
	return cm_chan_resubmitted(cm_bdev_chan(x->bd)) - x->resub0;
}

/* ---- the done file ---- */

static void bdx_check(bdx *x, bool ok, const char *what, int got, int want)
{
	fprintf(x->done, "%s %s: got %d want %d\n", ok ? "ok" : "not ok", what, got, want);
	if (!ok) {
		x->failures++;
		cm_err("%s: got %d want %d", what, got, want);
	}
}

static int bdx_done_open(bdx *x)
{
	if (!x->o.done)
		return cm_log_errno(-EINVAL, "--done is required");
	snprintf(x->done_tmp, sizeof(x->done_tmp), "%s.tmp", x->o.done);
	x->done = fopen(x->done_tmp, "we");
	return x->done ? 0 : cm_log_errno(-errno, "%s: %m", x->done_tmp);
}

/* Publishes the done file under its final name, so a waiting test never
 * reads half of it. */
static int bdx_done_close(bdx *x, int r)
{
	fprintf(x->done, "result=%s error=%d failures=%u\n",
		r == 0 && !x->failures ? "pass" : "fail", r, x->failures);
	if (fclose(x->done) != 0 || rename(x->done_tmp, x->o.done) < 0)
		return cm_log_errno(-errno, "%s: %m", x->o.done);
	return 0;
}

/* ---- --mode=stream ---- */

struct bdx_stream {
	uint32_t *last; /* per sector: last acknowledged write, 0 = none */
	FILE *ack;
	uint64_t acked, mismatches, checked;
};

static int bdx_stream_submit(bdx *x, uint64_t wno)
{
	uint64_t seed = x->o.seed ^ wno;
	uint32_t nsect = 2 * (1 + (uint32_t)bdx_below(&seed, BDX_STREAM_MAX / 2));
	uint64_t sector = 2 * bdx_below(&seed, (x->sectors - nsect) / 2 + 1);
	uint32_t flags = x->o.fua_every && wno % x->o.fua_every == 0 ? CM_BD_FUA : 0;
	struct bdx_slot *s = bdx_pipe_next(x);

	for (uint32_t i = 0; i < nsect; i++)
		bdx_sector_fill(s->buf + i * BDX_SECTOR, x->o.seed, wno, sector + i);
	s->wno = wno;
	return bdx_pipe_submit(x, CM_BD_WRITE, sector, nsect, flags);
}

static int bdx_stream_reap(bdx *x, struct bdx_stream *st)
{
	struct bdx_slot *s;
	int r = bdx_pipe_reap(x, &s);

	if (r < 0)
		return r;
	if (s->rec.hdr.status != 0)
		return cm_log_errno(s->rec.hdr.status, "write %" PRIu64 " (sector %" PRIu64
				    ", %u sectors): %m", s->wno, s->rec.sector, s->rec.nsect);
	for (uint32_t i = 0; i < s->rec.nsect; i++)
		st->last[s->rec.sector + i] = (uint32_t)s->wno;
	fprintf(st->ack, "%" PRIu64 " %" PRIu64 " %u\n", s->wno, s->rec.sector, s->rec.nsect);
	st->acked++;
	if (st->acked % 16 == 0)
		fflush(st->ack);
	if (st->acked % 512 == 0)
		(void)fsync(fileno(st->ack));
	return 0;
}

static void bdx_stream_pause(bdx *x, struct bdx_stream *st, uint64_t wno)
{
	if (!x->o.pause_every || wno % x->o.pause_every != 0)
		return;
	fflush(st->ack);
	usleep((useconds_t)(x->o.pause_ms * 1000));
}

static int bdx_stream_writes(bdx *x, struct bdx_stream *st)
{
	uint64_t wno = 1;
	int r = 0;

	while (r == 0 && (wno <= x->o.count || bdx_pipe_inflight(x))) {
		if (cm_service_stopping())
			return cm_log_errno(-EINTR, "stopped at write %" PRIu64, wno);
		if (wno <= x->o.count && bdx_pipe_inflight(x) < x->pipe.depth) {
			r = bdx_stream_submit(x, wno);
			bdx_stream_pause(x, st, wno++);
		} else {
			r = bdx_stream_reap(x, st);
		}
	}
	return r;
}

/* Length of the run of written sectors at s, at most CM_BD_MAX_SECTORS. */
static uint32_t bdx_run_len(const uint32_t *last, uint64_t s, uint64_t n)
{
	uint32_t len = 0;

	while (s + len < n && len < CM_BD_MAX_SECTORS && last[s + len])
		len++;
	return len;
}

/* Reads back every written sector through blockdev-svc. */
static int bdx_stream_readback(bdx *x, struct bdx_stream *st)
{
	cm_off off = cm_arena_alloc_data(x->svc.arena, CM_BD_MAX_SECTORS * BDX_SECTOR, 4096);
	uint8_t *buf = cm_arena_ptr(x->svc.arena, off, CM_BD_MAX_SECTORS * BDX_SECTOR);
	int r;

	if (!buf)
		return cm_log_errno(-ENOMEM, "data zone full");
	for (uint64_t s = 0; s < x->sectors;) {
		uint32_t len = bdx_run_len(st->last, s, x->sectors);
		if (!len) {
			s++;
			continue;
		}
		r = cm_bdev_read(x->bd, s, len, off);
		if (r < 0)
			return cm_log_errno(r, "read back sector %" PRIu64 ": %m", s);
		for (uint32_t i = 0; i < len; i++, st->checked++)
			if (!bdx_sector_check(buf + i * BDX_SECTOR, x->o.seed, st->last[s + i], s + i))
				st->mismatches++;
		s += len;
	}
	return 0;
}

static int bdx_stream(bdx *x)
{
	struct bdx_stream st = {0};
	int r;

	if (!x->o.ack_log || !x->o.count || x->o.count > UINT32_MAX || x->sectors < BDX_STREAM_MAX)
		return cm_log_errno(-EINVAL, "stream needs --ack-log and --count=1..2^32-1");
	st.last = calloc(x->sectors, sizeof(*st.last));
	st.ack = fopen(x->o.ack_log, "we");
	if (!st.last || !st.ack)
		return cm_log_errno(-errno, "%s: %m", x->o.ack_log);
	r = bdx_pipe_init(x, (uint32_t)x->o.pipeline, BDX_STREAM_MAX, false);
	if (r == 0)
		r = bdx_stream_writes(x, &st);
	fflush(st.ack);
	(void)fsync(fileno(st.ack));
	fclose(st.ack);
	if (r == 0 && (r = cm_bdev_flush(x->bd)) < 0)
		cm_log_errno(r, "flush: %m");
	if (r == 0)
		r = bdx_stream_readback(x, &st);
	fprintf(x->done, "writes=%" PRIu64 " resubmitted=%" PRIu64 " mismatches=%" PRIu64
		" checked=%" PRIu64 "\n", st.acked, bdx_resubmitted(x), st.mismatches, st.checked);
	if (st.mismatches)
		x->failures++;
	free(st.last);
	return r;
}

/* ---- --mode=random ---- */

struct bdx_random {
	uint8_t *model; /* what the device must hold */
	uint64_t rng, reads, writes, mismatches;
};

static uint32_t bdx_random_nsect(struct bdx_random *m)
{
	if (bdx_below(&m->rng, 10) == 0)
		return 1 + (uint32_t)bdx_below(&m->rng, CM_BD_MAX_SECTORS);
	return 1 + (uint32_t)bdx_below(&m->rng, 64);
}

/* Queues one random read or write (or flush); the model follows writes in
 * submission order, which is the order blockdev-svc performs them in. */
static int bdx_random_submit(bdx *x, struct bdx_random *m)
{
	struct bdx_slot *s = bdx_pipe_next(x);
	uint32_t nsect = bdx_random_nsect(m);
	uint64_t span = bdx_below(&m->rng, 4) ? BDX_RANDOM_HOT : x->sectors;
	uint64_t sector, len;

	if (span > x->sectors)
		span = x->sectors;
	if (nsect > span)
		nsect = (uint32_t)span;
	sector = bdx_below(&m->rng, span - nsect + 1);
	len = (uint64_t)nsect * BDX_SECTOR;
	if (bdx_below(&m->rng, 64) == 0)
		return bdx_pipe_submit(x, CM_BD_FLUSH, 0, 0, 0);
	if (bdx_below(&m->rng, 2)) {
		memcpy(s->expect, m->model + sector * BDX_SECTOR, len);
		return bdx_pipe_submit(x, CM_BD_READ, sector, nsect, 0);
	}
	for (uint64_t i = 0; i < len; i += 8) {
		uint64_t v = bdx_rand(&m->rng);
		memcpy(s->buf + i, &v, 8);
	}
	memcpy(m->model + sector * BDX_SECTOR, s->buf, len);
	return bdx_pipe_submit(x, CM_BD_WRITE, sector, nsect, bdx_below(&m->rng, 16) ? 0 : CM_BD_FUA);
}

static int bdx_random_reap(bdx *x, struct bdx_random *m)
{
	struct bdx_slot *s;
	int r = bdx_pipe_reap(x, &s);

	if (r < 0)
		return r;
	if (s->rec.hdr.status != 0)
		return cm_log_errno(s->rec.hdr.status, "op %u sector %" PRIu64 " nsect %u: %m",
				    s->rec.hdr.op, s->rec.sector, s->rec.nsect);
	if (s->rec.hdr.op == CM_BD_WRITE)
		m->writes++;
	if (s->rec.hdr.op != CM_BD_READ)
		return 0;
	m->reads++;
	if (memcmp(s->buf, s->expect, (size_t)s->rec.nsect * BDX_SECTOR) != 0) {
		m->mismatches++;
		cm_err("read sector %" PRIu64 " nsect %u differs from the model", s->rec.sector,
		       s->rec.nsect);
	}
	return 0;
}

/* Sweeps the whole device in 1 MiB reads through the first slot's buffer:
 * loads the model, or (check) compares the device with it. */
static int bdx_random_sweep(bdx *x, struct bdx_random *m, bool check)
{
	struct bdx_slot *s = &x->pipe.slots[0];

	for (uint64_t sec = 0; sec < x->sectors; sec += CM_BD_MAX_SECTORS) {
		uint64_t left = x->sectors - sec;
		uint32_t n = left < CM_BD_MAX_SECTORS ? (uint32_t)left : CM_BD_MAX_SECTORS;
		uint8_t *at = m->model + sec * BDX_SECTOR;
		int r = cm_bdev_read(x->bd, sec, n, s->rec.data_off);
		if (r < 0)
			return cm_log_errno(r, "read sector %" PRIu64 ": %m", sec);
		if (!check)
			memcpy(at, s->buf, (size_t)n * BDX_SECTOR);
		else if (memcmp(at, s->buf, (size_t)n * BDX_SECTOR) != 0)
			m->mismatches++, cm_err("sectors %" PRIu64 "+%u differ from the model at the end",
						sec, n);
	}
	return 0;
}

static int bdx_random_ops(bdx *x, struct bdx_random *m)
{
	uint64_t done = 0;
	int r = 0;

	while (r == 0 && (done < x->o.count || bdx_pipe_inflight(x))) {
		if (cm_service_stopping())
			return cm_log_errno(-EINTR, "stopped");
		if (done < x->o.count && bdx_pipe_inflight(x) < x->pipe.depth) {
			r = bdx_random_submit(x, m);
			done++;
		} else {
			r = bdx_random_reap(x, m);
		}
	}
	return r;
}

static int bdx_model_save(const char *path, const uint8_t *model, uint64_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int r;

	if (fd < 0)
		return cm_log_errno(-errno, "%s: %m", path);
	r = cm_write_full(fd, model, len);
	close(fd);
	return r < 0 ? cm_log_errno(r, "%s: %m", path) : 0;
}

static int bdx_random(bdx *x)
{
	uint64_t bytes = x->sectors * BDX_SECTOR;
	struct bdx_random m = {.rng = x->o.seed, .model = malloc(bytes)};
	int r;

	if (!m.model || !x->o.count)
		return cm_log_errno(-EINVAL, "random needs --count and %" PRIu64 " bytes", bytes);
	r = bdx_pipe_init(x, (uint32_t)x->o.pipeline, CM_BD_MAX_SECTORS, true);
	if (r == 0)
		r = bdx_random_sweep(x, &m, false);
	if (r == 0)
		r = bdx_random_ops(x, &m);
	if (r == 0 && (r = cm_bdev_flush(x->bd)) < 0)
		cm_log_errno(r, "flush: %m");
	if (r == 0)
		r = bdx_random_sweep(x, &m, true);
	if (r == 0 && x->o.model_out)
		r = bdx_model_save(x->o.model_out, m.model, bytes);
	fprintf(x->done, "ops=%" PRIu64 " writes=%" PRIu64 " reads=%" PRIu64
		" mismatches=%" PRIu64 "\n", x->o.count, m.writes, m.reads, m.mismatches);
	if (m.mismatches)
		x->failures++;
	free(m.model);
	return r;
}

/* ---- --mode=bad ---- */

struct bdx_bad_case {
	const char *what;
	uint16_t op;
	uint64_t sector;
	uint32_t nsect, flags;
	cm_off data_off;
	int want;
};

static void bdx_bad_run(bdx *x, const struct bdx_bad_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		cm_bd_rec rec = {
			.hdr.op = c[i].op, .sector = c[i].sector, .nsect = c[i].nsect,
			.flags = c[i].flags, .data_off = c[i].data_off,
		};
		int st = 1;
		if (bdx_call(x, &rec, &st) < 0)
			x->failures++;
		bdx_check(x, st == c[i].want, c[i].what, st, c[i].want);
	}
}

/* Requests whose record version is not CM_BD_VERSION: the channel client
 * stamps its own version, so they go over channels opened with another. */
static void bdx_bad_version(bdx *x, uint16_t version, cm_off buf)
{
	int slot = cm_layout_find_svc(x->svc.layout, "blockdev-svc");
	cm_bd_rec rec = {.hdr.op = CM_BD_READ, .nsect = 8, .data_off = buf}, resp = {0};
	cm_chan_client *cc;
	char what[64];
	int r;

	snprintf(what, sizeof(what), "record version %u", version);
	r = slot < 0 ? slot : cm_chan_open(x->svc.arena, (uint32_t)slot, version, &cc);
	if (r == 0) {
		r = cm_chan_call(cc, &rec, &resp, CM_BD_TIMEOUT_MS);
		cm_chan_close(cc);
	}
	bdx_check(x, r == 0 && resp.hdr.status == -EPROTO, what, r < 0 ? r : resp.hdr.status,
		  -EPROTO);
}

static void bdx_bad_good_io(bdx *x, cm_off off)
{
	uint8_t *buf = cm_arena_ptr(x->svc.arena, off, 8 * BDX_SECTOR);
	uint64_t at = x->sectors - 8;
	int st = 0, r;

	for (uint32_t i = 0; i < 8; i++)
		bdx_sector_fill(buf + i * BDX_SECTOR, x->o.seed, 1, at + i);
	r = cm_bdev_write(x->bd, at, 8, off, CM_BD_FUA);
	bdx_check(x, r == 0, "good write to the last 8 sectors", r, 0);
	r = cm_bdev_write(x->bd, at, 8, off, CM_BD_PREFLUSH | CM_BD_FUA);
	bdx_check(x, r == 0, "good write after a flush (PREFLUSH)", r, 0);
	memset(buf, 0, 8 * BDX_SECTOR);
	r = cm_bdev_read(x->bd, at, 8, off);
	for (uint32_t i = 0; r == 0 && i < 8; i++)
		if (!bdx_sector_check(buf + i * BDX_SECTOR, x->o.seed, 1, at + i))
			st = -EIO;
	bdx_check(x, r == 0 && st != -EIO, "good read returns what was written", r ? r : st, 0);
}

/* One scatter read (CM_BD_READV) or gathering write (CM_BD_WRITEV) with a
 * hand-made offset table. */
static int bdx_vec(bdx *x, uint16_t op, uint64_t sector, uint32_t chunk, uint32_t nsect,
		   cm_off table, uint32_t flags)
{
	cm_bd_rec rec = {.hdr.op = op, .sector = sector, .nsect = nsect,
			 .chunk = chunk, .data_off = table, .flags = flags};
	int st = 1;

	if (bdx_call(x, &rec, &st) < 0)
		x->failures++;
	return st;
}

static int bdx_readv(bdx *x, uint64_t sector, uint32_t chunk, uint32_t nsect, cm_off table)
{
	return bdx_vec(x, CM_BD_READV, sector, chunk, nsect, table, 0);
}

/* Gathering writes: a good one writes the last 8 sectors from two buffers
 * named in reverse order (the bytes the device already holds there, so
 * the model stays right) and a read returns them in place; bad chunks,
 * flags, counts, tables and table entries are refused. */
static void bdx_bad_writev(bdx *x)
{
	const uint16_t wv = CM_BD_WRITEV;
	cm_arena *a = x->svc.arena;
	cm_off t = cm_arena_alloc_data(a, 64, 64), two = cm_arena_alloc_data(a, 8 * BDX_SECTOR, 64);
	uint64_t *table = cm_arena_ptr(a, t, 64), at = x->sectors - 8;
	uint8_t *src = cm_arena_ptr(a, two, 8 * BDX_SECTOR);
	int st, r, ok = 1;

	for (uint32_t i = 0; i < 8; i++)
		bdx_sector_fill(src + ((i + 4) % 8) * BDX_SECTOR, x->o.seed, 1, at + i);
	table[0] = two + 4 * BDX_SECTOR;
	table[1] = two;
	st = bdx_vec(x, wv, at, 4, 8, t, CM_BD_FUA);
	bdx_check(x, st == 0, "writev from two buffers", st, 0);
	memset(src, 0, 8 * BDX_SECTOR);
	r = cm_bdev_read(x->bd, at, 8, two);
	for (uint32_t i = 0; r == 0 && i < 8; i++)
		ok &= bdx_sector_check(src + i * BDX_SECTOR, x->o.seed, 1, at + i);
	bdx_check(x, r == 0 && ok, "a read returns what writev gathered", r, 0);
	bdx_check(x, bdx_vec(x, wv, 0, 0, 8, t, 0) == -EINVAL, "writev chunk 0", -EINVAL, -EINVAL);
	bdx_check(x, bdx_vec(x, wv, 0, 4, 8, t, 0x4) == -EINVAL, "writev unknown flag",
		  -EINVAL, -EINVAL);
	bdx_check(x, bdx_vec(x, wv, 0, 1, CM_BD_MAX_IOV + 1, t, 0) == -EINVAL,
		  "writev with too many buffers", -EINVAL, -EINVAL);
	bdx_check(x, bdx_vec(x, wv, x->sectors - 4, 4, 8, t, 0) == -ERANGE,
		  "writev across the end", -ERANGE, -ERANGE);
	bdx_check(x, bdx_vec(x, wv, 0, 4, 8, t + 4, 0) == -EFAULT, "writev table misaligned",
		  -EFAULT, -EFAULT);
	table[1] = 64;
	bdx_check(x, bdx_vec(x, wv, 0, 4, 8, t, 0) == -EFAULT,
		  "writev table entry in the arena header", -EFAULT, -EFAULT);
}

/* Scatter reads: a good one reads the last 8 sectors into two buffers in
 * reverse order; bad chunks, counts, tables and table entries are refused. */
static void bdx_bad_readv(bdx *x, cm_off buf)
{
	cm_arena *a = x->svc.arena;
	cm_off t = cm_arena_alloc_data(a, 64, 64), two = cm_arena_alloc_data(a, 8 * BDX_SECTOR, 64);
	uint64_t *table = cm_arena_ptr(a, t, 64), at = x->sectors - 8;
	uint8_t *dst = cm_arena_ptr(a, two, 8 * BDX_SECTOR);
	int st, ok = 1;

	table[0] = two + 4 * BDX_SECTOR;
	table[1] = two;
	st = bdx_readv(x, at, 4, 8, t);
	for (uint32_t i = 0; st == 0 && i < 8; i++)
		ok &= bdx_sector_check(dst + ((i + 4) % 8) * BDX_SECTOR, x->o.seed, 1, at + i);
	bdx_check(x, st == 0 && ok, "readv into two buffers returns what was written", st, 0);
	bdx_check(x, bdx_readv(x, 0, 0, 8, t) == -EINVAL, "readv chunk 0", -EINVAL, -EINVAL);
	bdx_check(x, bdx_readv(x, 0, 3, 8, t) == -EINVAL, "readv nsect not a multiple of chunk",
		  -EINVAL, -EINVAL);
	bdx_check(x, bdx_readv(x, 0, 1, CM_BD_MAX_IOV + 1, t) == -EINVAL,
		  "readv with too many buffers", -EINVAL, -EINVAL);
	bdx_check(x, bdx_readv(x, x->sectors - 4, 4, 8, t) == -ERANGE, "readv across the end",
		  -ERANGE, -ERANGE);
	bdx_check(x, bdx_readv(x, 0, 4, 8, 4096) == -EFAULT, "readv table in the metadata zone",
		  -EFAULT, -EFAULT);
	bdx_check(x, bdx_readv(x, 0, 4, 8, t + 4) == -EFAULT, "readv table misaligned",
		  -EFAULT, -EFAULT);
	table[1] = 64;
	bdx_check(x, bdx_readv(x, 0, 4, 8, t) == -EFAULT, "readv table entry in the arena header",
		  -EFAULT, -EFAULT);
	table[1] = a->size - 512;
	bdx_check(x, bdx_readv(x, 0, 4, 8, t) == -EFAULT, "readv table entry past the arena end",
		  -EFAULT, -EFAULT);
	(void)buf;
}

static int bdx_bad(bdx *x)
{
	cm_arena *a = x->svc.arena;
	const uint64_t n = x->sectors, top = a->size, ds = a->hdr->data_start;
	const cm_off b = cm_arena_alloc_data(a, 8 * BDX_SECTOR, 4096);
	const uint16_t rd = CM_BD_READ, wr = CM_BD_WRITE;
	const struct bdx_bad_case cases[] = {
		{"unknown op 0", 0, 0, 8, 0, b, -EPROTONOSUPPORT},
		{"unknown op 5", 5, 0, 8, 0, b, -EPROTONOSUPPORT},
		{"unknown op 0xffff", 0xffff, 0, 8, 0, b, -EPROTONOSUPPORT},
		{"write nsect 0", wr, 0, 0, 0, b, -EINVAL},
		{"read nsect 0", rd, 0, 0, 0, b, -EINVAL},
		{"write nsect max+1", wr, 0, CM_BD_MAX_SECTORS + 1, 0, b, -EINVAL},
		{"read nsect UINT32_MAX", rd, 0, UINT32_MAX, 0, b, -EINVAL},
		{"write at the end", wr, n, 1, 0, b, -ERANGE},
		{"read at the end", rd, n, 1, 0, b, -ERANGE},
		{"write across the end", wr, n - 1, 2, 0, b, -ERANGE},
		{"read across the end", rd, n - 4, 8, 0, b, -ERANGE},
		{"write at UINT64_MAX", wr, UINT64_MAX, 1, 0, b, -ERANGE},
		{"write wrapping past UINT64_MAX", wr, UINT64_MAX - 3, 8, 0, b, -ERANGE},
		{"read wrapping past UINT64_MAX", rd, UINT64_MAX - 1, 8, 0, b, -ERANGE},
		{"write whose byte offset overflows", wr, 1ULL << 55, 1, 0, b, -ERANGE},
		{"write data_off 0", wr, 0, 8, 0, 0, -EFAULT},
		{"read data_off 0", rd, 0, 8, 0, 0, -EFAULT},
		{"read into the metadata zone", rd, 0, 8, 0, 4096, -EFAULT},
		{"write from the arena header", wr, 0, 8, 0, 64, -EFAULT},
		{"read straddling the data zone start", rd, 0, 8, 0, ds - 512, -EFAULT},
		{"read past the arena end", rd, 0, 8, 0, top - 512, -EFAULT},
		{"read at the arena end", rd, 0, 1, 0, top, -EFAULT},
		{"write at data_off UINT64_MAX-511", wr, 0, 1, 0, UINT64_MAX - 511, -EFAULT},
		{"write flags 0x4", wr, 0, 8, 0x4, b, -EINVAL},
		{"write flags 0x80000000", wr, 0, 8, 0x80000000u, b, -EINVAL},
		{"read with the FUA flag", rd, 0, 8, CM_BD_FUA, b, -EINVAL},
	};

	if (!b || n < 16)
		return cm_log_errno(-ENOMEM, "no data buffer or a tiny device");
	bdx_bad_run(x, cases, sizeof(cases) / sizeof(cases[0]));
	bdx_bad_version(x, 0, b);
	bdx_bad_version(x, CM_BD_VERSION + 1, b);
	bdx_bad_good_io(x, b);
	bdx_bad_readv(x, b);
	bdx_bad_writev(x);
	return 0;
}

/* ---- --mode=ioerr ---- */

/* The status --fault=ioerr:KIND:N must give write number wno (from 1). */
static int bdx_ioerr_want(bdx *x, uint64_t wno)
{
	bool persistent = strcmp(x->o.expect, "persistent") == 0;

	if (persistent ? wno >= x->o.fault_at : wno == x->o.fault_at)
		return -EIO;
	return 0;
}

static int bdx_ioerr_fill_submit(bdx *x, uint64_t wno)
{
	struct bdx_slot *s = bdx_pipe_next(x);

	for (uint32_t i = 0; i < 8; i++)
		bdx_sector_fill(s->buf + i * BDX_SECTOR, x->o.seed, wno, wno * 8 + i);
	s->wno = wno;
	return bdx_pipe_submit(x, CM_BD_WRITE, wno * 8, 8, 0);
}

static int bdx_ioerr_reap(bdx *x, bool *ok_writes)
{
	struct bdx_slot *s;
	char what[64];
	int r = bdx_pipe_reap(x, &s);

	if (r < 0)
		return r;
	snprintf(what, sizeof(what), "write %" PRIu64, s->wno);
	bdx_check(x, s->rec.hdr.status == bdx_ioerr_want(x, s->wno), what, s->rec.hdr.status,
		  bdx_ioerr_want(x, s->wno));
	ok_writes[s->wno] = s->rec.hdr.status == 0;
	return 0;
}

/* Writes 1..count one at a time, then count+1..count+16 all in flight. */
static int bdx_ioerr_writes(bdx *x, bool *ok_writes)
{
	uint64_t wno, total = x->o.count + 16;
	int r = 0;

	for (wno = 1; r == 0 && wno <= x->o.count; wno++) {
		r = bdx_ioerr_fill_submit(x, wno);
		if (r == 0)
			r = bdx_ioerr_reap(x, ok_writes);
	}
	for (; r == 0 && wno <= total; wno++)
		r = bdx_ioerr_fill_submit(x, wno);
	while (r == 0 && bdx_pipe_inflight(x))
		r = bdx_ioerr_reap(x, ok_writes);
	return r;
}

/* Reads back every write answered with success; reads keep working. */
static void bdx_ioerr_readback(bdx *x, const bool *ok_writes)
{
	struct bdx_slot *s = &x->pipe.slots[0];
	uint64_t total = x->o.count + 16;

	for (uint64_t wno = 1; wno <= total; wno++) {
		char what[64];
		int r = cm_bdev_read(x->bd, wno * 8, 8, s->rec.data_off), st = r;
		for (uint32_t i = 0; r == 0 && ok_writes[wno] && i < 8; i++)
			if (!bdx_sector_check(s->buf + i * BDX_SECTOR, x->o.seed, wno, wno * 8 + i))
				st = -EILSEQ;
		snprintf(what, sizeof(what), "read back write %" PRIu64 "%s", wno,
			 ok_writes[wno] ? "" : " (failed, not compared)");
		bdx_check(x, st == 0, what, st, 0);
	}
}

static int bdx_ioerr(bdx *x)
{
	bool ok_writes[1024 + 17] = {false};
	int r;

	if (!x->o.expect || (strcmp(x->o.expect, "transient") && strcmp(x->o.expect, "persistent")))
		return cm_log_errno(-EINVAL, "ioerr needs --expect=transient|persistent");
	if (!x->o.count || x->o.count > 1024 || !x->o.fault_at || (x->o.count + 17) * 8 > x->sectors)
		return cm_log_errno(-EINVAL, "ioerr needs --count=1..1024 and --fault-at>0");
	r = bdx_pipe_init(x, 16, 8, false);
	if (r == 0)
		r = bdx_ioerr_writes(x, ok_writes);
	if (r == 0) {
		int f = cm_bdev_flush(x->bd);
		bdx_check(x, f == 0, "flush after the faults", f, 0);
		bdx_ioerr_readback(x, ok_writes);
	}
	return r;
}

/* ---- --mode=verify: the image file itself, no arena ---- */

static int bdx_verify_load(const char *path, uint32_t *last, uint64_t n)
{
	unsigned long long wno, sector;
	unsigned nsect;
	FILE *f = fopen(path, "re");
	int r = 0, got;

	if (!f)
		return cm_log_errno(-errno, "%s: %m", path);
	while ((got = fscanf(f, "%llu %llu %u", &wno, &sector, &nsect)) == 3) {
		if (!wno || wno > UINT32_MAX || sector >= n || nsect > n - sector) {
			r = cm_log_errno(-EUCLEAN, "%s: bad entry %llu %llu %u", path, wno,
					 sector, nsect);
			break;
		}
		for (unsigned i = 0; i < nsect; i++)
			last[sector + i] = (uint32_t)wno;
	}
	if (r == 0 && got != EOF)
		r = cm_log_errno(-EUCLEAN, "%s: malformed line", path);
	fclose(f);
	return r;
}

static int bdx_verify(bdx *x)
{
	uint64_t n, checked = 0, bad = 0;
	uint8_t buf[BDX_SECTOR];
	struct stat st;
	uint32_t *last;
	int fd, r;

	if (!x->o.image || !x->o.ack_log)
		return cm_log_errno(-EINVAL, "verify needs --image and --ack-log");
	fd = open(x->o.image, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return cm_log_errno(-errno, "%s: %m", x->o.image);
	n = (uint64_t)st.st_size / BDX_SECTOR;
	last = calloc(n ? n : 1, sizeof(*last));
	r = last ? bdx_verify_load(x->o.ack_log, last, n) : -ENOMEM;
	for (uint64_t s = 0; r == 0 && s < n; s++) {
		if (!last[s])
			continue;
		r = cm_pread_full(fd, buf, BDX_SECTOR, (off_t)(s * BDX_SECTOR));
		checked++;
		if (r == 0 && !bdx_sector_check(buf, x->o.seed, last[s], s))
			bad++;
	}
	close(fd);
	free(last);
	if (r < 0)
		return r;
	printf("checked=%" PRIu64 " mismatches=%" PRIu64 "\n", checked, bad);
	return bad ? -EUCLEAN : 0;
}

/* ---- flags and main ---- */

static const struct option bdx_options[] = {
	CM_SERVICE_OPTIONS,
	{"mode", required_argument, NULL, 'm'},
	{"count", required_argument, NULL, 'n'},
	{"seed", required_argument, NULL, 's'},
	{"ack-log", required_argument, NULL, 'a'},
	{"done", required_argument, NULL, 'd'},
	{"pipeline", required_argument, NULL, 'p'},
	{"pause-every", required_argument, NULL, 'k'},
	{"pause-ms", required_argument, NULL, 'w'},
	{"fua-every", required_argument, NULL, 'F'},
	{"image", required_argument, NULL, 'i'},
	{"expect", required_argument, NULL, 'e'},
	{"fault-at", required_argument, NULL, 'f'},
	{"model-out", required_argument, NULL, 'o'},
	{0},
};

static int bdx_u64(const char *arg, uint64_t *ret)
{
	char *end;

	errno = 0;
	*ret = strtoull(arg, &end, 0);
	return errno || end == arg || *end || arg[0] == '-' ? -EINVAL : 0;
}

static int bdx_parse_one(bdx *x, int opt, const char *arg)
{
	struct bdx_opts *o = &x->o;

	switch (opt) {
	case 'm': o->mode = arg; return 0;
	case 'a': o->ack_log = arg; return 0;
	case 'd': o->done = arg; return 0;
	case 'i': o->image = arg; return 0;
	case 'e': o->expect = arg; return 0;
	case 'o': o->model_out = arg; return 0;
	case 'n': return bdx_u64(arg, &o->count);
	case 's': return bdx_u64(arg, &o->seed);
	case 'p': return bdx_u64(arg, &o->pipeline);
	case 'k': return bdx_u64(arg, &o->pause_every);
	case 'w': return bdx_u64(arg, &o->pause_ms);
	case 'F': return bdx_u64(arg, &o->fua_every);
	case 'f': return bdx_u64(arg, &o->fault_at);
	default: return cm_service_option(&x->svc, opt, arg) == 1 ? 0 : -EINVAL;
	}
}

static int bdx_parse(bdx *x, int argc, char **argv)
{
	int opt;

	x->o.seed = 1;
	x->o.pipeline = 32;
	x->o.pause_ms = 2;
	x->o.fault_at = 3;
	x->o.count = 0;
	while ((opt = getopt_long(argc, argv, "", bdx_options, NULL)) != -1)
		if (bdx_parse_one(x, opt, optarg) < 0)
			return -EINVAL;
	if (optind != argc || !x->o.mode || !x->o.pipeline || x->o.pipeline > 64)
		return -EINVAL;
	if (!x->o.count && strcmp(x->o.mode, "ioerr") == 0)
		x->o.count = 8;
	return 0;
}

static int bdx_mode(bdx *x)
{
	if (strcmp(x->o.mode, "stream") == 0)
		return bdx_stream(x);
	if (strcmp(x->o.mode, "random") == 0)
		return bdx_random(x);
	if (strcmp(x->o.mode, "bad") == 0)
		return bdx_bad(x);
	if (strcmp(x->o.mode, "ioerr") == 0)
		return bdx_ioerr(x);
	return cm_log_errno(-EINVAL, "unknown --mode=%s", x->o.mode);
}

/* Attaches, reports ready, opens blockdev, runs the mode into --done. */
static int bdx_run(bdx *x)
{
	int r;

	if (cm_service_attach(&x->svc) < 0)
		return -EINVAL;
	cm_service_ready(&x->svc);
	r = bdx_done_open(x);
	if (r < 0)
		return r;
	r = cm_bdev_open(x->svc.arena, &x->bd);
	if (r < 0)
		cm_log_errno(r, "cm_bdev_open: %m");
	if (r == 0) {
		x->sectors = cm_bdev_sectors(x->bd);
		x->resub0 = cm_chan_resubmitted(cm_bdev_chan(x->bd));
		r = bdx_mode(x);
	}
	if (bdx_done_close(x, r) < 0 && r == 0)
		r = -EIO;
	bdx_pipe_fini(x);
	x->bd = cm_bdev_close(x->bd);
	cm_service_fini(&x->svc);
	return r < 0 ? r : x->failures ? -EUCLEAN : 0;
}

int main(int argc, char **argv)
{
	static bdx x;
	int r;

	cm_service_init(&x.svc, "bd-stress");
	if (bdx_parse(&x, argc, argv) < 0) {
		fputs(bdx_usage_text, stderr);
		return 2;
	}
	if (strcmp(x.o.mode, "verify") == 0)
		r = bdx_verify(&x);
	else
		r = bdx_run(&x);
	if (r < 0)
		cm_err("%s failed: %s", x.o.mode, strerror(-r));
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
