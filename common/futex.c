/* futex.c - shared (not process-private) futex operations and the event
 * count of futex.h. The futex words live in the arena, so FUTEX_PRIVATE_FLAG
 * must never be used here. An event wait asserts (lockdep, debug builds)
 * that the waiter holds no arena lock. */
#include "futex.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lock.h"

int cm_futex_wait(_Atomic uint32_t *word, uint32_t expected, int timeout_ms)
{
	struct timespec ts, *tsp = NULL;

	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
		tsp = &ts;
	}
	if (syscall(SYS_futex, word, FUTEX_WAIT, expected, tsp, NULL, 0) < 0)
		return -errno;
	return 0;
}

void cm_futex_wake(_Atomic uint32_t *word, int nwake)
{
	(void)syscall(SYS_futex, word, FUTEX_WAKE, nwake, NULL, NULL, 0);
}

void cm_event_init(cm_event *e)
{
	atomic_init(&e->seq, 0);
	atomic_init(&e->waiters, 0);
	atomic_init(&e->woken, 0);
}

uint32_t cm_event_prepare(cm_event *e)
{
	uint32_t seq;

	atomic_fetch_add(&e->waiters, 1);
	seq = atomic_load(&e->seq);
	/* After reading seq: a signal that bumps it later either finds woken
	 * clear and wakes, or set by a wake that came after our read, which
	 * our futex wait then sees as a changed seq. */
	atomic_store(&e->woken, 0);
	return seq;
}

int cm_event_wait(cm_event *e, uint32_t seq, int timeout_ms)
{
	int r;

	cm_mutex *big = cm_big_release();

	cm_lockdep_assert_none_held("waiting on an event");
	r = cm_futex_wait(&e->seq, seq, timeout_ms);
	cm_big_reacquire(big);

	atomic_fetch_sub(&e->waiters, 1);
	return r;
}

void cm_event_cancel(cm_event *e)
{
	atomic_fetch_sub(&e->waiters, 1);
}

void cm_event_signal(cm_event *e)
{
	atomic_fetch_add(&e->seq, 1);
	if (atomic_load(&e->waiters) > 0 && !atomic_load_explicit(&e->woken, memory_order_relaxed) &&
	    !atomic_exchange(&e->woken, 1))
		cm_futex_wake(&e->seq, INT_MAX);
}

uint64_t cm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}
