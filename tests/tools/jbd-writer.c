/* jbd-writer - journal handles on raw blocks for tests/integration/
 * journal.t, as a compose service after journald-svc (policy never, not
 * confined): --handles handles of 1..--per blocks each, among the last
 * --blocks blocks of the filesystem. Block b at generation g holds the
 * little-endian record (b, g) repeated; every fifth generation begins with
 * the journal magic (escaped in the log). The last handle is synchronous,
 * so all are committed when it returns; then it writes the model ("block
 * generation" per line) to --model and exits 0. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byteorder.h"
#include "journal.h"
#include "log.h"
#include "service.h"

enum { JW_HANDLES = 0x2000, JW_PER, JW_BLOCKS, JW_SEED, JW_MODEL };

static const struct option jw_options[] = {
	CM_SERVICE_OPTIONS,
	{"handles", required_argument, NULL, JW_HANDLES},
	{"per", required_argument, NULL, JW_PER},
	{"blocks", required_argument, NULL, JW_BLOCKS},
	{"seed", required_argument, NULL, JW_SEED},
	{"model", required_argument, NULL, JW_MODEL},
	{0},
};

typedef struct jw {
	cm_service svc;
	uint32_t handles, per, blocks;
	uint64_t seed;
	const char *model;
	cm_bcache *cache;
	cm_bdev *bd;
	jbd_ctx *jc;
	uint32_t *gen;      /* per block index: its generation, 0 never written */
} jw;

static uint64_t jw_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void jw_fill(uint8_t *b, uint32_t bs, uint32_t blk, uint32_t gen)
{
	for (uint32_t k = 0; k < bs; k += 8) {
		cm_set_le32((cm_le32_t *)(b + k), blk);
		cm_set_le32((cm_le32_t *)(b + k + 4), gen);
	}
	if (gen % 5 == 0)
		cm_set_be32((cm_be32_t *)b, 0xC03B3998u);
}

/* One handle: n distinct blocks (collisions just rewrite one twice). */
static int jw_handle(jw *w, uint32_t n, uint32_t next_gen, bool sync)
{
	uint32_t fs_blocks = w->jc->j->fs_blocks, bs = w->jc->j->block_size;
	jbd_handle *h;
	int r = jbd_start(w->jc, (int)n, &h), r2;

	if (r < 0)
		return r;
	if (sync)
		jbd_handle_set_sync(h);
	for (uint32_t k = 0; r == 0 && k < n; k++) {
		uint32_t i = (uint32_t)(jw_rand(&w->seed) % w->blocks), blk = fs_blocks - 1 - i;
		cm_bh *bh;

		if ((r = cm_bcache_read(w->cache, w->bd, blk, &bh)) < 0)
			break;
		if ((r = jbd_get_write_access(w->jc, h, bh)) == 0) {
			jw_fill(cm_bh_data(w->cache, bh), bs, blk, next_gen);
			r = jbd_dirty_metadata(w->jc, h, bh);
			w->gen[i] = next_gen;
		}
		cm_bcache_put(w->cache, bh);
	}
	r2 = jbd_stop(w->jc, h);
	return r < 0 ? r : r2;
}

static int jw_write_model(jw *w)
{
	FILE *f = fopen(w->model, "w");

	if (!f)
		return -errno;
	for (uint32_t i = 0; i < w->blocks; i++)
		if (w->gen[i])
			fprintf(f, "%u %u\n", w->jc->j->fs_blocks - 1 - i, w->gen[i]);
	return fclose(f) == 0 ? 0 : -EIO;
}

static int jw_run(jw *w)
{
	cm_layout *l = w->svc.layout;
	int r;

	if ((r = cm_bcache_attach(w->svc.arena, atomic_load(&l->bcache), &w->cache)) < 0)
		return cm_log_errno(r, "buffer cache: %m");
	if ((r = jbd_attach(w->svc.arena, w->cache, (uint32_t)w->svc.slot, &w->jc)) < 0)
		return cm_log_errno(r, "journal: %m");
	if ((r = cm_bdev_open(w->svc.arena, &w->bd)) < 0)
		return cm_log_errno(r, "blockdev-svc: %m");
	for (uint32_t i = 0; i < w->blocks; i++)
		for (uint32_t k = 0; k < w->jc->j->j_last; k++)
			if (w->jc->logmap[k] == w->jc->j->fs_blocks - 1 - i)
				return cm_log_errno(-EINVAL, "block %u is the journal's",
						    w->jc->j->fs_blocks - 1 - i);
	w->gen = calloc(w->blocks, sizeof(*w->gen));
	if (!w->gen)
		return -ENOMEM;
	for (uint32_t n = 1; n <= w->handles; n++) {
		r = jw_handle(w, 1 + (uint32_t)(jw_rand(&w->seed) % w->per), n, n == w->handles);
		if (r < 0)
			return cm_log_errno(r, "handle %u: %m", n);
	}
	r = jw_write_model(w);
	cm_info("%u handles done, all committed (journal: %llu commits, %llu checkpoints)",
		w->handles, (unsigned long long)atomic_load(&w->jc->j->stats.commits),
		(unsigned long long)atomic_load(&w->jc->j->stats.checkpoints));
	return r;
}

int main(int argc, char **argv)
{
	static jw w = {.handles = 100, .per = 8, .blocks = 200, .seed = 1};
	int opt, r;

	cm_service_init(&w.svc, "jbd-writer");
	while ((opt = getopt_long(argc, argv, "", jw_options, NULL)) != -1) {
		if (opt == JW_HANDLES || opt == JW_PER || opt == JW_BLOCKS || opt == JW_SEED) {
			unsigned long long v = strtoull(optarg, NULL, 0);

			if (opt == JW_HANDLES)
				w.handles = (uint32_t)v;
			else if (opt == JW_PER)
				w.per = (uint32_t)v;
			else if (opt == JW_BLOCKS)
				w.blocks = (uint32_t)v;
			else
				w.seed = v ? v : 1;
		} else if (opt == JW_MODEL) {
			w.model = optarg;
		} else if (cm_service_option(&w.svc, opt, optarg) <= 0) {
			return 2;
		}
	}
	if (!w.model || !w.handles || !w.per || !w.blocks || w.per > 64) {
		fputs("usage: jbd-writer --model=FILE [--handles=N] [--per=K] [--blocks=B] "
		      "[--seed=S] --arena-fd=N --slot=K\n", stderr);
		return 2;
	}
	if (cm_service_attach(&w.svc) < 0)
		return EXIT_FAILURE;
	cm_service_ready(&w.svc);
	r = jw_run(&w);
	w.bd = cm_bdev_close(w.bd);
	w.jc = w.jc ? jbd_detach(w.jc) : NULL;
	w.cache = cm_bcache_detach(w.cache);
	free(w.gen);
	cm_service_fini(&w.svc);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
