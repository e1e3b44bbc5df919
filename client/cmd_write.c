/* cmd_write.c - ext3d put, mkdir, rm, mv, ln, chmod, chown, truncate and
 * sync: the write path through libext3d, each like its coreutils
 * namesake. A failure prints "ext3d: PATH: strerror" naming the path it
 * is about (rm -r names the entry inside the tree that failed; mv and ln
 * name the source when it is the source that is missing) and the command
 * goes on with its other arguments, exiting 1. put and rm -r show their
 * progress on a terminal (progress.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ext3d.h"
#include "progress.h"

#define CLI_PUT_CHUNK (1u << 20)
#define CLI_PATH_MAX 4096

/* Leading single-letter options of argv (from argv[1]) among allowed, into
 * *ret as a bit per letter a..z; returns the index of the first operand,
 * or -1 for an unknown option. */
static int cli_flags(int argc, char **argv, const char *allowed, unsigned *ret)
{
	int i = 1;

	*ret = 0;
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (strcmp(argv[i], "--") == 0)
			return i + 1;
		for (const char *p = argv[i] + 1; *p; p++) {
			if (*p < 'a' || *p > 'z' || !strchr(allowed, *p))
				return -1;
			*ret |= 1u << (*p - 'a');
		}
	}
	return i;
}

#define CLI_OPT(c) (1u << ((c) - 'a'))

/* DST, or DST/basename(SRC) when DST is a directory (as cp and mv do). */
static int cli_target(ext3d *fs, const char *src, const char *dst, char *out, size_t cap)
{
	char copy[CLI_PATH_MAX];
	ext3d_attr a;

	if (ext3d_stat(fs, dst, &a) == 0 && S_ISDIR(a.mode)) {
		snprintf(copy, sizeof(copy), "%s", src);
		size_t n = strlen(copy);
		while (n > 1 && copy[n - 1] == '/')
			copy[--n] = '\0';
		const char *base = basename(copy);
		size_t dl = strlen(dst);
		if ((size_t)snprintf(out, cap, "%s%s%s", dst, dl && dst[dl - 1] == '/' ? "" : "/",
				     base) >= cap)
			return -ENAMETOOLONG;
		return 0;
	}
	if ((size_t)snprintf(out, cap, "%s", dst) >= cap)
		return -ENAMETOOLONG;
	return 0;
}

/* Copies the local file at fd, of total bytes (0 when unknown), into a
 * file at path (made or truncated). */
static int cli_copy_in(ext3d *fs, int fd, uint32_t mode, uint64_t total, const char *path)
{
	char *buf = malloc(CLI_PUT_CHUNK);
	ext3d_file *f = NULL;
	int r;

	if (!buf)
		return -ENOMEM;
	r = ext3d_create(fs, path, O_WRONLY | O_TRUNC, mode, &f);
	if (r == 0)
		cm_progress_begin(path, NULL, total);
	while (r == 0) {
		ssize_t n = read(fd, buf, CLI_PUT_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : 0;
			break;
		}
		for (ssize_t done = 0; r == 0 && done < n;) {
			ssize_t w = ext3d_write(f, buf + done, (size_t)(n - done));
			if (w < 0)
				r = (int)w;
			else if (w == 0)
				r = -EIO;
			else
				done += w;
		}
		if (r == 0)
			cm_progress_add((uint64_t)n);
	}
	cm_progress_end();
	if (f)
		ext3d_close(f);
	free(buf);
	return r;
}

int cli_put(cli_ctx *c, int argc, char **argv)
{
	char dst[CLI_PATH_MAX];
	struct stat st;
	ext3d *fs;
	int fd, r;

	if (argc != 3)
		return cli_fail("usage: put LOCAL PATH", -EINVAL);
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_fail(argv[1], -errno);
	if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
		r = S_ISDIR(st.st_mode) ? -EISDIR : -errno;
		close(fd);
		return cli_fail(argv[1], r);
	}
	if (cli_attach(c, &fs)) {
		close(fd);
		return 1;
	}
	r = cli_target(fs, argv[1], argv[2], dst, sizeof(dst));
	if (r == 0)
		r = cli_copy_in(fs, fd, st.st_mode & 07777,
				S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0, dst);
	close(fd);
	ext3d_detach(fs);
	return r < 0 ? cli_fail(dst, r) : 0;
}

/* mkdir -p: every missing directory along path; an existing directory is
 * fine. A failure names the prefix that could not be made. */
