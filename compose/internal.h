/* internal.h - the supervisor: starts an instance's services in order,
 * watches every pid and heartbeat, restarts by policy, owns the arena's
 * lifetime and serves status, kill and shutdown over nng. It never takes a
 * filesystem lock.
 *
 * States of the group:
 *   STARTING  -> READY       [sv_group_start]   every service reported ready
 *   READY     -> RESTARTING  [sv_group_restart] a group-policy service died,
 *                                               or a lock owner died, or any
 *                                               service died holding state
 *                                               (sv_group_held_by) or in the
 *                                               middle of a call that is not
 *                                               idempotent
 *   RESTARTING-> READY       [sv_group_start]   in a new arena, after the
 *                                               dead service's restart delay
 *   STARTING,
 *   RESTARTING-> RESTARTING  [sv_reap_starting] a service of the group died
 *                                               while the group started: the
 *                                               start is abandoned at once
 *   any       -> FAILED      [sv_fail]          a service crashed by itself
 *                                               SV_CRASH_LOOP times in a row,
 *                                               each within SV_CRASH_WINDOW_MS
 *                                               of its start
 *   any       -> STOPPING    [sv_group_stop]    SIGTERM or a shutdown request
 * A service of policy "alone" that dies holding nothing (no lock, cache
 * stripe, LOCKED buffer or journal handle) is restarted by itself [sv_tick]
 * after its delay; its peers keep running and its clients resubmit
 * (chan.h). Resubmission executes again a request the dead service was
 * executing, which only block I/O survives: any other service (alloc-svc,
 * journald-svc) that dies mid-request restarts the group. Status calls the
 * instance degraded (or stalled) while such a service is not ready.
 *
 * Restart delays (policy.c): SV_BACKOFF_MIN_MS, doubling with each death
 * that comes before the service was ready for SV_STABLE_MS, capped at
 * backoff_max_ms (SV_BACKOFF_MAX_MS unless set); a service that stayed up longer starts over from the
 * first delay. A death from outside (a signal the service did not
 * raise itself) never gives up; only crashes of its own making (a fault
 * signal or a non-zero exit) count towards a crash loop.
 *
 * Watchdog: a ready service whose heartbeat (layout.h) is older than
 * watchdog_ms is reported stalled, SIGKILLed and restarted like a dead one.
 *
 * Mount services (mount.c): a "mount" line of the compose file is a FUSE
 * front end (ext3d-fuse), a libext3d client outside the arena. It runs
 * only while the instance has a mount point (${MOUNT}, from `ext3d mount`
 * or compose/up --mount; ${MOUNT_OPTS} is "-oLIST" with their -o LIST), gets no --arena-fd or --slot, is ready once its
 * mount shows in the mount table (a new mount, not the one there before its
 * start), and is left running by a group restart (its session re-attaches
 * by itself). When it dies, the mount it left (known by its mount id, not
 * by asking the dead connection) has its FUSE connection aborted and is
 * detached, whatever is still open there, and it starts again by its
 * policy at the same place; a
 * crash loop unmounts it and marks it failed, the instance keeps running.
 * Unmounting (`ext3d umount`, shutdown, a failed instance) comes before
 * its stop, so that its exit is not taken for a death.
 *
 * Locking: sv->mtx (a process-private pthread mutex) covers every field
 * below that the control thread reads: the arena pointer, state, reason,
 * services. The main thread is the only writer.
 */
#ifndef SV_INTERNAL_H
#define SV_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "arena.h"
#include "layout.h"
#include "mountpt.h"
#include "rundir.h"
#include "supervisor.pb-c.h"

