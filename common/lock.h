/* lock.h - the one mutex type for every lock that several processes take.
 *
 * A cm_mutex is a process-shared robust pthread mutex that lives in the
 * arena, with a rank, a name and counters. Ranks: a thread may only take a
 * lock whose rank is greater than every rank it holds; debug builds
 * (CM_LOCKDEP) check that on every acquisition and abort naming both locks.
 * The ranks themselves, and why each order is what it is, are in lockset.h.
 * The checker also asserts that no lock is held across a wait
 * (cm_lockdep_assert_none_held).
 *
 * Dead owners: when a holder dies, the next locker gets EOWNERDEAD from
 * pthreads. The state behind the lock is then lost (docs/locking.md, "Dead
 * owners"), so cm_mutex_lock() never hands it out as if nothing happened. It
 * poisons the lock, reports the dead owner through the hook of
 * cm_lock_set_dead_owner_hook, makes the pthread mutex consistent only so
 * that nobody hangs or gets ENOTRECOVERABLE on it, releases it, and returns
 * -EOWNERDEAD. Every later locker also gets -EOWNERDEAD without holding the
 * lock, until the arena is discarded by a group restart.
 */
#ifndef CM_LOCK_H
#define CM_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define CM_LOCK_NAME_MAX 24

/* Aligned to a cache line so that neighbouring locks (stripes, the lock
 * set's fields) do not share one between CPUs. */
typedef struct __attribute__((aligned(64))) cm_mutex {
	/* What every lock and unlock touches, in the first cache line. */
	pthread_mutex_t mtx;            /* robust, process-shared */
	_Atomic int32_t owner;          /* [mtx] holder's pid; racy read ok: dead-owner scans */
	_Atomic uint32_t poisoned;      /* [atomic] a holder died: state behind it lost */
	uint32_t rank;                  /* [immutable] see lockset.h */
	_Atomic uint64_t acquisitions;  /* [atomic] */
	/* Only on contention, in debug builds and for status. */
	_Atomic uint64_t contended;     /* [atomic] acquisitions that had to wait */
	_Atomic uint64_t wait_ns;       /* [atomic] total time spent waiting */
	char name[CM_LOCK_NAME_MAX];    /* [immutable] */
} cm_mutex;

/* Called with the poisoned lock and the pid that died holding it (0 if
 * unknown). Runs in the process that found the dead owner. */
typedef void cm_dead_owner_hook(cm_mutex *m, int32_t dead_pid, void *ctx);
void cm_lock_set_dead_owner_hook(cm_dead_owner_hook *hook, void *ctx);

int cm_mutex_init(cm_mutex *m, uint32_t rank, const char *name);
/* The big lock of --locking=big behaves like the kernel's BKL: a thread
 * holds it across a whole operation (a journal handle from start to stop),
 * takes it again without blocking when it already holds it (a depth
 * count), and gives it up while it sleeps: cm_event_wait, through which
 * every wait in ext3d goes, releases it and takes it back. */
int cm_big_enter(cm_mutex *big);
void cm_big_leave(void);
/* Around a sleep: the big lock this thread held (released), or NULL. */
cm_mutex *cm_big_release(void);
void cm_big_reacquire(cm_mutex *big);

/* This process's pid, without a system call (glibc no longer caches it);
 * right in a child after fork too. */
int32_t cm_self_pid(void);
/* 0 with the lock held, or -EOWNERDEAD without it (see above). */
int cm_mutex_lock(cm_mutex *m);
/* 0 with the lock held, -EBUSY, or -EOWNERDEAD without it. */
int cm_mutex_trylock(cm_mutex *m);
void cm_mutex_unlock(cm_mutex *m);
/* Aborts unless this thread holds m (debug builds: by the lockdep stack). */
void cm_mutex_assert_held(cm_mutex *m);
/* Debug builds: aborts, naming the lock and what, if this thread holds any
 * cm_mutex; a no-op otherwise. Every wait on a ring, an event or a LOCKED
 * buffer calls it: no arena lock is held while waiting (docs/locking.md),
 * since the thread that would end the wait may need that lock. */
void cm_lockdep_assert_none_held(const char *what);

#endif
