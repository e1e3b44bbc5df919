/* mount.c - the FUSE front end as a service of the instance (internal.h,
 * "Mount services"): start it at the mount point and wait until the mount
 * shows in the mount table as a new mount, after detaching what a dead
 * predecessor left (its FUSE connection aborted first);
 * unmount before stopping it; run the control thread's mount and umount
 * requests on the main thread, which alone starts and stops services. The
 * mount point is kept in RUNDIR/mount while mounted, so that the CLI can
 * clean a stale mount after the supervisor itself died. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "io.h"
#include "log.h"
#include "mountpt.h"

#define SV_MOUNT_POLL_US 5000      /* between two looks at the mount table */
#define SV_MOUNT_STOP_MS 5000      /* SIGTERM, then SIGKILL after this */

static sv_service *sv_mount_svc(sv_super *sv)
{
	for (int i = 0; i < sv->nsvcs; i++)
		if (sv->svcs[i].mount_svc)
			return &sv->svcs[i];
	return NULL;
}

/* RUNDIR/mount holds the mount point while mounted (path NULL: removed). */
static void sv_mount_file(sv_super *sv, const char *path)
{
	char file[CM_PATH_MAX + 16];
	int fd;

	snprintf(file, sizeof(file), "%s/mount", sv->cfg.rundir);
	if (!path) {
		(void)unlink(file);
		return;
	}
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || cm_write_full(fd, path, strlen(path)) < 0)
		cm_warn("%s: %m (a stale mount would not be cleaned after a crash)", file);
	if (fd >= 0)
		close(fd);
}

/* No mount point, no options (sv->mtx held). */
static void sv_mount_clear(sv_super *sv)
{
	sv->mount[0] = '\0';
	sv->mount_opts[0] = '\0';
	sv->mount_optarg[0] = '\0';
}

/* A FUSE mount is on top at path; its identity in *ret (may be NULL). */
static bool sv_mounted(const char *path, cm_mount *ret)
{
	cm_mount m;

	if (cm_mount_find(path, &m) <= 0 || strncmp(m.fstype, "fuse", 4) != 0)
		return false;
	if (ret)
		*ret = m;
	return true;
}

static bool sv_same_mount(const cm_mount *a, const cm_mount *b)
{
	return a->id == b->id && a->major == b->major && a->minor == b->minor;
}

/* Clears path for a new start of s: the mount its dead predecessor left
 * there (the one s->mount was when it was ready) is detached after its
 * connection is aborted, whatever processes still hold open there; a
 * stale FUSE mount of another daemon is detached too. */
static void sv_mount_clear_dead(sv_super *sv, sv_service *s, const char *path)
{
	cm_mount top;
	bool aborted;
	int r;

	if (s->mount.id && sv_mounted(path, &top) && sv_same_mount(&top, &s->mount)) {
		r = cm_mount_detach_dead(path, &top, &aborted);
		if (r < 0)
			cm_warn("the mount at %s that a dead %s left: %s", path, s->name, strerror(-r));
		else
			cm_info("detached the mount at %s that a dead %s left (FUSE connection %u "
				"%s)", path, s->name, top.minor,
				aborted ? "aborted" : "not aborted: fusectl is not mounted");
	}
	s->mount.id = 0;
	r = cm_mount_clean_stale(path);
	if (r > 0)
		cm_info("unmounted the stale mount at %s that a dead %s left", path, s->name);
	else if (r < 0)
		cm_warn("the stale mount at %s: %s", path, strerror(-r));
}

int sv_mount_service_start(sv_super *sv, int slot, int *status, bool *hung)
{
	sv_service *s = &sv->svcs[slot];
	char path[CM_PATH_MAX];
	uint64_t deadline = cm_now_ns() + SV_READY_TIMEOUT_MS * 1000000ULL;
	cm_mount before = {0}, now;
	pid_t pid;
	int r;

	*hung = false;
	pthread_mutex_lock(&sv->mtx);
	snprintf(path, sizeof(path), "%s", sv->mount);
	pthread_mutex_unlock(&sv->mtx);
	if (!path[0])
		return 0;
	sv_mount_clear_dead(sv, s, path);
	/* Ready once a FUSE mount other than what is there now is on top. */
	(void)sv_mounted(path, &before);
	r = sv_expand_argv(sv, s, s->words);
	if (r < 0)
		return r;
	s->started_ns = cm_now_ns();
	s->ready_ns = 0;
	pid = fork();
	if (pid < 0) {
		sv_argv_free(s);
		return cm_log_errno(-errno, "fork for %s: %m", s->name);
	}
	if (pid == 0)
		sv_child_exec(sv, s, slot);
	sv_argv_free(s);
	pthread_mutex_lock(&sv->mtx);
	s->pid = pid;
	s->state = CM_SVC_STARTING;
	pthread_mutex_unlock(&sv->mtx);
	while (!sv_mounted(path, &now) || (before.id && sv_same_mount(&now, &before))) {
		r = sv_reap_starting(sv, s, pid, status);
		if (r < 0)
			return r;
		if (cm_now_ns() > deadline) {
			cm_err("%s did not mount %s in %d ms: killing it", s->name, path,
			       SV_READY_TIMEOUT_MS);
			kill(pid, SIGKILL);
			(void)waitpid(pid, status, 0);
			*hung = true;
			return -ECHILD;
		}
		usleep(SV_MOUNT_POLL_US);
	}
	pthread_mutex_lock(&sv->mtx);
	s->state = CM_SVC_READY;
	pthread_mutex_unlock(&sv->mtx);
	s->ready_ns = cm_now_ns();
	s->mount = now;
	cm_info("%s ready, pid %d, mounted at %s (mount %d)", s->name, (int)pid, path, now.id);
	return 0;
}

