/* bcache.c - the buffer cache in the arena: buffer heads and their data, the
 * block-number hash, CLOCK eviction, buffer states and LOCKED; the I/O paths
 * are in bcache_io.c. See bcache.h.
 *
 * Locks: the hash stripes (CM_RANK_BCACHE, a leaf), one at a time, never two,
 * never across I/O. Eviction unhashes its victim under the victim's stripe and
 * drops it; the new block is inserted under its own stripe after a re-check
 * for a racing insert of the same block. I/O on a buffer is serialised by its
 * LOCKED bit; waiters sleep on the buffer's event holding only a reference.
 * Invariants: a block is hashed at most once; a buffer that is referenced,
 * LOCKED, DIRTY or owned by the journal (b_jh) is never unhashed; b_count
 * goes 0 -> 1 only under the stripe.
 */
#include "bcache.h"
#include "layout.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bcache_impl.h"
#include "wait.h"

/*
 * Buffer states (b_state bits; b_count counts references):
 *
 *          lost race                        I/O error
 *   FREE ◄────────────┐                  ┌──────────────┐
 *    └─claim─► CLAIMED ┴─insert─► HASHED !UPTODATE ─read─┴► UPTODATE ─mark_dirty─► DIRTY
 *                 ▲                  │   (LOCKED)           │   ▲    (LOCKED)      │
 *                 └─ evict ──────────┴──────────────────────┘   └────── write ─────┘
 *         (clean, !LOCKED, b_count 0, b_jh 0)
 *
 *   FREE -> CLAIMED             cm_bcache_claim (CAS of b_state 0 -> CLAIMED)
 *   HASHED -> CLAIMED           cm_bcache_evict_locked (under the victim's stripe)
 *   CLAIMED -> HASHED           cm_bcache_insert_locked (under the new stripe)
 *   CLAIMED -> FREE             cm_bcache_getblk (another thread hashed the block)
 *   +LOCKED, -LOCKED            cm_bh_lock, cm_bh_unlock (cm_bcache_fill, _write)
 *   +UPTODATE                   cm_bcache_fill (read ok), cm_bh_set_uptodate
 *   +DIRTY, -DIRTY              cm_bh_mark_dirty; cm_bcache_write, _writeback,
 *                               cm_bh_clear_dirty
 *
 *   FREE:    b_state 0, b_count 0, on no chain.
 *   CLAIMED: on no chain, b_count 0; only its claimer touches the buffer.
 *   HASHED:  on the chain of bucket(b_blocknr), the only buffer of that block;
 *            b_blocknr changes only after an unhash under the same stripe.
 *   LOCKED:  b_count > 0 (the locker holds a reference); one thread does I/O.
 *   DIRTY:   UPTODATE; set and cleared by holders of a reference.
 *   b_jh:    set: the journal's buffer, never evicted nor written back here.
 * Nobody sets LOCKED or DIRTY without a reference, so a buffer seen unreferenced
 * under its stripe (b_count read before b_state) stays clean while unhashed.
 */


static cm_mutex *cm_bcache_lock_of(cm_bcache *c, uint32_t bucket)
{
	return &c->sh->stripes[bucket % CM_BCACHE_STRIPES].lock;
}

cm_mutex *cm_bcache_stripe(cm_bcache *c, uint64_t blocknr)
{
	return cm_bcache_lock_of(c, cm_bcache_bucket(c, blocknr));
}

static int cm_bcache_init_shm(cm_arena *a, struct cm_bcache_shm *sh)
{
	cm_bh *bhs = cm_arena_ptr(a, sh->bhs, (uint64_t)sh->nbufs * sizeof(cm_bh));
	int r;

	/* One name for all stripes, as the lock set's striped locks have:
	 * status folds them into one line. */
	for (int i = 0; i < CM_BCACHE_STRIPES; i++) {
		r = cm_mutex_init(&sh->stripes[i].lock, CM_RANK_BCACHE, "bcache");
		if (r < 0)
			return r;
	}
	for (uint32_t i = 0; i < sh->nbufs; i++) {
		bhs[i].b_index = i;
		bhs[i].b_data = sh->data + (uint64_t)i * sh->block_size;
		cm_event_init(&bhs[i].b_wait);
	}
	atomic_store_explicit(&sh->magic, CM_BCACHE_MAGIC, memory_order_release);
	return 0;
}

