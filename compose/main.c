/* main.c - ext3d-supervisor: flags, claim the run directory, start the
 * group, serve control requests, watch children and heartbeats, run the
 * due restarts and the mount requests until SIGTERM (or, with
 * --stop-on-unmount, until the mount --mount made is taken away). */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "internal.h"
#include "log.h"

static const struct option sv_options[] = {
	{"compose", required_argument, NULL, 'c'},
	{"instance", required_argument, NULL, 'n'},
	{"set", required_argument, NULL, 's'},
	{"arena-size", required_argument, NULL, 'a'},
	{"locking", required_argument, NULL, 'l'},
	{"watchdog", required_argument, NULL, 'w'},
	{"restart-delay-max", required_argument, NULL, 'd'},
	{"mount", required_argument, NULL, 'm'},
	{"mount-options", required_argument, NULL, 'o'},
	{"stop-on-unmount", no_argument, NULL, 'u'},
	{0},
};

/* The supervisor's last log line when it crashes, made at start: only
 * write(2) may run in the handler. Its services die with it (their parent
 * death signal), so without that line the instance would vanish in
 * silence. */
static char sv_crash_line[128];
static int sv_crash_len;

static void sv_on_crash(int sig)
{
	char num[3] = {(char)('0' + sig / 10), (char)('0' + sig % 10), '\n'};
	int skip = sig < 10; /* no leading zero */

	(void)!write(STDERR_FILENO, sv_crash_line, (size_t)sv_crash_len);
	(void)!write(STDERR_FILENO, num + skip, sizeof(num) - (size_t)skip);
	raise(sig); /* SA_RESETHAND: the default action, once the handler returns */
}

void sv_fault_sigdel(sigset_t *set)
{
	for (int i = 0; i < SV_NFAULT_SIGNALS; i++)
		sigdelset(set, sv_fault_signals[i]);
}

static void sv_log_crashes(void)
{
	struct sigaction sa = {.sa_handler = sv_on_crash, .sa_flags = SA_RESETHAND};

	sv_crash_len = snprintf(sv_crash_line, sizeof(sv_crash_line),
				"ext3d-supervisor[%d] error: crashed, its services die with it: "
				"signal ", (int)getpid());
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < SV_NFAULT_SIGNALS; i++)
		sigaction(sv_fault_signals[i], &sa, NULL);
}

/* A duration in ms from min to an hour. */
static int sv_parse_ms(const char *arg, unsigned long min, uint32_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || *end || end == arg || v < min || v > 3600000)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static int sv_parse(sv_super *sv, int argc, char **argv)
{
	const char *instance = NULL;
	int opt;

	sv->cfg.arena_size = 256ULL << 20;
	sv->cfg.locking = CM_LOCKING_FINE;
	sv->cfg.watchdog_ms = SV_WATCHDOG_MS;
	sv->cfg.backoff_max_ms = SV_BACKOFF_MAX_MS;
	while ((opt = getopt_long(argc, argv, "", sv_options, NULL)) != -1) {
		if (opt == 'c')
			sv->cfg.compose = optarg;
		else if (opt == 'n')
			instance = optarg;
		else if (opt == 's' && sv->cfg.nsets < SV_MAX_SETS && strchr(optarg, '='))
			sv->cfg.sets[sv->cfg.nsets++] = optarg;
		else if (opt == 'a')
			sv->cfg.arena_size = strtoull(optarg, NULL, 0) << 20;
		else if (opt == 'l' && (!strcmp(optarg, "fine") || !strcmp(optarg, "big")))
			sv->cfg.locking = !strcmp(optarg, "big") ? CM_LOCKING_BIG : CM_LOCKING_FINE;
		else if (opt == 'w' && sv_parse_ms(optarg, 4 * CM_HEARTBEAT_MS,
						   &sv->cfg.watchdog_ms) == 0)
			continue;
		else if (opt == 'd' && sv_parse_ms(optarg, SV_BACKOFF_MIN_MS,
						   &sv->cfg.backoff_max_ms) == 0)
			continue;
		else if (opt == 'm' && optarg[0] == '/')
			sv->cfg.start_mount = optarg;
		else if (opt == 'o')
			sv->cfg.start_mount_opts = optarg;
		else if (opt == 'u')
			sv->cfg.stop_on_unmount = true;
		else
			return -EINVAL;
	}
	if (!sv->cfg.compose || sv->cfg.arena_size < (16ULL << 20) || optind != argc ||
	    (sv->cfg.start_mount_opts && !sv->cfg.start_mount))
		return -EINVAL;
	if (cm_instance_name(instance, sv->cfg.instance, sizeof(sv->cfg.instance)) < 0)
		return cm_log_errno(-EINVAL, "bad instance name");
	return cm_rundir(sv->cfg.instance, sv->cfg.rundir, sizeof(sv->cfg.rundir));
}

/* Watches children, heartbeats and the dead-owner mailbox and runs the due
 * restarts until SIGTERM or SIGINT. */
static void sv_run(sv_super *sv)
{
	struct pollfd pfd = {.fd = sv->sigfd, .events = POLLIN};
	struct signalfd_siginfo si;
	int wait_ms = 50;

	for (;;) {
		int n = poll(&pfd, 1, wait_ms);
		if (n > 0 && read(sv->sigfd, &si, sizeof(si)) == sizeof(si) &&
		    (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT))
			return;
		sv_reap(sv);
		sv_mount_poll(sv);
		sv_group_check_dead_owners(sv);
		sv_watchdog(sv);
		wait_ms = sv_tick(sv);
		if (sv_startup_tick(sv))
			return;
		if (wait_ms < 0 || wait_ms > 50)
			wait_ms = 50;
	}
}

int main(int argc, char **argv)
{
	static sv_super sv = {.mtx = PTHREAD_MUTEX_INITIALIZER,
			      .mcond = PTHREAD_COND_INITIALIZER};
	sigset_t mask;
	int r;

	cm_log_init("ext3d-supervisor");
	sv_log_crashes();
	if (sv_parse(&sv, argc, argv) < 0) {
		cm_err("usage: ext3d-supervisor --compose FILE [--instance NAME] "
		       "[--set KEY=VALUE]... [--arena-size MiB] [--locking fine|big] "
		       "[--watchdog MS] [--restart-delay-max MS] [--mount DIR "
		       "[--mount-options LIST]] [--stop-on-unmount]");
		return EXIT_FAILURE;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sv.sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sv.sigfd < 0 || sv_compose_load(&sv) < 0 || sv_rundir_claim(&sv) < 0)
		return EXIT_FAILURE;
	r = sv_control_start(&sv);
	if (r == 0)
		r = sv_group_start(&sv);
	if (r == -ECHILD || r == -ECANCELED) /* a restart is due, or the instance failed */
		r = 0;
	if (r == 0)
		sv_run(&sv);
	cm_info("stopping instance %s", sv.cfg.instance);
	(void)sd_notify(0, "STOPPING=1");
	sv_group_stop(&sv);
	sv_control_stop(&sv);
	sv_rundir_release(&sv);
	cm_arena_free(sv.arena);
	return r < 0 || sv.failed_start ? EXIT_FAILURE : EXIT_SUCCESS;
}