/* SIGTERM, SIGKILL after SV_MOUNT_STOP_MS, reaped here. */
static void sv_mount_svc_stop(sv_super *sv, sv_service *s)
{
	int status;

	s->restart_at = 0;
	s->mount.id = 0;
	if (!s->pid)
		return;
	status = sv_service_kill(sv, s, SIGTERM,
				 cm_now_ns() + SV_MOUNT_STOP_MS * 1000000ULL);
	pthread_mutex_lock(&sv->mtx);
	s->last_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	s->last_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	snprintf(s->why, sizeof(s->why), "stopped after its unmount");
	pthread_mutex_unlock(&sv->mtx);
}

int sv_mount_stop(sv_super *sv, char *note, size_t len)
{
	char path[CM_PATH_MAX];
	bool lazy = false;
	int r = 0;

	*note = '\0';
	pthread_mutex_lock(&sv->mtx);
	snprintf(path, sizeof(path), "%s", sv->mount);
	sv_mount_clear(sv); /* from now on its death is no reason to restart it */
	pthread_mutex_unlock(&sv->mtx);
	if (path[0] && sv_mounted(path, NULL)) {
		r = cm_unmount(path, &lazy);
		if (r < 0)
			snprintf(note, len, "could not unmount %s: %s", path, strerror(-r));
		else if (lazy)
			snprintf(note, len, "%s was busy: detached it lazily (it goes away once "
				 "the last process using it lets go; their calls then fail)", path);
	}
	if (path[0])
		sv_mount_file(sv, NULL);
	for (int i = 0; i < sv->nsvcs; i++)
		if (sv->svcs[i].mount_svc)
			sv_mount_svc_stop(sv, &sv->svcs[i]);
	if (path[0])
		cm_info("unmounted %s", path);
	return r;
}

void sv_mount_give_up(sv_super *sv, sv_service *s, const char *why)
{
	char note[SV_REASON_MAX + CM_PATH_MAX];

	cm_err("%s: unmounting; the instance goes on without its mount", why);
	if (sv_mount_stop(sv, note, sizeof(note)) < 0 || *note)
		cm_warn("%s", note);
	pthread_mutex_lock(&sv->mtx);
	s->state = CM_SVC_FAILED;
	pthread_mutex_unlock(&sv->mtx);
}

bool sv_mount_gone(sv_super *sv, sv_service *s, int status)
{
	char path[CM_PATH_MAX];

	pthread_mutex_lock(&sv->mtx);
	snprintf(path, sizeof(path), "%s", sv->mount);
	pthread_mutex_unlock(&sv->mtx);
	/* Killed, failed, or its mount still there: a death to restart it after. */
	if (!path[0] || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || sv_mounted(path, NULL))
		return false;
	pthread_mutex_lock(&sv->mtx);
	sv_mount_clear(sv);
	snprintf(s->why, sizeof(s->why), "exited after its unmount from outside");
	pthread_mutex_unlock(&sv->mtx);
	sv_mount_file(sv, NULL);
	s->mount.id = 0;
	s->restart_at = 0;
	cm_info("%s was unmounted from outside; %s exited", path, s->name);
	if (sv->cfg.stop_on_unmount) {
		cm_info("stopping instance %s: it lives as long as its mount (--stop-on-unmount)",
			sv->cfg.instance);
		sv->stopping = true;
	}
	return true;
}

/* An -o list: option words (letters, digits and _=.:/+-) between commas,
 * nothing the front end could take for another argument. */
static bool sv_mount_opts_ok(const char *opts)
{
	if (opts[0] == '-' || opts[0] == ',')
		return false;
	for (const char *p = opts; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_=.:/+-,",
			    *p))
			return false;
	return true;
}

