/* cmd_start.c - ext3d start IMAGE: runs an instance from the installed
 * programs, as compose/up does inside the source tree. The supervisor and
 * the compose file are the installed ones (EXT3D_SUPERVISOR and
 * EXT3D_COMPOSE, fixed by meson at build time); the options are
 * compose/up's. In the background (the default) the supervisor runs in a
 * session of its own with its log in a file, and start returns once the
 * instance is ready (and mounted, with --mount), or says why it is not.
 * With --foreground the supervisor takes this process's place, its log on
 * stderr: a systemd unit of Type=notify runs it so, and hears when it is
 * ready. --stop-on-unmount ties the instance to its mount: umount DIR
 * stops it (the mount.fuse.ext3d helper asks for this). While it waits, a
 * journal replay shows on a terminal as ext3d-recover shows it
 * (progress.h), from what status says of journald-svc's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "devstat.h"
#include "mountpt.h"
#include "progress.h"
#include "rpc.h"

#define ST_WAIT_MS 60000   /* a start, a recovery and a mount together */
#define ST_POLL_US 100000
#define ST_ARGS 48

typedef struct st_opts {
	const char *data, *locking, *user, *clients, *per_uid, *compose, *log;
	const char *mount_opts;
	char commit_ms[16], watchdog_ms[16], device_timeout[48];
	char image[PATH_MAX], mount[PATH_MAX];
	bool foreground, stop_on_unmount;
} st_opts;

static const struct option st_options[] = {
	{"data", required_argument, NULL, 'D'},
	{"locking", required_argument, NULL, 'L'},
	{"commit-interval", required_argument, NULL, 'C'},
	{"watchdog", required_argument, NULL, 'W'},
	{"user", required_argument, NULL, 'U'},
	{"clients", required_argument, NULL, 'G'},
	{"sessions-per-uid", required_argument, NULL, 'S'},
	{"compose", required_argument, NULL, 'F'},
	{"log", required_argument, NULL, 'l'},
	{"mount", required_argument, NULL, 'm'},
	{"stop-on-unmount", no_argument, NULL, 'u'},
	{"foreground", no_argument, NULL, 'f'},
	{"device-timeout", required_argument, NULL, 'T'},
	{"help", no_argument, NULL, 'h'},
	{0},
};

static const char *st_usage =
	"usage: start [--data=ordered|journal|writeback] [--locking=fine|big] "
	"[--commit-interval=SECONDS] [--watchdog=SECONDS] [--user=NAME] [--clients=GROUP] "
	"[--sessions-per-uid=N] [--compose FILE] [--log FILE] [--mount DIR [-o OPTIONS]] "
	"[--stop-on-unmount] [--foreground] [--device-timeout=SECONDS] IMAGE|NBD-URI";

/* Seconds from min to an hour, as whole milliseconds in out. */
static int st_seconds(const char *arg, double min, char *out, size_t len)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(arg, &end);
	if (errno || end == arg || *end || !(s >= min && s <= 3600))
		return -EINVAL;
	snprintf(out, len, "%ld", (long)(s * 1000 + 0.5));
	return 0;
}

static bool st_one_of(const char *v, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(v, *set) == 0)
			return true;
	return false;
}

/* 0, 1 after printing why the options are wrong, or -1 after --help. */
static int st_parse(int argc, char **argv, st_opts *o)
{
	static const char *const datas[] = {"ordered", "journal", "writeback", NULL};
	static const char *const lockings[] = {"fine", "big", NULL};
	const char *mount = NULL;
	char ms[16];
	int opt;

	*o = (st_opts){.data = "ordered", .locking = "fine", .user = "", .clients = "",
		       .per_uid = "", .compose = EXT3D_COMPOSE, .mount_opts = ""};
	snprintf(o->commit_ms, sizeof(o->commit_ms), "5000");
	snprintf(o->watchdog_ms, sizeof(o->watchdog_ms), "3000");
	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:", st_options, NULL)) != -1) {
		switch (opt) {
		case 'D': o->data = optarg; break;
		case 'L': o->locking = optarg; break;
		case 'C':
			if (st_seconds(optarg, 0.01, o->commit_ms, sizeof(o->commit_ms)) < 0)
				return cli_fail("--commit-interval: seconds from 0.01 to 3600", -EINVAL);
			break;
		case 'W':
			if (st_seconds(optarg, 0.4, o->watchdog_ms, sizeof(o->watchdog_ms)) < 0)
				return cli_fail("--watchdog: seconds from 0.4 to 3600", -EINVAL);
			break;
		case 'T':
			if (st_seconds(optarg, 0.1, ms, sizeof(ms)) < 0)
				return cli_fail("--device-timeout: seconds from 0.1 to 3600", -EINVAL);
			snprintf(o->device_timeout, sizeof(o->device_timeout),
				 "--device-timeout=%s", ms);
			break;
		case 'U': o->user = optarg; break;
		case 'G': o->clients = optarg; break;
		case 'S': o->per_uid = optarg; break;
		case 'F': o->compose = optarg; break;
		case 'l': o->log = optarg; break;
		case 'm': mount = optarg; break;
		case 'o': o->mount_opts = optarg; break;
		case 'u': o->stop_on_unmount = true; break;
		case 'f': o->foreground = true; break;
		case 'h': printf("%s\n", st_usage); return -1;
		default: return cli_fail(st_usage, -EINVAL);
		}
	}
	if (optind != argc - 1 || (*o->mount_opts && !mount))
		return cli_fail(st_usage, -EINVAL);
	if (!st_one_of(o->data, datas) || !st_one_of(o->locking, lockings))
		return cli_fail("--data is ordered, journal or writeback; --locking fine or big",
				-EINVAL);
	if (cm_device_is_nbd_uri(argv[optind])) {
		if (strlen(argv[optind]) >= sizeof(o->image))
			return cli_fail(argv[optind], -ENAMETOOLONG);
		strcpy(o->image, argv[optind]);
	} else if (!realpath(argv[optind], o->image)) {
		return cli_fail(argv[optind], -errno);
	}
	if (mount && !realpath(mount, o->mount))
		return cli_fail(mount, -errno);
	return 0;
}

