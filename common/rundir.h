/* rundir.h - where an instance's files live, and its name.
 *
 * Instance name: the --instance flag, else $EXT3D_INSTANCE, else "default";
 * letters, digits, '.', '_' and '-' only. Run directory: $EXT3D_RUNDIR/NAME
 * if EXT3D_RUNDIR is set, else /run/ext3d/NAME as root, else
 * $XDG_RUNTIME_DIR/ext3d/NAME, else /tmp/ext3d-UID/NAME (UID the effective
 * uid). The control socket is control.ipc in it.
 */
#ifndef CM_RUNDIR_H
#define CM_RUNDIR_H

#include <stdbool.h>

#include <stddef.h>

#define CM_PATH_MAX 256

/* False once pid has exited (gone, or a zombie nobody reaped yet). */
bool cm_pid_alive(int pid);
/* -EINVAL for a name that is empty, too long or has other characters. */
int cm_instance_name(const char *flag, char *buf, size_t len);
int cm_rundir(const char *instance, char *buf, size_t len);
int cm_control_url(const char *rundir, char *buf, size_t len);
/* A run directory under /tmp/ext3d-UID is used only if that directory
 * is a directory the caller owns, with no group or other permissions
 * (anyone may have made it first): 0 then, or for a run directory
 * elsewhere; -ENOENT if it is missing; -EPERM with the reason in why.
 * With create, a missing /tmp/ext3d-UID is made first, mode 0700. */
int cm_rundir_check(const char *rundir, bool create, char *why, size_t len);
/* The supervisor named by RUNDIR/supervisor.pid: 1 if that process runs
 * and is an ext3d-supervisor, 0 if it is gone, a zombie or another program (the
 * run directory is stale, left by a killed supervisor), -ENOENT without a
 * pid file, -EACCES if it cannot be read. *pid gets the pid read, or 0. */
int cm_rundir_supervisor(const char *rundir, int *pid);
/* Removes the files of a stale run directory: the pid file, control.ipc
 * and session.sock. */
void cm_rundir_clean(const char *rundir);
/* mkdir -p with the given mode for each created level. */
int cm_mkdir_p(const char *path, unsigned mode);

#endif
