/* x3-churn - one of many clients changing the same few files at once
 * (churn.t): a seeded random run of create, write (at offsets that reach
 * the indirect, double and triple indirect blocks), truncate (up and
 * down), punch hole, unlink, rename, link, fsync and close, over a small
 * set of names in DIR shared with the other clients (which also become
 * directories, symlinks and extended attributes' holders), some files kept
 * open after their names are gone. Nothing is checked here but the errors: a
 * call may fail only as the kernel's would when others race it (ENOENT,
 * EEXIST, ENOSPC, EACCES, EPERM...); the test checks the image after.
 *
 *   x3-churn [--instance N] [--seed S] [--seconds T] [--names K] [--ops LIST] DIR
 *   x3-churn --posix [--seed S] [--seconds T] [--names K] [--ops LIST] HOSTDIR
 *
 * --posix makes the same calls as system calls in HOSTDIR (on a mount of
 * ext3d-fuse, or of the kernel's ext3 to compare).
 * --ops create,write,... keeps only the operations named (to narrow down
 * what breaks).
 * Prints "ops N errors E" and, for each unexpected error, one line; exit 1
 * if there was any.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/falloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "ext3d.h"

#define XC_OPEN 4              /* files this client keeps open */
#define XC_MAXWRITE (96 * 1024)
#define XC_MAXOFF (72ull << 20) /* past the double indirect blocks at 1 KiB */

enum { XC_CREATE, XC_WRITE, XC_TRUNC, XC_PUNCH, XC_UNLINK, XC_RENAME, XC_LINK, XC_MKDIR,
       XC_RMDIR, XC_SYMLINK, XC_XATTR, XC_FSYNC, XC_CLOSE, XC_NOPS };
static const char *const xc_names[XC_NOPS] = { "create", "write", "truncate", "punch", "unlink",
	"rename", "link", "mkdir", "rmdir", "symlink", "xattr", "fsync", "close" };
static int xc_weights[XC_NOPS] = { 12, 30, 12, 8, 10, 10, 4, 3, 3, 2, 4, 2, 6 };

static uint64_t xc_state;
static unsigned long xc_unexpected;
static uint8_t xc_buf[XC_MAXWRITE];

static uint64_t xc_rand(void)
{
	xc_state ^= xc_state << 13;
	xc_state ^= xc_state >> 7;
	xc_state ^= xc_state << 17;
	return xc_state;
}

static uint64_t xc_below(uint64_t n)
{
	return n ? xc_rand() % n : 0;
}

/* An offset most often near the start, sometimes far into the indirect
 * trees, so that truncates and punches free whole indirect blocks. */
static uint64_t xc_offset(void)
{
	switch (xc_below(4)) {
	case 0: return xc_below(64 * 1024);
	case 1: return xc_below(1 << 20);
	case 2: return xc_below(16 << 20);
	default: return xc_below(XC_MAXOFF);
	}
}

/* Errors a racing client may meet; anything else is reported. */
static bool xc_expected(int op, long r)
{
	switch (-r) {
	case ENOENT: case EEXIST: case ENOSPC: case EACCES: case EPERM: case EFBIG:
	case EDQUOT: case EMLINK: case ENOTEMPTY: case EISDIR: case ENOTDIR: case ELOOP:
		return true;
	case ENODATA:
		return op == XC_XATTR;
	case EINVAL:
		return op == XC_RENAME; /* a directory into itself */
	case EOPNOTSUPP:
		return op == XC_PUNCH;
	default:
		return false;
	}
}

static void xc_path(char *out, size_t cap, const char *dir, unsigned names)
{
	snprintf(out, cap, "%s/f%llu", dir, (unsigned long long)xc_below(names));
}

static long xc_step(ext3d *fs, const char *dir, unsigned names, ext3d_file **open, int op)
{
	char a[512], b[512];
	ext3d_file **slot = &open[xc_below(XC_OPEN)];
	ext3d_attr at;
	long r;

	xc_path(a, sizeof(a), dir, names);
	xc_path(b, sizeof(b), dir, names);
	switch (op) {
	case XC_CREATE:
		if (*slot)
			(void)ext3d_close(*slot);
		*slot = NULL;
		return ext3d_create(fs, a, O_RDWR | O_CREAT | (xc_below(3) ? 0 : O_TRUNC), 0666, slot);
	case XC_WRITE:
		if (!*slot)
			return ext3d_truncate(fs, a, xc_offset());
		r = ext3d_pwrite(*slot, xc_buf, 1 + xc_below(XC_MAXWRITE), xc_offset());
		return r < 0 ? r : 0;
	case XC_TRUNC:
		return *slot ? ext3d_ftruncate(*slot, xc_offset()) : ext3d_truncate(fs, a, xc_offset());
	case XC_PUNCH:
		if (!*slot || (r = ext3d_fstat(*slot, &at)) < 0)
			return *slot ? r : 0;
		return ext3d_fallocate_ino(fs, at.ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					   xc_offset(), 1 + xc_below(4 << 20));
	case XC_UNLINK:
		return ext3d_unlink(fs, a);
	case XC_RENAME:
		return ext3d_rename(fs, a, b);
	case XC_LINK:
		return ext3d_link(fs, a, b);
	case XC_MKDIR:
		return ext3d_mkdir(fs, a, 0777);
	case XC_RMDIR:
		return ext3d_rmdir(fs, a);
	case XC_SYMLINK:
		return ext3d_symlink(fs, b, a);
	case XC_XATTR:
		if (xc_below(3) == 0)
			return ext3d_removexattr(fs, a, "user.churn");
		return ext3d_setxattr(fs, a, "user.churn", xc_buf, xc_below(3000), 0);
	case XC_FSYNC:
		return *slot ? ext3d_fsync(*slot) : 0;
	default:
		r = *slot ? ext3d_close(*slot) : 0;
		*slot = NULL;
		return r;
	}
}

