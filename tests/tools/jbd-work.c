/* jbd-work - a journal workload run as a compose service: attached to the
 * arena, cache and journal as inode-svc is, it runs seeded handles (write,
 * create and undo access with known patterns, forget, revoke, sync handles,
 * forced commits) on --blocks free blocks (the --worker'th slice), and with
 * --direct[=cache|raw] writes data into blocks whose revoke committed.
 * --min-log=PCT goes on past --handles until PCT% of the log was written.
 * Each line of the model (--model; tests/tools/jbd-model.py reads it, and
 * docs/testing-crashes.md has its format and the pattern layout) is
 * appended with one write(2) before what it says can reach the journal.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bcache.h"
#include "bdclient.h"
#include "byteorder.h"
#include "journal.h"
#include "log.h"
#include "ondisk.h"
#include "service.h"

#define JW_MAX_OPS 32
#define JW_HDR 40

enum jw_state { JW_NEW, JW_USED, JW_REVOKED, JW_DIRECT };

typedef struct jw_block {
	uint64_t nr;
	bool undo;          /* used only with get_undo_access (a bitmap never forgotten) */
	enum jw_state state;
	uint32_t rv_tid;    /* tid of its uncancelled revoke, 0 if none */
} jw_block;

typedef struct jw_opts {
	uint32_t worker, nblocks, handles, max_ops, commit_every, min_log;
	uint64_t seed;
	enum { JW_DIRECT_NONE, JW_DIRECT_CACHE, JW_DIRECT_RAW } direct;
	const char *model, *done;
} jw_opts;

typedef struct jw {
	jw_opts o;
	cm_service svc;
	cm_bcache *cache;
	cm_bdev *bd;
	jbd_ctx *jc;
	uint32_t bs;
	int model_fd;
	uint64_t rng;
	jw_block *blk;
	cm_off dbuf;        /* arena data buffer for direct writes */
	uint32_t seq, dseq;
	uint64_t n_commits, n_ops[5], n_sync, n_direct;
	bool restarted;     /* a second run: idle (see main) */
} jw;

static uint64_t jw_rand(jw *w)
{
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t jw_below(jw *w, uint32_t n)
{
	return (uint32_t)(jw_rand(w) % n);
}

/* One model line, appended whole by one write(2). */
__attribute__((format(printf, 2, 3)))
static int jw_model(jw *w, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(line) - 1)
		return -EOVERFLOW;
	line[n++] = '\n';
	return write(w->model_fd, line, (size_t)n) == n ? 0 : -EIO;
}

static void jw_pattern(uint8_t *p, uint32_t bs, uint32_t worker, uint32_t seq, uint32_t tid,
		       uint32_t op, uint64_t block, char kind)
{
	uint64_t x = block * 0x9e3779b97f4a7c15ULL ^ (uint64_t)worker << 48 ^
		     (uint64_t)seq << 16 ^ op ^ (uint64_t)(uint8_t)kind << 40;
	uint32_t h[4] = {worker, seq, tid, op};

	memcpy(p, "JBDWORK1", 8);
	for (int i = 0; i < 4; i++)
		cm_set_le32((cm_le32_t *)(p + 8 + 4 * i), h[i]);
	cm_set_le64((cm_le64_t *)(p + 24), block);
	cm_set_le32((cm_le32_t *)(p + 32), (uint8_t)kind);
	cm_set_le32((cm_le32_t *)(p + 36), 0);
	for (uint32_t off = JW_HDR; off + 8 <= bs; off += 8)
		cm_set_le64((cm_le64_t *)(p + off), x + off);
}

/* ---- the free blocks this worker uses ---- */

static int jw_read_block(jw *w, uint64_t nr, void *out)
{
	cm_bh *bh;
	int r = cm_bcache_read(w->cache, w->bd, nr, &bh);

	if (r < 0)
		return r;
	memcpy(out, cm_bh_data(w->cache, bh), w->bs);
	cm_bcache_put(w->cache, bh);
	return 0;
}

/* Walks the block bitmaps; skips worker * nblocks free blocks, takes the
 * next nblocks. Every 8th block taken is an undo (bitmap-like) block. */
