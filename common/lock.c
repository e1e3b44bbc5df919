/* lock.c - robust ranked mutexes and the per-thread lock-order checker.
 *
 * The lockdep stack is thread-local: it records the locks this thread holds
 * in acquisition order. Out-of-order release is allowed (ranks constrain
 * acquisition only). The owner pid is written after acquisition and cleared
 * before release; the supervisor reads it to find locks held by a process
 * that died (a racy read is fine: a miss is caught by EOWNERDEAD later).
 * The same stack tells the wait paths (rings, events, LOCKED buffers)
 * whether the thread is about to sleep holding a lock.
 */
#include "lock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "futex.h"
#include "log.h"

#define CM_LOCKDEP_DEPTH 16

static cm_dead_owner_hook *cm_dead_hook;
static void *cm_dead_hook_ctx;

/* The big lock this thread holds, and how many enters it owes leaves. */
static _Thread_local cm_mutex *cm_big;
static _Thread_local int cm_big_depth;

#ifdef CM_LOCKDEP
static _Thread_local cm_mutex *cm_held[CM_LOCKDEP_DEPTH];
static _Thread_local int cm_nheld;

static void cm_lockdep_acquire(cm_mutex *m)
{
	for (int i = 0; i < cm_nheld; i++) {
		if (cm_held[i]->rank >= m->rank) {
			fprintf(stderr,
				"lock order violation: taking %s (rank %u) while holding %s (rank %u)\n",
				m->name, m->rank, cm_held[i]->name, cm_held[i]->rank);
			abort();
		}
	}
}

static void cm_lockdep_push(cm_mutex *m)
{
	if (cm_nheld == CM_LOCKDEP_DEPTH) {
		fprintf(stderr, "lockdep: more than %d locks held taking %s\n",
			CM_LOCKDEP_DEPTH, m->name);
		abort();
	}
	cm_held[cm_nheld++] = m;
}

static void cm_lockdep_release(cm_mutex *m)
{
	for (int i = cm_nheld - 1; i >= 0; i--) {
		if (cm_held[i] == m) {
			memmove(&cm_held[i], &cm_held[i + 1],
				(size_t)(cm_nheld - i - 1) * sizeof(cm_held[0]));
			cm_nheld--;
			return;
		}
	}
	fprintf(stderr, "lockdep: releasing %s, which this thread does not hold\n", m->name);
	abort();
}

void cm_mutex_assert_held(cm_mutex *m)
{
	for (int i = 0; i < cm_nheld; i++)
		if (cm_held[i] == m)
			return;
	fprintf(stderr, "lockdep: %s must be held here\n", m->name);
	abort();
}

void cm_lockdep_assert_none_held(const char *what)
{
	/* The big lock is lowest in rank, so first if held; it is given up
	 * at the sleep itself (cm_event_wait). */
	if (cm_nheld == 0 || (cm_nheld == 1 && cm_held[0] == cm_big))
		return;
	fprintf(stderr, "lockdep: %s while holding %s (rank %u)\n", what,
		cm_held[cm_nheld - 1]->name, cm_held[cm_nheld - 1]->rank);
	abort();
}
#else
static void cm_lockdep_acquire(cm_mutex *m) { (void)m; }
static void cm_lockdep_push(cm_mutex *m) { (void)m; }
static void cm_lockdep_release(cm_mutex *m) { (void)m; }

void cm_mutex_assert_held(cm_mutex *m)
{
	if (atomic_load(&m->owner) != cm_self_pid())
		abort();
}

void cm_lockdep_assert_none_held(const char *what)
{
	(void)what;
}
#endif

void cm_lock_set_dead_owner_hook(cm_dead_owner_hook *hook, void *ctx)
{
	cm_dead_hook = hook;
	cm_dead_hook_ctx = ctx;
}

int cm_big_enter(cm_mutex *big)
{
	int r;

	if (cm_big == big) {
		cm_big_depth++;
		return 0;
	}
	r = cm_mutex_lock(big);
	if (r < 0)
		return r;
	cm_big = big;
	cm_big_depth = 1;
	return 0;
}

void cm_big_leave(void)
{
	if (cm_big && --cm_big_depth == 0) {
		cm_mutex_unlock(cm_big);
		cm_big = NULL;
	}
}

cm_mutex *cm_big_release(void)
{
	if (cm_big)
		cm_mutex_unlock(cm_big);
	return cm_big;
}

