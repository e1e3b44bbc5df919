/* t_arena.c - arenas and child processes for the unit tests. */
#include "t_arena.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

cm_arena *t_arena_new(enum cm_locking_mode mode)
{
	cm_arena *a;
	int r = cm_arena_create(32 << 20, 8 << 20, 0, &a);

	if (r == 0)
		r = cm_layout_init(a, mode);
	if (r < 0) {
		printf("Bail out! arena: %d\n", r);
		exit(1);
	}
	return a;
}

unsigned t_child_watchdog_s = 120;

pid_t t_fork(int (*fn)(void *arg), void *arg)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		printf("Bail out! fork: %s\n", strerror(errno));
		exit(1);
	}
	if (pid == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(99);
		signal(SIGALRM, SIG_DFL);
		alarm(t_child_watchdog_s);
		_exit(fn(arg));
	}
	return pid;
}

bool t_exited_ok(int status)
{
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool t_was_killed(int status)
{
	return status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

int t_wait(pid_t pid, int timeout_ms)
{
	int status;

	for (int waited = 0; waited <= timeout_ms; waited++) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		usleep(1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}
