/* alloc-client.h - what alloc-client's plumbing (alloc-client.c) gives its
 * scenarios (alloc-cases.c): journal handles, allocproto.h requests on a
 * thread's own channel, and reads of the bitmaps, descriptors, superblock
 * and counters through the cache. Every call returns 0 or -errno (the
 * request's status for requests). */
#ifndef AC_ALLOC_CLIENT_H
#define AC_ALLOC_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "allocproto.h"
#include "bcache.h"
#include "journal.h"
#include "ondisk.h"
#include "service.h"

typedef struct ac {
	cm_service svc;
	cm_bcache *cache;
	cm_bdev *bd;           /* the main thread's */
	jbd_ctx *jc;
	cm_alloc_shared *as;
	cm_ext3_geom g;
	uint32_t r_blocks, first_ino;
	uint64_t seed;
	FILE *out;
	int fails;
} ac;

/* A thread's channel to alloc-svc, blockdev channel and open handle. */
typedef struct ac_thr {
	ac *a;
	cm_chan_client *ch;
	cm_bdev *bd;
	jbd_handle *h;
} ac_thr;

typedef struct ac_counts {
	int64_t blocks, inodes, dirs;
} ac_counts;

__attribute__((format(printf, 3, 4))) void ac_report(ac *a, bool ok, const char *fmt, ...);
__attribute__((format(printf, 2, 3))) void ac_diag(ac *a, const char *fmt, ...);
__attribute__((format(printf, 4, 5)))
bool ac_is(ac *a, int64_t got, int64_t want, const char *fmt, ...);

int ac_thr_init(ac *a, ac_thr *t);
void ac_thr_fini(ac_thr *t);
int ac_start(ac_thr *t, int credits);
int ac_stop(ac_thr *t);
/* Requests inside the thread's open handle. */
int ac_raw(ac_thr *t, cm_al_rec *rq, cm_al_rec *rs);
int ac_call(ac_thr *t, uint16_t op, uint64_t goal, uint32_t count, uint32_t mode,
	    uint32_t flags, cm_al_rec *rs);
int ac_alloc(ac_thr *t, uint64_t goal, uint32_t count, uint32_t flags, uint64_t *first,
	     uint32_t *got);
int ac_free(ac_thr *t, uint64_t first, uint32_t count);
int ac_ialloc(ac_thr *t, uint32_t dir, uint32_t mode, uint32_t flags, uint32_t *ino);
int ac_ifree(ac_thr *t, uint32_t ino, uint32_t mode);
/* The same in a handle of their own. */
int ac_alloc1(ac_thr *t, uint64_t goal, uint32_t count, uint32_t flags, uint64_t *first,
	      uint32_t *got);
int ac_free1(ac_thr *t, uint64_t first, uint32_t count);
/* Commits the running transaction and waits for it. */
int ac_commit(ac *a);

int ac_gd(ac_thr *t, uint32_t g, struct ext3_group_desc *ret);
int ac_bit(ac_thr *t, bool inode, uint64_t n);
int ac_gd_sums(ac_thr *t, ac_counts *ret);
int ac_fc_sums(ac *a, ac_counts *ret);
int ac_sb_counts(ac_thr *t, ac_counts *ret);

/* alloc-cases.c: every scenario, in order; or, on an image whose bitmap
 * says system block blk is free, that alloc-svc never hands it out. */
int ac_run_cases(ac *a);
int ac_run_corrupt(ac *a, uint64_t blk);

#endif
