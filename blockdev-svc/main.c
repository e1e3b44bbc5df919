/* main.c - blockdev-svc: flags, open the device, confine, serve. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <seccomp.h>
#include <stdlib.h>

#include "chan.h"
#include "internal.h"
#include "log.h"
#include "sandbox.h"
#include "service.h"

static const int bd_syscalls[] = {
	SCMP_SYS(preadv), SCMP_SYS(pwrite64), SCMP_SYS(fdatasync), SCMP_SYS(fsync),
	/* An NBD export: connecting again from inside the sandbox, and
	 * libnbd's traffic on the socket (non-blocking, polled). */
	SCMP_SYS(socket), SCMP_SYS(connect), SCMP_SYS(setsockopt), SCMP_SYS(fcntl),
	SCMP_SYS(poll), SCMP_SYS(sendto), SCMP_SYS(recvfrom),
};

static const struct option bd_options[] = {
	CM_SERVICE_OPTIONS,
	{"image", required_argument, NULL, 'i'},
	{"write-log", required_argument, NULL, 'w'},
	{"fault", required_argument, NULL, 'f'},
	{"device-timeout", required_argument, NULL, 't'},
	{0},
};

/* Milliseconds, 1 to one day. */
static int bd_parse_ms(const char *s, uint32_t *ms)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > 86400000ul)
		return -EINVAL;
	*ms = (uint32_t)v;
	return 0;
}

static void bd_serve(cm_service *svc, bd_svc *bd)
{
	cm_chan_server srv;

	cm_chan_server_init(&srv, svc->arena, (uint32_t)svc->slot);
	while (!cm_service_stopping()) {
		uint32_t armed = cm_chan_server_arm(&srv);
		if (cm_chan_server_poll(&srv, 32, bd_exec, bd) == 0)
			cm_chan_server_wait(&srv, armed, 200);
	}
}

/* Opens the device and the write log and confines the process; a
 * failure is logged and returned, with what was opened left for the
 * caller to close. */
static int bd_setup(bd_svc *bd, const char *image, const char *wlog, const char *fault)
{
	cm_sandbox_policy policy = {bd_syscalls, sizeof(bd_syscalls) / sizeof(int), NULL, 0};
	char why[PATH_MAX + 128];
	int r;

	bd->bounce = malloc((size_t)CM_BD_MAX_SECTORS * CM_BD_SECTOR);
	if (!bd->bounce)
		return cm_log_errno(-ENOMEM, "bounce buffer: %m");
	r = bd_device_open(&bd->dev, image, why, sizeof(why));
	if (r < 0)
		return cm_log_errno(r, "refusing the device: %s", why);
	if (fault && bd_device_parse_fault(&bd->dev, fault) < 0)
		return cm_log_errno(-EINVAL, "bad --fault '%s'", fault);
	r = bd_wlog_open(&bd->wlog, wlog);
	if (r < 0)
		return cm_log_errno(r, "write log %s: %m", wlog);
	r = cm_sandbox_enter(&policy);
	if (r < 0)
		return cm_log_errno(r, "sandbox: %m");
	cm_info("serving %s (%llu sectors%s)", image, (unsigned long long)bd->dev.sectors,
		bd->dev.read_only ? ", read-only" : "");
	return 0;
}

int main(int argc, char **argv)
{
	const char *image = NULL, *wlog = NULL, *fault = NULL;
	bd_svc bd = {.dev.fd = -1, .dev.timeout_ms = BD_DEVICE_TIMEOUT_MS, .wlog.fd = -1};
	cm_service svc;
	int opt, r;

	cm_service_init(&svc, "blockdev-svc");
	while ((opt = getopt_long(argc, argv, "", bd_options, NULL)) != -1) {
		switch (opt) {
		case 'i':
			image = optarg;
			break;
		case 'w':
			wlog = optarg;
			break;
		case 'f':
			fault = optarg;
			break;
		case 't':
			if (bd_parse_ms(optarg, &bd.dev.timeout_ms) < 0)
				return cm_log_errno(-EINVAL, "bad --device-timeout '%s'", optarg),
				       EXIT_FAILURE;
			break;
		default:
			if (cm_service_option(&svc, opt, optarg) <= 0)
				return cm_log_errno(-EINVAL, "usage: blockdev-svc --image=PATH|URI "
					"[--device-timeout=MS] [--write-log=PATH] "
					"[--fault=ioerr:transient|persistent:N] --arena-fd=N --slot=K"),
				       EXIT_FAILURE;
		}
	}
	if (!image)
		return cm_log_errno(-EINVAL, "--image is required"), EXIT_FAILURE;
	r = cm_service_attach(&svc);
	if (r == 0) {
		bd.arena = svc.arena;
		bd.dev.stat = &svc.layout->device;
		r = bd_setup(&bd, image, wlog, fault);
	}
	if (r == 0) {
		cm_service_ready(&svc);
		bd_serve(&svc, &bd);
	}
	bd_device_close(&bd.dev);
	bd_wlog_close(&bd.wlog);
	free(bd.bounce);
	cm_service_fini(&svc);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
