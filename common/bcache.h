/* bcache.h - the buffer cache: filesystem blocks of one size, in the arena,
 * shared by every service process (and every thread in them) at once.
 *
 * The supervisor creates the cache once (cm_bcache_create) and keeps its
 * offset in the layout; each process attaches to it (cm_bcache_attach) and
 * gets a private handle. Buffer heads are in the metadata zone, their data
 * in the data zone, so blockdev-svc reads and writes a buffer directly: a
 * request names the buffer's b_data. Block blocknr is the device's sectors
 * [blocknr * (block_size / 512), +block_size / 512).
 *
 * A cm_bh pointer is valid in the process that got it, for as long as it
 * holds the reference that came with it (cm_bcache_put drops it). Errors are
 * -errno: -ENOMEM when every buffer is referenced, locked, dirty or owned by
 * the journal (cm_bcache_writeback makes room), -EOWNERDEAD
 * when a process died holding a hash stripe (the cache is then lost;
 * docs/locking.md, "Dead owners"), -ESTALE when the arena was discarded
 * while waiting, and the blockdev's error (-EIO, -ERANGE past the device
 * end) for failed I/O.
 */
#ifndef CM_BCACHE_H
#define CM_BCACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "bdclient.h"
#include "futex.h"
#include "lockset.h"

#define CM_BCACHE_DEFAULT_BYTES (64ULL << 20)
#define CM_BCACHE_MIN_BLOCK 1024
#define CM_BCACHE_MAX_BLOCK 65536

/* b_state bits; the buffer state machine is described in bcache.c. */
enum cm_bh_flag {
	CM_BH_HASHED = 1u << 0,   /* on the hash chain of b_blocknr */
	CM_BH_CLAIMED = 1u << 1,  /* on no chain, owned by one inserter */
	CM_BH_UPTODATE = 1u << 2, /* data holds the block (or newer) */
	CM_BH_DIRTY = 1u << 3,    /* data newer than the device: written before reuse */
	CM_BH_LOCKED = 1u << 4,   /* one thread does I/O on it (lock_buffer) */
};

/* A buffer head.
 *
 * A buffer whose b_jh is set belongs to the journal (common/jbd): only the
 * journal writes it home (checkpoint), changes its dirtiness or detaches the
 * journal head, and the cache never evicts or writes it back, whatever
 * b_count says. The journal attaches its journal head to a buffer it holds a
 * reference on (as JBD does); a buffer with b_jh 0 that is DIRTY is the
 * cache's to write back (cm_bcache_writeback). */
typedef struct cm_bh {
	_Atomic uint64_t b_blocknr; /* [stripe of the block while HASHED; the claimer
				     * while CLAIMED] atomic only for racy scans */
	_Atomic uint32_t b_state;   /* [atomic] enum cm_bh_flag */
	_Atomic uint32_t b_count;   /* [atomic] references; 0 -> 1 only under the stripe */
	_Atomic uint32_t b_clock;   /* [atomic] CLOCK referenced bit */
	_Atomic int32_t b_error;    /* [LOCKED bit] result of the last I/O: 0 or -errno */
	_Atomic int32_t b_owner;    /* [LOCKED bit] pid holding LOCKED: status, dead owners */
	uint32_t b_next;            /* [stripe] next on the chain: index + 1, 0 ends */
	uint32_t b_index;           /* [immutable] position in the buffer array */
	uint32_t b_reserved;
	cm_off b_data;              /* [immutable] block_size bytes in the data zone */
	cm_off b_jh;                /* [journal_head lock of b_blocknr; racy reads
				     * through cm_bh_jh] 0: none */
	cm_event b_wait;            /* signalled whenever LOCKED clears */
} cm_bh;

typedef struct cm_bcache cm_bcache;

/* Snapshot of the counters, for status. reads and writes count device
 * requests (failed ones too); errors the failed ones; waits the times a
 * thread slept on another's LOCKED buffer. */
typedef struct cm_bcache_stats {
	uint64_t hits, misses, evictions, reads, writes, errors, waits;
	uint32_t nbufs, block_size;
} cm_bcache_stats;

/* Supervisor: carves a cache of cache_bytes (0: CM_BCACHE_DEFAULT_BYTES) in
 * blocks of block_size (a power of 2, 1024..65536) out of a; its offset goes
 * to *ret_off. -EINVAL on bad sizes, -ENOMEM when the arena is too small
 * (what was carved before the failure stays allocated). */
int cm_bcache_create(cm_arena *a, uint64_t cache_bytes, uint32_t block_size, cm_off *ret_off);
/* Any process: a private handle on the cache at off; -EPROTO if there is
 * none there. */
int cm_bcache_attach(cm_arena *a, cm_off off, cm_bcache **ret);
/* Any service: a handle on the instance's cache (layout->bcache), made
 * here in blocks of block_size if no service made it yet; when two race,
 * the one published first is used. Errors as create and attach. */
int cm_bcache_open_shared(cm_arena *a, uint64_t cache_bytes, uint32_t block_size,
			  cm_bcache **ret);
/* Frees the handle (not the cache); accepts NULL; returns NULL. */
cm_bcache *cm_bcache_detach(cm_bcache *c);

/* The referenced buffer of blocknr, hashing a free or evicted one if the
 * block is not cached (then it is !UPTODATE). -ENOMEM, -EOWNERDEAD. */
