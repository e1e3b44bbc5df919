/* alloc-cases.c - alloc-client's scenarios, run in order on an idle
 * instance (nothing else allocates): single requests and goal placement,
 * a full goal group, inode placement and Orlov's spreading, freed blocks
 * kept until their free commits, two threads in different groups at
 * once, bad requests, ENOSPC with and without the reserved blocks, and
 * alloc-svc killed and restarted alone. After the cases that change the
 * counts, a commit and a check that the counters, the descriptors' sums
 * and the superblock agree exactly. Each case frees what it allocated. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc-client.h"
#include "byteorder.h"

#define AC_REG 0100644
#define AC_DIR 040755
#define AC_MAX_RUNS 2048

typedef struct ac_run {
	uint64_t first;
	uint32_t n;
} ac_run;

static uint32_t ac_group(ac *a, uint64_t blk)
{
	return (uint32_t)((blk - a->g.first_data_block) / a->g.blocks_per_group);
}

static uint64_t ac_gstart(ac *a, uint32_t g)
{
	return a->g.first_data_block + (uint64_t)g * a->g.blocks_per_group;
}

static uint32_t ac_igroup(ac *a, uint32_t ino)
{
	return (ino - 1) / a->g.inodes_per_group;
}

/* The first free block of group g at or after its offset from; 0 if none. */
static uint64_t ac_free_block(ac_thr *t, uint32_t g, uint32_t from)
{
	for (uint64_t b = ac_gstart(t->a, g) + from; b < ac_gstart(t->a, g + 1) &&
	     b < t->a->g.blocks_count; b++)
		if (ac_bit(t, false, b) == 0)
			return b;
	return 0;
}

static int ac_ialloc1(ac_thr *t, uint32_t dir, uint32_t mode, uint32_t flags, uint32_t *ino)
{
	int r = ac_start(t, 2), r2;

	if (r < 0)
		return r;
	r = ac_ialloc(t, dir, mode, flags, ino);
	r2 = ac_stop(t);
	return r < 0 ? r : r2;
}

static int ac_ifree1(ac_thr *t, uint32_t ino, uint32_t mode)
{
	int r = ac_start(t, 2), r2;

	if (r < 0)
		return r;
	r = ac_ifree(t, ino, mode);
	r2 = ac_stop(t);
	return r < 0 ? r : r2;
}

/* Commits, then: counters == descriptors' sums == superblock. */
static void ac_exact(ac_thr *t, const char *when)
{
	ac *a = t->a;
	ac_counts fc, gd, sb;

	if (ac_commit(a) < 0 || ac_fc_sums(a, &fc) < 0 || ac_gd_sums(t, &gd) < 0 ||
	    ac_sb_counts(t, &sb) < 0) {
		ac_report(a, false, "%s: commit and read the counts", when);
		return;
	}
	ac_is(a, fc.blocks, gd.blocks, "%s: free blocks counter is the descriptors' sum", when);
	ac_is(a, fc.inodes, gd.inodes, "%s: free inodes counter is the descriptors' sum", when);
	ac_is(a, fc.dirs, gd.dirs, "%s: directories counter is the descriptors' sum", when);
	ac_is(a, sb.blocks, gd.blocks, "%s: the committed superblock's free blocks are exact", when);
	ac_is(a, sb.inodes, gd.inodes, "%s: the committed superblock's free inodes are exact", when);
}

static void ac_case_basic(ac_thr *t)
{
	ac *a = t->a;
	ac_counts before, after;
	uint64_t b = 0;
	uint32_t got = 0;
	int r;

	ac_fc_sums(a, &before);
	r = ac_start(t, 4);
	if (r == 0) {
		r = ac_alloc(t, 0, 1, 0, &b, &got);
		ac_is(a, r, 0, "a block without a goal");
		ac_report(a, got == 1 && b >= a->g.first_data_block && b < a->g.blocks_count &&
			  ac_bit(t, false, b) == 1, "it is one block of the data area, set in "
			  "its bitmap (%llu)", (unsigned long long)b);
		ac_fc_sums(a, &after);
		ac_is(a, after.blocks, before.blocks - 1, "the free blocks counter lost one");
		ac_is(a, ac_free(t, b, 1), 0, "freed in the same handle");
		ac_is(a, ac_bit(t, false, b), 0, "its bit is clear again");
		ac_is(a, ac_stop(t), 0, "the handle stops cleanly");
	} else {
		ac_report(a, false, "a handle with 4 credits (%d)", r);
	}
	ac_fc_sums(a, &after);
	ac_is(a, after.blocks, before.blocks, "the free blocks counter is back");
}