/* The supervisor's command line for o and instance. */
static void st_argv(const st_opts *o, const char *instance, char **av, char sets[][PATH_MAX + 32])
{
	int n = 0, k = 0;

#define ST_SET(...) (snprintf(sets[k], PATH_MAX + 32, __VA_ARGS__), av[n++] = "--set", \
		     av[n++] = sets[k++])
	av[n++] = EXT3D_SUPERVISOR;
	av[n++] = "--compose";
	av[n++] = (char *)o->compose;
	av[n++] = "--instance";
	av[n++] = (char *)instance;
	av[n++] = "--locking";
	av[n++] = (char *)o->locking;
	av[n++] = "--watchdog";
	av[n++] = (char *)o->watchdog_ms;
	ST_SET("IMAGE=%s", o->image);
	ST_SET("DATA=%s", o->data);
	ST_SET("COMMIT_MS=%s", o->commit_ms);
	ST_SET("BLOCKDEV_ARGS=%s", o->device_timeout);
	ST_SET("SERVICE_USER=%s", o->user);
	ST_SET("CLIENTS=%s", o->clients);
	ST_SET("SESSIONS_PER_UID=%s", o->per_uid);
#undef ST_SET
	if (o->mount[0]) {
		av[n++] = "--mount";
		av[n++] = (char *)o->mount;
		if (*o->mount_opts) {
			av[n++] = "--mount-options";
			av[n++] = (char *)o->mount_opts;
		}
	}
	if (o->stop_on_unmount)
		av[n++] = "--stop-on-unmount";
	av[n] = NULL;
}

/* The default log: /var/log/ext3d/NAME.log as root, else under
 * $XDG_STATE_HOME (~/.local/state)/ext3d/; its directory is made. */
static int st_log_path(const char *instance, char *out, size_t len)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX - 80]; /* room for "/NAME.log" */
	int r;

	if (geteuid() == 0)
		snprintf(dir, sizeof(dir), "/var/log/ext3d");
	else if (state && *state)
		snprintf(dir, sizeof(dir), "%s/ext3d", state);
	else if (home && *home)
		snprintf(dir, sizeof(dir), "%s/.local/state/ext3d", home);
	else
		return -ENOENT;
	r = cm_mkdir_p(dir, 0750);
	if (r < 0 && r != -EEXIST)
		return r;
	snprintf(out, len, "%s/%s.log", dir, instance);
	return 0;
}

/* The error lines the supervisor logged since offset from. */
static void st_log_errors(const char *log, off_t from)
{
	char line[1024];
	FILE *f = fopen(log, "re");

	if (!f)
		return;
	if (fseeko(f, from, SEEK_SET) == 0)
		while (fgets(line, sizeof(line), f))
			if (strstr(line, " error: "))
				fprintf(stderr, "  %s", line);
	fclose(f);
}

/* The replay's progress line; a replay over before the first look shows
 * at its end, the last pass done. */
static void st_recovery_line(const Ext3d__RecoveryStatus *rs)
{
	bool done = strcmp(rs->pass, "done") == 0;

	cm_progress_report("recovering", "blocks", done ? "replay" : rs->pass, rs->done, rs->total);
}

