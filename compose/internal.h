/* internal.h - the supervisor: starts an instance's services in order,
 * watches every pid, restarts by policy, owns the arena's lifetime and
 * serves status, kill and shutdown over nng. It never takes a filesystem
 * lock.
 *
 * States of the group:
 *   STARTING  -> READY       [sv_group_start]   every service reported ready
 *   READY     -> RESTARTING  [sv_group_restart] a group-policy service died,
 *                                               or a lock owner died
 *   RESTARTING-> READY       [sv_group_start]   in a new arena
 *   any       -> STOPPING    [sv_group_stop]    SIGTERM or a shutdown request
 * A service of policy "alone" that dies holding no lock is restarted by
 * itself [sv_service_restart]; its peers keep running and its clients
 * resubmit (chan.h).
 *
 * Locking: sv->mtx (a process-private pthread mutex) covers every field
 * below that the control thread reads: the arena pointer, state, services.
 * The main thread is the only writer.
 */
#ifndef SV_INTERNAL_H
#define SV_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "arena.h"
#include "layout.h"
#include "rundir.h"
#include "supervisor.pb-c.h"

#define SV_MAX_ARGS 32
#define SV_MAX_SETS 32
#define SV_READY_TIMEOUT_MS 15000
#define SV_RESTART_BURST 5        /* restarts allowed within SV_RESTART_WINDOW_S */
#define SV_RESTART_WINDOW_S 30

enum sv_policy { SV_RESTART_ALONE, SV_RESTART_GROUP, SV_RESTART_NEVER };
enum sv_state { SV_STARTING, SV_READY, SV_RESTARTING, SV_STOPPING };

typedef struct sv_service {
	char name[CM_SVC_NAME_MAX];   /* [immutable] */
	enum sv_policy policy;        /* [immutable] */
	char *argv[SV_MAX_ARGS + 1];  /* [immutable] expanded, NULL-terminated */
	pid_t pid;                    /* [mtx] 0 when not running */
	enum cm_svc_state state;      /* [mtx] */
	uint32_t restarts;            /* [mtx] */
	int last_status;              /* [mtx] exit status, -1 before any exit */
	int last_signal;              /* [mtx] 0 unless killed by a signal */
	uint64_t burst_start;         /* [main thread] start of the restart window */
	uint32_t burst;               /* [main thread] restarts in that window */
} sv_service;

typedef struct sv_config {
	const char *compose;
	char instance[72];
	char rundir[CM_PATH_MAX];
	const char *sets[SV_MAX_SETS]; /* KEY=VALUE */
	int nsets;
	uint64_t arena_size;
	enum cm_locking_mode locking;
} sv_config;

typedef struct sv_super {
	sv_config cfg;
	pthread_mutex_t mtx;
	cm_arena *arena;              /* [mtx] */
	uint64_t generation;          /* [mtx] group restarts so far */
	enum sv_state state;          /* [mtx] */
	sv_service svcs[CM_MAX_SVCS]; /* [mtx] as marked in sv_service */
	int nsvcs;                    /* [immutable] */
	uint32_t dead_seen;           /* [main thread] dead-owner reports handled */
	int sigfd;                    /* [main thread] */
} sv_super;

/* compose.c */
int sv_compose_load(sv_super *sv);
const char *sv_policy_name(enum sv_policy p);

/* group.c */
int sv_group_start(sv_super *sv);
void sv_group_stop(sv_super *sv);
int sv_group_restart(sv_super *sv, const char *why);
/* Reaps exited children and applies restart policies. */
int sv_group_reap(sv_super *sv);
/* A lock owner died (report in the arena's mailbox): group restart. */
int sv_group_check_dead_owners(sv_super *sv);
sv_service *sv_find(sv_super *sv, const char *name);

/* rundir.c: claim the run directory (a stale one left by a crash is
 * cleaned; a live instance is refused) and release it. */
int sv_rundir_claim(sv_super *sv);
void sv_rundir_release(sv_super *sv);

/* control.c */
int sv_control_start(sv_super *sv);
void sv_control_stop(sv_super *sv);

/* status.c: fills a status reply; called with sv->mtx held. */
int sv_status_fill(sv_super *sv, Ext3d__StatusReply *st);
void sv_status_free(Ext3d__StatusReply *st);

#endif