int cm_bcache_create(cm_arena *a, uint64_t cache_bytes, uint32_t block_size, cm_off *ret_off)
{
	struct cm_bcache_shm *sh;
	uint32_t bits = CM_BCACHE_MIN_BITS;
	uint64_t nbufs;
	cm_off off;
	int r;

	if (cache_bytes == 0)
		cache_bytes = CM_BCACHE_DEFAULT_BYTES;
	if (block_size < CM_BCACHE_MIN_BLOCK || block_size > CM_BCACHE_MAX_BLOCK ||
	    (block_size & (block_size - 1)))
		return -EINVAL;
	nbufs = cache_bytes / block_size;
	if (nbufs == 0 || nbufs > CM_BCACHE_MAX_BUFS)
		return -EINVAL;
	while ((1ULL << bits) < nbufs)
		bits++;
	off = cm_arena_alloc(a, sizeof(*sh), 64);
	sh = off ? cm_arena_ptr(a, off, sizeof(*sh)) : NULL;
	if (!sh)
		return -ENOMEM;
	sh->version = CM_BCACHE_VERSION;
	sh->block_size = block_size;
	sh->nbufs = (uint32_t)nbufs;
	sh->bucket_bits = bits;
	sh->bhs = cm_arena_alloc(a, nbufs * sizeof(cm_bh), 64);
	sh->buckets = cm_arena_alloc(a, (uint64_t)sizeof(uint32_t) << bits, 64);
	sh->data = cm_arena_alloc_data(a, nbufs * block_size, block_size < 4096 ? block_size : 4096);
	if (!sh->bhs || !sh->buckets || !sh->data)
		return -ENOMEM;
	r = cm_bcache_init_shm(a, sh);
	if (r < 0)
		return r;
	*ret_off = off;
	return 0;
}

static bool cm_bcache_shm_sane(struct cm_bcache_shm *sh)
{
	return atomic_load_explicit(&sh->magic, memory_order_acquire) == CM_BCACHE_MAGIC &&
	       sh->version == CM_BCACHE_VERSION &&
	       sh->block_size >= CM_BCACHE_MIN_BLOCK && sh->block_size <= CM_BCACHE_MAX_BLOCK &&
	       sh->nbufs > 0 && sh->nbufs <= CM_BCACHE_MAX_BUFS &&
	       sh->bucket_bits >= CM_BCACHE_MIN_BITS && sh->bucket_bits <= 25;
}

int cm_bcache_attach(cm_arena *a, cm_off off, cm_bcache **ret)
{
	struct cm_bcache_shm *sh = cm_arena_ptr(a, off, sizeof(*sh));
	cm_bh *bhs;
	uint32_t *buckets;
	cm_bcache *c;

	if (!sh || !cm_bcache_shm_sane(sh))
		return -EPROTO;
	bhs = cm_arena_ptr(a, sh->bhs, (uint64_t)sh->nbufs * sizeof(cm_bh));
	buckets = cm_arena_ptr(a, sh->buckets, (uint64_t)sizeof(uint32_t) << sh->bucket_bits);
	if (!bhs || !buckets ||
	    !cm_arena_in_data(a, sh->data, (uint64_t)sh->nbufs * sh->block_size))
		return -EPROTO;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (cm_bcache){.a = a, .sh = sh, .bhs = bhs, .buckets = buckets};
	*ret = c;
	return 0;
}

int cm_bcache_open_shared(cm_arena *a, uint64_t cache_bytes, uint32_t block_size,
			  cm_bcache **ret)
{
	cm_layout *l = cm_layout_get(a);
	cm_off off, none = 0;
	int r;

	if (!l)
		return -EPROTO;
	off = atomic_load(&l->bcache);
	if (!off) {
		r = cm_bcache_create(a, cache_bytes, block_size, &off);
		if (r < 0)
			return r;
		/* Another service made one first: use it (ours stays unused). */
		if (!atomic_compare_exchange_strong(&l->bcache, &none, off))
			off = none;
	}
	return cm_bcache_attach(a, off, ret);
}

cm_bcache *cm_bcache_detach(cm_bcache *c)
{
	free(c);
	return NULL;
}

cm_bh *cm_bcache_bh(cm_bcache *c, uint32_t idx)
{
	return idx < c->sh->nbufs ? &c->bhs[idx] : NULL;
}

void *cm_bh_data(cm_bcache *c, cm_bh *bh)
{
	return c->a->base + bh->b_data;
}

/* Called with the stripe of bucket held. */
static cm_bh *cm_bcache_lookup_locked(cm_bcache *c, uint32_t bucket, uint64_t blocknr)
{
	cm_mutex_assert_held(cm_bcache_lock_of(c, bucket));
	for (uint32_t i = c->buckets[bucket]; i; i = c->bhs[i - 1].b_next) {
		assert(i <= c->sh->nbufs);
		if (cm_bh_blocknr(&c->bhs[i - 1]) == blocknr)
			return &c->bhs[i - 1];
	}
	return NULL;
}

