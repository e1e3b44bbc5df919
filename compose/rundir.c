/* rundir.c - the supervisor's hold on its run directory: supervisor.pid and
 * control.ipc (and inode-svc's session.sock). A pid file whose process is
 * gone (or is not a supervisor) is stale, left by a crash: it and the
 * sockets are removed (cm_rundir_clean). Under /tmp, the user's
 * /tmp/ext3d-UID is made 0700 and must be the user's own (cm_rundir_check). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "io.h"
#include "log.h"

static void sv_rundir_path(sv_super *sv, const char *file, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", sv->cfg.rundir, file);
}

int sv_rundir_claim(sv_super *sv)
{
	char pidpath[CM_PATH_MAX + 32], buf[32], why[CM_PATH_MAX + 128];
	int r, fd, old;

	r = cm_rundir_check(sv->cfg.rundir, true, why, sizeof(why));
	if (r == -EPERM)
		return cm_log_errno(r, "%s", why);
	/* Searchable by all: clients of any uid attach to session.sock. */
	if (r == 0)
		r = cm_mkdir_p(sv->cfg.rundir, 0755);
	if (r == 0 && chmod(sv->cfg.rundir, 0755) < 0)
		r = -errno;
	if (r < 0)
		return cm_log_errno(r, "run directory %s: %m", sv->cfg.rundir);
	sv_rundir_path(sv, "supervisor.pid", pidpath, sizeof(pidpath));
	r = cm_rundir_supervisor(sv->cfg.rundir, &old);
	if (r == 1 && old != getpid())
		return cm_log_errno(-EEXIST, "instance %s is already running (pid %d)",
				    sv->cfg.instance, old);
	if (r != -ENOENT)
		cm_warn("removing the stale run directory of pid %d (not running): "
			"supervisor.pid, control.ipc, session.sock", old);
	cm_rundir_clean(sv->cfg.rundir);
	fd = open(pidpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return cm_log_errno(-errno, "%s: %m", pidpath);
	snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	r = cm_write_full(fd, buf, strlen(buf));
	close(fd);
	return r;
}

void sv_rundir_release(sv_super *sv)
{
	/* inode-svc's session socket too: it may not unlink once sandboxed. */
	cm_rundir_clean(sv->cfg.rundir);
}