void cm_big_reacquire(cm_mutex *big)
{
	/* A dead holder poisoned it: the state behind it is lost, and the
	 * thread no longer holds it (the next enter reports the error). */
	if (big && cm_mutex_lock(big) < 0) {
		cm_big = NULL;
		cm_big_depth = 0;
	}
}

static _Atomic int32_t cm_pid_cache;

static void cm_pid_forget(void)
{
	atomic_store_explicit(&cm_pid_cache, 0, memory_order_relaxed);
}

static void cm_pid_register(void)
{
	(void)pthread_atfork(NULL, NULL, cm_pid_forget);
}

int32_t cm_self_pid(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int32_t pid = atomic_load_explicit(&cm_pid_cache, memory_order_relaxed);

	if (pid)
		return pid;
	(void)pthread_once(&once, cm_pid_register);
	pid = (int32_t)getpid();
	atomic_store_explicit(&cm_pid_cache, pid, memory_order_relaxed);
	return pid;
}

int cm_mutex_init(cm_mutex *m, uint32_t rank, const char *name)
{
	pthread_mutexattr_t attr;
	int r;

	memset(m, 0, sizeof(*m));
	m->rank = rank;
	snprintf(m->name, sizeof(m->name), "%s", name);
	r = pthread_mutexattr_init(&attr);
	if (r)
		return -r;
	r = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	if (!r)
		r = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	if (!r)
		r = pthread_mutex_init(&m->mtx, &attr);
	pthread_mutexattr_destroy(&attr);
	return -r;
}

/* We own m's pthread mutex after EOWNERDEAD, or after a clean acquisition
 * of a lock already poisoned: settle it and give it back. */
static int cm_mutex_dead_owner(cm_mutex *m, int pthread_r)
{
	int32_t dead = atomic_load(&m->owner);

	if (pthread_r == EOWNERDEAD) {
		atomic_store(&m->poisoned, 1);
		cm_log(CM_LOG_WARN, "lock %s: owner pid %d died holding it; its state is lost",
		       m->name, (int)dead);
		if (cm_dead_hook)
			cm_dead_hook(m, dead, cm_dead_hook_ctx);
		pthread_mutex_consistent(&m->mtx);
	}
	pthread_mutex_unlock(&m->mtx);
	return -EOWNERDEAD;
}

static int cm_mutex_acquired(cm_mutex *m, int pthread_r)
{
	if (pthread_r == EOWNERDEAD || atomic_load(&m->poisoned))
		return cm_mutex_dead_owner(m, pthread_r);
	atomic_store(&m->owner, cm_self_pid());
	atomic_fetch_add_explicit(&m->acquisitions, 1, memory_order_relaxed);
	cm_lockdep_push(m);
	return 0;
}

/* A holder on another CPU usually lets go within a few hundred cycles (the
 * journal's critical sections are short): a waiter first watches the owner
 * word for about a microsecond, then sleeps in the kernel. Bounded, so that
 * a waiter never spins long while the holder it waits for is off-CPU. */
#define CM_MUTEX_SPINS 200

static int cm_mutex_spin(cm_mutex *m)
{
	int r = EBUSY;

	for (int i = 0; i < CM_MUTEX_SPINS && r == EBUSY; i++) {
		cm_cpu_relax();
		if (atomic_load_explicit(&m->owner, memory_order_relaxed) == 0)
			r = pthread_mutex_trylock(&m->mtx);
	}
	return r;
}

int cm_mutex_lock(cm_mutex *m)
{
	uint64_t t0;
	int r;

	cm_lockdep_acquire(m);
	r = pthread_mutex_trylock(&m->mtx);
	if (r == EBUSY)
		r = cm_mutex_spin(m);
	if (r == EBUSY) {
		t0 = cm_now_ns();
		r = pthread_mutex_lock(&m->mtx);
		atomic_fetch_add_explicit(&m->contended, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&m->wait_ns, cm_now_ns() - t0, memory_order_relaxed);
	}
	if (r && r != EOWNERDEAD)
		return -r;
	return cm_mutex_acquired(m, r);
}

int cm_mutex_trylock(cm_mutex *m)
{
	int r;

	/* No order check: a trylock cannot deadlock, which is why the kernel
	 * (and ext3d) uses one to take bh_state while holding j_list_lock. */
	r = pthread_mutex_trylock(&m->mtx);
	if (r && r != EOWNERDEAD)
		return -r;
	return cm_mutex_acquired(m, r);
}

void cm_mutex_unlock(cm_mutex *m)
{
	cm_lockdep_release(m);
	atomic_store(&m->owner, 0);
	pthread_mutex_unlock(&m->mtx);
}
