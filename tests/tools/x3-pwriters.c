/* x3-pwriters - one of several clients writing at once (pwriters.t).
 *
 *   x3-pwriters [--instance N] run DIR ID NFILES
 *     Makes DIR (if missing), then NFILES files DIR/wID-K, each written
 *     in chunks of assorted sizes, some through O_APPEND opens, some with
 *     a sparse hole, every fifth fsynced; every third is renamed to
 *     DIR/rID-K, every seventh unlinked. Then reads back all its files.
 *   x3-pwriters [--instance N] check DIR ID NFILES
 *     Checks, from another client, what run left: every file there with
 *     its bytes, the unlinked ones gone.
 *   x3-pwriters [--instance N] names DIR ID NFILES
 *     NFILES empty files with short names (nID-K) in DIR, many to a
 *     directory block, then every other one unlinked; readdir must list
 *     exactly the others.
 *   x3-pwriters [--instance N] fill DIR ID NFILES
 *     Writes files DIR/wID-K as run does (no renames, no unlinks) until
 *     one fails, which must be with ENOSPC before NFILES; prints how many
 *     were written ("... wrote N files, then ENOSPC") and reads them back.
 *   x3-pwriters [--instance N] filled DIR ID NFILES
 *     Checks that DIR/wID-0 to wID-(NFILES - 1) are there with their bytes.
 * Exit 0 when all is as planned, 1 with the reasons on stdout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ext3d.h"

#define XP_MAX (300u * 1024)

static unsigned xp_bad;
static uint8_t xp_want[XP_MAX], xp_got[XP_MAX];

static uint8_t xp_byte(unsigned id, unsigned k, uint64_t i)
{
	return (uint8_t)((i * 13 + id * 101 + k * 7) ^ (i >> 10));
}

/* File K's planned size and hole: bytes [hole, hole + holelen) are zero. */
static void xp_plan(unsigned id, unsigned k, uint64_t *size, uint64_t *hole, uint64_t *holelen)
{
	uint32_t x = (id * 2654435761u) ^ (k * 40503u);

	*size = x % (XP_MAX - 1);
	if (k % 4 == 1 && *size > 100000) {
		*hole = 20000;
		*holelen = 50000;
	} else {
		*hole = *holelen = 0;
	}
}

static void xp_expect(unsigned id, unsigned k, uint64_t size, uint64_t hole, uint64_t holelen)
{
	for (uint64_t i = 0; i < size; i++)
		xp_want[i] = i >= hole && i < hole + holelen ? 0 : xp_byte(id, k, i);
}

static void xp_name(char *out, size_t cap, const char *dir, unsigned id, unsigned k)
{
	snprintf(out, cap, "%s/%c%u-%u", dir, k % 3 == 0 ? 'r' : 'w', id, k);
}

/* Writes len bytes of buf at off (append: at the end) as write(2) callers
 * must: a short write, which a disk filling midway gives, is followed by
 * one for the rest, whose error says why (ENOSPC). A write of nothing
 * without an error is a fault of its own, reported as -EIO. */