static void ac_case_goal(ac_thr *t)
{
	ac *a = t->a;
	uint64_t goal = ac_free_block(t, 5, 100), b1 = 0, b2 = 0;
	uint32_t n1 = 0, n2 = 0;

	if (!goal || ac_start(t, 4) < 0) {
		ac_report(a, false, "a free goal in group 5 and a handle");
		return;
	}
	ac_is(a, ac_alloc(t, goal, 1, 0, &b1, &n1), 0, "a block at a free goal");
	ac_is(a, (int64_t)b1, (int64_t)goal, "it is the goal itself");
	ac_is(a, ac_alloc(t, goal, 4, 0, &b2, &n2), 0, "four blocks at the same goal");
	ac_is(a, (int64_t)b2, (int64_t)goal + 1, "they start right after the goal");
	ac_is(a, n2, 4, "as one run of four");
	ac_stop(t);
	ac_is(a, ac_free1(t, b1, n1), 0, "the goal block freed");
	ac_is(a, ac_free1(t, b2, n2), 0, "the run freed");
}

static void ac_case_full_group(ac_thr *t)
{
	ac *a = t->a;
	ac_run runs[64];
	uint32_t nruns = 0, got;
	uint64_t b;
	bool inside = true;
	int r = 0;

	while (nruns < 64 && (r = ac_alloc1(t, ac_gstart(a, 3), a->g.blocks_per_group, 0, &b,
					    &got)) == 0) {
		runs[nruns++] = (ac_run){b, got};
		if (ac_group(a, b) != 3)
			break;
	}
	for (uint32_t i = 0; i + 1 < nruns; i++)
		inside &= ac_group(a, runs[i].first) == 3;
	ac_report(a, r == 0 && inside && nruns >= 2, "group 3 filled through its goal in %u runs",
		  nruns ? nruns - 1 : 0);
	if (nruns)
		ac_is(a, ac_group(a, runs[nruns - 1].first), 4,
		      "with group 3 full, its goal leads to group 4");
	for (uint32_t i = 0; i < nruns; i++)
		r |= ac_free1(t, runs[i].first, runs[i].n);
	ac_is(a, r, 0, "every run freed");
}

/* How many different groups the inodes are in. */
static uint32_t ac_groups_of(ac *a, const uint32_t *inos, uint32_t n)
{
	uint32_t distinct = 0;

	for (uint32_t i = 0; i < n; i++) {
		bool seen = false;
		for (uint32_t j = 0; j < i; j++)
			seen |= ac_igroup(a, inos[j]) == ac_igroup(a, inos[i]);
		distinct += !seen;
	}
	return distinct;
}

