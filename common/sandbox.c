/* sandbox.c - capabilities (libcap), no_new_privs and the seccomp filter
 * (libseccomp); see sandbox.h. Any failure is returned: a service that
 * cannot confine itself must not go on to serve. */
#include "sandbox.h"

#include <errno.h>
#include <malloc.h>
#include <seccomp.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define CM_SANDBOX_MALLOC_ARENAS 8

static const int cm_base_syscalls[] = {
	SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap),
	SCMP_SYS(madvise), SCMP_SYS(mprotect), SCMP_SYS(futex),
	SCMP_SYS(clock_gettime), SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep),
	SCMP_SYS(sched_yield), SCMP_SYS(getpid), SCMP_SYS(gettid),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigaction),
	SCMP_SYS(restart_syscall), SCMP_SYS(tgkill), SCMP_SYS(write),
	SCMP_SYS(writev), SCMP_SYS(close), SCMP_SYS(exit), SCMP_SYS(exit_group),
	SCMP_SYS(getrandom), SCMP_SYS(rseq), SCMP_SYS(set_robust_list),
};

static bool cm_cap_kept(const cm_sandbox_policy *p, cap_value_t c)
{
	for (size_t i = 0; i < p->nkeep_caps; i++)
		if (p->keep_caps[i] == c)
			return true;
	return false;
}

static int cm_sandbox_caps(const cm_sandbox_policy *p)
{
	cap_t caps;
	int r = 0;

	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		if (cm_cap_kept(p, c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
			return -errno;
	}
	caps = cap_init();
	if (!caps)
		return -ENOMEM;
	if (p->nkeep_caps &&
	    (cap_set_flag(caps, CAP_PERMITTED, (int)p->nkeep_caps, p->keep_caps, CAP_SET) ||
	     cap_set_flag(caps, CAP_EFFECTIVE, (int)p->nkeep_caps, p->keep_caps, CAP_SET)))
		r = -EINVAL;
	if (!r && cap_set_proc(caps) < 0)
		r = -errno;
	cap_free(caps);
	return r;
}

static int cm_sandbox_filter(const cm_sandbox_policy *p)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int r = 0;

	if (!ctx)
		return -ENOMEM;
	for (size_t i = 0; !r && i < sizeof(cm_base_syscalls) / sizeof(int); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, cm_base_syscalls[i], 0);
	for (size_t i = 0; !r && i < p->nsyscalls; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, p->syscalls[i], 0);
	if (!r)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

int cm_sandbox_enter(const cm_sandbox_policy *p)
{
	int r;

	/* Without a fixed limit, glibc's malloc reads the CPU count from
	 * /sys (openat) the first time several threads need arenas. */
	if (mallopt(M_ARENA_MAX, CM_SANDBOX_MALLOC_ARENAS) != 1)
		return -EINVAL;
	r = cm_sandbox_caps(p);

	if (r < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return cm_sandbox_filter(p);
}