#define SV_MAX_ARGS 32
#define SV_MAX_SETS 32
#define SV_READY_TIMEOUT_MS 15000
#define SV_BACKOFF_MIN_MS 20      /* the first restart delay */
#define SV_BACKOFF_MAX_MS 1000    /* the delay doubles up to this (--restart-delay-max) */
#define SV_STABLE_MS 250          /* ready this long: the next delay starts over */
#define SV_CRASH_WINDOW_MS 2000   /* a crash this soon after start is a crash-loop step */
#define SV_CRASH_LOOP 5           /* that many steps in a row: the instance failed */
#define SV_WATCHDOG_MS 3000       /* default heartbeat deadline (--watchdog) */
#define SV_REASON_MAX 256
#define SV_MOUNT_OPTS_MAX 256

enum sv_policy { SV_RESTART_ALONE, SV_RESTART_GROUP, SV_RESTART_NEVER };
enum sv_state { SV_STARTING, SV_READY, SV_RESTARTING, SV_FAILED, SV_STOPPING };

typedef struct sv_service {
	char name[CM_SVC_NAME_MAX];   /* [immutable] */
	enum sv_policy policy;        /* [immutable] */
	char *argv[SV_MAX_ARGS + 1];  /* [immutable] expanded, NULL-terminated */
	pid_t pid;                    /* [mtx] 0 when not running */
	enum cm_svc_state state;      /* [mtx] */
	uint32_t restarts;            /* [mtx] */
	int last_status;              /* [mtx] exit status, -1 before any exit */
	int last_signal;              /* [mtx] 0 unless killed by a signal */
	uint32_t stalls;              /* [mtx] watchdog kills */
	char why[SV_REASON_MAX];      /* [mtx] how it last died, "" before */
	uint64_t started_ns;          /* [main thread] cm_now_ns() of its last fork */
	uint64_t ready_ns;            /* [main thread] when it was last ready, 0: not since */
	uint64_t restart_at;          /* [main thread] its delayed restart is due, 0: none */
	uint32_t backoff_ms;          /* [main thread] the last delay, 0 after a stable run */
	uint32_t crashes;             /* [main thread] crash-loop steps in a row */
	bool stalled;                 /* [main thread] the watchdog killed it */
	bool mount_svc;               /* [immutable] a FUSE front end (mount.c) */
	cm_mount mount;               /* [main thread] a mount service's mount when it was
				       * last ready; id 0: none (unmounted on purpose) */
	int lineno;                   /* [immutable] its compose line, for errors */
	char *words[SV_MAX_ARGS + 1]; /* [immutable] a mount service's words before
				       * expansion: argv is made at each start */
} sv_service;

enum sv_mount_op { SV_MOUNT_NONE, SV_MOUNT_MOUNT, SV_MOUNT_UMOUNT };

/* A mount or umount request from the control thread, run by the main
 * thread (mount.c), which alone starts and stops services. */
typedef struct sv_mount_req {
	enum sv_mount_op op;          /* [mtx] SV_MOUNT_NONE: no request pending */
	char path[CM_PATH_MAX];       /* [mtx] */
	char options[SV_MOUNT_OPTS_MAX]; /* [mtx] */
	bool done;                    /* [mtx] the main thread answered */
	int status;                   /* [mtx] 0 or -errno */
	char detail[SV_REASON_MAX + CM_PATH_MAX]; /* [mtx] why, or a note */
} sv_mount_req;

typedef struct sv_config {
	const char *compose;
	char instance[72];
	char rundir[CM_PATH_MAX];
	const char *sets[SV_MAX_SETS]; /* KEY=VALUE */
	int nsets;
	uint64_t arena_size;
	enum cm_locking_mode locking;
	uint32_t watchdog_ms;
	uint32_t backoff_max_ms;
	const char *start_mount;      /* --mount: mounted once the group is first ready */
	const char *start_mount_opts; /* --mount-options: its -o list ("" for none) */
	bool stop_on_unmount;         /* --stop-on-unmount: an unmount from outside stops
				       * the instance */
} sv_config;

