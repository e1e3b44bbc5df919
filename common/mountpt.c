/* mountpt.c - mount points of the FUSE front end: the mount table read
 * from /proc/self/mountinfo (octal escapes undone), stale mounts (ENOTCONN),
 * a dead daemon's mount detached after its connection is aborted, the
 * checks before a mount and unmounting with umount2(2) or, without the
 * capability, fusermount3. See mountpt.h. */
#define _GNU_SOURCE
#include "mountpt.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Undoes mountinfo's escapes (\040 for a space, \011, \012, \134) in place. */
static void cm_mount_unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* One mountinfo line, split in place: the mount id (field 1), the device
 * (field 3), the mount point (field 5, returned) and the filesystem type
 * (first field after " - "); NULL if malformed. */
static char *cm_mount_parse(char *line, cm_mount *m)
{
	char *save = NULL, *w = strtok_r(line, " \n", &save), *point;

	if (!w || sscanf(w, "%d", &m->id) != 1)
		return NULL;
	w = strtok_r(NULL, " \n", &save);
	w = w ? strtok_r(NULL, " \n", &save) : NULL;
	if (!w || sscanf(w, "%u:%u", &m->major, &m->minor) != 2)
		return NULL;
	w = strtok_r(NULL, " \n", &save);
	point = w ? strtok_r(NULL, " \n", &save) : NULL;
	if (!point)
		return NULL;
	while ((w = strtok_r(NULL, " \n", &save)) && strcmp(w, "-") != 0)
		;
	w = w ? strtok_r(NULL, " \n", &save) : NULL;
	if (!w)
		return NULL;
	snprintf(m->fstype, sizeof(m->fstype), "%s", w);
	cm_mount_unescape(point);
	return point;
}

int cm_mount_find(const char *path, cm_mount *ret)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *point;
	size_t cap = 0;
	cm_mount m;
	int found = 0;

	if (!f)
		return -errno;
	/* Later lines are mounted on top of earlier ones: the last match wins. */
	while (getline(&line, &cap, f) > 0) {
		point = cm_mount_parse(line, &m);
		if (!point || strcmp(point, path) != 0)
			continue;
		found = 1;
		if (ret)
			*ret = m;
	}
	free(line);
	fclose(f);
	return found;
}

bool cm_mount_stale(const char *path)
{
	struct statx stx;

	return statx(AT_FDCWD, path, AT_STATX_FORCE_SYNC, STATX_BASIC_STATS, &stx) < 0 &&
	       errno == ENOTCONN;
}

/* fusermount3 -u [-z] path, for a caller without CAP_SYS_ADMIN. */
static int cm_fusermount_u(const char *path, bool lazy)
{
	char *argv[] = {"fusermount3", "-u", "-q", lazy ? "-z" : "--", (char *)path, NULL};
	int status;
	pid_t pid;
	int r;

	r = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
	if (r)
		return -r;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : lazy ? -EPERM : -EBUSY;
}

static int cm_umount_flags(const char *path, bool lazy)
{
	if (umount2(path, UMOUNT_NOFOLLOW | (lazy ? MNT_DETACH : 0)) == 0)
		return 0;
	if (errno == EPERM)
		return cm_fusermount_u(path, lazy);
	return -errno;
}

/* Aborts FUSE connection minor through fusectl: 0, or -errno (-ENOENT
 * where fusectl is not mounted). */
static int cm_fuse_abort(unsigned minor)
{
	char file[96];
	int fd, r = 0;

	snprintf(file, sizeof(file), "/sys/fs/fuse/connections/%u/abort", minor);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1", 1) < 0)
		r = -errno;
	close(fd);
	return r;
}

int cm_mount_detach_dead(const char *path, const cm_mount *m, bool *aborted)
{
	*aborted = m->major == 0 && strncmp(m->fstype, "fuse", 4) == 0 &&
		   cm_fuse_abort(m->minor) == 0;
	return cm_umount_flags(path, true);
}

int cm_mount_clean_stale(const char *path)
{
	int r = cm_mount_find(path, NULL);

	if (r <= 0 || !cm_mount_stale(path))
		return r < 0 ? r : 0;
	r = cm_umount_flags(path, true);
	return r < 0 ? r : 1;
}

int cm_mount_check_dir(const char *path, char *why, size_t len)
{
	struct stat st;
	int r;

	*why = '\0';
	if (path[0] != '/') {
		snprintf(why, len, "%s: the mount point must be an absolute path", path);
		return -EINVAL;
	}
	r = cm_mount_clean_stale(path);
	if (r < 0) {
		snprintf(why, len, "%s: a stale mount (its daemon died) is there and could not "
			 "be unmounted: %s", path, strerror(-r));
		return r;
	}
	if (r > 0)
		snprintf(why, len, "unmounted the stale mount at %s (its daemon had died)", path);
	if (stat(path, &st) < 0) {
		r = -errno;
		snprintf(why, len, "mount point %s: %s", path, strerror(errno));
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, len, "mount point %s is not a directory", path);
		return -ENOTDIR;
	}
	r = cm_mount_find(path, NULL);
	if (r > 0) {
		snprintf(why, len, "%s is already a mount point (unmount it first)", path);
		return -EBUSY;
	}
	return r < 0 ? r : 0;
}

int cm_unmount(const char *path, bool *lazy)
{
	int r = cm_umount_flags(path, false);

	*lazy = false;
	if (r != -EBUSY)
		return r;
	*lazy = true;
	return cm_umount_flags(path, true);
}
