/* sysctl.c - reads the fs.* sysctls the kernel's rules depend on. No
 * state, no locks; a sandboxed service reads them before its filter
 * forbids open(). */
#include "sysctl.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int cm_sysctl_fs(const char *name, int dflt)
{
	char path[96], v[16] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/fs/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dflt;
	n = read(fd, v, sizeof(v) - 1);
	close(fd);
	return n > 0 ? atoi(v) : dflt;
}
