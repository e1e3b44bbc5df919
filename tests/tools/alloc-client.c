/* alloc-client - drives alloc-svc of a real instance as inode-svc does:
 * a compose service after it, with journal handles and allocproto.h
 * requests on channels of its own (one per thread); it checks the answers
 * against the bitmaps, descriptors, superblock and counters read through
 * the cache. To --out: "PASS what" / "FAIL what" lines, "#" diagnostics,
 * "COUNTS free_blocks=N free_inodes=N" (the exact sums, everything freed
 * again) and "DONE"; then it waits for SIGTERM. --corrupt=BLOCK runs the
 * one case for an image whose bitmap says that system block is free. The
 * cases are in alloc-cases.c (they want 8 groups or more). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc-client.h"
#include "byteorder.h"
#include "log.h"

void ac_report(ac *a, bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(ok ? "PASS " : "FAIL ", a->out);
	vfprintf(a->out, fmt, ap);
	fputc('\n', a->out);
	va_end(ap);
	if (!ok)
		a->fails++;
}

bool ac_is(ac *a, int64_t got, int64_t want, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(got == want ? "PASS " : "FAIL ", a->out);
	vfprintf(a->out, fmt, ap);
	if (got != want)
		fprintf(a->out, " (got %lld, want %lld)", (long long)got, (long long)want);
	fputc('\n', a->out);
	va_end(ap);
	if (got != want)
		a->fails++;
	return got == want;
}

void ac_diag(ac *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("# ", a->out);
	vfprintf(a->out, fmt, ap);
	fputc('\n', a->out);
	va_end(ap);
}

int ac_thr_init(ac *a, ac_thr *t)
{
	int slot = cm_layout_find_svc(a->svc.layout, "alloc-svc");
	int r;

	memset(t, 0, sizeof(*t));
	t->a = a;
	if (slot < 0)
		return slot;
	r = cm_chan_open(a->svc.arena, (uint32_t)slot, CM_AL_VERSION, &t->ch);
	if (r == 0)
		r = cm_bdev_open(a->svc.arena, &t->bd);
	return r;
}

void ac_thr_fini(ac_thr *t)
{
	t->ch = cm_chan_close(t->ch);
	t->bd = cm_bdev_close(t->bd);
}

int ac_start(ac_thr *t, int credits)
{
	return jbd_start(t->a->jc, credits, &t->h);
}

int ac_stop(ac_thr *t)
{
	int r = jbd_stop(t->a->jc, t->h);

	t->h = NULL;
	return r;
}

int ac_raw(ac_thr *t, cm_al_rec *rq, cm_al_rec *rs)
{
	int r = cm_chan_call(t->ch, rq, rs, 20000);

	return r < 0 ? r : rs->hdr.status;
}

int ac_call(ac_thr *t, uint16_t op, uint64_t goal, uint32_t count, uint32_t mode,
	    uint32_t flags, cm_al_rec *rs)
{
	cm_al_rec rq;

	memset(&rq, 0, sizeof(rq));
	rq.hdr.version = CM_AL_VERSION;
	rq.hdr.op = op;
	rq.handle = jbd_handle_token(t->a->jc, t->h);
	rq.goal = goal;
	rq.count = count;
	rq.mode = mode;
	rq.flags = flags;
	return ac_raw(t, &rq, rs);
}

int ac_alloc(ac_thr *t, uint64_t goal, uint32_t count, uint32_t flags, uint64_t *first,
	     uint32_t *got)
{
	cm_al_rec rs;
	int r = ac_call(t, CM_AL_ALLOC_BLOCKS, goal, count, 0, flags, &rs);

	if (r == 0) {
		*first = rs.result;
		*got = rs.count;
	}
	return r;
}

int ac_free(ac_thr *t, uint64_t first, uint32_t count)
{
	cm_al_rec rs;

	return ac_call(t, CM_AL_FREE_BLOCKS, first, count, 0, 0, &rs);
}

int ac_ialloc(ac_thr *t, uint32_t dir, uint32_t mode, uint32_t flags, uint32_t *ino)
{
	cm_al_rec rs;
	int r = ac_call(t, CM_AL_ALLOC_INODE, dir, 1, mode, flags, &rs);

	if (r == 0)
		*ino = (uint32_t)rs.result;
	return r;
}

int ac_ifree(ac_thr *t, uint32_t ino, uint32_t mode)
{
	cm_al_rec rs;

	return ac_call(t, CM_AL_FREE_INODE, ino, 1, mode, 0, &rs);
}

/* One request in a handle of its own. */
int ac_alloc1(ac_thr *t, uint64_t goal, uint32_t count, uint32_t flags, uint64_t *first,
	      uint32_t *got)
{
	int r = ac_start(t, 2), r2;

	if (r < 0)
		return r;
	r = ac_alloc(t, goal, count, flags, first, got);
	r2 = ac_stop(t);
	return r < 0 ? r : r2;
}

