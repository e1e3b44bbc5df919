/* rundir.c - instance names, run directories, control socket addresses,
 * telling a live instance's run directory from a stale one, and whether
 * /tmp/ext3d-UID is the user's own. */
#include "rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cm_instance_name(const char *flag, char *buf, size_t len)
{
	const char *name = flag ? flag : getenv("EXT3D_INSTANCE");
	size_t n;

	if (!name)
		name = "default";
	n = strlen(name);
	if (n == 0 || n > 64 || n >= len || strspn(name, "abcdefghijklmnopqrstuvwxyz"
				       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n ||
	    name[0] == '.')
		return -EINVAL;
	memcpy(buf, name, n + 1);
	return 0;
}

/* The directory of a user without XDG_RUNTIME_DIR: /tmp/ext3d-UID (at
 * most 22 bytes with its NUL). */
static void cm_rundir_tmp(char buf[static 32])
{
	snprintf(buf, 32, "/tmp/ext3d-%u", (unsigned)geteuid());
}

int cm_rundir(const char *instance, char *buf, size_t len)
{
	char tmp[32];
	const char *base = getenv("EXT3D_RUNDIR"), *xdg;
	int n;

	if (base && *base)
		n = snprintf(buf, len, "%s/%s", base, instance);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/ext3d/%s", instance);
	else if ((xdg = getenv("XDG_RUNTIME_DIR")) && *xdg)
		n = snprintf(buf, len, "%s/ext3d/%s", xdg, instance);
	else {
		cm_rundir_tmp(tmp);
		n = snprintf(buf, len, "%s/%s", tmp, instance);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int cm_rundir_check(const char *rundir, bool create, char *why, size_t len)
{
	uid_t me = geteuid();
	struct stat st;
	char tmp[32];
	size_t n;

	cm_rundir_tmp(tmp);
	n = strlen(tmp);
	if (strncmp(rundir, tmp, n) != 0 || (rundir[n] != '/' && rundir[n] != '\0'))
		return 0;
	if (create && mkdir(tmp, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(tmp, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, len, "%s is not a directory: refusing to use it", tmp);
		return -EPERM;
	}
	if (st.st_uid != me) {
		snprintf(why, len, "%s belongs to uid %u, not to you (uid %u): refusing to use "
			 "it (another user may pose as your instance; remove it)",
			 tmp, (unsigned)st.st_uid, (unsigned)me);
		return -EPERM;
	}
	if (st.st_mode & 077) {
		snprintf(why, len, "%s has mode %04o, not 0700: refusing to use it "
			 "(others may change it; chmod 700 it)", tmp, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int cm_control_url(const char *rundir, char *buf, size_t len)
{
	int n = snprintf(buf, len, "ipc://%s/control.ipc", rundir);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int cm_mkdir_p(const char *path, unsigned mode)
{
	char tmp[CM_PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Reads up to len - 1 bytes of a small file, NUL-terminated. */
static int cm_rundir_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return (int)n;
}

/* Reads /proc/PID/stat into buf; the state letter's position, or NULL. */
static const char *cm_pid_stat(int pid, char *buf, size_t len, const char **comm)
{
	char path[64], *end;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	/* "PID (COMM) STATE ...": the name may hold spaces and parentheses. */
	if (cm_rundir_read(path, buf, len) <= 0 || !(*comm = strchr(buf, '(')) ||
	    !(end = strrchr(buf, ')')) || end[1] != ' ')
		return NULL;
	return end + 2;
}

bool cm_pid_alive(int pid)
{
	const char *state, *comm;
	char buf[128];

	if (pid <= 0 || (kill(pid, 0) < 0 && errno != EPERM))
		return false;
	state = cm_pid_stat(pid, buf, sizeof(buf), &comm);
	return state && *state != 'Z' && *state != 'X';
}

int cm_rundir_supervisor(const char *rundir, int *pid)
{
	char path[CM_PATH_MAX + 32], buf[128];
	const char *comm, *state;
	long v;
	int r;

	*pid = 0;
	snprintf(path, sizeof(path), "%s/supervisor.pid", rundir);
	r = cm_rundir_read(path, buf, sizeof(buf));
	if (r < 0)
		return r == -ENOENT ? -ENOENT : -EACCES;
	v = strtol(buf, NULL, 10);
	if (v <= 0 || v > 1 << 22)
		return 0;
	*pid = (int)v;
	/* A zombie is dead, whatever its name. */
	if (!cm_pid_alive(*pid) || !(state = cm_pid_stat(*pid, buf, sizeof(buf), &comm)))
		return 0;
	return state - comm - 3 >= 15 && strncmp(comm + 1, "ext3d-superviso", 15) == 0;
}

void cm_rundir_clean(const char *rundir)
{
	static const char *const files[] = {"session.sock", "control.ipc", "supervisor.pid"};
	char path[CM_PATH_MAX + 32];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", rundir, files[i]);
		(void)unlink(path);
	}
}
