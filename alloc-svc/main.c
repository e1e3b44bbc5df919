/* main.c - alloc-svc: flags, the filesystem and the shared counters,
 * confine, serve block and inode allocation (allocproto.h) on --workers
 * threads until SIGTERM.
 *   --workers=N   serving threads, each with its own counter slot (2) */
#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>

#include "internal.h"
#include "log.h"
#include "sandbox.h"

/* Threads; no file I/O: blocks come through the arena's rings. */
static const int al_syscalls[] = {SCMP_SYS(clone), SCMP_SYS(clone3)};

static const struct option al_options[] = {
	CM_SERVICE_OPTIONS,
	{"workers", required_argument, NULL, 'w'},
	{0},
};

static int al_parse(al_svc *s, int argc, char **argv)
{
	char *end;
	int opt;

	s->nworkers = 2;
	while ((opt = getopt_long(argc, argv, "", al_options, NULL)) != -1) {
		if (opt == 'w') {
			unsigned long n = strtoul(optarg, &end, 10);
			if (*end || n < 1 || n > AL_MAX_WORKERS)
				return -EINVAL;
			s->nworkers = (uint32_t)n;
		} else if (cm_service_option(&s->svc, opt, optarg) <= 0) {
			return -EINVAL;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	cm_sandbox_policy policy = {al_syscalls, sizeof(al_syscalls) / sizeof(int), NULL, 0};
	static al_svc s;
	cm_bdev *bd = NULL;
	int r;

	cm_service_init(&s.svc, "alloc-svc");
	if (al_parse(&s, argc, argv) < 0)
		return cm_log_errno(-EINVAL, "usage: alloc-svc [--workers=1..%d] --arena-fd=N "
				    "--slot=K", AL_MAX_WORKERS), EXIT_FAILURE;
	if (cm_service_attach(&s.svc) < 0)
		return EXIT_FAILURE;
	if ((r = cm_bdev_open(s.svc.arena, &bd)) < 0)
		return cm_log_errno(r, "blockdev-svc: %m"), EXIT_FAILURE;
	if (al_fs_open(&s, bd) < 0)
		return EXIT_FAILURE;
	if ((r = al_workers_init(&s, bd)) < 0)
		return cm_log_errno(r, "workers: %m"), EXIT_FAILURE;
	if ((r = cm_sandbox_enter(&policy)) < 0)
		return cm_log_errno(r, "sandbox: %m"), EXIT_FAILURE;
	cm_info("serving with %u workers", s.nworkers);
	cm_service_ready(&s.svc);
	r = al_workers_run(&s);
	al_workers_fini(&s);
	al_fs_close(&s);
	cm_bdev_close(bd);
	cm_service_fini(&s.svc);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
