/* wait.c - poll, spin by the machine's CPU count, then sleep on an event
 * count: the one waiting policy of rings, channels, doorbells, lanes and
 * LOCKED buffers (see wait.h). */
#include "wait.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

uint64_t cm_wait_spin_ns(void)
{
	static _Atomic int64_t spin_ns = -1;
	int64_t v = atomic_load_explicit(&spin_ns, memory_order_relaxed);

	if (v < 0) {
		const char *env = getenv("EXT3D_WAIT_SPIN_NS");
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		v = ncpu >= CM_WAIT_SPIN_MIN_CPUS ? CM_WAIT_SPIN_NS : 0;
		if (env && *env)
			v = strtoll(env, NULL, 10) > 0 ? (int64_t)strtoll(env, NULL, 10) : 0;
		if (v > CM_WAIT_SPIN_MAX_NS)
			v = CM_WAIT_SPIN_MAX_NS;
		atomic_store_explicit(&spin_ns, v, memory_order_relaxed);
	}
	return (uint64_t)v;
}

int cm_wait(cm_event *ev, cm_wait_poll *poll, void *ctx, int timeout_ms, int slice_ms)
{
	int r = poll(ctx);

	if (r != 0)
		return r;
	uint64_t start = cm_now_ns();
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : start + (uint64_t)timeout_ms * 1000000ULL;
	uint64_t spin_end = start + cm_wait_spin_ns();

	for (unsigned round = 0;; round++) {
		uint64_t now = cm_now_ns();

		if (now >= deadline)
			return -ETIMEDOUT;
		if (now < spin_end) {
			if (round < CM_WAIT_PAUSES)
				cm_cpu_relax();
			else
				(void)sched_yield();
		} else {
			uint64_t left_ms = (deadline - now + 999999) / 1000000;
			int sleep_ms = slice_ms;
			uint32_t seq = cm_event_prepare(ev);

			r = poll(ctx);
			if (r != 0) {
				cm_event_cancel(ev);
				return r;
			}
			if (deadline != UINT64_MAX && left_ms < (uint64_t)sleep_ms)
				sleep_ms = (int)left_ms;
			(void)cm_event_wait(ev, seq, sleep_ms);
		}
		r = poll(ctx);
		if (r != 0)
			return r;
	}
}
