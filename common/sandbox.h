/* sandbox.h - confine a service once it is initialised: keep only the
 * listed capabilities (the bounding set loses the rest too), set
 * no_new_privs, and install a seccomp allow-list whose default action kills
 * the process (SIGSYS). The base list (sandbox.c) covers what every service
 * needs: memory, futexes, clocks, signals, logging to stderr and exit. */
#ifndef CM_SANDBOX_H
#define CM_SANDBOX_H

#include <stddef.h>
#include <sys/capability.h>

typedef struct cm_sandbox_policy {
	const int *syscalls;          /* allowed beyond the base list */
	size_t nsyscalls;
	const cap_value_t *keep_caps; /* capabilities to keep (effective+permitted) */
	size_t nkeep_caps;
} cm_sandbox_policy;

int cm_sandbox_enter(const cm_sandbox_policy *p);

#endif