int ac_free1(ac_thr *t, uint64_t first, uint32_t count)
{
	int r = ac_start(t, 2 * (int)(count / t->a->g.blocks_per_group + 2)), r2;

	if (r < 0)
		return r;
	r = ac_free(t, first, count);
	r2 = ac_stop(t);
	return r < 0 ? r : r2;
}

int ac_commit(ac *a)
{
	uint32_t tid;
	int r = jbd_force_commit(a->jc, &tid);

	return r < 0 ? r : jbd_wait_commit(a->jc, tid);
}

int ac_gd(ac_thr *t, uint32_t g, struct ext3_group_desc *ret)
{
	ac *a = t->a;
	cm_bh *bh;
	int r = cm_bcache_read(a->cache, t->bd, a->g.gdt_block + g / a->g.desc_per_block, &bh);

	if (r < 0)
		return r;
	*ret = ((struct ext3_group_desc *)cm_bh_data(a->cache, bh))[g % a->g.desc_per_block];
	cm_bcache_put(a->cache, bh);
	return 0;
}

/* The live bit of blk (inodes: of ino) in its group's bitmap: 1, 0, or an
 * error. */
int ac_bit(ac_thr *t, bool inode, uint64_t n)
{
	ac *a = t->a;
	struct ext3_group_desc gd;
	uint32_t g, bit;
	cm_bh *bh;
	int r;

	if (inode) {
		g = (uint32_t)((n - 1) / a->g.inodes_per_group);
		bit = (uint32_t)((n - 1) % a->g.inodes_per_group);
	} else {
		g = (uint32_t)((n - a->g.first_data_block) / a->g.blocks_per_group);
		bit = (uint32_t)((n - a->g.first_data_block) % a->g.blocks_per_group);
	}
	if ((r = ac_gd(t, g, &gd)) < 0)
		return r;
	r = cm_bcache_read(a->cache, t->bd,
			   cm_le32(inode ? gd.bg_inode_bitmap : gd.bg_block_bitmap), &bh);
	if (r < 0)
		return r;
	r = !!(((uint8_t *)cm_bh_data(a->cache, bh))[bit >> 3] & (1u << (bit & 7)));
	cm_bcache_put(a->cache, bh);
	return r;
}

int ac_gd_sums(ac_thr *t, ac_counts *ret)
{
	struct ext3_group_desc gd;

	*ret = (ac_counts){0};
	for (uint32_t g = 0; g < t->a->g.group_count; g++) {
		int r = ac_gd(t, g, &gd);
		if (r < 0)
			return r;
		ret->blocks += cm_le16(gd.bg_free_blocks_count);
		ret->inodes += cm_le16(gd.bg_free_inodes_count);
		ret->dirs += cm_le16(gd.bg_used_dirs_count);
	}
	return 0;
}

int ac_fc_sums(ac *a, ac_counts *ret)
{
	cm_lockset *ls = &a->svc.layout->locks;
	int r;

	if ((r = cm_fc_sum(ls, &a->as->free_blocks, &ret->blocks)) < 0 ||
	    (r = cm_fc_sum(ls, &a->as->free_inodes, &ret->inodes)) < 0)
		return r;
	return cm_fc_sum(ls, &a->as->dirs, &ret->dirs);
}

