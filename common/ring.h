/* ring.h - fixed-size-record queues in the arena between processes.
 *
 * A ring is a power-of-two array of records with two counters: head (records
 * published, written only by producers) and tail (records consumed, written
 * only by the consumer). A producer fills the slot at head and then
 * publishes it by advancing head (release); a consumer reads the slot at
 * tail and then frees it by advancing tail. Either side may die at any
 * point: a half-written record is beyond head and never seen, a record being
 * read is still before tail and is read again by the next consumer.
 *
 * Single-producer rings need no lock. Multi-producer rings serialise their
 * producers on prod_lock (a leaf cm_mutex, never held while waiting).
 *
 * Each side keeps the last value it saw of the other's counter and reads
 * the shared one only when the ring looks full or empty (the counters live
 * on separate cache lines, as do the events).
 *
 * Waiting: cm_wait (wait.h): a spin fitted to the CPU count, then a sleep
 * on a futex event.
 * not_empty may be redirected to an event shared by several rings (a
 * service's doorbell), so one consumer can sleep on many rings at once.
 * Events are referenced by offsets relative to the ring, valid in every
 * process's mapping.
 */
#ifndef CM_RING_H
#define CM_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "futex.h"
#include "lock.h"
#include "wait.h"

#define CM_RING_MAGIC 0x52494e47u /* "RING" */

typedef struct cm_ring {
	uint32_t magic;              /* [immutable] CM_RING_MAGIC */
	uint32_t version;            /* [immutable] the record layout both ends speak */
	uint32_t rec_size;           /* [immutable] bytes per record, multiple of 8 */
	uint32_t capacity;           /* [immutable] records, a power of two */
	uint32_t multi_producer;     /* [immutable] producers take prod_lock */
	int64_t not_empty_rel;       /* [immutable] event signalled on publish */
	cm_mutex prod_lock;          /* multi-producer rings only */
	alignas(64) cm_event not_full;      /* producers waiting for a free slot */
	alignas(64) cm_event own_not_empty; /* the default target of not_empty_rel */
	alignas(64) _Atomic uint64_t head; /* [producer, prod_lock if multi] published */
	uint64_t tail_seen;                /* [producer, prod_lock if multi] a past tail */
	alignas(64) _Atomic uint64_t tail; /* [consumer] consumed */
	uint64_t head_seen;                /* [consumer] a past head, may be stale */
	alignas(64) uint8_t slots[];
} cm_ring;

/* Bytes a ring of this geometry occupies. */
uint64_t cm_ring_bytes(uint32_t rec_size, uint32_t capacity);
/* not_empty: an event to signal on publish, or NULL for the ring's own. */
int cm_ring_init(cm_ring *r, uint32_t version, uint32_t rec_size, uint32_t capacity,
		 bool multi_producer, cm_event *not_empty);
/* Checks a ring found in the arena: -EPROTO if it is not one of this shape. */
int cm_ring_check(const cm_ring *r, uint32_t version, uint32_t rec_size);
/* Empties the ring; only while no producer and no consumer uses it. */
void cm_ring_reset(cm_ring *r);

/* 0, -EAGAIN when full, -EOWNERDEAD (multi-producer lock lost). */
int cm_ring_try_push(cm_ring *r, const void *rec);
/* Waits up to timeout_ms (<0: forever) for space: 0, -ETIMEDOUT, -EOWNERDEAD. */
int cm_ring_push(cm_ring *r, const void *rec, int timeout_ms);
/* Copies the oldest record without consuming it: 0, or -EAGAIN when empty. */
int cm_ring_peek(cm_ring *r, void *rec);
/* Consumes the record cm_ring_peek() returned. */
void cm_ring_consume(cm_ring *r);
/* Peek and consume, waiting up to timeout_ms: 0 or -ETIMEDOUT. */
int cm_ring_pop(cm_ring *r, void *rec, int timeout_ms);
bool cm_ring_empty(cm_ring *r);
cm_event *cm_ring_not_empty(cm_ring *r);

/* Rings shared with an untrusted peer (a client's session segment): the
 * caller supplies the geometry it set up, so nothing it acts on comes from
 * the shared header; single producer; the ring's own events only. A peer
 * that scribbles on head or tail can make the caller see garbage records
 * (which it validates) or a full ring, never an access outside the ring. */
typedef struct cm_ring_geom {
	uint32_t rec_size;
	uint32_t capacity;
} cm_ring_geom;

int cm_ring_peek_untrusted(cm_ring *r, const cm_ring_geom *g, void *rec);
int cm_ring_push_untrusted(cm_ring *r, const cm_ring_geom *g, const void *rec);

#endif