static void ac_case_inodes(ac_thr *t)
{
	ac *a = t->a;
	uint32_t files[3] = {0}, top[8] = {0}, sub[5] = {0}, ipg = a->g.inodes_per_group;
	ac_counts before, after;
	int r = 0;

	ac_fc_sums(a, &before);
	struct ext3_group_desc gd0;
	uint32_t want0 = 0;

	/* With 1 KiB blocks, mke2fs fills group 0 (the reserved GDT blocks and
	 * the journal): then find_group_other's quadratic search from the
	 * root's group goes to (0 + 2 + 1) % groups. */
	if (ac_gd(t, 0, &gd0) == 0 && cm_le16(gd0.bg_free_blocks_count) == 0)
		want0 = 3 % a->g.group_count;
	r |= ac_ialloc1(t, EXT3_ROOT_INO, AC_REG, 0, &files[0]);
	ac_is(a, ac_igroup(a, files[0]), want0, "a file under the root is in group %u, as "
	      "ext3 places it", want0);
	r |= ac_ialloc1(t, 6 * ipg + 1, AC_REG, 0, &files[1]);
	ac_is(a, ac_igroup(a, files[1]), 6, "a file under a directory of group 6 is in group 6");
	ac_report(a, files[0] >= a->first_ino && ac_bit(t, true, files[0]) == 1,
		  "its inode is past the reserved ones and set in its bitmap (%u)", files[0]);
	for (int i = 0; i < 8; i++)
		r |= ac_ialloc1(t, EXT3_ROOT_INO, AC_DIR, 0, &top[i]);
	ac_report(a, ac_groups_of(a, top, 8) >= 6, "8 directories under the root spread over "
		  "%u groups (Orlov)", ac_groups_of(a, top, 8));
	ac_fc_sums(a, &after);
	ac_is(a, after.dirs, before.dirs + 8, "the directories counter grew by 8");
	r |= ac_ialloc1(t, top[0], AC_DIR, 0, &sub[0]);
	ac_is(a, ac_igroup(a, sub[0]), ac_igroup(a, top[0]),
	      "a directory deeper down stays in its parent's group");
	r |= ac_ialloc1(t, top[0], AC_REG, 0, &files[2]);
	ac_is(a, ac_igroup(a, files[2]), ac_igroup(a, top[0]), "so does a file");
	for (int i = 1; i < 5; i++)
		r |= ac_ialloc1(t, top[0], AC_DIR, CM_AL_TOPDIR, &sub[i]);
	/* Orlov starts at a random group and takes the eligible one with the
	 * fewest directories, eligible meaning at least the average free
	 * inodes and blocks; each directory's first block takes its group
	 * below the block average, so two groups may be all that is left
	 * (seen once in CI). More than one group is what tells the spread
	 * from the parent's group that a plain directory gets. */
	ac_report(a, ac_groups_of(a, sub + 1, 4) >= 2, "4 directories under a TOPDIR parent "
		  "spread over %u groups, not kept in the parent's", ac_groups_of(a, sub + 1, 4));
	ac_is(a, r, 0, "every inode allocated");
	for (int i = 0; i < 3; i++)
		r |= ac_ifree1(t, files[i], AC_REG);
	for (int i = 0; i < 8; i++)
		r |= ac_ifree1(t, top[i], AC_DIR);
	for (int i = 0; i < 5; i++)
		r |= ac_ifree1(t, sub[i], AC_DIR);
	ac_is(a, r, 0, "every inode freed");
	ac_is(a, ac_bit(t, true, top[3]), 0, "a freed inode's bit is clear");
	ac_fc_sums(a, &after);
	ac_is(a, after.dirs, before.dirs, "the directories counter is back");
	ac_is(a, after.inodes, before.inodes, "the free inodes counter is back");
}

static void ac_case_uncommitted(ac_thr *t)
{
	ac *a = t->a;
	uint64_t goal, x = 0, y[3] = {0};
	uint32_t got, tid;
	int r;

	ac_commit(a);
	goal = ac_free_block(t, 9, 200);
	r = ac_alloc1(t, goal, 1, 0, &x, &got);
	ac_is(a, (int64_t)x, (int64_t)goal, "a block allocated at its goal");
	ac_commit(a);
	if (r < 0 || ac_start(t, 8) < 0)
		return;
	tid = jbd_handle_tid(t->h);
	ac_is(a, ac_free(t, x, 1), 0, "freed, not committed");
	ac_is(a, ac_bit(t, false, x), 0, "its bit is clear in the bitmap");
	ac_is(a, ac_alloc(t, x, 1, 0, &y[0], &got), 0, "a block wanted at the freed one");
	ac_report(a, y[0] != x, "is another block (%llu, not %llu)", (unsigned long long)y[0],
		  (unsigned long long)x);
	ac_stop(t);
	if (ac_start(t, 4) == 0) {
		ac_alloc(t, x, 1, 0, &y[1], &got);
		if (jbd_handle_tid(t->h) == tid)
			ac_report(a, y[1] != x, "another handle of the same transaction does not get "
				  "it either");
		else
			ac_diag(a, "the transaction committed meanwhile: second look skipped");
		ac_stop(t);
	}
	ac_commit(a);
	ac_is(a, ac_alloc1(t, x, 1, 0, &y[2], &got), 0, "after the commit, a block at it");
	ac_is(a, (int64_t)y[2], (int64_t)x, "is the freed block");
	for (int i = 0; i < 3; i++)
		if (y[i])
			r |= ac_free1(t, y[i], 1);
	ac_is(a, r, 0, "all freed");
}

