/* bcache_impl.h - what bcache.c (the cache: hash, eviction, buffer states)
 * and bcache_io.c (reads, prefetch, writes, sync, write-back) share: the
 * cache's shared layout and the helpers both use. Not for other modules. */
#ifndef CM_BCACHE_IMPL_H
#define CM_BCACHE_IMPL_H

#include "bcache.h"

#define CM_BCACHE_MAGIC 0x4843414342443345ULL /* "E3DBCACH" */
#define CM_BCACHE_VERSION 2
#define CM_BCACHE_STRIPES 64                  /* a power of 2 */
#define CM_BCACHE_MIN_BITS 6                  /* at least one bucket per stripe */
#define CM_BCACHE_MAX_BUFS (1u << 24)
#define CM_BCACHE_WAIT_MS 100                 /* re-check the arena this often */
#define CM_BCACHE_HASH 0x9e3779b97f4a7c15ULL

/* One hash stripe: its lock, and the counters of the blocks it covers, in
 * cache lines of their own. Lookups of blocks on different stripes then
 * write no line in common (one shared hit counter made two threads' warm
 * lookups slower than one's); the statistics are the sums over stripes. */
struct cm_bcache_stripe {
	cm_mutex lock;
	_Atomic uint64_t hits, misses, evictions, reads, writes, errors, waits; /* [atomic] */
} __attribute__((aligned(64)));

/* The shared part of the cache, at the offset cm_bcache_create returns
 * (64-byte aligned). Stripe s covers every bucket b with b %
 * CM_BCACHE_STRIPES == s: the chain head and the b_next link of every
 * buffer on that chain. The hands, written on every eviction and
 * write-back, have a line apart from the fields every lookup reads. */
struct cm_bcache_shm {
	_Atomic uint64_t magic;         /* [immutable] stored last, with release */
	uint32_t version;               /* [immutable] */
	uint32_t block_size;            /* [immutable] */
	uint32_t nbufs;                 /* [immutable] */
	uint32_t bucket_bits;           /* [immutable] log2 of the bucket count */
	cm_off bhs;                     /* [immutable] cm_bh[nbufs] */
	cm_off buckets;                 /* [immutable] uint32_t[]: chain heads, index + 1 */
	cm_off data;                    /* [immutable] nbufs * block_size, data zone */
	_Atomic uint32_t hand __attribute__((aligned(64))); /* [atomic] the CLOCK hand */
	_Atomic uint32_t wb_hand;       /* [atomic] where write-back looks next */
	struct cm_bcache_stripe stripes[CM_BCACHE_STRIPES];
};

struct cm_bcache {
	cm_arena *a;
	struct cm_bcache_shm *sh;
	cm_bh *bhs;
	uint32_t *buckets;
};

static inline uint32_t cm_bcache_bucket(const cm_bcache *c, uint64_t blocknr)
{
	return (uint32_t)((blocknr * CM_BCACHE_HASH) >> (64 - c->sh->bucket_bits));
}

/* The stripe whose counters count blocknr. */
static inline struct cm_bcache_stripe *cm_bcache_stripe_of(cm_bcache *c, uint64_t blocknr)
{
	return &c->sh->stripes[cm_bcache_bucket(c, blocknr) % CM_BCACHE_STRIPES];
}

/* Takes the stripe lock of bh's block, and if bh is still hashed there lets
 * fn act on it under the lock. Returns fn's result, 0 if bh moved meanwhile,
 * or -EOWNERDEAD. */
int cm_bcache_with_bh(cm_bcache *c, cm_bh *bh, int (*fn)(cm_bcache *, uint32_t, cm_bh *));
/* For cm_bcache_with_bh: takes a reference (returns 1). */
int cm_bcache_ref_locked(cm_bcache *c, uint32_t bucket, cm_bh *bh);
/* Sets LOCKED if it was clear (recording this pid as b_owner). */
bool cm_bh_trylock(cm_bh *bh);
/* Sleeps until bh is not LOCKED, holding no arena lock; the caller's
 * reference keeps bh from being reused. -ESTALE if the arena is discarded
 * meanwhile (a group restart: whoever held LOCKED may be dead). */
int cm_bh_wait_unlocked(cm_bcache *c, cm_bh *bh);
#endif