/* 0 when the instance is ready (and mounted where asked), 1 while it is
 * not yet, or -1 after printing why it never will be. */
static int st_probe(cli_ctx *c, const st_opts *o)
{
	Ext3d__StatusRequest body = EXT3D__STATUS_REQUEST__INIT;
	Ext3d__Request req = EXT3D__REQUEST__INIT;
	Ext3d__Reply *reply;
	const Ext3d__StatusReply *st;
	int r = 1;

	req.body_case = EXT3D__REQUEST__BODY_STATUS;
	req.status = &body;
	if (rpc_call(c->url, &req, &reply, 1000) < 0)
		return 1;
	st = reply->body_case == EXT3D__REPLY__BODY_STATUS_REPLY ? reply->status_reply : NULL;
	if (st && st->recovery)
		st_recovery_line(st->recovery);
	if (st && strcmp(st->state, "failed") == 0) {
		cm_progress_end();
		fprintf(stderr, "ext3d: instance %s failed: %s\n", c->instance, st->reason);
		r = -1;
	} else if (st && strcmp(st->state, "ready") == 0) {
		r = o->mount[0] ? 1 : 0;
		for (size_t i = 0; r && i < st->n_services; i++)
			if (strcmp(st->services[i]->mount, o->mount) == 0 &&
			    strcmp(st->services[i]->state, "ready") == 0)
				r = 0;
	}
	rpc_reply_free(reply);
	return r;
}

/* Whether another supervisor already runs the instance; a dead one's
 * stale mount is cleaned (its run directory the new supervisor cleans). */
static bool st_running(cli_ctx *c)
{
	char rundir[CM_PATH_MAX];
	int pid;

	if (cm_rundir(c->instance, rundir, sizeof(rundir)) < 0)
		return false;
	if (cm_rundir_supervisor(rundir, &pid) == 0)
		cli_clean_mount(rundir);
	return cm_rundir_supervisor(rundir, &pid) == 1;
}

static int st_background(cli_ctx *c, const st_opts *o, char **av)
{
	char log[PATH_MAX];
	struct stat sb;
	off_t from;
	pid_t pid;
	int fd, status, r;

	if (o->log)
		snprintf(log, sizeof(log), "%s", o->log);
	else if ((r = st_log_path(c->instance, log, sizeof(log))) < 0)
		return cli_fail("the log's directory (--log FILE)", r);
	fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0)
		return cli_fail(log, -errno);
	from = fstat(fd, &sb) == 0 ? sb.st_size : 0;
	pid = fork();
	if (pid < 0)
		return cli_fail("fork", -errno);
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (setsid() < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 ||
		    dup2(fd, 2) < 0)
			_exit(127);
		execv(av[0], av);
		fprintf(stderr, "ext3d start: %s: %s\n", av[0], strerror(errno));
		_exit(127);
	}
	close(fd);
	for (int waited = 0; waited < ST_WAIT_MS * 1000; waited += ST_POLL_US) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			cm_progress_end();
			fprintf(stderr, "ext3d: instance %s did not start (%s %d); from %s:\n",
				c->instance, WIFEXITED(status) ? "exit status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), log);
			st_log_errors(log, from);
			return 1;
		}
		r = st_probe(c, o);
		if (r == 0) {
			cm_progress_end();
			printf("ext3d: instance %s is up: %s (supervisor pid %d, log %s)%s%s\n",
			       c->instance, o->image, (int)pid, log, o->mount[0] ? ", mounted at " : "",
			       o->mount);
			return 0;
		}
		if (r < 0)
			break;
		usleep(ST_POLL_US);
	}
	cm_progress_end();
	if (r > 0)
		fprintf(stderr, "ext3d: instance %s was not ready in %d s; stopping it\n",
			c->instance, ST_WAIT_MS / 1000);
	st_log_errors(log, from);
	kill(pid, SIGTERM);
	(void)waitpid(pid, &status, 0);
	return 1;
}

int cli_start(cli_ctx *c, int argc, char **argv)
{
	char sets[8][PATH_MAX + 32], why[CM_PATH_MAX + 128];
	char *av[ST_ARGS];
	st_opts o;
	int r = st_parse(argc, argv, &o);

	if (r)
		return r < 0 ? 0 : r;
	if (o.mount[0] && cm_mount_check_dir(o.mount, why, sizeof(why)) < 0) {
		fprintf(stderr, "ext3d: %s\n", why);
		return 1;
	}
	if (st_running(c)) {
		fprintf(stderr, "ext3d: instance %s is already running\n", c->instance);
		return 1;
	}
	st_argv(&o, c->instance, av, sets);
	if (!o.foreground)
		return st_background(c, &o, av);
	execv(av[0], av);
	return cli_fail(av[0], -errno);
}
