/* service.c - the start-up and shutdown steps shared by every service; see
 * service.h. The heartbeat thread proves the process is scheduled (a
 * SIGSTOP or a frozen process stops it); it is started before the sandbox,
 * which may forbid clone. */
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "futex.h"
#include "log.h"
#include "sandbox.h"

static volatile sig_atomic_t cm_stop_requested;
static atomic_bool cm_beat_stop;

static void *cm_service_beat(void *arg)
{
	cm_svc_slot *slot = arg;
	struct timespec ts = {.tv_nsec = CM_HEARTBEAT_MS * 1000000L};

	while (!atomic_load(&cm_beat_stop)) {
		atomic_store(&slot->heartbeat_ns, cm_now_ns());
		(void)nanosleep(&ts, NULL);
	}
	return NULL;
}

static void cm_service_on_signal(int sig)
{
	(void)sig;
	cm_stop_requested = 1;
}

void cm_service_init(cm_service *svc, const char *name)
{
	memset(svc, 0, sizeof(*svc));
	svc->name = name;
	svc->arena_fd = -1;
	svc->slot = -1;
	cm_log_init(name);
}

static int cm_parse_int(const char *arg, int *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || v < 0 || v > 1 << 20)
		return -EINVAL;
	*ret = (int)v;
	return 0;
}

int cm_service_option(cm_service *svc, int opt, const char *arg)
{
	switch (opt) {
	case CM_OPT_ARENA_FD:
		return cm_parse_int(arg, &svc->arena_fd) < 0 ? -EINVAL : 1;
	case CM_OPT_SLOT:
		return cm_parse_int(arg, &svc->slot) < 0 ? -EINVAL : 1;
	case CM_OPT_TEST_FORBIDDEN:
		svc->test_forbidden_syscall = true;
		return 1;
	case CM_OPT_USER:
		cm_sandbox_set_user(arg);
		return 1;
	default:
		return 0;
	}
}

int cm_service_attach(cm_service *svc)
{
	struct sigaction sa = {.sa_handler = cm_service_on_signal};
	sigset_t all, old;
	char why[160];
	int r;

	if (svc->arena_fd < 0 || svc->slot < 0 || svc->slot >= CM_MAX_SVCS) {
		cm_err("--arena-fd and --slot (0..%d) are required", CM_MAX_SVCS - 1);
		return -EINVAL;
	}
	r = cm_arena_attach(svc->arena_fd, &svc->arena, why, sizeof(why));
	if (r < 0)
		return cm_log_errno(r, "arena fd %d: %s", svc->arena_fd, why);
	(void)fcntl(svc->arena_fd, F_SETFD, FD_CLOEXEC);
	svc->layout = cm_layout_get(svc->arena);
	r = !svc->layout ? cm_log_errno(-EPROTO, "arena has no layout")
	    : strncmp(svc->layout->svcs[svc->slot].name, svc->name, CM_SVC_NAME_MAX) != 0
	    ? cm_log_errno(-EINVAL, "slot %d belongs to '%.*s', not %s", svc->slot,
			   CM_SVC_NAME_MAX, svc->layout->svcs[svc->slot].name, svc->name)
	    : 0;
	if (r < 0) {
		svc->arena = cm_arena_free(svc->arena);
		svc->layout = NULL;
		return r;
	}
	cm_layout_report_dead_owners(svc->layout);
	atomic_store(&svc->layout->svcs[svc->slot].heartbeat_ns, cm_now_ns());
	/* Signals go to the service's own threads, never to the beat. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&svc->beat, NULL, cm_service_beat, &svc->layout->svcs[svc->slot]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		return cm_log_errno(r, "heartbeat thread: %m");
	svc->beating = true;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	return 0;
}

void cm_service_ready(cm_service *svc)
{
	atomic_store(&svc->layout->svcs[svc->slot].state, CM_SVC_READY);
	cm_info("ready (slot %d, arena generation %llu)", svc->slot,
		(unsigned long long)svc->arena->hdr->generation);
	if (svc->test_forbidden_syscall) {
		/* Long enough for the supervisor to have seen READY first. */
		usleep(300000);
		cm_info("test: making a forbidden syscall (openat)");
		(void)syscall(SYS_openat, AT_FDCWD, "/", O_RDONLY);
		cm_err("the forbidden syscall returned: the sandbox is not in force");
		exit(3);
	}
}

bool cm_service_stopping(void)
{
	return cm_stop_requested != 0;
}

void cm_service_fini(cm_service *svc)
{
	if (svc->beating) {
		atomic_store(&cm_beat_stop, true);
		pthread_join(svc->beat, NULL);
		svc->beating = false;
	}
	svc->arena = cm_arena_free(svc->arena);
	svc->layout = NULL;
}
