/* ring.c - the arena ring; see ring.h for the protocol and why it survives
 * the death of either end. Memory order: a record's bytes are written before
 * the release store of head and read after the acquire load of it; a slot is
 * reused only after the acquire load of a tail that passed it. */
#include "ring.h"

#include <errno.h>
#include <string.h>

#include "lockset.h"

uint64_t cm_ring_bytes(uint32_t rec_size, uint32_t capacity)
{
	return sizeof(cm_ring) + (uint64_t)rec_size * capacity;
}

int cm_ring_init(cm_ring *r, uint32_t version, uint32_t rec_size, uint32_t capacity,
		 bool multi_producer, cm_event *not_empty)
{
	if (rec_size == 0 || rec_size % 8 || capacity == 0 || (capacity & (capacity - 1)))
		return -EINVAL;
	r->version = version;
	r->rec_size = rec_size;
	r->capacity = capacity;
	r->multi_producer = multi_producer;
	cm_event_init(&r->not_full);
	cm_event_init(&r->own_not_empty);
	if (!not_empty)
		not_empty = &r->own_not_empty;
	r->not_empty_rel = (int64_t)((uint8_t *)not_empty - (uint8_t *)r);
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	r->tail_seen = 0;
	r->head_seen = 0;
	r->magic = CM_RING_MAGIC;
	if (multi_producer)
		return cm_mutex_init(&r->prod_lock, CM_RANK_RING_PRODUCER, "ring_producer");
	return 0;
}

int cm_ring_check(const cm_ring *r, uint32_t version, uint32_t rec_size)
{
	if (r->magic != CM_RING_MAGIC || r->version != version || r->rec_size != rec_size ||
	    r->capacity == 0 || (r->capacity & (r->capacity - 1)))
		return -EPROTO;
	return 0;
}

void cm_ring_reset(cm_ring *r)
{
	r->tail_seen = atomic_load(&r->head);
	atomic_store(&r->tail, r->tail_seen);
	cm_event_signal(&r->not_full);
}

cm_event *cm_ring_not_empty(cm_ring *r)
{
	return (cm_event *)((uint8_t *)r + r->not_empty_rel);
}

static void *cm_ring_slot_geom(cm_ring *r, const cm_ring_geom *g, uint64_t n)
{
	return r->slots + (uint64_t)g->rec_size * (n & (g->capacity - 1));
}

static void *cm_ring_slot(cm_ring *r, uint64_t n)
{
	cm_ring_geom g = {r->rec_size, r->capacity};

	return cm_ring_slot_geom(r, &g, n);
}

int cm_ring_try_push(cm_ring *r, const void *rec)
{
	uint64_t head;
	int ret = 0;

	if (r->multi_producer) {
		ret = cm_mutex_lock(&r->prod_lock);
		if (ret < 0)
			return ret;
	}
	head = atomic_load_explicit(&r->head, memory_order_relaxed);
	if (head - r->tail_seen >= r->capacity)
		r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
	if (head - r->tail_seen >= r->capacity) {
		ret = -EAGAIN;
	} else {
		memcpy(cm_ring_slot(r, head), rec, r->rec_size);
		atomic_store_explicit(&r->head, head + 1, memory_order_release);
	}
	if (r->multi_producer)
		cm_mutex_unlock(&r->prod_lock);
	if (ret == 0)
		cm_event_signal(cm_ring_not_empty(r));
	return ret;
}

struct cm_ring_push_arg {
	cm_ring *r;
	const void *rec;
};

static int cm_ring_push_poll(void *arg)
{
	struct cm_ring_push_arg *x = arg;
	int ret = cm_ring_try_push(x->r, x->rec);

	return ret == -EAGAIN ? 0 : ret == 0 ? 1 : ret;
}

int cm_ring_push(cm_ring *r, const void *rec, int timeout_ms)
{
	struct cm_ring_push_arg x = {r, rec};
	int ret = cm_ring_push_poll(&x);

	if (ret == 0) {
		cm_lockdep_assert_none_held("waiting for room in a ring");
		ret = cm_wait(&r->not_full, cm_ring_push_poll, &x, timeout_ms, 10);
	}
	return ret > 0 ? 0 : ret;
}

bool cm_ring_empty(cm_ring *r)
{
	return atomic_load_explicit(&r->head, memory_order_acquire) ==
	       atomic_load_explicit(&r->tail, memory_order_relaxed);
}

int cm_ring_peek(cm_ring *r, void *rec)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	/* head_seen may be stale behind tail (a reset, a new consumer). */
	if ((int64_t)(r->head_seen - tail) <= 0)
		r->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
	if ((int64_t)(r->head_seen - tail) <= 0)
		return -EAGAIN;
	memcpy(rec, cm_ring_slot(r, tail), r->rec_size);
	return 0;
}

void cm_ring_consume(cm_ring *r)
{
	/* Only the consumer writes tail. */
	atomic_store_explicit(&r->tail, atomic_load_explicit(&r->tail, memory_order_relaxed) + 1,
			      memory_order_release);
	cm_event_signal(&r->not_full);
}

struct cm_ring_pop_arg {
	cm_ring *r;
	void *rec;
};

static int cm_ring_pop_poll(void *arg)
{
	struct cm_ring_pop_arg *x = arg;

	if (cm_ring_peek(x->r, x->rec) < 0)
		return 0;
	cm_ring_consume(x->r);
	return 1;
}

int cm_ring_pop(cm_ring *r, void *rec, int timeout_ms)
{
	struct cm_ring_pop_arg x = {r, rec};
	int ret = cm_ring_pop_poll(&x);

	if (ret == 0) {
		cm_lockdep_assert_none_held("waiting on an empty ring");
		ret = cm_wait(cm_ring_not_empty(r), cm_ring_pop_poll, &x, timeout_ms, 10);
	}
	return ret > 0 ? 0 : ret;
}

int cm_ring_peek_untrusted(cm_ring *r, const cm_ring_geom *g, void *rec)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (atomic_load_explicit(&r->head, memory_order_acquire) == tail)
		return -EAGAIN;
	memcpy(rec, cm_ring_slot_geom(r, g, tail), g->rec_size);
	return 0;
}

int cm_ring_push_untrusted(cm_ring *r, const cm_ring_geom *g, const void *rec)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	if (head - atomic_load_explicit(&r->tail, memory_order_acquire) >= g->capacity)
		return -EAGAIN;
	memcpy(cm_ring_slot_geom(r, g, head), rec, g->rec_size);
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
	cm_event_signal(&r->own_not_empty);
	return 0;
}
