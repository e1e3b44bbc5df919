/* service.h - what every service process does the same way: take the arena
 * descriptor and slot from the supervisor's flags, attach and check the
 * arena, report dead lock owners to it, stop on SIGTERM, say it is ready,
 * beat the slot's heartbeat (layout.h) from a thread until fini.
 *
 * Flags every service accepts (add CM_SERVICE_OPTIONS to getopt_long's
 * table and pass unknown options to cm_service_option()):
 *   --arena-fd=N   the arena memfd, inherited from the supervisor
 *   --slot=K       this service's slot in the arena
 *   --user=NAME    the user to become when started as root (sandbox.h);
 *                  empty: the default (ext3d, else nobody)
 *   --test-forbidden-syscall   after ready, make a forbidden syscall (tests
 *                  use it to see the seccomp filter kill the process)
 */
#ifndef CM_SERVICE_H
#define CM_SERVICE_H

#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>

#include "arena.h"
#include "layout.h"

enum { CM_OPT_ARENA_FD = 0x1000, CM_OPT_SLOT, CM_OPT_TEST_FORBIDDEN, CM_OPT_USER };

#define CM_SERVICE_OPTIONS                                                    \
	{"arena-fd", required_argument, NULL, CM_OPT_ARENA_FD},               \
	{"slot", required_argument, NULL, CM_OPT_SLOT},                       \
	{"user", required_argument, NULL, CM_OPT_USER},                       \
	{"test-forbidden-syscall", no_argument, NULL, CM_OPT_TEST_FORBIDDEN}

typedef struct cm_service {
	const char *name;
	int arena_fd;
	int slot;
	bool test_forbidden_syscall;
	cm_arena *arena;
	cm_layout *layout;
	pthread_t beat;          /* [main thread] the heartbeat thread, once beating */
	bool beating;            /* [main thread] */
} cm_service;

void cm_service_init(cm_service *svc, const char *name);
/* 1 if opt was one of CM_SERVICE_OPTIONS, 0 if not, -EINVAL if bad. */
int cm_service_option(cm_service *svc, int opt, const char *arg);
/* Attaches the arena, checks the slot names this service, installs the
 * SIGTERM/SIGINT handler, starts the heartbeat. Logs the reason on
 * failure. */
int cm_service_attach(cm_service *svc);
/* Marks the slot READY (call after cm_sandbox_enter). */
void cm_service_ready(cm_service *svc);
/* True once SIGTERM or SIGINT arrived. */
bool cm_service_stopping(void);
void cm_service_fini(cm_service *svc);

#endif