static int jw_pick_blocks(jw *w)
{
	uint8_t *buf = malloc(w->bs), *bm = malloc(w->bs);
	struct ext3_super_block sb;
	cm_ext3_geom g;
	uint64_t skip = (uint64_t)w->o.worker * w->o.nblocks;
	uint32_t got = 0;
	char why[160];
	int r;

	w->blk = calloc(w->o.nblocks, sizeof(*w->blk));
	if (!buf || !bm || !w->blk) {
		r = -ENOMEM;
		goto out;
	}
	r = jw_read_block(w, 1024 / w->bs, buf);
	if (r < 0)
		goto out;
	memcpy(&sb, buf + 1024 % w->bs, sizeof(sb));
	r = cm_ext3_super_check(&sb, 0, why, sizeof(why));
	if (r < 0) {
		cm_log_errno(r, "superblock: %s", why);
		goto out;
	}
	cm_ext3_geom_from_super(&sb, &g);
	for (uint32_t grp = 0; grp < g.group_count && got < w->o.nblocks; grp++) {
		struct ext3_group_desc gd;
		uint64_t first = g.first_data_block + (uint64_t)grp * g.blocks_per_group;

		r = jw_read_block(w, g.gdt_block + grp / g.desc_per_block, buf);
		if (r < 0)
			goto out;
		memcpy(&gd, buf + (grp % g.desc_per_block) * sizeof(gd), sizeof(gd));
		r = cm_ext3_group_desc_check(&g, grp, &gd, why, sizeof(why));
		if (r == 0)
			r = jw_read_block(w, cm_le32(gd.bg_block_bitmap), bm);
		if (r < 0)
			goto out;
		for (uint32_t i = 0; i < g.blocks_per_group && got < w->o.nblocks; i++) {
			if (first + i >= g.blocks_count || bm[i / 8] & (1u << (i % 8)))
				continue;
			if (skip) {
				skip--;
				continue;
			}
			w->blk[got].nr = first + i;
			w->blk[got].undo = got % 8 == 7;
			got++;
		}
	}
	r = got == w->o.nblocks ? 0 : -ENOSPC;
	if (r < 0)
		cm_log_errno(r, "only %u free blocks for worker %u", got, w->o.worker);
out:
	free(buf);
	free(bm);
	return r;
}

/* "geom", then "blocks" lines of at most ~4000 bytes (every 8th block
 * listed is an undo block). */
