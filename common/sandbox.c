/* sandbox.c - the unprivileged user, capabilities (libcap), no_new_privs
 * and the seccomp filter (libseccomp); see sandbox.h. Any failure is
 * returned: a service that cannot confine itself must not go on to serve.
 * Order: bounding set (needs CAP_SETPCAP), user (needs CAP_SETUID and
 * CAP_SETGID), capability sets, no_new_privs, filter. */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <malloc.h>
#include <pwd.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "wait.h"

#define CM_SANDBOX_MALLOC_ARENAS 8

#if defined(__SANITIZE_ADDRESS__)
#define CM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CM_SANITIZED 1
#endif
#endif
#ifndef CM_SANITIZED
#define CM_SANITIZED 0
#endif
#if CM_SANITIZED
#include <sanitizer/lsan_interface.h>
#endif
#define CM_SANDBOX_USER "ext3d"
#define CM_SANDBOX_NOBODY 65534

static const char *cm_sandbox_user; /* [main thread, before enter] --user, or NULL */

/* What every service may call once confined. sysinfo: glibc's qsort
 * asks for the memory size (sysconf(_SC_PHYS_PAGES)) before sorting a
 * large array; it reveals nothing a service could misuse. */
static const int cm_base_syscalls[] = {
	SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap),
	SCMP_SYS(madvise), SCMP_SYS(mprotect), SCMP_SYS(futex),
	SCMP_SYS(clock_gettime), SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep),
	SCMP_SYS(sched_yield), SCMP_SYS(getpid), SCMP_SYS(gettid),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigaction),
	SCMP_SYS(restart_syscall), SCMP_SYS(tgkill), SCMP_SYS(write),
	SCMP_SYS(writev), SCMP_SYS(close), SCMP_SYS(exit), SCMP_SYS(exit_group),
	SCMP_SYS(getrandom), SCMP_SYS(rseq), SCMP_SYS(set_robust_list),
	SCMP_SYS(sysinfo),
};

/* What AddressSanitizer's runtime calls on its own in a sanitizer build:
 * the CPU set when a thread starts, an alternate signal stack per thread,
 * stack limits; and, to print a report, isatty() on stderr (the ioctl
 * TCGETS, allowed alone in cm_sandbox_filter): without it the filter kills
 * a service that found a bug before it says what (SIGSYS, not the
 * report). A release build allows none of them. */
static const int cm_sanitizer_syscalls[] = {
	SCMP_SYS(sched_getaffinity), SCMP_SYS(sigaltstack), SCMP_SYS(prlimit64),
	SCMP_SYS(getrlimit),
};

static bool cm_cap_kept(const cm_sandbox_policy *p, cap_value_t c)
{
	for (size_t i = 0; i < p->nkeep_caps; i++)
		if (p->keep_caps[i] == c)
			return true;
	return false;
}