/* Called with the stripe of bucket held; bh is on that bucket's chain. */
static void cm_bcache_unhash_locked(cm_bcache *c, uint32_t bucket, cm_bh *bh)
{
	uint32_t *link = &c->buckets[bucket];

	while (*link != bh->b_index + 1) {
		assert(*link != 0);
		link = &c->bhs[*link - 1].b_next;
	}
	*link = bh->b_next;
	bh->b_next = 0;
}

/* Called with the stripe of bucket held; bh is CLAIMED by this thread. */
static void cm_bcache_insert_locked(cm_bcache *c, uint32_t bucket, cm_bh *bh)
{
	atomic_store(&bh->b_count, 1);
	atomic_store(&bh->b_clock, 1);
	atomic_store(&bh->b_error, 0);
	bh->b_next = c->buckets[bucket];
	c->buckets[bucket] = bh->b_index + 1;
	atomic_store(&bh->b_state, CM_BH_HASHED);
}

/* See bcache_impl.h. */
int cm_bcache_with_bh(cm_bcache *c, cm_bh *bh, int (*fn)(cm_bcache *, uint32_t, cm_bh *))
{
	uint64_t blocknr = cm_bh_blocknr(bh);
	uint32_t bucket = cm_bcache_bucket(c, blocknr);
	cm_mutex *m = cm_bcache_lock_of(c, bucket);
	int r = cm_mutex_lock(m);

	if (r < 0)
		return r;
	/* On this stripe's chain, its block cannot change under us. */
	if (cm_bcache_lookup_locked(c, bucket, blocknr) == bh)
		r = fn(c, bucket, bh);
	cm_mutex_unlock(m);
	return r;
}

/* Called with bh's stripe held: 1 if bh was clean and idle and is now
 * CLAIMED by this thread, else 0. A buffer with a journal head belongs to
 * the journal and stays, whatever its count says. */
static int cm_bcache_evict_locked(cm_bcache *c, uint32_t bucket, cm_bh *bh)
{
	if (atomic_load(&bh->b_count) != 0 || cm_bh_jh(bh) != 0)
		return 0;
	if (atomic_load(&bh->b_state) & (CM_BH_DIRTY | CM_BH_LOCKED))
		return 0;
	cm_bcache_unhash_locked(c, bucket, bh);
	atomic_store(&bh->b_state, CM_BH_CLAIMED);
	atomic_fetch_add(&c->sh->stripes[bucket % CM_BCACHE_STRIPES].evictions, 1);
	return 1;
}

/* Called with bh's stripe held: takes a reference. */
int cm_bcache_ref_locked(cm_bcache *c, uint32_t bucket, cm_bh *bh)
{
	atomic_fetch_add(&bh->b_count, 1);
	atomic_store_explicit(&bh->b_clock, 1, memory_order_relaxed);
	return 1;
}

/* CLOCK: the next free buffer, or the next clean, idle one whose referenced
 * bit is clear (clearing the bits it passes), CLAIMED for this thread. Takes
 * one stripe lock at a time. -ENOMEM after three turns of the hand. */
static int cm_bcache_claim(cm_bcache *c, cm_bh **ret)
{
	uint32_t n = c->sh->nbufs;

	for (uint64_t step = 0; step < 3 * (uint64_t)n; step++) {
		cm_bh *bh = &c->bhs[atomic_fetch_add(&c->sh->hand, 1) % n];
		uint32_t st = atomic_load(&bh->b_state), free_state = 0;
		int r;

		if (st == 0 && atomic_compare_exchange_strong(&bh->b_state, &free_state,
							      CM_BH_CLAIMED)) {
			*ret = bh;
			return 0;
		}
		if ((st & (CM_BH_HASHED | CM_BH_DIRTY | CM_BH_LOCKED)) != CM_BH_HASHED ||
		    atomic_load(&bh->b_count) != 0 || cm_bh_jh(bh) != 0)
			continue;
		if (atomic_exchange_explicit(&bh->b_clock, 0, memory_order_relaxed))
			continue;
		r = cm_bcache_with_bh(c, bh, cm_bcache_evict_locked);
		if (r < 0)
			return r;
		if (r) {
			*ret = bh;
			return 0;
		}
	}
	return -ENOMEM;
}

