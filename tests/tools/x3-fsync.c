/* x3-fsync - fsync across group restarts (restartsync.t).
 *
 *   x3-fsync [--instance N] loop DIR LOG MS
 *     Keeps four files DIR/f0..f3 open for MS milliseconds (or until one
 *     has 16 MiB, so that a fast machine does not fill the image),
 *     appending to them in turn, each append followed by an fsync; after every fsync
 *     that returned 0, "F K SIZE" goes to LOG (a host file, written at
 *     once). A failed call (the group restarting under it) is retried: a
 *     write at the same offset (the bytes depend only on the offset), an
 *     fsync that says -EIO by writing again first. The handles stay open
 *     throughout: they must keep working after each restart.
 *   x3-fsync [--instance N] check DIR LOG
 *     Every file holds at least the bytes its last logged fsync made
 *     durable, and those bytes are right. Exit 1 with the reasons.
 *   x3-fsync [--instance N] eio DIR
 *     Writes and fsyncs DIR/e1, writes DIR/e0 without an fsync, prints
 *     "ready" and waits for a line on stdin (the test restarts the group
 *     meanwhile); then prints "NAME RESULT" lines: a create of DIR/c/n
 *     (DIR/c made and synced first) with O_EXCL and mode 0444 for
 *     writing, the first call on the new session (0: the file it made is
 *     its own), a write of e0 (-EIO: the first change after the restart
 *     to a file whose write may be lost) and another (it runs), fsync of
 *     e0 (-EIO: its
 *     write may be lost), a second fsync of e0 (0: reported once), fsync
 *     of e1 (0: nothing unsynced), a write and fsync of e1 through the
 *     same handle, and a read back of e1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ext3d.h"

#define XF_FILES 4
#define XF_CHUNK 9000
#define XF_MAX (64u << 20)
#define XF_LOOP_MAX (16u << 20) /* a loop ends sooner when a file gets this big */

static uint8_t xf_byte(unsigned k, uint64_t i)
{
	return (uint8_t)((i * 29 + k * 71) ^ (i >> 11));
}

static void xf_fill(uint8_t *buf, unsigned k, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = xf_byte(k, off + i);
}

static uint64_t xf_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int xf_loop(ext3d *fs, const char *dir, const char *log, unsigned ms)
{
	ext3d_file *f[XF_FILES];
	uint64_t size[XF_FILES] = {0}, end = xf_ms() + ms;
	unsigned errors = 0, syncs = 0;
	uint8_t buf[XF_CHUNK];
	char path[512];
	FILE *lf = fopen(log, "w");
	int r;

	if (!lf)
		return 2;
	r = ext3d_mkdir(fs, dir, 0777);
	if (r < 0 && r != -EEXIST)
		return fprintf(stderr, "mkdir %s: %s\n", dir, strerror(-r)), 2;
	for (unsigned k = 0; k < XF_FILES; k++) {
		snprintf(path, sizeof(path), "%s/f%u", dir, k);
		r = ext3d_create(fs, path, O_RDWR | O_CREAT | O_TRUNC, 0644, &f[k]);
		if (r < 0)
			return fprintf(stderr, "create %s: %s\n", path, strerror(-r)), 2;
	}
	for (unsigned i = 0; xf_ms() < end; i++) {
		unsigned k = i % XF_FILES;
		size_t len = 1 + (i * 997) % XF_CHUNK;
		if (size[k] + len > XF_LOOP_MAX)
			break;
		xf_fill(buf, k, size[k], len);
		ssize_t n = ext3d_pwrite(f[k], buf, len, size[k]);
		if (n == (ssize_t)len)
			r = ext3d_fsync(f[k]);
		else
			r = n < 0 ? (int)n : -EIO;
		if (r < 0) {
			/* The group restarting: try this one again. */
			errors++;
			usleep(20000);
			continue;
		}
		size[k] += len;
		syncs++;
		fprintf(lf, "F %u %llu\n", k, (unsigned long long)size[k]);
		fflush(lf);
	}
	for (unsigned k = 0; k < XF_FILES; k++)
		ext3d_close(f[k]);
	fclose(lf);
	printf("%u fsyncs acknowledged, %u calls retried\n", syncs, errors);
	return syncs ? 0 : 1;
}

static int xf_check(ext3d *fs, const char *dir, const char *log)
{
	unsigned long long want[XF_FILES] = {0}, sz;
	uint8_t *buf = malloc(XF_MAX), *exp = malloc(XF_MAX);
	FILE *lf = fopen(log, "r");
	char line[128], path[512];
	unsigned k, bad = 0;

	if (!lf || !buf || !exp)
		return 2;
	while (fgets(line, sizeof(line), lf))
		if (sscanf(line, "F %u %llu", &k, &sz) == 2 && k < XF_FILES && sz < XF_MAX)
			want[k] = sz;
	fclose(lf);
	for (k = 0; k < XF_FILES; k++) {
		ext3d_file *f;
		snprintf(path, sizeof(path), "%s/f%u", dir, k);
		int r = ext3d_open(fs, path, O_RDONLY, &f);
		if (r < 0) {
			printf("%s: %s (%llu bytes were fsynced)\n", path, strerror(-r), want[k]);
			bad++;
			continue;
		}
		ssize_t n = ext3d_pread(f, buf, want[k], 0);
		ext3d_close(f);
		xf_fill(exp, k, 0, want[k]);
		if (n != (ssize_t)want[k]) {
			printf("%s: %zd bytes, %llu were fsynced\n", path, n, want[k]);
			bad++;
		} else if (memcmp(buf, exp, want[k])) {
			printf("%s: wrong bytes among the %llu fsynced\n", path, want[k]);
			bad++;
		}
	}
	free(buf);
	free(exp);
	return bad ? 1 : 0;
}