static int jw_model_blocks(jw *w)
{
	char line[4000];
	uint32_t i = 0;
	int r = jw_model(w, "geom %u %u %u", w->o.worker, w->bs, w->o.nblocks);

	while (i < w->o.nblocks && r == 0) {
		size_t n = (size_t)snprintf(line, sizeof(line), "blocks %u", w->o.worker);

		for (; i < w->o.nblocks && n < sizeof(line) - 24; i++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %" PRIu64, w->blk[i].nr);
		r = jw_model(w, "%s", line);
	}
	return r;
}

/* ---- one handle ---- */

typedef struct jw_op {
	char kind;          /* w c u f r */
	uint32_t bi;        /* index into w->blk */
} jw_op;

static char jw_pick_kind(jw *w, const jw_block *b, uint32_t tid)
{
	uint32_t p = jw_below(w, 100);

	if (b->undo)
		return 'u';
	if (b->state == JW_NEW) /* never in a transaction: a new block */
		return p < 50 ? 'c' : 'w';
	if (p < 70)
		return 'w';
	if (p < 82)
		return 'f';
	if (p < 94 && b->rv_tid != tid) /* JBD refuses a second revoke in one transaction */
		return 'r';
	return 'w';
}

/* Chooses the next op on b and moves b's state as the op will (the plan
 * is made whole before the handle changes anything). */
static char jw_choose(jw *w, jw_block *b, uint32_t tid)
{
	char kind = jw_pick_kind(w, b, tid);

	if (kind == 'r') {
		b->state = JW_REVOKED;
		b->rv_tid = tid;
	} else if (kind != 'f') {
		b->state = JW_USED;
		if (b->rv_tid == tid)
			b->rv_tid = 0; /* write access cancels this transaction's revoke */
	}
	return kind;
}

static int jw_write_op(jw *w, jbd_handle *h, const jw_op *op, uint32_t idx, uint32_t tid)
{
	jw_block *b = &w->blk[op->bi];
	cm_bh *bh;
	int r;

	if (op->kind == 'c') {
		/* as ext3_getblk: create access, then zero it if not uptodate */
		r = cm_bcache_getblk(w->cache, b->nr, &bh);
		if (r < 0)
			return r;
		r = jbd_get_create_access(w->jc, h, bh);
		if (r == 0 && !cm_bh_test(bh, CM_BH_UPTODATE) && (r = cm_bh_lock(w->cache, bh)) == 0) {
			memset(cm_bh_data(w->cache, bh), 0, w->bs);
			cm_bh_set_uptodate(bh);
			cm_bh_unlock(w->cache, bh);
		}
	} else {
		r = cm_bcache_read(w->cache, w->bd, b->nr, &bh);
		if (r < 0)
			return r;
		r = op->kind == 'u' ? jbd_get_undo_access(w->jc, h, bh)
				    : jbd_get_write_access(w->jc, h, bh);
	}
	if (r == 0) {
		jw_pattern(cm_bh_data(w->cache, bh), w->bs, w->o.worker, w->seq, tid, idx, b->nr,
			   op->kind);
		r = jbd_dirty_metadata(w->jc, h, bh);
	}
	cm_bcache_put(w->cache, bh);
	return r;
}

static int jw_do_op(jw *w, jbd_handle *h, const jw_op *op, uint32_t idx, uint32_t tid)
{
	jw_block *b = &w->blk[op->bi];
	cm_bh *bh;
	int r;

	if (op->kind != 'f' && op->kind != 'r')
		return jw_write_op(w, h, op, idx, tid);
	if (op->kind == 'f') {
		r = cm_bcache_read(w->cache, w->bd, b->nr, &bh);
		if (r < 0)
			return r;
		r = jbd_forget(w->jc, h, bh);
		cm_bcache_put(w->cache, bh);
		return r;
	}
	bh = cm_bcache_get(w->cache, b->nr);
	r = jbd_revoke(w->jc, h, b->nr, bh);
	if (bh)
		cm_bcache_put(w->cache, bh);
	return r;
}

static int jw_handle(jw *w)
{
	uint32_t nops = 1 + jw_below(w, w->o.max_ops), tid;
	bool sync = jw_below(w, 16) == 0;
	jw_op ops[JW_MAX_OPS];
	char line[JW_MAX_OPS * 24 + 64];
	jbd_handle *h;
	size_t n;
	int r, r2;

	w->seq++;
	r = jbd_start(w->jc, (int)nops + 1, &h);
	if (r < 0)
		return cm_log_errno(r, "jbd_start(%u credits): %m", nops + 1);
	tid = jbd_handle_tid(h);
	if (sync)
		jbd_handle_set_sync(h);
	n = (size_t)snprintf(line, sizeof(line), "plan %u %u %u", w->o.worker, w->seq, tid);
	for (uint32_t i = 0; i < nops; i++) {
		ops[i].bi = jw_below(w, w->o.nblocks);
		ops[i].kind = jw_choose(w, &w->blk[ops[i].bi], tid);
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %c:%" PRIu64, ops[i].kind,
				      w->blk[ops[i].bi].nr);
	}
	r = jw_model(w, "%s", line);
	for (uint32_t i = 0; i < nops && r == 0; i++) {
		r = jw_do_op(w, h, &ops[i], i, tid);
		if (r < 0)
			cm_log_errno(r, "handle %u op %u (%c on block %" PRIu64 "): %m", w->seq, i,
				     ops[i].kind, w->blk[ops[i].bi].nr);
		else
			w->n_ops[strchr("wcufr", ops[i].kind) - "wcufr"]++;
	}
	r2 = jbd_stop(w->jc, h);
	if (jw_model(w, "stop %u %u %u %d", w->o.worker, w->seq, tid, r2) < 0 && r == 0)
		r = -EIO;
	if (r2 < 0 && r == 0)
		r = cm_log_errno(r2, "jbd_stop of handle %u (tid %u): %m", w->seq, tid);
	if (r == 0 && sync) {
		w->n_sync++;
		r = jw_model(w, "commit %u %u", w->o.worker, tid);
	}
	return r;
}

/* ---- commits and direct writes ---- */

/* A data write of block nr from the pattern in w->dbuf: through its cache
 * buffer (written and flushed at once), or past the cache. */
static int jw_data_write(jw *w, uint64_t nr)
{
	void *src = cm_arena_ptr(w->svc.arena, w->dbuf, w->bs);
	cm_bh *bh;
	int r;

	if (w->o.direct == JW_DIRECT_RAW) {
		r = cm_bdev_write(w->bd, nr * (w->bs / CM_BD_SECTOR), w->bs / CM_BD_SECTOR, w->dbuf, 0);
		return r < 0 ? r : cm_bdev_flush(w->bd);
	}
	r = cm_bcache_read(w->cache, w->bd, nr, &bh);
	if (r < 0)
		return r;
	r = cm_bh_lock(w->cache, bh);
	if (r == 0) {
		memcpy(cm_bh_data(w->cache, bh), src, w->bs);
		cm_bh_mark_dirty(bh);
		cm_bh_unlock(w->cache, bh);
		r = cm_bcache_write(w->cache, w->bd, bh);
	}
	cm_bcache_put(w->cache, bh);
	return r < 0 ? r : cm_bdev_flush(w->bd);
}