/* The same operation as system calls; fds are the files kept open. */
static long xc_sys(long r)
{
	return r < 0 ? -errno : 0;
}

static long xc_step_posix(const char *dir, unsigned names, int *fds, int op)
{
	char a[512], b[512];
	int *slot = &fds[xc_below(XC_OPEN)];
	long r;

	xc_path(a, sizeof(a), dir, names);
	xc_path(b, sizeof(b), dir, names);
	switch (op) {
	case XC_CREATE:
		if (*slot >= 0)
			(void)close(*slot);
		*slot = open(a, O_RDWR | O_CREAT | (xc_below(3) ? 0 : O_TRUNC), 0666);
		return xc_sys(*slot);
	case XC_WRITE:
		if (*slot < 0)
			return xc_sys(truncate(a, (off_t)xc_offset()));
		return xc_sys(pwrite(*slot, xc_buf, 1 + xc_below(XC_MAXWRITE), (off_t)xc_offset()));
	case XC_TRUNC:
		r = *slot >= 0 ? ftruncate(*slot, (off_t)xc_offset()) : truncate(a, (off_t)xc_offset());
		return xc_sys(r);
	case XC_PUNCH:
		if (*slot < 0)
			return 0;
		return xc_sys(fallocate(*slot, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					(off_t)xc_offset(), (off_t)(1 + xc_below(4 << 20))));
	case XC_UNLINK:
		return xc_sys(unlink(a));
	case XC_RENAME:
		return xc_sys(rename(a, b));
	case XC_LINK:
		return xc_sys(link(a, b));
	case XC_MKDIR:
		return xc_sys(mkdir(a, 0777));
	case XC_RMDIR:
		return xc_sys(rmdir(a));
	case XC_SYMLINK:
		return xc_sys(symlink(b, a));
	case XC_XATTR:
		if (xc_below(3) == 0)
			return xc_sys(removexattr(a, "user.churn"));
		return xc_sys(setxattr(a, "user.churn", xc_buf, xc_below(3000), 0));
	case XC_FSYNC:
		return *slot >= 0 ? xc_sys(fsync(*slot)) : 0;
	default:
		r = *slot >= 0 ? close(*slot) : 0;
		*slot = -1;
		return xc_sys(r);
	}
}

/* Keeps the weights of the operations named in list, zeroes the others. */
static int xc_only(const char *list)
{
	int kept = 0;

	for (int i = 0; i < XC_NOPS; i++) {
		const char *p = strstr(list, xc_names[i]);
		size_t n = strlen(xc_names[i]);

		if (p && (p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
			kept++;
		else
			xc_weights[i] = 0;
	}
	return kept ? 0 : -EINVAL;
}

static int xc_pick(void)
{
	int total = 0, i;
	uint64_t x;

	for (i = 0; i < XC_NOPS; i++)
		total += xc_weights[i];
	x = xc_below(total);
	for (i = 0; x >= (uint64_t)xc_weights[i]; i++)
		x -= xc_weights[i];
	return i;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "instance", 1, 0, 'i' }, { "seed", 1, 0, 's' },
		{ "seconds", 1, 0, 't' }, { "names", 1, 0, 'n' }, { "ops", 1, 0, 'o' },
		{ "posix", 0, 0, 'p' }, { 0, 0, 0, 0 } };
	const char *instance = NULL;
	unsigned long seed = 1, seconds = 5, names = 12, ops = 0, errors = 0;
	ext3d_file *open[XC_OPEN] = { 0 };
	int fds[XC_OPEN] = { -1, -1, -1, -1 };
	bool posix = false;
	ext3d *fs = NULL;
	time_t end;
	int c, r;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'i': instance = optarg; break;
		case 's': seed = strtoul(optarg, NULL, 0); break;
		case 't': seconds = strtoul(optarg, NULL, 0); break;
		case 'n': names = strtoul(optarg, NULL, 0); break;
		case 'p': posix = true; break;
		case 'o':
			if (xc_only(optarg) < 0) {
				fprintf(stderr, "x3-churn: --ops: no operation named in %s\n", optarg);
				return 2;
			}
			break;
		default: return 2;
		}
	}
	if (optind + 1 != argc || names == 0) {
		fprintf(stderr, "usage: x3-churn [--instance N | --posix] [--seed S] [--seconds T] "
				"[--names K] [--ops LIST] DIR\n");
		return 2;
	}
	umask(0); /* files all the clients may write, whoever made them */
	xc_state = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < sizeof(xc_buf); i++)
		xc_buf[i] = (uint8_t)(i * 31 + seed);
	if (!posix && (r = ext3d_attach(instance, &fs)) < 0) {
		fprintf(stderr, "x3-churn: attach: %s %s\n", strerror(-r), ext3d_attach_detail());
		return 1;
	}
	end = time(NULL) + (time_t)seconds;
	while (time(NULL) < end) {
		int op = xc_pick();
		long res = posix ? xc_step_posix(argv[optind], (unsigned)names, fds, op)
				 : xc_step(fs, argv[optind], (unsigned)names, open, op);

		ops++;
		if (res >= 0)
			continue;
		errors++;
		if (!xc_expected(op, res) && xc_unexpected++ < 20)
			printf("# unexpected: %s: %s\n", xc_names[op], strerror((int)-res));
	}
	for (int i = 0; i < XC_OPEN; i++) {
		if (open[i])
			(void)ext3d_close(open[i]);
		if (fds[i] >= 0)
			(void)close(fds[i]);
	}
	ext3d_detach(fs);
	printf("ops %lu errors %lu unexpected %lu\n", ops, errors, xc_unexpected);
	return xc_unexpected ? 1 : 0;
}