int cm_bcache_getblk(cm_bcache *c, uint64_t blocknr, cm_bh **ret);
/* cm_bcache_getblk, NULL on any error (use getblk to learn which). */
cm_bh *cm_bcache_get(cm_bcache *c, uint64_t blocknr);
/* Drops a reference; accepts NULL. */
void cm_bcache_put(cm_bcache *c, cm_bh *bh);
/* getblk, then reads the block unless UPTODATE. Concurrent readers of one
 * block do one device read: the others wait for it and share its result.
 * A cache with no clean buffer to spare is written back first
 * (cm_bcache_writeback) rather than failing with -ENOMEM.
 * On error no reference is kept and the buffer stays !UPTODATE. This, write
 * and sync wait on the blockdev ring or on a LOCKED buffer, so the caller
 * holds no arena lock (docs/locking.md); getblk, get and put never wait on
 * either. */
int cm_bcache_read(cm_bcache *c, cm_bdev *bd, uint64_t blocknr, cm_bh **ret);
/* Starts reading the blocks of the list that are not cached, up to
 * CM_CHAN_DEPTH at a time on bd's channel, and waits for them: one pipelined
 * stream instead of a round trip per block. Blocks another thread is
 * reading, and any that cannot be cached or read, are skipped: the read
 * that follows reports their errors. bd must have nothing else in flight. */
void cm_bcache_prefetch(cm_bcache *c, cm_bdev *bd, const uint64_t *blocks, size_t n);
/* Writes bh home if DIRTY (clearing it; set again if the write fails).
 * The caller holds a reference. */
int cm_bcache_write(cm_bcache *c, cm_bdev *bd, cm_bh *bh);
/* Writes every dirty buffer the journal does not own (b_jh 0), waits for
 * writes in flight, then flushes the device. Returns the first error;
 * buffers that failed stay dirty. */
int cm_bcache_sync(cm_bcache *c, cm_bdev *bd);
/* Write-back, for a cache short of clean buffers: writes home up to max
 * buffers that are DIRTY, not LOCKED and have no journal head (b_jh 0),
 * pipelined on bd's channel (bd must have nothing else in flight), and
 * leaves them clean and evictable. It does not flush: the caller decides
 * when the writes must be durable. Returns how many it wrote, or the first
 * error (those that failed stay dirty). Never waits on a LOCKED buffer. */
int cm_bcache_writeback(cm_bcache *c, cm_bdev *bd, uint32_t max);
/* For the supervisor: how many buffers are LOCKED by pid (b_owner), and the
 * block of one of them in *blocknr. */
uint32_t cm_bcache_locked_by(cm_bcache *c, int32_t pid, uint64_t *blocknr);

void *cm_bh_data(cm_bcache *c, cm_bh *bh);
/* The buffer head with index idx (b_index), or NULL out of range; for the
 * journal, whose journal heads are indexed like the buffers. */
cm_bh *cm_bcache_bh(cm_bcache *c, uint32_t idx);
/* Another reference to a buffer the caller already holds one on. */
void cm_bh_hold(cm_bh *bh);
/* For a block filled in memory rather than read (a new block). */
void cm_bh_set_uptodate(cm_bh *bh);
/* The caller holds a reference to an UPTODATE buffer. */
void cm_bh_mark_dirty(cm_bh *bh);
/* Forgets a modification: the buffer may be evicted without a write. */
void cm_bh_clear_dirty(cm_bh *bh);
/* lock_buffer/unlock_buffer: sets LOCKED, sleeping (holding no mutex) while
 * another thread has it. The caller holds a reference. 0 or -ESTALE. */
int cm_bh_lock(cm_bcache *c, cm_bh *bh);
void cm_bh_unlock(cm_bcache *c, cm_bh *bh);

static inline uint64_t cm_bh_blocknr(cm_bh *bh)
{
	return atomic_load_explicit(&bh->b_blocknr, memory_order_relaxed);
}

/* The journal head of bh, read without its lock (0: none), and its write
 * by the journal under the journal_head stripe. */
static inline cm_off cm_bh_jh(const cm_bh *bh)
{
	return __atomic_load_n(&bh->b_jh, __ATOMIC_ACQUIRE);
}

static inline void cm_bh_set_jh(cm_bh *bh, cm_off jh)
{
	__atomic_store_n(&bh->b_jh, jh, __ATOMIC_RELEASE);
}

static inline bool cm_bh_test(cm_bh *bh, enum cm_bh_flag flag)
{
	return atomic_load(&bh->b_state) & flag;
}

/* The JBD locks of a buffer, striped by block number (lockset.h). */
/* Blocks are hashed onto stripes, so that neighbouring runs of blocks
 * (two writers walking their own ranges in step) do not meet on a stripe. */
static inline uint32_t cm_bh_stripe(uint64_t blocknr)
{
	return (uint32_t)((blocknr * 0x9e3779b97f4a7c15ULL) >> 32) % CM_BH_STRIPES;
}

static inline cm_mutex *cm_bh_state_lock(cm_lockset *ls, uint64_t blocknr)
{
	return &ls->bh_state[cm_bh_stripe(blocknr)];
}

static inline cm_mutex *cm_bh_jh_lock(cm_lockset *ls, uint64_t blocknr)
{
	return &ls->journal_head[cm_bh_stripe(blocknr)];
}

/* The hash stripe covering blocknr, for lock statistics and tests. */
cm_mutex *cm_bcache_stripe(cm_bcache *c, uint64_t blocknr);
/* Calls fn for every stripe lock (for status). */
void cm_bcache_foreach_lock(cm_bcache *c, void (*fn)(cm_mutex *m, void *ctx), void *ctx);
void cm_bcache_stats_read(cm_bcache *c, cm_bcache_stats *ret);
/* Checks the hash chains and state invariants; meaningful only while no
 * other thread uses the cache. For assert() in tests. */
bool cm_bcache_check(cm_bcache *c);

#endif
