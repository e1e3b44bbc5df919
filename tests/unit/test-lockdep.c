/* test-lockdep.c - the run-time lock-order check of debug builds: taking
 * two ranked locks out of order, or two of the same rank, aborts naming
 * both; releasing a lock not held aborts. Each case runs in a child whose
 * stderr the test reads. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lockset.h"
#include "t_arena.h"
#include "tap.h"

static cm_layout *t_l;

struct t_case {
	const char *what;
	cm_mutex *first, *second; /* second NULL: unlock first without holding it */
	const char *expect;
};

static void t_run_case(const struct t_case *c)
{
	char out[512] = "";
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe(fds) < 0)
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

int main(void)
{
	cm_arena *a;

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
	cm_arena_free(a);
	return t_done();
}
