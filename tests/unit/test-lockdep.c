/* test-lockdep.c - the run-time lock-order check of debug builds: taking
 * two ranked locks out of order, or two of the same rank, aborts naming
 * both; releasing a lock not held aborts; waiting on a ring, an event or a
 * LOCKED buffer while holding a lock aborts naming the lock, and the same
 * waits holding none do not. Each case runs in a child whose stderr the
 * test reads. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bcache.h"
#include "lockset.h"
#include "ring.h"
#include "t_arena.h"
#include "tap.h"

static cm_layout *t_l;
static cm_ring *t_ring;       /* empty */
static cm_event *t_ev;
static cm_bcache *t_cache;
static cm_arena *t_cache_arena;
static uint64_t t_block = 5;  /* a new one per case: dead children leave theirs LOCKED */

struct t_case {
	const char *what;
	cm_mutex *first, *second; /* second NULL: unlock first without holding it */
	const char *expect;
};

/* A pipe for a child's stderr; when none can be made, a failed test
 * naming the case rather than a silent skip. */
static bool t_stderr_pipe(int fds[2], const char *what)
{
	if (pipe(fds) == 0)
		return true;
	t_ok(false, "%s: pipe for the child's stderr: %s", what, strerror(errno));
	return false;
}

static void t_run_case(const struct t_case *c)
{
	char out[512] = "";
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	if (!t_stderr_pipe(fds, c->what))
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		if (!c->second) {
			cm_mutex_unlock(c->first);
			_exit(0);
		}
		cm_mutex_lock(c->first);
		cm_mutex_lock(c->second);
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	status = t_wait(pid, 10000);
	t_ok(status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	     "%s aborts", c->what);
	t_ok(strstr(out, c->expect) != NULL, "%s: message names both locks", c->what);
	if (!strstr(out, c->expect))
		t_diag("stderr: %s", out);
}

static int t_wait_ring(void)
{
	uint8_t rec[64];

	return cm_ring_pop(t_ring, rec, 5) == -ETIMEDOUT ? 0 : 3;
}

static int t_wait_event(void)
{
	uint32_t seq = cm_event_prepare(t_ev);

	return cm_event_wait(t_ev, seq, 5) == -ETIMEDOUT ? 0 : 3;
}

/* Waits for a buffer this thread LOCKED itself: with a lock held, the check
 * aborts before the wait; without, the arena is discarded meanwhile (by the
 * parent after the child has been waiting a while) and the wait ends. */
static int t_wait_buffer(void)
{
	cm_bh *bh = cm_bcache_get(t_cache, t_block);

	if (!bh || cm_bh_lock(t_cache, bh) < 0)
		return 2;
	return cm_bh_lock(t_cache, bh) == -ESTALE ? 0 : 3;
}

struct t_wait_case {
	const char *what;
	int (*wait)(void);
	const char *expect;
};

/* Runs c->wait in a child holding lock (or none): SIGABRT with a message
 * naming the lock when one is held, a clean exit otherwise. */
static void t_run_wait(const struct t_wait_case *c, cm_mutex *lock)
{
	char out[512] = "";
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	if (!t_stderr_pipe(fds, c->what))
		return;
	if (lock) { /* fresh: an earlier case's child died holding it */
		char name[CM_LOCK_NAME_MAX];
		snprintf(name, sizeof(name), "%s", lock->name);
		cm_mutex_init(lock, lock->rank, name);
	}
	t_block++;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		if (lock && cm_mutex_lock(lock) < 0)
			_exit(2);
		_exit(c->wait());
	}
	close(fds[1]);
	if (!lock && c->wait == t_wait_buffer) {
		usleep(200 * 1000);
		atomic_store(&t_cache_arena->hdr->state, CM_ARENA_DISCARDED);
	}
	n = read(fds[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	status = t_wait(pid, 10000);
	if (!lock) {
		atomic_store(&t_cache_arena->hdr->state, CM_ARENA_LIVE);
		t_ok(t_exited_ok(status), "%s holding no lock is allowed", c->what);
		return;
	}
	t_ok(status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	     "%s holding %s aborts", c->what, lock->name);
	t_ok(strstr(out, c->expect) && strstr(out, lock->name),
	     "%s: the message says what waited and names %s", c->what, lock->name);
	if (!strstr(out, c->expect))
		t_diag("stderr: %s", out);
}

int main(void)
{
	cm_arena *a;
	cm_off off;

#ifndef CM_LOCKDEP
	t_skip_all("built without the lock-order check (-Dlockdep=false)");
#endif
	a = t_arena_new(CM_LOCKING_FINE);
	t_l = cm_layout_get(a);
	alarm(60);
	const struct t_case cases[] = {
		{"j_state_lock under j_list_lock", &t_l->locks.j_list_lock,
		 &t_l->locks.j_state_lock,
		 "taking j_state_lock (rank 20) while holding j_list_lock (rank 60)"},
		{"bh_state under journal_head", &t_l->locks.journal_head[0], &t_l->locks.bh_state[0],
		 "taking bh_state (rank 50) while holding journal_head (rank 70)"},
		{"two group locks at once", &t_l->locks.group[1], &t_l->locks.group[2],
		 "taking group (rank 90) while holding group (rank 90)"},
		{"big_lock under j_state_lock", &t_l->locks.j_state_lock, &t_l->locks.big_lock,
		 "taking big_lock (rank 10) while holding j_state_lock (rank 20)"},
		{"unlocking a lock not held", &t_l->locks.j_revoke_lock, NULL,
		 "releasing j_revoke_lock, which this thread does not hold"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		t_run_case(&cases[i]);

	t_cache_arena = a;
	off = cm_arena_alloc(a, cm_ring_bytes(64, 8), 64);
	t_ring = off ? cm_arena_ptr(a, off, cm_ring_bytes(64, 8)) : NULL;
	t_ev = cm_arena_ptr(a, cm_arena_alloc(a, sizeof(*t_ev), 64), sizeof(*t_ev));
	if (!t_ring || !t_ev || cm_ring_init(t_ring, 1, 64, 8, false, NULL) < 0 ||
	    cm_bcache_create(a, 16 * 1024, 1024, &off) < 0 || cm_bcache_attach(a, off, &t_cache) < 0)
		return printf("Bail out! cannot set up the waits\n"), 1;
	cm_event_init(t_ev);
	const struct t_wait_case waits[] = {
		{"waiting on an empty ring", t_wait_ring, "waiting on an empty ring"},
		{"waiting on an event", t_wait_event, "waiting on an event"},
		{"waiting for a LOCKED buffer", t_wait_buffer, "waiting for a LOCKED buffer"},
	};
	cm_mutex *held[] = {&t_l->locks.j_list_lock, &t_l->locks.bh_state[3]};
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		for (size_t k = 0; k < sizeof(held) / sizeof(held[0]); k++)
			t_run_wait(&waits[i], held[k]);
		t_run_wait(&waits[i], NULL);
	}
	t_run_wait(&waits[0], cm_bcache_stripe(t_cache, 9));
	cm_bcache_detach(t_cache);
	cm_arena_free(a);
	return t_done();
}
