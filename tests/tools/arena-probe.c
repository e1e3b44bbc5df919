/* arena-probe - three test helpers around the arena.
 *
 *   arena-probe --bad=KIND -- PROGRAM [ARG...]
 *       makes an arena of the given defect (garbage, version, size, stale,
 *       small, slot) and execs PROGRAM ARG... --arena-fd=N --slot=0, so a
 *       test can see how a service refuses it.
 *   arena-probe --hold=LOCK --arena-fd=N --slot=K   (as a compose service)
 *       attaches, takes LOCK (j_state_lock, j_list_lock, j_revoke_lock,
 *       bh_state, group), reports ready and sleeps holding it until killed.
 *   arena-probe --usage=PID
 *       prints how much of the live arena that process (the supervisor)
 *       holds is in use, as "key value" lines: generation, meta_used,
 *       meta_size, data_used, data_size. Reads the header through
 *       /proc/PID/fd, so it needs the right to see that process's fds.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "layout.h"
#include "log.h"
#include "service.h"

static int probe_make_bad(const char *kind)
{
	cm_arena *a;
	int fd;

	if (strcmp(kind, "small") == 0) {
		fd = memfd_create("probe", 0);
		return ftruncate(fd, 16) < 0 ? -1 : fd;
	}
	if (cm_arena_create(32 << 20, 8 << 20, 0, &a) < 0 || cm_layout_init(a, CM_LOCKING_FINE) < 0)
		return -1;
	snprintf(cm_layout_get(a)->svcs[0].name, CM_SVC_NAME_MAX, "other-svc");
	if (strcmp(kind, "garbage") == 0)
		memset(a->hdr, 0x5a, sizeof(*a->hdr));
	else if (strcmp(kind, "version") == 0)
		a->hdr->version = CM_ARENA_VERSION + 1;
	else if (strcmp(kind, "size") == 0 && ftruncate(a->fd, (off_t)a->size * 2) < 0)
		return -1;
	else if (strcmp(kind, "stale") == 0)
		atomic_store(&a->hdr->state, CM_ARENA_DISCARDED);
	else if (strcmp(kind, "slot") != 0 && strcmp(kind, "size") != 0)
		return -1;
	fd = dup(a->fd); /* without close-on-exec */
	cm_arena_free(a);
	return fd;
}

static int probe_exec_bad(const char *kind, char **argv)
{
	char fdarg[32];
	char *args[64];
	int fd = probe_make_bad(kind), n = 0;

	if (fd < 0 || !argv[0])
		return fprintf(stderr, "arena-probe: bad kind '%s' or no program\n", kind), 2;
	snprintf(fdarg, sizeof(fdarg), "--arena-fd=%d", fd);
	while (argv[n] && n < 60) {
		args[n] = argv[n];
		n++;
	}
	args[n++] = fdarg;
	args[n++] = "--slot=0";
	args[n] = NULL;
	execv(args[0], args);
	return fprintf(stderr, "arena-probe: exec %s: %s\n", args[0], strerror(errno)), 2;
}

/* The header of a live arena behind one of pid's descriptors. */
static int probe_find_arena(const char *pid, struct cm_arena_hdr *h)
{
	char dir[64], link[128];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%s/fd", pid);
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		if (strncmp(link, "/memfd:ext3d-arena", 18) != 0)
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
		bool ok = fd >= 0 && pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) &&
			  h->magic == CM_ARENA_MAGIC && atomic_load(&h->state) == CM_ARENA_LIVE;
		if (fd >= 0)
			close(fd);
		if (ok) {
			closedir(d);
			return 0;
		}
	}
	closedir(d);
	return -ENOENT;
}

static int probe_usage(const char *pid)
{
	struct cm_arena_hdr h;
	int r = probe_find_arena(pid, &h);

	if (r < 0)
		return fprintf(stderr, "arena-probe: no live arena in process %s: %s\n", pid,
			       strerror(-r)), 1;
	printf("generation %llu\nmeta_used %llu\nmeta_size %llu\ndata_used %llu\ndata_size %llu\n",
	       (unsigned long long)h.generation, (unsigned long long)atomic_load(&h.meta_brk),
	       (unsigned long long)h.data_start,
	       (unsigned long long)(atomic_load(&h.data_brk) - h.data_start),
	       (unsigned long long)(h.size - h.data_start));
	return 0;
}

static cm_mutex *probe_lock_named(cm_layout *l, const char *name)
{
	if (strcmp(name, "j_state_lock") == 0)
		return &l->locks.j_state_lock;
	if (strcmp(name, "j_list_lock") == 0)
		return &l->locks.j_list_lock;
	if (strcmp(name, "j_revoke_lock") == 0)
		return &l->locks.j_revoke_lock;
	if (strcmp(name, "bh_state") == 0)
		return &l->locks.bh_state[0];
	if (strcmp(name, "group") == 0)
		return &l->locks.group[0];
	return NULL;
}

static const struct option probe_options[] = {
	CM_SERVICE_OPTIONS,
	{"bad", required_argument, NULL, 'b'},
	{"hold", required_argument, NULL, 'h'},
	{"usage", required_argument, NULL, 'u'},
	{0},
};

int main(int argc, char **argv)
{
	const char *bad = NULL, *hold = NULL;
	cm_service svc;
	cm_mutex *m;
	int opt;

	cm_service_init(&svc, "lock-holder");
	while ((opt = getopt_long(argc, argv, "+", probe_options, NULL)) != -1) {
		if (opt == 'b')
			bad = optarg;
		else if (opt == 'h')
			hold = optarg;
		else if (opt == 'u')
			return probe_usage(optarg);
		else if (cm_service_option(&svc, opt, optarg) <= 0)
			return 2;
	}
	if (bad)
		return probe_exec_bad(bad, argv + optind);
	if (!hold || cm_service_attach(&svc) < 0)
		return 2;
	m = probe_lock_named(svc.layout, hold);
	if (!m || cm_mutex_lock(m) < 0)
		return cm_log_errno(-EINVAL, "cannot take %s", hold), 2;
	cm_service_ready(&svc);
	while (!cm_service_stopping())
		pause();
	cm_service_fini(&svc);
	return 0;
}