typedef struct sv_super {
	sv_config cfg;
	pthread_mutex_t mtx;
	cm_arena *arena;              /* [mtx] */
	uint64_t generation;          /* [mtx] group restarts so far */
	enum sv_state state;          /* [mtx] */
	char reason[SV_REASON_MAX];   /* [mtx] why it is restarting or failed; while the
				       * group starts, which service it waits for */
	char cause[SV_REASON_MAX];    /* [main thread] why the group last restarted,
				       * "" before the first restart */
	uint64_t group_restart_at;    /* [main thread] a group start is due, 0: none */
	sv_service svcs[CM_MAX_SVCS]; /* [mtx] as marked in sv_service */
	int nsvcs;                    /* [immutable] */
	uint32_t dead_seen;           /* [main thread] dead-owner reports handled */
	int sigfd;                    /* [main thread] */
	char mount[CM_PATH_MAX];      /* [mtx] the mount point, "" when unmounted */
	char mount_opts[SV_MOUNT_OPTS_MAX]; /* [mtx] its -o list, "" for none */
	char mount_optarg[SV_MOUNT_OPTS_MAX + 2]; /* [mtx] ${MOUNT_OPTS}: "-o" and the list, or "" */
	sv_mount_req mreq;            /* [mtx] */
	uint32_t errseq;              /* [main thread] the error sequence (errseq.c) */
	uint32_t errseq_seen;         /* [main thread] its value the last reporting sync saw */
	pthread_cond_t mcond;         /* signals mreq.done */
	bool started;                 /* [main thread] the first ready was seen through:
				       * the start mount made, systemd told */
	bool stopping;                /* [main thread] sv_run returns: the instance stops */
	bool failed_start;            /* [main thread] it stops because the start mount failed */
} sv_super;

/* compose.c */
int sv_compose_load(sv_super *sv);
const char *sv_policy_name(enum sv_policy p);

/* errseq.c: after a group died, before its arena is freed: carries the
 * error sequence over, one higher if acknowledged changes were lost. */
void sv_errseq_carry(sv_super *sv);
/* A new arena's error sequence. */
void sv_errseq_seed(sv_super *sv, cm_layout *l);

/* group.c */
/* A new arena and every service in order: 0 when ready, -ECHILD when a
 * service died or hung before it was ready, -ECANCELED when one died
 * after (handled either way: a restart is due or the instance failed),
 * another -errno when no arena could be made. */
int sv_group_start(sv_super *sv);
void sv_group_stop(sv_super *sv);
/* Signals every running service, reaps them; SIGKILL to each one still
 * running grace_ms after its signal. */
void sv_group_kill(sv_super *sv, int sig, int grace_ms);
/* Signals s (running), SIGKILL at deadline (cm_now_ns()), reaps it and
 * marks it exited; returns its wait status. */
int sv_service_kill(sv_super *sv, sv_service *s, int sig, uint64_t deadline);
/* Kills the group and discards the arena; the new group starts after
 * delay_ms. */
void sv_group_restart(sv_super *sv, const char *why, uint32_t delay_ms);
/* Starts one service and waits until ready: 0, or -ECHILD when it died
 * before (*status from waitpid) or hung (then killed, *status 0 and
 * *hung set), or -ECANCELED when another death stopped it meanwhile
 * (sv_reap_starting). */
int sv_service_start(sv_super *sv, int slot, int *status, bool *hung);
/* A lock owner died (report in the arena's mailbox): group restart. */
void sv_group_check_dead_owners(sv_super *sv);
/* Whether pid (dead) held anything in the arena whose state is then lost:
 * a lock of the set, a buffer-cache stripe, a LOCKED buffer, an open
 * journal handle (owned or joined). If so, what names it ("j_list_lock",
 * "a journal handle"). */
bool sv_group_held_by(sv_super *sv, pid_t pid, char *what, size_t len);
sv_service *sv_find(sv_super *sv, const char *name);
/* In the child: confines (a mount service) and execs s; never returns. */
void sv_child_exec(sv_super *sv, sv_service *s, int slot) __attribute__((noreturn));