/* Writes a data pattern over up to two blocks whose revoke is committed. */
static int jw_direct(jw *w, uint32_t tid)
{
	uint32_t done = 0;
	int r = 0;

	for (uint32_t k = 0; k < 8 && done < 2 && r == 0; k++) {
		jw_block *b = &w->blk[jw_below(w, w->o.nblocks)];

		if (b->state != JW_REVOKED || (int32_t)(b->rv_tid - tid) > 0)
			continue;
		w->dseq++;
		r = jw_model(w, "direct %u %" PRIu64 " %u", w->o.worker, b->nr, w->dseq);
		if (r < 0)
			break;
		jw_pattern(cm_arena_ptr(w->svc.arena, w->dbuf, w->bs), w->bs, w->o.worker, w->dseq, 0,
			   0, b->nr, 'D');
		r = jw_data_write(w, b->nr);
		b->state = JW_DIRECT;
		b->rv_tid = 0;
		w->n_direct++;
		done++;
	}
	return r;
}

static int jw_commit(jw *w)
{
	uint32_t tid;
	int r = jbd_force_commit(w->jc, &tid);

	if (r == 0)
		r = jbd_wait_commit(w->jc, tid);
	if (r < 0)
		return cm_log_errno(r, "commit of tid %u: %m", tid);
	w->n_commits++;
	r = jw_model(w, "commit %u %u", w->o.worker, tid);
	if (r == 0 && w->o.direct != JW_DIRECT_NONE)
		r = jw_direct(w, tid);
	return r;
}

/* True while the journal has written fewer log blocks than --min-log
 * percent of the log (stats are atomic; the log's bounds immutable). */
static bool jw_log_short(jw *w)
{
	uint64_t len = w->jc->j->j_last - w->jc->j->j_first;

	return atomic_load(&w->jc->j->stats.log_blocks) * 100 < len * w->o.min_log;
}

static int jw_run(jw *w)
{
	uint64_t cap = (uint64_t)w->o.handles * 50;
	int r = 0;

	for (uint32_t i = 0; r == 0 && (w->o.handles == 0 || i < w->o.handles ||
					(jw_log_short(w) && i < cap)); i++) {
		if (cm_service_stopping())
			break;
		r = jw_handle(w);
		if (r == 0 && jw_below(w, w->o.commit_every) == 0)
			r = jw_commit(w);
	}
	return r == 0 ? jw_commit(w) : r;
}

/* ---- start and end ---- */

static int jw_attach(jw *w)
{
	int r = cm_service_attach(&w->svc);
	cm_layout *l = w->svc.layout;
	cm_off off;

	if (r < 0)
		return r;
	/* journald-svc makes the journal after recovery: wait up to 15 s
	 * (less than a test waits for the instance to be ready). */
	for (int i = 0; i < 150 && !(atomic_load(&l->bcache) && atomic_load(&l->journal)); i++)
		nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
	off = atomic_load(&l->bcache);
	if (!off || !atomic_load(&l->journal))
		return cm_log_errno(-ENOENT, "no buffer cache or journal in the arena after 15 s");
	r = cm_bcache_attach(w->svc.arena, off, &w->cache);
	if (r == 0)
		r = cm_bdev_open(w->svc.arena, &w->bd);
	if (r == 0)
		r = jbd_attach(w->svc.arena, w->cache, (uint32_t)w->svc.slot, &w->jc);
	if (r < 0)
		return cm_log_errno(r, "attach: %m");
	w->bs = w->jc->j->block_size;
	w->dbuf = cm_arena_alloc_data(w->svc.arena, w->bs, 4096);
	return w->dbuf ? 0 : cm_log_errno(-ENOMEM, "no arena space for a block");
}

static int jw_done(jw *w, int r)
{
	FILE *f;
	char tmp[4096];

	if (!w->o.done)
		return r;
	snprintf(tmp, sizeof(tmp), "%s.tmp", w->o.done);
	f = fopen(tmp, "we");
	if (!f)
		return cm_log_errno(-errno, "%s: %m", tmp);
	fprintf(f, "worker=%u handles=%u commits=%" PRIu64 " sync=%" PRIu64 " writes=%" PRIu64
		" creates=%" PRIu64 " undos=%" PRIu64 " forgets=%" PRIu64 " revokes=%" PRIu64
		" directs=%" PRIu64 " result=%s error=%d\n",
		w->o.worker, w->seq, w->n_commits, w->n_sync, w->n_ops[0], w->n_ops[1], w->n_ops[2],
		w->n_ops[3], w->n_ops[4], w->n_direct,
		r < 0 ? "fail" : w->restarted ? "restarted" : "ok", r);
	if (fclose(f) != 0 || rename(tmp, w->o.done) < 0)
		return cm_log_errno(-errno, "%s: %m", w->o.done);
	return r;
}