/* Empties the bounding set but for the kept capabilities. */
static int cm_sandbox_bound(const cm_sandbox_policy *p)
{
	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		if (cm_cap_kept(p, c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
			return -errno;
	}
	return 0;
}

static int cm_sandbox_caps(const cm_sandbox_policy *p)
{
	cap_t caps = cap_init();
	int r = 0;

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

void cm_sandbox_set_user(const char *name)
{
	cm_sandbox_user = name && name[0] ? name : NULL;
}

/* The uid and gid to become: the named user (a name or a number), else
 * the ext3d system user, else nobody. */
static int cm_sandbox_resolve(uid_t *uid, gid_t *gid)
{
	const char *name = cm_sandbox_user ? cm_sandbox_user : CM_SANDBOX_USER;
	struct passwd pw, *found = NULL;
	char buf[4096], *end;
	unsigned long n;

	if (getpwnam_r(name, &pw, buf, sizeof(buf), &found) == 0 && found) {
		*uid = found->pw_uid;
		*gid = found->pw_gid;
		return 0;
	}
	n = strtoul(name, &end, 10);
	if (cm_sandbox_user && *end == 0 && end != name && n < UINT32_MAX) {
		*uid = (uid_t)n;
		*gid = (gid_t)n;
		return 0;
	}
	if (cm_sandbox_user) {
		cm_err("user '%s' does not exist (--user, SERVICE_USER)", name);
		return -ESRCH;
	}
	cm_warn("no user '%s' (compose/install-deps makes it): running as uid and gid %d",
		name, CM_SANDBOX_NOBODY);
	*uid = CM_SANDBOX_NOBODY;
	*gid = CM_SANDBOX_NOBODY;
	return 0;
}

/* True if every uid (real, effective, saved, fs) is uid, every gid is
 * gid, there are no supplementary groups, and root cannot be regained. */
static bool cm_sandbox_user_checks(uid_t uid, gid_t gid)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return false;
	if (ru != uid || eu != uid || su != uid || rg != gid || eg != gid || sg != gid ||
	    (uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid ||
	    getgroups(0, NULL) != 0)
		return false;
	return setresuid(0, 0, 0) < 0 && setresgid(0, 0, 0) < 0 && setgroups(0, NULL) < 0;
}

/* A service started as root becomes an unprivileged user; any other
 * service stays who it is. Changing credentials clears the parent-death
 * signal, so it is set again (and raised if the supervisor died). */
static int cm_sandbox_drop_user(const cm_sandbox_policy *p)
{
	pid_t parent = getppid();
	int deathsig = 0, r;
	uid_t uid;
	gid_t gid;

	if (getuid() != 0 && geteuid() != 0) {
		if (cm_sandbox_user)
			cm_warn("not started as root: --user=%s ignored", cm_sandbox_user);
		return 0;
	}
	r = cm_sandbox_resolve(&uid, &gid);
	if (r < 0)
		return r;
	if (uid == 0 || gid == 0) {
		cm_err("refusing to run as uid %u gid %u: choose an unprivileged user",
		       (unsigned)uid, (unsigned)gid);
		return -EPERM;
	}
	if (prctl(PR_GET_PDEATHSIG, &deathsig) < 0 ||
	    (p->nkeep_caps && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) ||
	    setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		return -errno;
	if (p->nkeep_caps && prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return -errno;
	if (!cm_sandbox_user_checks(uid, gid)) {
		cm_err("switched to uid %u gid %u, but the switch did not hold",
		       (unsigned)uid, (unsigned)gid);
		return -EPERM;
	}
	if (deathsig && prctl(PR_SET_PDEATHSIG, deathsig, 0, 0, 0) < 0)
		return -errno;
	if (deathsig && getppid() != parent)
		raise(deathsig);
	cm_info("running as uid %u gid %u", (unsigned)uid, (unsigned)gid);
	return 0;
}

static int cm_sandbox_filter(const cm_sandbox_policy *p)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int r = 0;

	if (!ctx)
		return -ENOMEM;
	for (size_t i = 0; !r && i < sizeof(cm_base_syscalls) / sizeof(int); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, cm_base_syscalls[i], 0);
	for (size_t i = 0; CM_SANITIZED && !r && i < sizeof(cm_sanitizer_syscalls) / sizeof(int); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, cm_sanitizer_syscalls[i], 0);
	if (CM_SANITIZED && !r) {
		const struct scmp_arg_cmp tcgets = {.arg = 1, .op = SCMP_CMP_EQ, .datum_a = TCGETS,
						    .datum_b = 0};

		r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, &tcgets);
	}
	for (size_t i = 0; !r && i < p->nsyscalls; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, p->syscalls[i], 0);
	if (!r)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

int cm_sandbox_keep_caps(const cm_sandbox_policy *p)
{
	int r = cm_sandbox_bound(p);

	return r < 0 ? r : cm_sandbox_caps(p);
}

/* Without a fixed limit, glibc's malloc reads the CPU count from /sys
 * (openat) the first time several threads need arenas; shrinking a thread
 * arena's heap makes it read /proc/sys/vm/overcommit_memory: heaps are
 * never trimmed. AddressSanitizer's allocator replaces glibc's and takes
 * neither setting. */
static int cm_sandbox_malloc(void)
{
#if CM_SANITIZED
	/* LeakSanitizer's check at exit stops the threads with ptrace, which
	 * the filter forbids: it checks once now, before the filter, and
	 * not again. */
	__lsan_do_leak_check();
	return 0;
#else
	if (mallopt(M_ARENA_MAX, CM_SANDBOX_MALLOC_ARENAS) != 1 ||
	    mallopt(M_TRIM_THRESHOLD, INT_MAX) != 1)
		return -EINVAL;
	return 0;
#endif
}

int cm_sandbox_enter(const cm_sandbox_policy *p)
{
	int r = cm_sandbox_malloc();

	if (r < 0)
		return r;
	/* The waiting policy reads the CPU count from /sys too: now, once. */
	(void)cm_wait_spin_ns();
	r = cm_sandbox_bound(p);
	if (r == 0)
		r = cm_sandbox_drop_user(p);
	if (r == 0)
		r = cm_sandbox_caps(p);
	if (r < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return cm_sandbox_filter(p);
}