int sv_mount_do(sv_super *sv, const char *path, const char *opts, char *detail, size_t len)
{
	sv_service *s = sv_mount_svc(sv);
	int status = 0, r;
	bool hung;

	if (!s) {
		snprintf(detail, len, "%s has no mount service", sv->cfg.compose);
		return -ENOSYS;
	}
	if (sv->state != SV_READY) {
		snprintf(detail, len, "instance %s is not ready", sv->cfg.instance);
		return -EAGAIN;
	}
	if (sv->mount[0]) {
		snprintf(detail, len, "already mounted at %s (ext3d umount first)", sv->mount);
		return -EBUSY;
	}
	if (!sv_mount_opts_ok(opts)) {
		snprintf(detail, len, "mount options '%s': a comma-separated list of words", opts);
		return -EINVAL;
	}
	r = cm_mount_check_dir(path, detail, len);
	if (r < 0)
		return r;
	if (*detail)
		cm_info("%s", detail);
	pthread_mutex_lock(&sv->mtx);
	snprintf(sv->mount, sizeof(sv->mount), "%s", path);
	snprintf(sv->mount_opts, sizeof(sv->mount_opts), "%s", opts);
	snprintf(sv->mount_optarg, sizeof(sv->mount_optarg), "%s%s", *opts ? "-o" : "", opts);
	pthread_mutex_unlock(&sv->mtx);
	s->crashes = 0;
	s->backoff_ms = 0;
	r = sv_service_start(sv, (int)(s - sv->svcs), &status, &hung);
	if (r == 0) {
		sv_mount_file(sv, path);
		return 0;
	}
	pthread_mutex_lock(&sv->mtx);
	sv_mount_clear(sv);
	pthread_mutex_unlock(&sv->mtx);
	if (r == -ECHILD)
		sv_service_died(sv, s, status, hung, false);
	(void)cm_mount_clean_stale(path);
	snprintf(detail, len, "%s %s before it mounted %s (see the instance's log)",
		 s->name, r == -ECHILD ? s->why : strerror(-r), path);
	return r == -ECHILD ? -EIO : r;
}

void sv_mount_poll(sv_super *sv)
{
	char path[CM_PATH_MAX], opts[SV_MOUNT_OPTS_MAX], detail[SV_REASON_MAX + CM_PATH_MAX] = "";
	enum sv_mount_op op;
	int r;

	pthread_mutex_lock(&sv->mtx);
	op = sv->mreq.done ? SV_MOUNT_NONE : sv->mreq.op;
	snprintf(path, sizeof(path), "%s", sv->mreq.path);
	snprintf(opts, sizeof(opts), "%s", sv->mreq.options);
	pthread_mutex_unlock(&sv->mtx);
	if (op == SV_MOUNT_NONE)
		return;
	if (op == SV_MOUNT_MOUNT) {
		r = sv_mount_do(sv, path, opts, detail, sizeof(detail));
	} else if (!sv->mount[0]) {
		snprintf(detail, sizeof(detail), "instance %s is not mounted", sv->cfg.instance);
		r = -EINVAL;
	} else {
		r = sv_mount_stop(sv, detail, sizeof(detail));
	}
	pthread_mutex_lock(&sv->mtx);
	if (sv->mreq.op == op) {
		sv->mreq.status = r;
		snprintf(sv->mreq.detail, sizeof(sv->mreq.detail), "%s", detail);
		sv->mreq.done = true;
		pthread_cond_broadcast(&sv->mcond);
	}
	pthread_mutex_unlock(&sv->mtx);
}

void sv_mount_request(sv_super *sv, enum sv_mount_op op, const char *path, const char *options,
		      int *status, char *detail, size_t len)
{
	*detail = '\0';
	if (sv->mreq.op != SV_MOUNT_NONE) {
		*status = -EBUSY;
		snprintf(detail, len, "another mount or umount request is running");
		return;
	}
	sv->mreq.op = op;
	sv->mreq.done = false;
	snprintf(sv->mreq.path, sizeof(sv->mreq.path), "%s", path ? path : "");
	snprintf(sv->mreq.options, sizeof(sv->mreq.options), "%s", options ? options : "");
	/* The main thread answers within a service's start timeout; a shutdown
	 * cuts the wait short. */
	while (!sv->mreq.done && sv->state != SV_STOPPING) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&sv->mcond, &sv->mtx, &ts);
	}
	if (sv->mreq.done) {
		*status = sv->mreq.status;
		snprintf(detail, len, "%s", sv->mreq.detail);
	} else {
		*status = -ECANCELED;
		snprintf(detail, len, "the instance is stopping");
	}
	sv->mreq.op = SV_MOUNT_NONE;
}