static int xf_eio(ext3d *fs, const char *dir)
{
	uint8_t buf[XF_CHUNK], back[2 * XF_CHUNK];
	char p0[512], p1[512], pn[512], line[64];
	ext3d_file *e0, *e1, *en;
	int r;

	r = ext3d_mkdir(fs, dir, 0777);
	if (r < 0 && r != -EEXIST)
		return fprintf(stderr, "mkdir %s: %s\n", dir, strerror(-r)), 2;
	snprintf(p0, sizeof(p0), "%s/e0", dir);
	snprintf(p1, sizeof(p1), "%s/e1", dir);
	snprintf(pn, sizeof(pn), "%s/c", dir);
	/* DIR/c, synced: no change of this handle in it is left to lose
	 * (the sync may report an earlier restart's loss: EIO, once). */
	r = ext3d_mkdir(fs, pn, 0777);
	if (r < 0 && r != -EEXIST)
		return fprintf(stderr, "mkdir %s: %s\n", pn, strerror(-r)), 2;
	if (ext3d_sync(fs) < 0 && ext3d_sync(fs) < 0)
		return fprintf(stderr, "sync failed\n"), 2;
	snprintf(pn, sizeof(pn), "%s/c/n", dir);
	if (ext3d_create(fs, p0, O_RDWR | O_CREAT | O_TRUNC, 0644, &e0) < 0 ||
	    ext3d_create(fs, p1, O_RDWR | O_CREAT | O_TRUNC, 0644, &e1) < 0)
		return fprintf(stderr, "create in %s failed\n", dir), 2;
	xf_fill(buf, 1, 0, XF_CHUNK);
	printf("first-write-e1 %zd\n", ext3d_pwrite(e1, buf, XF_CHUNK, 0));
	printf("first-fsync-e1 %d\n", ext3d_fsync(e1));
	xf_fill(buf, 0, 0, XF_CHUNK);
	printf("write-e0 %zd\n", ext3d_pwrite(e0, buf, XF_CHUNK, 0));
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	r = ext3d_create(fs, pn, O_WRONLY | O_CREAT | O_EXCL, 0444, &en);
	printf("create-excl %d\n", r);
	if (r == 0)
		ext3d_close(en);
	xf_fill(buf, 0, 0, XF_CHUNK);
	printf("rewrite-e0 %zd\n", ext3d_pwrite(e0, buf, XF_CHUNK, 0));
	printf("rewrite-e0-again %zd\n", ext3d_pwrite(e0, buf, XF_CHUNK, 0));
	printf("fsync-e0 %d\n", ext3d_fsync(e0));
	printf("fsync-e0-again %d\n", ext3d_fsync(e0));
	printf("fsync-e1 %d\n", ext3d_fsync(e1));
	xf_fill(buf, 1, XF_CHUNK, XF_CHUNK);
	printf("write-e1 %zd\n", ext3d_pwrite(e1, buf, XF_CHUNK, XF_CHUNK));
	printf("fsync-e1-after %d\n", ext3d_fsync(e1));
	ssize_t n = ext3d_pread(e1, back, sizeof(back), 0);
	uint8_t exp[2 * XF_CHUNK];
	xf_fill(exp, 1, 0, sizeof(exp));
	printf("read-e1 %s\n", n == (ssize_t)sizeof(back) && !memcmp(back, exp, sizeof(exp)) ? "right" : "wrong");
	ext3d_close(e0);
	ext3d_close(e1);
	return 0;
}

int main(int argc, char **argv)
{
	const char *instance = NULL;
	ext3d *fs;
	int r;

	if (argc > 2 && strcmp(argv[1], "--instance") == 0) {
		instance = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: x3-fsync [--instance N] loop DIR LOG MS | check DIR LOG | eio DIR\n");
		return 2;
	}
	r = ext3d_attach(instance, &fs);
	if (r < 0) {
		fprintf(stderr, "x3-fsync: attach: %s\n", strerror(-r));
		return 2;
	}
	if (strcmp(argv[1], "loop") == 0 && argc == 5)
		r = xf_loop(fs, argv[2], argv[3], (unsigned)atoi(argv[4]));
	else if (strcmp(argv[1], "check") == 0 && argc == 4)
		r = xf_check(fs, argv[2], argv[3]);
	else if (strcmp(argv[1], "eio") == 0 && argc == 3)
		r = xf_eio(fs, argv[2]);
	else
		r = 2;
	ext3d_detach(fs);
	return r;
}
