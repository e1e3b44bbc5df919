/* test-lock.c - the robust ranked mutex across processes: a holder that
 * dies is reported (to the arena's dead-owner mailbox), the lock is poisoned
 * so that nobody hangs on it or uses the lost state, waiters blocked on it
 * wake; owner pid and counters (acquisitions, contention, wait time). */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lockset.h"
#include "t_arena.h"
#include "tap.h"

static cm_layout *t_l;

static int t_die_holding(void *arg)
{
	cm_mutex *m = arg;

	if (cm_mutex_lock(m) != 0)
		return 2;
	raise(SIGKILL);
	return 3;
}

static int t_lock_expect_dead(void *arg)
{
	cm_mutex *m = arg;

	return cm_mutex_lock(m) == -EOWNERDEAD ? 0 : 1;
}

static int t_hold_then_exit(void *arg)
{
	cm_mutex *m = arg;

	if (cm_mutex_lock(m) != 0)
		return 2;
	usleep(200000);
	_exit(0); /* still holding it */
}

static void t_dead_owner(void)
{
	cm_mutex *m = &t_l->locks.j_list_lock;
	pid_t pid = t_fork(t_die_holding, m);
	int status = t_wait(pid, 10000);

	t_ok(status >= 0 && WIFSIGNALED(status), "holder of j_list_lock died by SIGKILL");
	t_is_int(atomic_load(&m->owner), pid, "owner field names the dead holder");
	cm_layout_report_dead_owners(t_l);
	t_is_int(cm_mutex_lock(m), -EOWNERDEAD, "next locker gets -EOWNERDEAD");
	t_is_int(atomic_load(&t_l->dead.reports), 1, "dead owner reported to the mailbox");
	t_is_int(atomic_load(&t_l->dead.pid), pid, "mailbox names the dead pid");
	t_is_str(t_l->dead.lock, "j_list_lock", "mailbox names the lock");
	t_ok(atomic_load(&m->poisoned), "lock is poisoned: its state is lost");
	status = t_wait(t_fork(t_lock_expect_dead, m), 10000);
	t_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	     "a third process gets -EOWNERDEAD too, without hanging");
	t_is_int(cm_mutex_trylock(m), -EOWNERDEAD, "trylock of a poisoned lock: -EOWNERDEAD");
}

static void t_waiter_wakes(void)
{
	cm_mutex *m = &t_l->locks.j_revoke_lock;
	pid_t holder = t_fork(t_hold_then_exit, m);

	usleep(50000);
	t_is_int(cm_mutex_lock(m), -EOWNERDEAD,
		 "a waiter blocked on a lock whose holder exits wakes with -EOWNERDEAD");
	t_wait(holder, 10000);
}

static int t_hold_briefly(void *arg)
{
	cm_mutex *m = arg;

	if (cm_mutex_lock(m) != 0)
		return 2;
	usleep(100000);
	cm_mutex_unlock(m);
	return 0;
}

static void t_counters(void)
{
	cm_mutex *m = &t_l->locks.group[5];
	pid_t pid;

	for (int i = 0; i < 1000; i++) {
		cm_mutex_lock(m);
		if (i == 0)
			t_is_int(atomic_load(&m->owner), getpid(), "owner is our pid while held");
		cm_mutex_unlock(m);
	}
	t_is_int(atomic_load(&m->owner), 0, "owner is 0 after unlock");
	t_is_int((int64_t)atomic_load(&m->acquisitions), 1000, "1000 acquisitions counted");
	t_is_int((int64_t)atomic_load(&m->contended), 0, "uncontended: none counted as contended");
	pid = t_fork(t_hold_briefly, m);
	while (atomic_load(&m->owner) != pid)
		usleep(1000);
	t_is_int(cm_mutex_lock(m), 0, "lock taken after another process released it");
	cm_mutex_unlock(m);
	t_is_int((int64_t)atomic_load(&m->contended), 1, "that acquisition counted as contended");
	t_ok(atomic_load(&m->wait_ns) > 10000000ULL, "wait time recorded (%llu ns)",
	     (unsigned long long)atomic_load(&m->wait_ns));
	t_wait(pid, 10000);
}

static void t_rank_order(void)
{
	cm_lockset *ls = &t_l->locks;
	cm_mutex *chain[] = {
		&ls->j_state_lock, &ls->bh_state[3], &ls->j_list_lock, &ls->journal_head[3],
		&ls->group[1], &ls->counter[0],
	};
	int ok = 1;

	for (size_t i = 0; i < sizeof(chain) / sizeof(chain[0]); i++)
		ok &= cm_mutex_lock(chain[i]) == 0;
	t_ok(ok, "the whole chain taken in rank order");
	t_is_int(cm_mutex_trylock(&ls->bh_state[7]), 0,
		 "trylock of bh_state under j_list_lock is allowed (the kernel's back-off)");
	cm_mutex_unlock(&ls->bh_state[7]);
	for (size_t i = sizeof(chain) / sizeof(chain[0]); i > 0; i--) {
		cm_mutex_unlock(chain[i - 1]);
		ok &= atomic_load(&chain[i - 1]->owner) == 0;
	}
	t_ok(ok, "released in reverse order: none has an owner left");
	/* Debug builds: the outermost rank again, which the lock-order check
	 * allows only if every release left this thread's held stack. */
	t_is_int(cm_mutex_lock(chain[0]), 0, "the outermost lock can be taken again");
	cm_mutex_unlock(chain[0]);
}

int main(void)
{
	cm_arena *a = t_arena_new(CM_LOCKING_FINE);

	alarm(120);
	t_l = cm_layout_get(a);
	t_rank_order();
	t_counters();
	t_dead_owner();
	t_waiter_wakes();
	cm_arena_free(a);
	return t_done();
}
