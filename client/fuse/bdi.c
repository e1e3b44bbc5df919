/* bdi.c - the mount's readahead. FUSE caps the readahead the daemon may
 * ask for in INIT at the mount's read_ahead_kb (the kernel's default, 128
 * KiB), so a sequential read reached the daemon as 128 KiB requests, one
 * libext3d call each. xf_bdi_name finds the mount's device (its backing
 * device's name in sysfs) in /proc/self/mountinfo, without a request to
 * ourselves, once mounted; xf_init raises read_ahead_kb there to the
 * largest request, 1 MiB, before the INIT reply asks for as much. Where
 * sysfs is read-only or absent (a sandbox, not root) the default stays:
 * it only costs speed. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfuse.h"

int xf_bdi_name(const char *mountpoint, char *name, size_t len)
{
	char line[8192], mnt[4096], mm[64], real[4096];
	int found = -1;
	FILE *f;

	if (!realpath(mountpoint, real))
		return -1;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* id parent major:minor root mountpoint ...; the last match is
		 * the newest mount there */
		if (sscanf(line, "%*s %*s %63s %*s %4095s", mm, mnt) == 2 && strcmp(mnt, real) == 0 &&
		    strlen(mm) < len) {
			strcpy(name, mm);
			found = 0;
		}
	}
	fclose(f);
	return found;
}

bool xf_bdi_readahead(const char *name, unsigned kib)
{
	char path[128];
	FILE *f;
	bool ok;

	if (!*name)
		return false;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", name);
	f = fopen(path, "we");
	if (!f)
		return false;
	ok = fprintf(f, "%u\n", kib) > 0;
	return fclose(f) == 0 && ok;
}
