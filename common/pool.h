/* pool.h - fixed-size objects in the arena that can be freed: a slab per
 * object type (journal transactions, handles, revoke records, frozen block
 * copies), where the arena itself only ever grows.
 *
 * A pool is an array of nobj objects of objsize bytes, created once in the
 * metadata zone (or the data zone, for block copies that blockdev-svc writes
 * from). Objects are named by index, so every process of the instance means
 * the same object whatever its mapping. The free list is a lock-free stack
 * whose head carries a generation count (no ABA); a process killed inside
 * cm_pool_get or cm_pool_put leaks at most that one object and never
 * corrupts the list, so the pool takes no lock and has no rank.
 */
#ifndef CM_POOL_H
#define CM_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "arena.h"

#define CM_POOL_NONE UINT32_MAX

typedef struct cm_pool {
	uint32_t objsize;           /* [immutable] bytes, a multiple of 16 */
	uint32_t nobj;              /* [immutable] */
	cm_off objs;                /* [immutable] nobj * objsize bytes */
	cm_off next;                /* [immutable] uint32_t[nobj]: free-list links */
	_Atomic uint64_t head;      /* [atomic] generation << 32 | first free index + 1 */
	_Atomic uint32_t in_use;    /* [atomic] objects handed out */
	_Atomic uint32_t high;      /* [atomic] the most ever in use at once */
	_Atomic uint64_t failures;  /* [atomic] gets that found the pool empty */
} cm_pool;

/* Carves nobj objects of objsize bytes (rounded up to 16; in the data zone
 * when in_data) and a pool header out of a; the header's offset goes to
 * *ret. -EINVAL for a zero size or count, -ENOMEM when the arena is full. */
int cm_pool_create(cm_arena *a, uint32_t objsize, uint32_t nobj, bool in_data, cm_off *ret);
/* A zeroed object's index, or CM_POOL_NONE when every object is in use. */
uint32_t cm_pool_get(cm_arena *a, cm_pool *p);
/* The same, leaving the object as it was freed (for objects that keep
 * state across uses, such as locks initialised once). */
uint32_t cm_pool_get_raw(cm_arena *a, cm_pool *p);
/* Returns object idx (from cm_pool_get) to the pool. */
void cm_pool_put(cm_arena *a, cm_pool *p, uint32_t idx);
/* The object idx of p in this process's mapping, or NULL if idx is out of
 * range (an index read from shared memory is checked before use). */
void *cm_pool_obj(const cm_arena *a, const cm_pool *p, uint32_t idx);
/* The index of an object of p, from its pointer. */
uint32_t cm_pool_idx(const cm_arena *a, const cm_pool *p, const void *obj);
/* The object's offset in the arena (for blockdev requests on data-zone pools). */
cm_off cm_pool_off(const cm_pool *p, uint32_t idx);

#endif
