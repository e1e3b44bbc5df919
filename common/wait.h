/* wait.h - the one way ext3d waits for another thread or process: poll a
 * condition, spin briefly, then sleep on an event count (futex.h).
 *
 * The spin fits the machine. A waiter that spins holds a CPU; when there
 * are no more CPUs than threads at work, the thread it waits for may be
 * the one it keeps off the CPU. So the spin is a few pause instructions,
 * then sched_yield() rounds (which hand the CPU to a runnable thread of the
 * same core at once), for at most CM_WAIT_SPIN_NS, and only on a machine
 * of CM_WAIT_SPIN_MIN_CPUS CPUs or more. Below that a call is a client
 * thread, an ext3d-fuse thread, an inode-svc worker and alloc-svc or
 * journald-svc, more than the CPUs: on 2 CPUs, spinning doubled the CPU a
 * create costs and took the second client's gain away (bench/writepath.md).
 * EXT3D_WAIT_SPIN_NS, read once per process, sets the budget instead (0:
 * never spin; at most CM_WAIT_SPIN_MAX_NS). Then the waiter prepares the
 * event, polls once more (no wake-up is lost between the poll and the
 * sleep) and sleeps for at most a slice, polling again after each.
 */
#ifndef CM_WAIT_H
#define CM_WAIT_H

#include <stdint.h>

#include "futex.h"

#define CM_WAIT_SPIN_NS 20000   /* the most a waiter spins before sleeping */
#define CM_WAIT_SPIN_MIN_CPUS 4 /* fewer CPUs: no spin */
#define CM_WAIT_SPIN_MAX_NS 1000000 /* the most EXT3D_WAIT_SPIN_NS may ask */
#define CM_WAIT_PAUSES 64       /* pause rounds before the spin yields */

/* The condition: 0 to keep waiting, any other value ends the wait and is
 * returned by cm_wait (a result, or -errno). Called again after every
 * wake-up; may consume what it finds. */
typedef int cm_wait_poll(void *ctx);

/* Waits on ev until poll says stop, or timeout_ms passes (-ETIMEDOUT;
 * < 0: no timeout). slice_ms bounds each sleep, for conditions whose
 * signaller may not signal ev (a process that died). */
int cm_wait(cm_event *ev, cm_wait_poll *poll, void *ctx, int timeout_ms, int slice_ms);

/* The spin budget cm_wait uses on this machine (0 on one CPU). */
uint64_t cm_wait_spin_ns(void);

#endif