typedef struct ac_par {
	ac_thr t;
	uint32_t id;
	uint64_t rng;
	ac_run runs[AC_MAX_RUNS / 2];
	uint32_t inos[AC_MAX_RUNS / 2];
	uint32_t nruns, ninos, own;
	int err;
} ac_par;

static uint32_t ac_rand(ac_par *p)
{
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return (uint32_t)p->rng;
}

#define AC_PAR_ROUNDS 200

static void *ac_par_alloc(void *arg)
{
	ac_par *p = arg;
	ac *a = p->t.a;
	uint32_t half = a->g.group_count / 2;

	for (int i = 0; i < AC_PAR_ROUNDS && !p->err; i++) {
		uint32_t g = p->id * half + ac_rand(p) % half, got;
		uint64_t b;

		if ((p->err = ac_start(&p->t, 4)) < 0)
			break;
		p->err = ac_alloc(&p->t, ac_gstart(a, g) + ac_rand(p) % a->g.blocks_per_group,
				  1 + ac_rand(p) % 16, 0, &b, &got);
		if (p->err == 0) {
			p->runs[p->nruns++] = (ac_run){b, got};
			p->own += ac_group(a, b) / half == p->id;
			p->err = ac_ialloc(&p->t, g * a->g.inodes_per_group + 1, AC_REG, 0,
					   &p->inos[p->ninos]);
			p->ninos += p->err == 0;
		}
		int r = ac_stop(&p->t);
		p->err = p->err ? p->err : r;
	}
	return NULL;
}

static void *ac_par_free(void *arg)
{
	ac_par *p = arg;

	for (uint32_t i = 0; i < p->nruns && !p->err; i++)
		p->err = ac_free1(&p->t, p->runs[i].first, p->runs[i].n);
	for (uint32_t i = 0; i < p->ninos && !p->err; i++)
		p->err = ac_ifree1(&p->t, p->inos[i], AC_REG);
	return NULL;
}

static int ac_run_cmp(const void *x, const void *y)
{
	const ac_run *l = x, *r = y;

	return l->first < r->first ? -1 : l->first > r->first;
}

/* No two runs overlap and every block is set; every inode distinct and set. */
static void ac_par_check(ac_thr *t, ac_par *p)
{
	ac *a = t->a;
	ac_run *all = malloc(sizeof(ac_run) * AC_MAX_RUNS);
	uint32_t n = 0, overlaps = 0, unset = 0;

	if (!all)
		return;
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < p[k].nruns; i++)
			all[n++] = p[k].runs[i];
	qsort(all, n, sizeof(*all), ac_run_cmp);
	for (uint32_t i = 0; i < n; i++) {
		overlaps += i && all[i - 1].first + all[i - 1].n > all[i].first;
		for (uint32_t j = 0; j < all[i].n; j++)
			unset += ac_bit(t, false, all[i].first + j) != 1;
	}
	ac_is(a, overlaps, 0, "no block was given to both threads or twice");
	ac_is(a, unset, 0, "every block given out is set in its bitmap");
	n = 0;
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < p[k].ninos; i++)
			all[n++] = (ac_run){p[k].inos[i], 1};
	qsort(all, n, sizeof(*all), ac_run_cmp);
	overlaps = unset = 0;
	for (uint32_t i = 0; i < n; i++) {
		overlaps += i && all[i - 1].first == all[i].first;
		unset += ac_bit(t, true, all[i].first) != 1;
	}
	ac_is(a, overlaps, 0, "no inode was given twice");
	ac_is(a, unset, 0, "every inode given out is set in its bitmap");
	free(all);
}

