/* t_arena.h - a laid-out arena for unit tests, and child-process helpers. */
#ifndef T_ARENA_H
#define T_ARENA_H

#include <stdbool.h>
#include <sys/types.h>

#include "arena.h"
#include "layout.h"

/* A fresh 32 MiB arena (8 MiB data zone) laid out with the lock set; exits
 * the test on failure. */
cm_arena *t_arena_new(enum cm_locking_mode mode);
/* Seconds a forked child may run before SIGALRM ends it (0: forever). */
extern unsigned t_child_watchdog_s;

/* Forks; the child runs fn(arg) (a copy of the parent's memory at the fork)
 * and _exits with its return value. It dies with the parent and has its
 * own watchdog, so nothing outlives a hung or failed run. */
pid_t t_fork(int (*fn)(void *arg), void *arg);
/* Waits for pid: its raw wait status, or -1 after timeout_ms (then kills it). */
int t_wait(pid_t pid, int timeout_ms);
bool t_exited_ok(int status);
bool t_was_killed(int status);

#endif