/* policy.c */
/* The signals a process raises itself (a fault, an abort, seccomp): a
 * death by one is a crash of its own making. */
#define SV_NFAULT_SIGNALS 7
extern const int sv_fault_signals[SV_NFAULT_SIGNALS];
/* Reaps exited children and applies restart policies. */
void sv_reap(sv_super *sv);
/* Called while s (pid) starts: reaps exited children, so that a death
 * during a start is seen at once. -ECHILD when pid itself died (*status
 * from waitpid); another service's death is handled as in sv_reap, a
 * group service's aborting a group start (the group restarts), and
 * -ECANCELED says that it stopped pid too; 0 otherwise. */
int sv_reap_starting(sv_super *sv, sv_service *s, pid_t pid, int *status);
/* Records a death (status from waitpid) and schedules what follows;
 * in_start: during a group start, which the death aborts. */
void sv_service_died(sv_super *sv, sv_service *s, int status, bool hung, bool in_start);
/* Kills ready services whose heartbeat is older than the deadline. */
void sv_watchdog(sv_super *sv);
/* Runs the restarts that are due; returns ms until the next one (or -1). */
int sv_tick(sv_super *sv);

/* mount.c */
/* Expands a service's words into argv; -EINVAL on an unknown variable.
 * (compose.c) */
int sv_expand_argv(sv_super *sv, sv_service *s, char **words);
void sv_argv_free(sv_service *s);
/* Starts a mount service and waits until its mount is up; as
 * sv_service_start. */
int sv_mount_service_start(sv_super *sv, int slot, int *status, bool *hung);
/* Runs a pending mount or umount request. */
void sv_mount_poll(sv_super *sv);
/* The control thread's side: queues the request and waits for its answer
 * (sv->mtx held; released while waiting). */
void sv_mount_request(sv_super *sv, enum sv_mount_op op, const char *path, const char *options,
		      int *status, char *detail, size_t len);
/* Unmounts (lazily if busy, noted in note) and stops every mount service. */
int sv_mount_stop(sv_super *sv, char *note, size_t len);
/* A mount service crashed in a loop: unmount, mark it failed. */
void sv_mount_give_up(sv_super *sv, sv_service *s, const char *why);
/* Mounts the instance at path with the -o list opts (the main thread):
 * 0 once mounted, or -errno with why in detail. */
int sv_mount_do(sv_super *sv, const char *path, const char *opts, char *detail, size_t len);
/* A mount service that exited by itself (status) after its mount was
 * taken away from outside (umount DIR): the mount is forgotten, not
 * made again, and with --stop-on-unmount the instance stops. True when
 * that is what happened. */
bool sv_mount_gone(sv_super *sv, sv_service *s, int status);

/* startup.c: once the group is first ready, the mount --mount asked for
 * is made and systemd is told the instance is ready (sd_notify; nothing
 * without a service manager). Returns true when the instance must stop:
 * the start mount failed, or an unmount stopped it. */
bool sv_startup_tick(sv_super *sv);

/* rundir.c: claim the run directory (a stale one left by a crash is
 * cleaned; a live instance is refused) and release it. */
int sv_rundir_claim(sv_super *sv);
void sv_rundir_release(sv_super *sv);

/* main.c: a crash of the supervisor writes a last line to the log; a
 * thread that blocks signals must leave the fault signals out (a fault
 * signal that is blocked kills without running the handler). */
void sv_fault_sigdel(sigset_t *set);

/* control.c */
int sv_control_start(sv_super *sv);
void sv_control_stop(sv_super *sv);

/* status.c: fills a status reply; called with sv->mtx held. */
int sv_status_fill(sv_super *sv, Ext3d__StatusReply *st);
void sv_status_free(Ext3d__StatusReply *st);
/* status_device.c: the device section (absent before blockdev-svc opened it). */
void sv_status_device(const cm_layout *l, Ext3d__StatusReply *st);
void sv_status_device_free(Ext3d__DeviceStatus *ds);

#endif