static uint64_t ac_group_lock_uses(ac *a)
{
	uint64_t n = 0;

	for (int i = 0; i < CM_GROUP_LOCKS; i++)
		n += atomic_load(&a->svc.layout->locks.group[i].acquisitions);
	return n;
}

static void ac_case_parallel(ac_thr *t)
{
	ac *a = t->a;
	ac_par *p = calloc(2, sizeof(*p));
	pthread_t th[2];
	ac_counts before, after;
	uint64_t locks0 = ac_group_lock_uses(a);

	if (!p)
		return;
	ac_fc_sums(a, &before);
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < 2; k++) {
			if (pass == 0) {
				p[k].id = k;
				p[k].rng = a->seed * 2654435761u + k + 1;
				p[k].err = ac_thr_init(a, &p[k].t);
			}
			pthread_create(&th[k], NULL, pass ? ac_par_free : ac_par_alloc, &p[k]);
		}
		for (int k = 0; k < 2; k++)
			pthread_join(th[k], NULL);
		for (int k = 0; k < 2; k++)
			ac_is(a, p[k].err, 0, "thread %d %s its blocks and inodes in groups %u-%u", k,
			      pass ? "freed" : "allocated", k * a->g.group_count / 2,
			      (k + 1) * a->g.group_count / 2 - 1);
		if (pass == 0) {
			ac_diag(a, "runs in the thread's own half: %u of %u, %u of %u", p[0].own,
				p[0].nruns, p[1].own, p[1].nruns);
			ac_par_check(t, p);
		}
	}
	ac_fc_sums(a, &after);
	ac_is(a, after.blocks, before.blocks, "the free blocks counter is back");
	ac_is(a, after.inodes, before.inodes, "the free inodes counter is back");
	ac_diag(a, "group lock acquisitions: %llu",
		(unsigned long long)(ac_group_lock_uses(a) - locks0));
	for (int k = 0; k < 2; k++)
		ac_thr_fini(&p[k].t);
	free(p);
}

/* A range freed across a group boundary meets the next group's bitmaps
 * (ext3 puts them first): refused whole, the block before it stays set. */
static void ac_case_cross(ac_thr *t)
{
	ac *a = t->a;
	uint64_t end = ac_gstart(a, 11), b = 0;
	uint32_t got = 0;

	if (ac_alloc1(t, end - 1, 1, 0, &b, &got) < 0 || b != end - 1) {
		ac_report(a, false, "the last block of group 10 (got %llu)", (unsigned long long)b);
		if (b)
			ac_free1(t, b, got);
		return;
	}
	ac_is(a, ac_free1(t, b, 2), -EUCLEAN, "freeing across into group 11's bitmap is refused");
	ac_is(a, ac_bit(t, false, b), 1, "and frees nothing of group 10");
	ac_is(a, ac_free1(t, b, 1), 0, "which then frees alone");
}