/* Under blocknr's stripe: a reference to its buffer if it is hashed, else
 * hashes nb (CLAIMED by this thread, b_blocknr set) if given. *ret is the
 * referenced buffer or NULL. */
static int cm_bcache_find(cm_bcache *c, uint32_t bucket, uint64_t blocknr, cm_bh *nb,
			  cm_bh **ret)
{
	cm_mutex *m = cm_bcache_lock_of(c, bucket);
	cm_bh *bh;
	int r = cm_mutex_lock(m);

	if (r < 0)
		return r;
	bh = cm_bcache_lookup_locked(c, bucket, blocknr);
	if (bh) {
		cm_bcache_ref_locked(c, bucket, bh);
	} else if (nb) {
		cm_bcache_insert_locked(c, bucket, nb);
		bh = nb;
	}
	cm_mutex_unlock(m);
	*ret = bh;
	return 0;
}

int cm_bcache_getblk(cm_bcache *c, uint64_t blocknr, cm_bh **ret)
{
	uint32_t bucket = cm_bcache_bucket(c, blocknr);
	cm_bh *bh, *nb = NULL;
	int r;

	r = cm_bcache_find(c, bucket, blocknr, NULL, &bh);
	if (r == 0 && !bh) {
		r = cm_bcache_claim(c, &nb);
		if (r < 0)
			return r;
		atomic_store(&nb->b_blocknr, blocknr);
		r = cm_bcache_find(c, bucket, blocknr, nb, &bh);
		if (r < 0 || bh != nb) /* another thread hashed the block first */
			atomic_store(&nb->b_state, 0);
	}
	if (r < 0)
		return r;
	struct cm_bcache_stripe *st = &c->sh->stripes[bucket % CM_BCACHE_STRIPES];
	atomic_fetch_add_explicit(bh == nb ? &st->misses : &st->hits, 1, memory_order_relaxed);
	*ret = bh;
	return 0;
}

cm_bh *cm_bcache_get(cm_bcache *c, uint64_t blocknr)
{
	cm_bh *bh;

	return cm_bcache_getblk(c, blocknr, &bh) < 0 ? NULL : bh;
}

void cm_bcache_put(cm_bcache *c, cm_bh *bh)
{
	if (bh && atomic_fetch_sub(&bh->b_count, 1) == 0)
		abort(); /* a put without a reference: a programming error */
}

void cm_bh_hold(cm_bh *bh)
{
	if (atomic_fetch_add(&bh->b_count, 1) == 0)
		abort(); /* the caller held no reference: a programming error */
}

void cm_bh_set_uptodate(cm_bh *bh)
{
	assert(atomic_load(&bh->b_count) > 0);
	atomic_fetch_or(&bh->b_state, CM_BH_UPTODATE);
}

void cm_bh_mark_dirty(cm_bh *bh)
{
	assert(atomic_load(&bh->b_count) > 0 && cm_bh_test(bh, CM_BH_UPTODATE));
	atomic_fetch_or(&bh->b_state, CM_BH_DIRTY);
}

void cm_bh_clear_dirty(cm_bh *bh)
{
	assert(atomic_load(&bh->b_count) > 0);
	atomic_fetch_and(&bh->b_state, ~(uint32_t)CM_BH_DIRTY);
}

bool cm_bh_trylock(cm_bh *bh)
{
	if (atomic_fetch_or(&bh->b_state, CM_BH_LOCKED) & CM_BH_LOCKED)
		return false;
	atomic_store_explicit(&bh->b_owner, cm_self_pid(), memory_order_relaxed);
	return true;
}

struct cm_bh_wait_arg {
	cm_bcache *c;
	cm_bh *bh;
};

static int cm_bh_unlocked_poll(void *arg)
{
	struct cm_bh_wait_arg *x = arg;

	if (!cm_bh_test(x->bh, CM_BH_LOCKED))
		return 1;
	return atomic_load(&x->c->a->hdr->state) != CM_ARENA_LIVE ? -ESTALE : 0;
}

/* See bcache_impl.h. */
int cm_bh_wait_unlocked(cm_bcache *c, cm_bh *bh)
{
	struct cm_bh_wait_arg x = {c, bh};
	int r;

	cm_lockdep_assert_none_held("waiting for a LOCKED buffer");
	atomic_fetch_add(&cm_bcache_stripe_of(c, cm_bh_blocknr(bh))->waits, 1);
	r = cm_wait(&bh->b_wait, cm_bh_unlocked_poll, &x, -1, CM_BCACHE_WAIT_MS);
	return r > 0 ? 0 : r;
}

