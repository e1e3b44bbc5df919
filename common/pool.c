/* pool.c - fixed-size object pools in the arena (pool.h): an array of
 * objects and a lock-free free-list stack of their indexes, whose head packs
 * a generation count with the top index so that a pop that raced with a
 * pop-push of the same index fails its compare-and-swap (no ABA). */
#include "pool.h"

#include <errno.h>
#include <string.h>

#define CM_POOL_ALIGN 16

static uint32_t *cm_pool_links(const cm_arena *a, const cm_pool *p)
{
	return cm_arena_ptr(a, p->next, (uint64_t)p->nobj * sizeof(uint32_t));
}

int cm_pool_create(cm_arena *a, uint32_t objsize, uint32_t nobj, bool in_data, cm_off *ret)
{
	uint64_t size = ((uint64_t)objsize + CM_POOL_ALIGN - 1) & ~(uint64_t)(CM_POOL_ALIGN - 1);
	cm_off hdr, objs, next;
	cm_pool *p;
	uint32_t *links;

	if (!objsize || !nobj || nobj == CM_POOL_NONE || size > UINT32_MAX)
		return -EINVAL;
	hdr = cm_arena_alloc(a, sizeof(cm_pool), 64);
	next = cm_arena_alloc(a, (uint64_t)nobj * sizeof(uint32_t), 64);
	objs = in_data ? cm_arena_alloc_data(a, size * nobj, 4096)
		       : cm_arena_alloc(a, size * nobj, 64);
	if (!hdr || !next || !objs)
		return -ENOMEM;
	p = cm_arena_ptr(a, hdr, sizeof(*p));
	p->objsize = (uint32_t)size;
	p->nobj = nobj;
	p->objs = objs;
	p->next = next;
	links = cm_pool_links(a, p);
	for (uint32_t i = 0; i < nobj; i++)
		links[i] = i + 1 < nobj ? i + 2 : 0;
	atomic_init(&p->head, 1);
	*ret = hdr;
	return 0;
}

uint32_t cm_pool_get(cm_arena *a, cm_pool *p)
{
	uint32_t idx = cm_pool_get_raw(a, p);

	if (idx != CM_POOL_NONE)
		memset(cm_pool_obj(a, p, idx), 0, p->objsize);
	return idx;
}

uint32_t cm_pool_get_raw(cm_arena *a, cm_pool *p)
{
	uint32_t *links = cm_pool_links(a, p);
	uint64_t head = atomic_load_explicit(&p->head, memory_order_acquire);
	uint32_t top, in_use, high;

	for (;;) {
		top = (uint32_t)head;
		if (top == 0 || top > p->nobj) {
			atomic_fetch_add_explicit(&p->failures, 1, memory_order_relaxed);
			return CM_POOL_NONE;
		}
		uint64_t next = ((head >> 32) + 1) << 32 |
				atomic_load_explicit((_Atomic uint32_t *)&links[top - 1],
						     memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(&p->head, &head, next,
							  memory_order_acq_rel,
							  memory_order_acquire))
			break;
	}
	in_use = atomic_fetch_add_explicit(&p->in_use, 1, memory_order_relaxed) + 1;
	high = atomic_load_explicit(&p->high, memory_order_relaxed);
	while (in_use > high &&
	       !atomic_compare_exchange_weak_explicit(&p->high, &high, in_use,
						      memory_order_relaxed, memory_order_relaxed))
		;
	return top - 1;
}

void cm_pool_put(cm_arena *a, cm_pool *p, uint32_t idx)
{
	uint32_t *links = cm_pool_links(a, p);
	uint64_t head = atomic_load_explicit(&p->head, memory_order_relaxed);

	if (idx >= p->nobj)
		return;
	do {
		atomic_store_explicit((_Atomic uint32_t *)&links[idx], (uint32_t)head,
				      memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(&p->head, &head,
							((head >> 32) + 1) << 32 | (idx + 1),
							memory_order_release, memory_order_relaxed));
	atomic_fetch_sub_explicit(&p->in_use, 1, memory_order_relaxed);
}

void *cm_pool_obj(const cm_arena *a, const cm_pool *p, uint32_t idx)
{
	if (idx >= p->nobj)
		return NULL;
	return cm_arena_ptr(a, cm_pool_off(p, idx), p->objsize);
}

uint32_t cm_pool_idx(const cm_arena *a, const cm_pool *p, const void *obj)
{
	return (uint32_t)((cm_arena_off(a, obj) - p->objs) / p->objsize);
}

cm_off cm_pool_off(const cm_pool *p, uint32_t idx)
{
	return p->objs + (uint64_t)idx * p->objsize;
}
