/* test-fcounter.c - fuzzy counters in a shared arena: small changes stay in
 * their slot, a slot past the batch folds into the global value, the sum is
 * exact while the read stays within batch x slots of it after four
 * processes change the counter at once (two of them sharing a slot), reads
 * can be clamped at 0, and a counter lock whose owner died is reported,
 * never waited on. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "fcounter.h"
#include "t_arena.h"
#include "tap.h"

#define T_PROCS 4
#define T_ADDS 20000

static cm_arena *t_a;
static cm_lockset *t_ls;
static cm_fcounter *t_c;

static void t_basics(void)
{
	int64_t sum = 0;

	cm_fc_init(t_c, CM_FC_FREE_BLOCKS, 1000, 8);
	t_is_int(cm_fc_add(t_ls, t_c, 3, -5), 0, "subtract 5 in slot 3");
	t_is_int(cm_fc_read(t_c), 1000, "under the batch: the global value is unchanged");
	t_is_int(cm_fc_sum(t_ls, t_c, &sum), 0, "sum");
	t_is_int(sum, 995, "the sum sees the slot");
	cm_fc_add(t_ls, t_c, 3, -3);
	t_is_int(cm_fc_read(t_c), 992, "at the batch the slot folds into the global value");
	t_is_int(atomic_load(&t_c->slot[3].delta), 0, "and is empty again");
	cm_fc_add(t_ls, t_c, 3 + CM_FC_SLOTS, 2);
	t_is_int(atomic_load(&t_c->slot[3].delta), 2, "slot numbers wrap at CM_FC_SLOTS");
	cm_fc_init(t_c, CM_FC_DIRS, 3, 0);
	t_is_int(t_c->batch, CM_FC_DEFAULT_BATCH, "batch 0 means the default");
	cm_fc_add(t_ls, t_c, 0, -CM_FC_DEFAULT_BATCH);
	t_is_int(cm_fc_read(t_c), 3 - CM_FC_DEFAULT_BATCH, "the global value may go negative");
	t_is_int(cm_fc_read_positive(t_c), 0, "read_positive clamps it at 0");
}

/* Process p adds +3 and -1 in turns through slot p (processes 2 and 3
 * share slot 2). */
static int t_adder(void *arg)
{
	uint32_t p = (uint32_t)(uintptr_t)arg, slot = p < 3 ? p : 2;

	for (int i = 0; i < T_ADDS; i++)
		if (cm_fc_add(t_ls, t_c, slot, i % 2 ? -1 : 3) < 0)
			return 2;
	return 0;
}

static void t_processes(void)
{
	pid_t pids[T_PROCS];
	bool ok = true;
	int64_t sum = 0, want = 50 + (int64_t)T_PROCS * (T_ADDS / 2) * 2;

	cm_fc_init(t_c, CM_FC_FREE_INODES, 50, 16);
	for (uint32_t p = 0; p < T_PROCS; p++)
		pids[p] = t_fork(t_adder, (void *)(uintptr_t)p);
	for (int p = 0; p < T_PROCS; p++)
		ok &= t_exited_ok(t_wait(pids[p], 60000));
	t_ok(ok, "%d processes x %d adds, two of them sharing a slot", T_PROCS, T_ADDS);
	t_is_int(cm_fc_sum(t_ls, t_c, &sum), 0, "sum");
	t_is_int(sum, want, "the sum is exact");
	t_ok(llabs(cm_fc_read(t_c) - sum) <= 16 * 3,
	     "the global value is within batch x slots used (%lld against %lld)",
	     (long long)cm_fc_read(t_c), (long long)sum);
}

static int t_die_holding(void *arg)
{
	(void)arg;
	if (cm_mutex_lock(&t_ls->counter[CM_FC_FREE_BLOCKS]) < 0)
		return 2;
	raise(SIGKILL);
	return 3;
}

static void t_dead_owner(void)
{
	int64_t sum;

	cm_fc_init(t_c, CM_FC_FREE_BLOCKS, 10, 4);
	t_ok(t_was_killed(t_wait(t_fork(t_die_holding, NULL), 10000)),
	     "a process dies holding the counter lock");
	t_is_int(cm_fc_add(t_ls, t_c, 1, 1), 0, "an add under the batch needs no lock");
	t_is_int(cm_fc_add(t_ls, t_c, 1, 5), -EOWNERDEAD, "a fold reports the dead owner");
	t_is_int(atomic_load(&t_c->slot[1].delta), 6, "and leaves the delta in its slot");
	t_is_int(cm_fc_sum(t_ls, t_c, &sum), -EOWNERDEAD, "so does an exact sum");
}

int main(void)
{
	t_a = t_arena_new(CM_LOCKING_FINE);
	t_ls = &cm_layout_get(t_a)->locks;
	t_c = cm_arena_ptr(t_a, cm_arena_alloc(t_a, sizeof(*t_c), 64), sizeof(*t_c));
	if (!t_c)
		return 99;
	t_basics();
	t_processes();
	t_dead_owner();
	return t_done();
}