int cm_bh_lock(cm_bcache *c, cm_bh *bh)
{
	assert(atomic_load(&bh->b_count) > 0);
	while (!cm_bh_trylock(bh)) {
		int r = cm_bh_wait_unlocked(c, bh);
		if (r < 0)
			return r;
	}
	atomic_store(&bh->b_error, 0); /* fill's waiters: no read failed under us */
	return 0;
}

void cm_bh_unlock(cm_bcache *c, cm_bh *bh)
{
	atomic_store_explicit(&bh->b_owner, 0, memory_order_relaxed);
	atomic_fetch_and(&bh->b_state, ~(uint32_t)CM_BH_LOCKED);
	cm_event_signal(&bh->b_wait);
}

uint32_t cm_bcache_locked_by(cm_bcache *c, int32_t pid, uint64_t *blocknr)
{
	uint32_t found = 0;

	for (uint32_t i = 0; pid > 0 && i < c->sh->nbufs; i++) {
		cm_bh *bh = &c->bhs[i];
		if (!cm_bh_test(bh, CM_BH_LOCKED) ||
		    atomic_load_explicit(&bh->b_owner, memory_order_relaxed) != pid)
			continue;
		*blocknr = cm_bh_blocknr(bh);
		found++;
	}
	return found;
}

void cm_bcache_foreach_lock(cm_bcache *c, void (*fn)(cm_mutex *m, void *ctx), void *ctx)
{
	for (uint32_t i = 0; i < CM_BCACHE_STRIPES; i++)
		fn(&c->sh->stripes[i].lock, ctx);
}

void cm_bcache_stats_read(cm_bcache *c, cm_bcache_stats *ret)
{
	struct cm_bcache_shm *sh = c->sh;

	*ret = (cm_bcache_stats){.nbufs = sh->nbufs, .block_size = sh->block_size};
	for (uint32_t i = 0; i < CM_BCACHE_STRIPES; i++) {
		struct cm_bcache_stripe *st = &sh->stripes[i];
		ret->hits += atomic_load(&st->hits);
		ret->misses += atomic_load(&st->misses);
		ret->evictions += atomic_load(&st->evictions);
		ret->reads += atomic_load(&st->reads);
		ret->writes += atomic_load(&st->writes);
		ret->errors += atomic_load(&st->errors);
		ret->waits += atomic_load(&st->waits);
	}
}

/* Called with the stripe of bucket held: the chain's buffers are hashed, in
 * the right bucket, distinct blocks; returns how many, or -1. */
static int64_t cm_bcache_check_chain(cm_bcache *c, uint32_t bucket)
{
	int64_t n = 0;
	cm_bh *bh;

	for (uint32_t i = c->buckets[bucket]; i; i = bh->b_next) {
		if (i > c->sh->nbufs || ++n > c->sh->nbufs)
			return -1;
		bh = &c->bhs[i - 1];
		if ((atomic_load(&bh->b_state) & (CM_BH_HASHED | CM_BH_CLAIMED)) != CM_BH_HASHED ||
		    cm_bcache_bucket(c, cm_bh_blocknr(bh)) != bucket)
			return -1;
		for (uint32_t j = bh->b_next, k = 0; j; j = c->bhs[j - 1].b_next)
			if (j > c->sh->nbufs || ++k > c->sh->nbufs ||
			    cm_bh_blocknr(&c->bhs[j - 1]) == cm_bh_blocknr(bh))
				return -1;
	}
	return n;
}

bool cm_bcache_check(cm_bcache *c)
{
	uint32_t nbuckets = 1u << c->sh->bucket_bits;
	int64_t chained = 0, hashed = 0, n;

	for (uint32_t s = 0; s < CM_BCACHE_STRIPES; s++) {
		if (cm_mutex_lock(&c->sh->stripes[s].lock) < 0)
			return false;
		n = 0;
		for (uint32_t b = s; b < nbuckets && n >= 0; b += CM_BCACHE_STRIPES) {
			n = cm_bcache_check_chain(c, b);
			chained += n;
		}
		cm_mutex_unlock(&c->sh->stripes[s].lock);
		if (n < 0)
			return false;
	}
	for (uint32_t i = 0; i < c->sh->nbufs; i++) {
		uint32_t st = atomic_load(&c->bhs[i].b_state);
		if ((st & CM_BH_DIRTY) && !(st & CM_BH_UPTODATE))
			return false;
		if ((st & CM_BH_LOCKED) && atomic_load(&c->bhs[i].b_count) == 0)
			return false;
		hashed += (st & CM_BH_HASHED) != 0;
	}
	return chained == hashed;
}
