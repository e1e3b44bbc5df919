/* sandbox.h - confine a service once it is initialised (it has opened its
 * image, arena and sockets): a service started as root becomes an
 * unprivileged user, so that an escape from the filter owns no root file;
 * keep only the listed capabilities (the bounding set loses the rest too),
 * set no_new_privs, and install a seccomp allow-list whose default action
 * kills the process (SIGSYS). The base list (sandbox.c) covers what every
 * service needs: memory, futexes, clocks, signals, logging to stderr and
 * exit.
 *
 * The user: the one named with cm_sandbox_set_user() (a name or a number;
 * the services' --user flag, from the instance option SERVICE_USER), else
 * the system user "ext3d" that compose/install-deps creates, else uid and
 * gid 65534 (nobody), with a warning. Supplementary groups are dropped;
 * real, effective, saved and fs ids all change, and the switch is checked
 * to be one-way. A service not started as root keeps its user. */
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

/* name: NULL or "" for the default. Call before cm_sandbox_enter(). */
void cm_sandbox_set_user(const char *name);
int cm_sandbox_enter(const cm_sandbox_policy *p);
/* Only the bounding set and capability sets of cm_sandbox_enter: the
 * process keeps its user, no filter. */
int cm_sandbox_keep_caps(const cm_sandbox_policy *p);
/* sandbox_fuse.c: confines a FUSE front end before exec: as root, only
 * CAP_SYS_ADMIN, no_new_privs and a seccomp deny-list; not as root,
 * nothing (fusermount3 is set-uid). */
int cm_sandbox_fuse_exec(void);

#endif
