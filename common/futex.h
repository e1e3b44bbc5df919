/* futex.h - process-shared futex waits and an event count built on them.
 *
 * Process-shared condition variables are not robust (a waiter that dies can
 * wedge them), so every cross-process wake-up in ext3d goes through these.
 *
 * cm_event is an event count: a waiter calls cm_event_prepare(), re-checks
 * its condition, then cm_event_wait() (or cm_event_cancel()); a signaller
 * publishes its change first, then calls cm_event_signal(). No wake-up is
 * lost: either the waiter sees the change when it re-checks, or its futex
 * wait sees the bumped sequence. After a wake, signallers make no more wake
 * syscalls until a waiter prepares again (woken), so a sleeper slow to run
 * does not cost one syscall per signal. A waiter that dies only leaves
 * `waiters` high, which costs one useless wake.
 */
#ifndef CM_FUTEX_H
#define CM_FUTEX_H

#include <stdatomic.h>
#include <stdint.h>

/* 0 when woken, -EAGAIN if *word != expected, -ETIMEDOUT, -EINTR.
 * timeout_ms < 0 waits forever. */
int cm_futex_wait(_Atomic uint32_t *word, uint32_t expected, int timeout_ms);
void cm_futex_wake(_Atomic uint32_t *word, int nwake);

typedef struct cm_event {
	_Atomic uint32_t seq;     /* [atomic] bumped by every signal */
	_Atomic uint32_t waiters; /* [atomic] threads between prepare and wait/cancel */
	_Atomic uint32_t woken;   /* [atomic] a wake went out since the last prepare */
} cm_event;

void cm_event_init(cm_event *e);
uint32_t cm_event_prepare(cm_event *e);
/* Returns as cm_futex_wait(); always ends the prepared wait. */
int cm_event_wait(cm_event *e, uint32_t seq, int timeout_ms);
void cm_event_cancel(cm_event *e);
void cm_event_signal(cm_event *e);

/* Monotonic clock in nanoseconds. */
uint64_t cm_now_ns(void);
/* A pause instruction for spin loops. */
static inline void cm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

#endif