int ac_sb_counts(ac_thr *t, ac_counts *ret)
{
	ac *a = t->a;
	const struct ext3_super_block *sb;
	cm_bh *bh;
	int r = cm_bcache_read(a->cache, t->bd, a->jc->j->fs_sb_block, &bh);

	if (r < 0)
		return r;
	sb = (const void *)((char *)cm_bh_data(a->cache, bh) + a->jc->j->fs_sb_offset);
	ret->blocks = cm_le32(sb->s_free_blocks_count);
	ret->inodes = cm_le32(sb->s_free_inodes_count);
	ret->dirs = 0;
	cm_bcache_put(a->cache, bh);
	return 0;
}

/* Waits for alloc-svc's counters and reads the geometry. */
static int ac_attach(ac *a)
{
	cm_layout *l;
	cm_off off;
	cm_bh *bh;
	int r = cm_service_attach(&a->svc);

	if (r < 0)
		return r;
	l = a->svc.layout;
	for (int i = 0; i < 150 && !atomic_load(&l->alloc); i++)
		nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
	off = atomic_load(&l->alloc);
	if (!off || !atomic_load(&l->bcache) || !atomic_load(&l->journal))
		return cm_log_errno(-ENOENT, "no allocator counters, cache or journal after 15 s");
	a->as = cm_arena_ptr(a->svc.arena, off, sizeof(*a->as));
	if ((r = cm_bcache_attach(a->svc.arena, atomic_load(&l->bcache), &a->cache)) < 0 ||
	    (r = cm_bdev_open(a->svc.arena, &a->bd)) < 0 ||
	    (r = jbd_attach(a->svc.arena, a->cache, (uint32_t)a->svc.slot, &a->jc)) < 0)
		return cm_log_errno(r, "attach: %m");
	r = cm_bcache_read(a->cache, a->bd, a->jc->j->fs_sb_block, &bh);
	if (r < 0)
		return r;
	const struct ext3_super_block *sb =
		(const void *)((char *)cm_bh_data(a->cache, bh) + a->jc->j->fs_sb_offset);
	cm_ext3_geom_from_super(sb, &a->g);
	a->r_blocks = cm_le32(sb->s_r_blocks_count);
	a->first_ino = cm_le32(sb->s_first_ino);
	cm_bcache_put(a->cache, bh);
	return 0;
}

static const struct option ac_options[] = {
	CM_SERVICE_OPTIONS,
	{"out", required_argument, NULL, 'o'},
	{"seed", required_argument, NULL, 's'},
	{"corrupt", required_argument, NULL, 'c'},
	{0},
};

int main(int argc, char **argv)
{
	ac a = {0};
	const char *out = NULL;
	uint64_t corrupt = 0;
	int opt, r;

	cm_service_init(&a.svc, "alloc-client");
	a.seed = 1;
	while ((opt = getopt_long(argc, argv, "", ac_options, NULL)) != -1) {
		if (opt == 'o')
			out = optarg;
		else if (opt == 's')
			a.seed = strtoull(optarg, NULL, 0);
		else if (opt == 'c')
			corrupt = strtoull(optarg, NULL, 0);
		else if (cm_service_option(&a.svc, opt, optarg) <= 0)
			return 2;
	}
	if (!out)
		return cm_log_errno(-EINVAL, "usage: alloc-client --out=FILE [--seed=N] "
				    "[--corrupt=BLOCK]"), 2;
	a.out = fopen(out, "we");
	if (!a.out)
		return cm_log_errno(-errno, "%s: %m", out), 2;
	setvbuf(a.out, NULL, _IOLBF, 0);
	r = ac_attach(&a);
	if (r == 0) {
		cm_service_ready(&a.svc);
		r = corrupt ? ac_run_corrupt(&a, corrupt) : ac_run_cases(&a);
	}
	if (r < 0)
		ac_report(&a, false, "the cases ran to the end (error %d)", r);
	fprintf(a.out, "DONE\n");
	fclose(a.out);
	while (!cm_service_stopping())
		nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
	a.jc = jbd_detach(a.jc);
	a.bd = cm_bdev_close(a.bd);
	a.cache = cm_bcache_detach(a.cache);
	cm_service_fini(&a.svc);
	return 0;
}