static int xp_write_all(ext3d_file *f, bool append, const uint8_t *buf, size_t len,
			uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = append ? ext3d_write(f, buf + done, len - done)
				   : ext3d_pwrite(f, buf + done, len - done, off + done);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

static int xp_write_file(ext3d *fs, const char *dir, unsigned id, unsigned k)
{
	uint64_t size, hole, holelen, off = 0;
	char path[512];
	ext3d_file *f;
	int r;

	xp_plan(id, k, &size, &hole, &holelen);
	xp_expect(id, k, size, hole, holelen);
	snprintf(path, sizeof(path), "%s/w%u-%u", dir, id, k);
	r = ext3d_create(fs, path, O_WRONLY | O_CREAT | O_EXCL, 0644, &f);
	if (r < 0)
		return r;
	while (r == 0 && off < size) {
		uint64_t chunk = 1 + (off * 7 + k) % 40000;
		if (chunk > size - off)
			chunk = size - off;
		if (off < hole + holelen && off + chunk > hole && holelen) {
			/* skip the hole: write what precedes it, jump past it */
			chunk = off < hole ? hole - off : 0;
			if (chunk == 0) {
				off = hole + holelen;
				continue;
			}
		}
		if (k % 2 && holelen == 0) {
			/* every other file appends through a second handle */
			ext3d_file *g;
			r = ext3d_open(fs, path, O_WRONLY | O_APPEND, &g);
			if (r < 0)
				break;
			r = xp_write_all(g, true, xp_want + off, chunk, off);
			ext3d_close(g);
		} else {
			r = xp_write_all(f, false, xp_want + off, chunk, off);
		}
		off += chunk;
	}
	if (r == 0 && k % 5 == 0)
		r = ext3d_fsync(f);
	ext3d_close(f);
	return r;
}

/* Checks that file K of client ID is at path with all its bytes. */
static void xp_check_bytes(ext3d *fs, const char *path, unsigned id, unsigned k)
{
	uint64_t size, hole, holelen;
	ext3d_attr a;
	ext3d_file *f;
	int r = ext3d_stat(fs, path, &a);

	xp_plan(id, k, &size, &hole, &holelen);
	xp_expect(id, k, size, hole, holelen);
	if (r < 0 || a.size != size) {
		printf("%s: %s, size %llu (want %llu)\n", path, r < 0 ? strerror(-r) : "there",
		       r < 0 ? 0ULL : (unsigned long long)a.size, (unsigned long long)size);
		xp_bad++;
		return;
	}
	r = ext3d_open(fs, path, O_RDONLY, &f);
	if (r < 0) {
		printf("%s: open: %s\n", path, strerror(-r)), xp_bad++;
		return;
	}
	ssize_t n = ext3d_pread(f, xp_got, XP_MAX, 0);
	ext3d_close(f);
	if (n != (ssize_t)size || memcmp(xp_got, xp_want, size))
		printf("%s: bytes differ (read %zd of %llu)\n", path, n, (unsigned long long)size),
			xp_bad++;
}

static void xp_check_file(ext3d *fs, const char *dir, unsigned id, unsigned k)
{
	char path[512];
	ext3d_attr a;
	int r;

	xp_name(path, sizeof(path), dir, id, k);
	if (k % 7 == 0) {
		r = ext3d_stat(fs, path, &a);
		if (r != -ENOENT)
			printf("%s: still there after its unlink (%d)\n", path, r), xp_bad++;
		return;
	}
	xp_check_bytes(fs, path, id, k);
}

static int xp_run(ext3d *fs, const char *dir, unsigned id, unsigned nfiles)
{
	char a[512], b[512];
	int r = ext3d_mkdir(fs, dir, 0777);

	if (r < 0 && r != -EEXIST)
		return printf("mkdir %s: %s\n", dir, strerror(-r)), 1;
	for (unsigned k = 0; k < nfiles; k++) {
		r = xp_write_file(fs, dir, id, k);
		if (r < 0) {
			printf("write %s/w%u-%u: %s\n", dir, id, k, strerror(-r)), xp_bad++;
			continue;
		}
		snprintf(a, sizeof(a), "%s/w%u-%u", dir, id, k);
		if (k % 7 == 0)
			r = ext3d_unlink(fs, a);
		else if (k % 3 == 0) {
			xp_name(b, sizeof(b), dir, id, k);
			r = ext3d_rename(fs, a, b);
		}
		if (r < 0)
			printf("unlink/rename %s: %s\n", a, strerror(-r)), xp_bad++;
	}
	for (unsigned k = 0; k < nfiles; k++)
		xp_check_file(fs, dir, id, k);
	return xp_bad ? 1 : 0;
}

/* Checks that files DIR/wID-0 to wID-(NFILES - 1) are whole. */
static void xp_check_filled(ext3d *fs, const char *dir, unsigned id, unsigned nfiles)
{
	char path[512];

	for (unsigned k = 0; k < nfiles; k++) {
		snprintf(path, sizeof(path), "%s/w%u-%u", dir, id, k);
		xp_check_bytes(fs, path, id, k);
	}
}

/* Writes files DIR/wID-K until one fails, as the disk fills: that write
 * must fail with ENOSPC, and every file written before must read back
 * whole, while the other clients may still be writing. */
static int xp_fill(ext3d *fs, const char *dir, unsigned id, unsigned nfiles)
{
	unsigned k;
	int r = ext3d_mkdir(fs, dir, 0777);

	if (r < 0 && r != -EEXIST)
		return printf("mkdir %s: %s\n", dir, strerror(-r)), 1;
	for (k = 0; k < nfiles; k++) {
		r = xp_write_file(fs, dir, id, k);
		if (r < 0)
			break;
	}
	if (r == 0)
		printf("%s: client %u wrote all %u files, never out of space\n", dir, id, nfiles),
			xp_bad++;
	else if (r != -ENOSPC)
		printf("write %s/w%u-%u: %s, want ENOSPC\n", dir, id, k, strerror(-r)), xp_bad++;
	else
		printf("%s: client %u wrote %u files, then ENOSPC\n", dir, id, k);
	xp_check_filled(fs, dir, id, k);
	return xp_bad ? 1 : 0;
}

static int xp_names(ext3d *fs, const char *dir, unsigned id, unsigned nfiles)
{
	char path[512];
	const ext3d_dirent *e;
	ext3d_file *f;
	ext3d_dir *d;
	unsigned seen = 0;
	int r = ext3d_mkdir(fs, dir, 0777);

	if (r < 0 && r != -EEXIST)
		return printf("mkdir %s: %s\n", dir, strerror(-r)), 1;
	for (unsigned k = 0; k < nfiles; k++) {
		snprintf(path, sizeof(path), "%s/n%u-%u", dir, id, k);
		r = ext3d_create(fs, path, O_WRONLY | O_EXCL, 0644, &f);
		if (r < 0)
			return printf("create %s: %s\n", path, strerror(-r)), 1;
		ext3d_close(f);
	}
	for (unsigned k = 0; k < nfiles; k += 2) {
		snprintf(path, sizeof(path), "%s/n%u-%u", dir, id, k);
		r = ext3d_unlink(fs, path);
		if (r < 0)
			return printf("unlink %s: %s\n", path, strerror(-r)), 1;
	}
	r = ext3d_opendir(fs, dir, &d);
	if (r < 0)
		return printf("opendir %s: %s\n", dir, strerror(-r)), 1;
	while ((r = ext3d_readdir(d, &e)) > 0) {
		unsigned i, k;
		if (sscanf(e->name, "n%u-%u", &i, &k) == 2 && i == id) {
			if (k % 2 == 0 || k >= nfiles)
				printf("%s/%s: listed, but unlinked or never made\n", dir, e->name), xp_bad++;
			seen++;
		}
	}
	ext3d_closedir(d);
	if (r < 0 || seen != nfiles / 2)
		printf("%s: %u of client %u's names listed, want %u (%s)\n", dir, seen, id,
		       nfiles / 2, r < 0 ? strerror(-r) : "ok"), xp_bad++;
	return xp_bad ? 1 : 0;
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
	if (argc != 5 || (strcmp(argv[1], "run") && strcmp(argv[1], "check") &&
			  strcmp(argv[1], "names") && strcmp(argv[1], "fill") &&
			  strcmp(argv[1], "filled"))) {
		fprintf(stderr, "usage: x3-pwriters [--instance N] run|check|names|fill|filled "
				"DIR ID NFILES\n");
		return 2;
	}
	r = ext3d_attach(instance, &fs);
	if (r < 0) {
		fprintf(stderr, "x3-pwriters: attach: %s\n", strerror(-r));
		return 2;
	}
	unsigned id = (unsigned)atoi(argv[3]), nfiles = (unsigned)atoi(argv[4]);
	if (strcmp(argv[1], "run") == 0) {
		r = xp_run(fs, argv[2], id, nfiles);
	} else if (strcmp(argv[1], "names") == 0) {
		r = xp_names(fs, argv[2], id, nfiles);
	} else if (strcmp(argv[1], "fill") == 0) {
		r = xp_fill(fs, argv[2], id, nfiles);
	} else if (strcmp(argv[1], "filled") == 0) {
		xp_check_filled(fs, argv[2], id, nfiles);
		r = xp_bad ? 1 : 0;
	} else {
		for (unsigned k = 0; k < nfiles; k++)
			xp_check_file(fs, argv[2], id, k);
		r = xp_bad ? 1 : 0;
	}
	ext3d_detach(fs);
	return r;
}
