/* test-pool.c - arena object pools: objects come back zeroed and distinct,
 * an empty pool says so, freed objects are reused, and four processes
 * taking and returning objects at once never get the same object twice. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>

#include "pool.h"
#include "t_arena.h"
#include "tap.h"

#define T_NOBJ 64
#define T_PROCS 4
#define T_ROUNDS 20000

static cm_arena *t_a;
static cm_pool *t_p;

static void t_basics(void)
{
	uint32_t got[T_NOBJ];
	bool distinct = true, zeroed = true;

	for (int i = 0; i < T_NOBJ; i++) {
		got[i] = cm_pool_get(t_a, t_p);
		uint8_t *o = cm_pool_obj(t_a, t_p, got[i]);
		for (uint32_t k = 0; o && k < t_p->objsize; k++)
			zeroed &= o[k] == 0;
		if (o)
			memset(o, 0xa5, t_p->objsize);
		for (int k = 0; k < i; k++)
			distinct &= got[k] != got[i];
	}
	t_ok(distinct, "%d gets give %d distinct objects", T_NOBJ, T_NOBJ);
	t_ok(zeroed, "every object comes back zeroed");
	t_is_int(cm_pool_get(t_a, t_p), CM_POOL_NONE, "an empty pool gives CM_POOL_NONE");
	t_is_int((int64_t)atomic_load(&t_p->failures), 1, "the failure is counted");
	t_ok(cm_pool_obj(t_a, t_p, T_NOBJ) == NULL, "an index out of range maps to NULL");
	cm_pool_put(t_a, t_p, got[7]);
	t_is_int(cm_pool_get(t_a, t_p), got[7], "a freed object is reused");
	t_is_int(cm_pool_idx(t_a, t_p, cm_pool_obj(t_a, t_p, got[3])), got[3],
		 "index and pointer convert both ways");
	for (int i = 0; i < T_NOBJ; i++)
		cm_pool_put(t_a, t_p, got[i]);
	t_is_int(atomic_load(&t_p->in_use), 0, "all returned");
	t_is_int(atomic_load(&t_p->high), T_NOBJ, "the high-water mark is kept");
}

/* Each object holds an owner word: a process that gets an object already
 * owned has found a double allocation. */
static int t_hammer(void *arg)
{
	uint32_t me = (uint32_t)(uintptr_t)arg, held[4];

	for (int r = 0; r < T_ROUNDS; r++) {
		int n = 1 + r % 4;
		for (int i = 0; i < n; i++) {
			held[i] = cm_pool_get(t_a, t_p);
			if (held[i] == CM_POOL_NONE)
				return 3;
			_Atomic uint32_t *owner = cm_pool_obj(t_a, t_p, held[i]);
			uint32_t zero = 0;
			if (!atomic_compare_exchange_strong(owner, &zero, me))
				return 2;
		}
		for (int i = 0; i < n; i++) {
			_Atomic uint32_t *owner = cm_pool_obj(t_a, t_p, held[i]);
			atomic_store(owner, 0);
			cm_pool_put(t_a, t_p, held[i]);
		}
	}
	return 0;
}

static void t_processes(void)
{
	pid_t pids[T_PROCS];
	bool ok = true;

	for (int i = 0; i < T_PROCS; i++)
		pids[i] = t_fork(t_hammer, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < T_PROCS; i++)
		ok &= t_exited_ok(t_wait(pids[i], 60000));
	t_ok(ok, "%d processes x %d rounds: no object handed out twice", T_PROCS, T_ROUNDS);
	t_is_int(atomic_load(&t_p->in_use), 0, "every object back in the pool");
}

int main(void)
{
	cm_off off;

	t_a = t_arena_new(CM_LOCKING_FINE);
	t_is_int(cm_pool_create(t_a, 0, 4, false, &off), -EINVAL, "zero size refused");
	t_is_int(cm_pool_create(t_a, 40, T_NOBJ, false, &off), 0, "pool created");
	t_p = cm_arena_ptr(t_a, off, sizeof(*t_p));
	t_is_int(t_p->objsize, 48, "object size rounded up to 16");
	t_basics();
	t_processes();
	return t_done();
}