static void ac_case_bad(ac_thr *t)
{
	ac *a = t->a;
	struct ext3_group_desc gd;
	ac_counts before, after;
	uint64_t freeb = ac_free_block(t, 2, 0);
	uint32_t freei = 0;
	cm_chan_client *other;
	cm_al_rec rq, rs;

	for (uint32_t i = a->first_ino; i <= a->g.inodes_count && !freei; i++)
		if (ac_bit(t, true, i) == 0)
			freei = i;
	ac_fc_sums(a, &before);
	ac_gd(t, 2, &gd);
	if (ac_start(t, 16) < 0)
		return;
	ac_is(a, ac_free(t, freeb, 1), -EUCLEAN, "freeing a free block is refused");
	ac_is(a, ac_free(t, freeb, 0), -EINVAL, "freeing no blocks is refused");
	ac_is(a, ac_free(t, a->g.blocks_count, 1), -EUCLEAN, "freeing past the end is refused");
	if (a->g.first_data_block)
		ac_is(a, ac_free(t, 0, 1), -EUCLEAN, "freeing the boot block is refused");
	ac_is(a, ac_free(t, cm_le32(gd.bg_inode_table), 1), -EUCLEAN,
	      "freeing an inode table block is refused");
	ac_is(a, ac_free(t, cm_le32(gd.bg_block_bitmap), 1), -EUCLEAN,
	      "freeing a bitmap block is refused");
	ac_is(a, ac_ifree(t, 1, AC_REG), -EUCLEAN, "freeing a reserved inode is refused");
	ac_is(a, ac_ifree(t, freei, AC_REG), -EUCLEAN, "freeing a free inode is refused");
	ac_is(a, ac_ifree(t, a->g.inodes_count + 1, AC_REG), -EUCLEAN,
	      "freeing an inode past the last is refused");
	ac_is(a, ac_call(t, 99, 0, 1, 0, 0, &rs), -EPROTONOSUPPORT, "an unknown operation");
	memset(&rq, 0, sizeof(rq));
	rq.hdr.op = CM_AL_ALLOC_BLOCKS;
	rq.count = 1;
	rq.handle = jbd_handle_token(a->jc, t->h);
	/* The channel stamps its records with the version it was opened with. */
	if (cm_chan_open(a->svc.arena, (uint32_t)cm_layout_find_svc(a->svc.layout, "alloc-svc"),
			 CM_AL_VERSION + 6, &other) == 0) {
		int r = cm_chan_call(other, &rq, &rs, 20000);
		ac_is(a, r < 0 ? r : rs.hdr.status, -EPROTO, "a record of another version");
		other = cm_chan_close(other);
	}
	rq.handle = 12345;
	ac_is(a, ac_raw(t, &rq, &rs), -EINVAL, "a token that names no handle");
	ac_is(a, ac_call(t, CM_AL_ALLOC_BLOCKS, 0, 0, 0, 0, &rs), -EINVAL, "no blocks wanted");
	ac_stop(t);
	ac_case_cross(t);
	ac_fc_sums(a, &after);
	ac_is(a, after.blocks, before.blocks, "no bad request changed the free blocks");
	ac_is(a, after.inodes, before.inodes, "nor the free inodes");
}

static void ac_case_enospc(ac_thr *t)
{
	ac *a = t->a;
	ac_run *runs = malloc(sizeof(ac_run) * AC_MAX_RUNS);
	uint32_t *inos = malloc(sizeof(uint32_t) * a->g.inodes_count);
	uint32_t nruns = 0, ninos = 0, got;
	ac_counts c0, c;
	uint64_t b;
	int r = 0, err = 0;

	if (!runs || !inos)
		goto out;
	ac_commit(a);
	ac_fc_sums(a, &c0);
	for (int reserved = 0; reserved < 2; reserved++) {
		uint32_t flags = reserved ? CM_AL_RESERVED : 0;
		while (nruns < AC_MAX_RUNS && (r = ac_alloc1(t, 0, a->g.blocks_per_group, flags,
							     &b, &got)) == 0)
			runs[nruns++] = (ac_run){b, got};
		ac_is(a, r, -ENOSPC, "filling%s ends with ENOSPC",
		      reserved ? " with CM_AL_RESERVED" : "");
		ac_fc_sums(a, &c);
		ac_is(a, c.blocks, reserved ? 0 : a->r_blocks, "%s left free", reserved
		      ? "no block is" : "exactly the reserved blocks are");
		ac_is(a, ac_alloc1(t, 0, 1, 0, &b, &got), -ENOSPC,
		      "then one block without the flag: ENOSPC");
	}
	while ((r = ac_ialloc1(t, EXT3_ROOT_INO, AC_REG, 0, &inos[ninos])) == 0 &&
	       ninos < a->g.inodes_count)
		ninos++;
	ac_is(a, r, -ENOSPC, "allocating inodes ends with ENOSPC");
	ac_is(a, ninos, c0.inodes, "after every free inode");
	for (uint32_t i = 0; i < nruns; i++)
		err |= ac_free1(t, runs[i].first, runs[i].n);
	for (uint32_t i = 0; i < ninos; i++)
		err |= ac_ifree1(t, inos[i], AC_REG);
	ac_is(a, err, 0, "all of it freed again");
	ac_fc_sums(a, &c);
	ac_is(a, c.blocks, c0.blocks, "the free blocks are back");
	ac_is(a, c.inodes, c0.inodes, "the free inodes are back");
out:
	free(runs);
	free(inos);
}

