/* main.c - inode-svc: flags, mount through the buffer cache, attach the
 * journal and process the orphan list, listen for client sessions,
 * confine, serve until SIGTERM. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"
#include "log.h"
#include "sandbox.h"

static const int ino_syscalls[] = {
	SCMP_SYS(clone), SCMP_SYS(clone3), SCMP_SYS(poll), SCMP_SYS(ppoll),
	SCMP_SYS(accept4), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg), SCMP_SYS(getsockopt),
	SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(fcntl),
};

static const struct option ino_options[] = {
	CM_SERVICE_OPTIONS,
	{"rundir", required_argument, NULL, 'r'},
	{"cache-size", required_argument, NULL, 'c'},
	{"clients", required_argument, NULL, 'g'},
	{"sessions-per-uid", required_argument, NULL, 'u'},
	{0},
};

/* --clients=GROUP (a name or a number; empty: anyone may attach). */
static int ino_parse_clients(ino_svc *s, const char *arg)
{
	struct group *gr;
	char *end;
	unsigned long gid;

	s->clients_gid = -1;
	if (!*arg)
		return 0;
	gid = strtoul(arg, &end, 10);
	if (*end == '\0' && gid < INT32_MAX)
		return s->clients_gid = (int)gid, 0;
	gr = getgrnam(arg);
	if (!gr)
		return cm_log_errno(-EINVAL, "--clients=%s: no such group", arg);
	s->clients_gid = (int)gr->gr_gid;
	return 0;
}

/* --sessions-per-uid=N, 1 to the sessions others than root may hold; empty:
 * the default. */
static int ino_parse_quota(ino_svc *s, const char *arg)
{
	char *end;
	unsigned long n = strtoul(arg, &end, 10);

	if (!*arg)
		return 0;
	if (*end || n < 1 || n > INO_MAX_SESSIONS - INO_ROOT_RESERVE)
		return cm_log_errno(-EINVAL, "--sessions-per-uid=%s: want 1 to %d", arg,
				    INO_MAX_SESSIONS - INO_ROOT_RESERVE);
	s->sessions_per_uid = (unsigned)n;
	return 0;
}

static int ino_parse(ino_svc *s, int argc, char **argv)
{
	int opt;

	s->cache_bytes = 64ULL << 20;
	s->clients_gid = -1;
	s->sessions_per_uid = INO_SESSIONS_PER_UID;
	while ((opt = getopt_long(argc, argv, "", ino_options, NULL)) != -1) {
		if (opt == 'r')
			snprintf(s->rundir, sizeof(s->rundir), "%s", optarg);
		else if (opt == 'c')
			s->cache_bytes = strtoull(optarg, NULL, 10) << 20;
		else if (opt == 'g' && ino_parse_clients(s, optarg) < 0)
			return -EINVAL;
		else if (opt == 'u' && ino_parse_quota(s, optarg) < 0)
			return -EINVAL;
		else if (opt == 'g' || opt == 'u')
			continue;
		else if (cm_service_option(&s->svc, opt, optarg) <= 0)
			return -EINVAL;
	}
	return s->rundir[0] && s->cache_bytes ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	cm_sandbox_policy policy = {ino_syscalls, sizeof(ino_syscalls) / sizeof(int), NULL, 0};
	static ino_svc s = {.sessions_mtx = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1};
	int r;

	cm_service_init(&s.svc, "inode-svc");
	if (ino_parse(&s, argc, argv) < 0)
		return cm_log_errno(-EINVAL, "usage: inode-svc --rundir=DIR [--cache-size=MiB] "
				    "[--clients=GROUP] [--sessions-per-uid=N] --arena-fd=N --slot=K"),
		       EXIT_FAILURE;
	if (cm_service_attach(&s.svc) < 0 || ino_blksrc_start(&s) < 0 || ino_ops_start(&s) < 0)
		return EXIT_FAILURE;
	r = ino_sessions_listen(&s);
	if (r < 0)
		return cm_log_errno(r, "session socket in %s: %m", s.rundir), EXIT_FAILURE;
	r = cm_sandbox_enter(&policy);
	if (r < 0)
		return cm_log_errno(r, "sandbox: %m"), EXIT_FAILURE;
	cm_service_ready(&s.svc);
	ino_sessions_run(&s);
	ino_sessions_stop(&s);
	ino_fs_unmount(s.fs);
	ino_thread_bdev_close();
	cm_service_fini(&s.svc);
	return EXIT_SUCCESS;
}
