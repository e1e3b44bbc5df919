/* attach-cycle - attach, read one file, detach, again and again: the load
 * of the leak test (tests/integration/leak.t).
 *
 *   attach-cycle [--instance NAME] CYCLES NFILES
 *
 * Cycle i reads /fK, K = i % NFILES, whole, and checks every byte against
 * the pattern leak.t wrote: byte j of fK is (K * 131 + j * 7) & 0xff. Prints
 * "cycles N", "bytes N", "errors N" (the first few errors to stderr);
 * exit 0 only if every cycle attached, read right and detached.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext3d.h"

#define AC_BUF (256 << 10)

static int ac_errors;

static void ac_error(unsigned long cycle, const char *what, long r)
{
	if (ac_errors++ < 5)
		fprintf(stderr, "attach-cycle: cycle %lu: %s: %s\n", cycle, what,
			r < 0 ? strerror((int)-r) : "wrong bytes");
}

/* Reads /fK whole; bytes read, or -1 after an error. */
static long ac_read(ext3d *fs, unsigned long cycle, unsigned k, uint8_t *buf)
{
	char path[32];
	ext3d_file *f;
	long total = 0;
	ssize_t n;
	int r;

	snprintf(path, sizeof(path), "/f%u", k);
	r = ext3d_open(fs, path, O_RDONLY, &f);
	if (r < 0)
		return ac_error(cycle, path, r), -1;
	while ((n = ext3d_read(f, buf, AC_BUF)) > 0) {
		for (ssize_t j = 0; j < n; j++)
			if (buf[j] != (uint8_t)((k * 131 + (uint64_t)(total + j) * 7) & 0xff)) {
				ac_error(cycle, path, 0);
				(void)ext3d_close(f);
				return -1;
			}
		total += n;
	}
	r = ext3d_close(f);
	if (n < 0 || r < 0)
		return ac_error(cycle, path, n < 0 ? n : r), -1;
	return total;
}

int main(int argc, char **argv)
{
	const char *instance = NULL;
	unsigned long cycles, bytes = 0;
	unsigned nfiles;
	uint8_t *buf = malloc(AC_BUF);

	if (argc > 2 && strcmp(argv[1], "--instance") == 0) {
		instance = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc != 3 || !buf || (cycles = strtoul(argv[1], NULL, 10)) == 0 ||
	    (nfiles = (unsigned)strtoul(argv[2], NULL, 10)) == 0)
		return fprintf(stderr, "usage: attach-cycle [--instance NAME] CYCLES NFILES\n"), 2;
	for (unsigned long i = 0; i < cycles; i++) {
		ext3d *fs;
		int r = ext3d_attach(instance, &fs);
		if (r < 0) {
			ac_error(i, "attach", r);
			continue;
		}
		long n = ac_read(fs, i, (unsigned)(i % nfiles), buf);
		if (n > 0)
			bytes += (unsigned long)n;
		fs = ext3d_detach(fs);
	}
	free(buf);
	printf("cycles %lu\nbytes %lu\nerrors %d\n", cycles, bytes, ac_errors);
	return ac_errors ? 1 : 0;
}