static const struct option jw_options[] = {
	CM_SERVICE_OPTIONS,
	{"worker", required_argument, NULL, 'w'},
	{"blocks", required_argument, NULL, 'b'},
	{"handles", required_argument, NULL, 'n'},
	{"max-ops", required_argument, NULL, 'o'},
	{"commit-every", required_argument, NULL, 'c'},
	{"seed", required_argument, NULL, 's'},
	{"direct", optional_argument, NULL, 'D'},
	{"model", required_argument, NULL, 'm'},
	{"done", required_argument, NULL, 'd'},
	{"name", required_argument, NULL, 'N'},
	{"min-log", required_argument, NULL, 'L'},
	{0},
};

static int jw_parse(jw *w, int argc, char **argv)
{
	jw_opts *o = &w->o;
	int opt;

	*o = (jw_opts){.nblocks = 64, .handles = 200, .max_ops = 6, .commit_every = 8, .seed = 1};
	while ((opt = getopt_long(argc, argv, "", jw_options, NULL)) != -1) {
		unsigned long v = optarg ? strtoul(optarg, NULL, 0) : 0;

		switch (opt) {
		case 'w': o->worker = (uint32_t)v; break;
		case 'b': o->nblocks = (uint32_t)v; break;
		case 'n': o->handles = (uint32_t)v; break;
		case 'o': o->max_ops = (uint32_t)v; break;
		case 'c': o->commit_every = (uint32_t)v; break;
		case 's': o->seed = v; break;
		case 'D':
			if (!optarg || strcmp(optarg, "cache") == 0)
				o->direct = JW_DIRECT_CACHE;
			else if (strcmp(optarg, "raw") == 0)
				o->direct = JW_DIRECT_RAW;
			else
				return cm_log_errno(-EINVAL, "--direct=%s: cache or raw", optarg);
			break;
		case 'm': o->model = optarg; break;
		case 'd': o->done = optarg; break;
		case 'N': w->svc.name = optarg; break;
		case 'L': o->min_log = (uint32_t)v; break;
		default:
			if (cm_service_option(&w->svc, opt, optarg) <= 0)
				return -EINVAL;
		}
	}
	if (!o->model || o->nblocks < 8 || o->nblocks > 4096 || o->max_ops < 1 ||
	    o->max_ops > JW_MAX_OPS || o->commit_every < 1)
		return cm_log_errno(-EINVAL, "usage: jbd-work --model=FILE [--worker=W] [--blocks=8..4096]"
				    " [--handles=N (0: until SIGTERM)] [--max-ops=1..%d]"
				    " [--commit-every=N] [--seed=S] [--direct[=cache|raw]] [--done=FILE]"
				    " [--name=SERVICE] [--min-log=PCT]", JW_MAX_OPS);
	w->rng = o->seed * 0x2545f4914f6cdd1dULL + o->worker;
	return 0;
}

int main(int argc, char **argv)
{
	jw w = {.model_fd = -1};
	int r;

	cm_service_init(&w.svc, "jbd-work");
	if (jw_parse(&w, argc, argv) < 0)
		return 2;
	w.model_fd = open(w.o.model, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (w.model_fd < 0)
		return cm_log_errno(-errno, "%s: %m", w.o.model), 2;
	/* Restarted by a group restart: the first run's uncommitted tids are
	 * given out again, which a second run would make ambiguous: idle. */
	if (lseek(w.model_fd, 0, SEEK_END) > 0) {
		w.restarted = true;
		r = jw_done(&w, jw_model(&w, "restart %u", w.o.worker));
		if (r == 0 && (r = cm_service_attach(&w.svc)) == 0) {
			cm_service_ready(&w.svc);
			while (!cm_service_stopping())
				pause();
		}
		close(w.model_fd);
		cm_service_fini(&w.svc);
		return r < 0 ? 1 : 0;
	}
	r = jw_attach(&w);
	if (r == 0)
		r = jw_pick_blocks(&w);
	if (r == 0)
		r = jw_model_blocks(&w);
	if (r == 0) {
		cm_service_ready(&w.svc);
		r = jw_run(&w);
	}
	r = jw_done(&w, r);
	w.jc = w.jc ? jbd_detach(w.jc) : NULL;
	w.bd = w.bd ? cm_bdev_close(w.bd) : NULL;
	w.cache = w.cache ? cm_bcache_detach(w.cache) : NULL;
	free(w.blk);
	close(w.model_fd);
	cm_service_fini(&w.svc);
	return r < 0 ? 1 : 0;
}
