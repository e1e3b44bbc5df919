/* startup.c - what follows the instance's first ready: the mount that
 * --mount asked for (mount -t fuse.ext3d, ext3d start --mount), then the
 * word to a service manager that the instance is ready (sd_notify's
 * READY=1: a systemd unit of Type=notify starts its dependants only then).
 * Without NOTIFY_SOCKET in the environment sd_notify does nothing. */
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "internal.h"
#include "log.h"

/* The start mount, made once; on failure the instance stops, so that the
 * mount helper's caller sees the error and nothing is left running. */
static bool sv_startup_mount(sv_super *sv)
{
	char detail[SV_REASON_MAX + CM_PATH_MAX] = "";
	const char *opts = sv->cfg.start_mount_opts ? sv->cfg.start_mount_opts : "";
	int r = sv_mount_do(sv, sv->cfg.start_mount, opts, detail, sizeof(detail));

	if (r < 0) {
		cm_err("could not mount instance %s at %s: %s; stopping it", sv->cfg.instance,
		       sv->cfg.start_mount, *detail ? detail : strerror(-r));
		sv->failed_start = true;
		return false;
	}
	if (*detail)
		cm_info("%s", detail);
	return true;
}

bool sv_startup_tick(sv_super *sv)
{
	if (sv->stopping)
		return true;
	if (sv->started || sv->state != SV_READY)
		return false;
	sv->started = true;
	if (sv->cfg.start_mount && !sv_startup_mount(sv))
		return true;
	(void)sd_notifyf(0, "READY=1\nSTATUS=instance %s ready%s%s\nMAINPID=%d",
			 sv->cfg.instance, sv->cfg.start_mount ? ", mounted at " : "",
			 sv->cfg.start_mount ? sv->cfg.start_mount : "", (int)getpid());
	return false;
}