static int cli_mkdir_p(ext3d *fs, const char *path)
{
	char pre[CLI_PATH_MAX];
	size_t len = strlen(path);
	ext3d_attr a;

	if (len >= sizeof(pre))
		return cli_fail(path, -ENAMETOOLONG);
	for (size_t i = 1; i <= len; i++) {
		if (i < len && (path[i] != '/' || path[i - 1] == '/'))
			continue;
		memcpy(pre, path, i);
		pre[i] = '\0';
		int r = ext3d_mkdir(fs, pre, 0777);
		if (r == -EEXIST && ext3d_stat(fs, pre, &a) == 0 && S_ISDIR(a.mode))
			r = 0;
		if (r < 0)
			return cli_fail(pre, r);
	}
	return 0;
}

int cli_mkdir(cli_ctx *c, int argc, char **argv)
{
	unsigned opt;
	int i = cli_flags(argc, argv, "p", &opt), status = 0;
	ext3d *fs;

	if (i < 0 || i >= argc)
		return cli_fail("usage: mkdir [-p] PATH...", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	for (; i < argc; i++) {
		int r = opt & CLI_OPT('p') ? cli_mkdir_p(fs, argv[i])
					    : ext3d_mkdir(fs, argv[i], 0777);
		if (r < 0)
			status = cli_fail(argv[i], r);
		else if (r > 0)
			status = r;
	}
	ext3d_detach(fs);
	return status;
}

/* rm -r of path: its entries first, then itself. Returns 0 or 1 (after
 * naming what could not be removed). */
static int cli_rm_tree(ext3d *fs, const char *path)
{
	const ext3d_dirent *de;
	char **names = NULL;
	size_t n = 0;
	ext3d_dir *d;
	ext3d_attr a;
	int r, status = 0;

	r = ext3d_lstat(fs, path, &a);
	if (r < 0)
		return cli_fail(path, r);
	if (!S_ISDIR(a.mode)) {
		r = ext3d_unlink(fs, path);
		if (r < 0)
			return cli_fail(path, r);
		cm_progress_add(1);
		return 0;
	}
	r = ext3d_opendir(fs, path, &d);
	if (r < 0)
		return cli_fail(path, r);
	while ((r = ext3d_readdir(d, &de)) > 0) {
		if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
			continue;
		char **grown = realloc(names, (n + 1) * sizeof(*names));
		if (!grown) {
			r = -ENOMEM;
			break;
		}
		names = grown;
		size_t pl = strlen(path);
		if (asprintf(&names[n], "%s%s%s", path, pl && path[pl - 1] == '/' ? "" : "/",
			     de->name) < 0) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	ext3d_closedir(d);
	if (r < 0)
		status = cli_fail(path, r);
	for (size_t i = 0; i < n; i++) {
		if (cli_rm_tree(fs, names[i]))
			status = 1;
		free(names[i]);
	}
	free(names);
	if (status == 0) {
		r = ext3d_rmdir(fs, path);
		if (r < 0)
			status = cli_fail(path, r);
		else
			cm_progress_add(1);
	}
	return status;
}

int cli_rm(cli_ctx *c, int argc, char **argv)
{
	unsigned opt;
	int i = cli_flags(argc, argv, "rf", &opt), status = 0;
	ext3d *fs;

	if (i < 0 || i >= argc)
		return cli_fail("usage: rm [-r] PATH...", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	if (opt & CLI_OPT('r'))
		cm_progress_begin("rm -r", "removed", 0);
	for (; i < argc; i++) {
		if (opt & CLI_OPT('r')) {
			status |= cli_rm_tree(fs, argv[i]);
			continue;
		}
		int r = ext3d_unlink(fs, argv[i]);
		if (r < 0)
			status = cli_fail(argv[i], r);
	}
	cm_progress_end();
	ext3d_detach(fs);
	return status;
}

int cli_mv(cli_ctx *c, int argc, char **argv)
{
	char dst[CLI_PATH_MAX];
	ext3d_attr a;
	ext3d *fs;
	int r;

	if (argc != 3)
		return cli_fail("usage: mv SRC DST", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	r = ext3d_lstat(fs, argv[1], &a);
	if (r < 0) {
		ext3d_detach(fs);
		return cli_fail(argv[1], r);
	}
	r = cli_target(fs, argv[1], argv[2], dst, sizeof(dst));
	if (r == 0)
		r = ext3d_rename(fs, argv[1], dst);
	ext3d_detach(fs);
	return r < 0 ? cli_fail(dst, r) : 0;
}

int cli_ln(cli_ctx *c, int argc, char **argv)
{
	unsigned opt;
	int i = cli_flags(argc, argv, "s", &opt), r;
	char dst[CLI_PATH_MAX];
	ext3d_attr a;
	ext3d *fs;

	if (i < 0 || argc - i != 2)
		return cli_fail("usage: ln [-s] TARGET LINK", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	if (opt & CLI_OPT('s')) {
		snprintf(dst, sizeof(dst), "%s", argv[i + 1]);
		r = ext3d_symlink(fs, argv[i], dst);
	} else {
		r = ext3d_lstat(fs, argv[i], &a);
		if (r < 0) {
			ext3d_detach(fs);
			return cli_fail(argv[i], r);
		}
		r = cli_target(fs, argv[i], argv[i + 1], dst, sizeof(dst));
		if (r == 0)
			r = ext3d_link(fs, argv[i], dst);
		if (r == -EPERM && S_ISDIR(a.mode))
			snprintf(dst, sizeof(dst), "%s", argv[i]); /* a directory: its fault */
	}
	ext3d_detach(fs);
	return r < 0 ? cli_fail(dst, r) : 0;
}

int cli_chmod(cli_ctx *c, int argc, char **argv)
{
	int status = 0;
	unsigned long mode;
	char *end;
	ext3d *fs;

	if (argc < 3)
		return cli_fail("usage: chmod MODE PATH...", -EINVAL);
	mode = strtoul(argv[1], &end, 8);
	if (!argv[1][0] || *end || mode > 07777)
		return cli_fail(argv[1], -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	for (int i = 2; i < argc; i++) {
		int r = ext3d_chmod(fs, argv[i], (uint32_t)mode);
		if (r < 0)
			status = cli_fail(argv[i], r);
	}
	ext3d_detach(fs);
	return status;
}

/* A user or group by number or name; *ret (uint32_t)-1 for "". */
static int cli_id(const char *s, bool group, uint32_t *ret)
{
	char *end;
	unsigned long v;

	if (!*s) {
		*ret = (uint32_t)-1;
		return 0;
	}
	v = strtoul(s, &end, 10);
	if (!*end && v < UINT32_MAX) {
		*ret = (uint32_t)v;
		return 0;
	}
	if (group) {
		struct group *g = getgrnam(s);
		if (!g)
			return -EINVAL;
		*ret = g->gr_gid;
	} else {
		struct passwd *p = getpwnam(s);
		if (!p)
			return -EINVAL;
		*ret = p->pw_uid;
	}
	return 0;
}

int cli_chown(cli_ctx *c, int argc, char **argv)
{
	char owner[256];
	uint32_t uid, gid = (uint32_t)-1;
	int status = 0;
	ext3d *fs;

	if (argc < 3)
		return cli_fail("usage: chown USER[:GROUP] PATH...", -EINVAL);
	snprintf(owner, sizeof(owner), "%s", argv[1]);
	char *colon = strchr(owner, ':');
	if (colon)
		*colon = '\0';
	if (cli_id(owner, false, &uid) < 0 || (colon && cli_id(colon + 1, true, &gid) < 0) ||
	    (uid == (uint32_t)-1 && gid == (uint32_t)-1))
		return cli_fail(argv[1], -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	for (int i = 2; i < argc; i++) {
		int r = ext3d_chown(fs, argv[i], uid, gid);
		if (r < 0)
			status = cli_fail(argv[i], r);
	}
	ext3d_detach(fs);
	return status;
}

/* A size: digits with an optional K, M or G (powers of 1024). */
static int cli_size(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end == 'K')
		shift = 10;
	else if (*end == 'M')
		shift = 20;
	else if (*end == 'G')
		shift = 30;
	else if (*end)
		return -EINVAL;
	if (shift && end[1])
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -EFBIG;
	*ret = (uint64_t)v << shift;
	return 0;
}

int cli_truncate(cli_ctx *c, int argc, char **argv)
{
	int status = 0;
	uint64_t size;
	ext3d *fs;

	if (argc < 4 || strcmp(argv[1], "-s"))
		return cli_fail("usage: truncate -s SIZE PATH...", -EINVAL);
	if (cli_size(argv[2], &size) < 0)
		return cli_fail(argv[2], -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	for (int i = 3; i < argc; i++) {
		int r = ext3d_truncate(fs, argv[i], size);
		if (r == -ENOENT) {
			/* As truncate(1): a missing file is made. */
			ext3d_file *f;
			r = ext3d_create(fs, argv[i], O_WRONLY, 0666, &f);
			if (r == 0) {
				r = ext3d_ftruncate(f, size);
				ext3d_close(f);
			}
		}
		if (r < 0)
			status = cli_fail(argv[i], r);
	}
	ext3d_detach(fs);
	return status;
}

int cli_sync(cli_ctx *c, int argc, char **argv)
{
	ext3d *fs;
	int r;

	if (argc != 1)
		return cli_fail("usage: sync", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	r = ext3d_sync(fs);
	ext3d_detach(fs);
	return r < 0 ? cli_fail("sync", r) : 0;
}