static void ac_case_restart(ac_thr *t)
{
	ac *a = t->a;
	cm_layout *l = a->svc.layout;
	int slot = cm_layout_find_svc(l, "alloc-svc");
	cm_off off = atomic_load(&l->alloc);
	ac_counts before, after;
	int32_t pid, now = 0;
	uint64_t b = 0;
	uint32_t got;

	if (slot < 0)
		return;
	ac_fc_sums(a, &before);
	pid = atomic_load(&l->svcs[slot].pid);
	ac_is(a, kill(pid, SIGKILL), 0, "alloc-svc (pid %d) SIGKILLed while idle", pid);
	for (int i = 0; i < 300; i++) {
		now = atomic_load(&l->svcs[slot].pid);
		if (now && now != pid && atomic_load(&l->svcs[slot].state) == CM_SVC_READY)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
	}
	ac_report(a, now && now != pid, "a new alloc-svc is ready (pid %d)", now);
	ac_is(a, (int64_t)atomic_load(&l->alloc), (int64_t)off,
	      "it kept the counters in the arena");
	ac_fc_sums(a, &after);
	ac_is(a, after.blocks, before.blocks, "with the same free blocks");
	ac_is(a, ac_alloc1(t, 0, 1, 0, &b, &got), 0, "it allocates on the channel of the old one");
	ac_is(a, ac_free1(t, b, 1), 0, "and frees");
}

int ac_run_corrupt(ac *a, uint64_t blk)
{
	uint32_t g = ac_group(a, blk), got = 0;
	uint64_t b = 0;
	ac_thr t;
	int r = ac_thr_init(a, &t);

	if (r < 0)
		return r;
	ac_is(a, ac_bit(&t, false, blk), 0, "the system block %llu is clear in group %u's bitmap",
	      (unsigned long long)blk, g);
	ac_is(a, ac_alloc1(&t, blk, 1, 0, &b, &got), 0, "a block wanted at it is given");
	ac_report(a, b != blk && ac_group(a, b) != g, "elsewhere: %llu, in group %u",
		  (unsigned long long)b, ac_group(a, b));
	ac_is(a, ac_bit(&t, false, blk), 0, "the system block's bit was left as it was");
	ac_is(a, ac_free1(&t, blk, 1), -EUCLEAN, "freeing the system block is refused");
	if (b)
		ac_is(a, ac_free1(&t, b, got), 0, "the block given is freed");
	ac_exact(&t, "corrupt group");
	ac_thr_fini(&t);
	return 0;
}

int ac_run_cases(ac *a)
{
	ac_thr t;
	ac_counts c;
	int r = ac_thr_init(a, &t);

	if (r < 0)
		return r;
	ac_diag(a, "%u groups of %u blocks and %u inodes, %u reserved blocks", a->g.group_count,
		a->g.blocks_per_group, a->g.inodes_per_group, a->r_blocks);
	ac_exact(&t, "at start");
	ac_case_basic(&t);
	ac_case_goal(&t);
	ac_case_full_group(&t);
	ac_case_inodes(&t);
	ac_exact(&t, "after placement");
	ac_case_uncommitted(&t);
	ac_case_parallel(&t);
	ac_exact(&t, "after two threads");
	ac_case_bad(&t);
	ac_case_enospc(&t);
	ac_exact(&t, "after ENOSPC");
	ac_case_restart(&t);
	ac_exact(&t, "after the restart");
	r = ac_fc_sums(a, &c);
	if (r == 0)
		fprintf(a->out, "COUNTS free_blocks=%lld free_inodes=%lld\n", (long long)c.blocks,
			(long long)c.inodes);
	ac_thr_fini(&t);
	return r;
}
