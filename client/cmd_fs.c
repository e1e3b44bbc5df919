/* cmd_fs.c - ext3d ls, stat, cat and get: the read path through libext3d.
 * ls shows names starting with '.' only with -a, as ls(1).
 * ls -R lists each directory once, by inode number, as GNU ls notices a
 * directory it has already listed: a corrupt image whose entry points back
 * at an ancestor is reported (exit status 2) instead of recursing forever.
 * get shows its progress on a terminal (progress.h); cat does not. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ext3d.h"
#include "io.h"
#include "progress.h"

#define CLI_IO_CHUNK (1u << 20)

int cli_attach(cli_ctx *c, ext3d **fs)
{
	int r = ext3d_attach(c->instance, fs);

	if (r < 0 && *ext3d_attach_detail())
		return fprintf(stderr, "ext3d: %s: %s: %s\n", c->instance, strerror(-r),
			       ext3d_attach_detail()), 1;
	return r < 0 ? cli_fail(c->instance, r) : 0;
}

static void cli_mode_string(uint32_t mode, char out[11])
{
	static const char types[] = "?pc?d?b?-?l?s???";
	const char *rwx = "rwxrwxrwx";

	out[0] = types[(mode >> 12) & 15];
	for (int i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[3] = (mode & 0100) ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = (mode & 0010) ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = (mode & 0001) ? 't' : 'T';
	out[10] = '\0';
}

static void cli_print_long(ext3d *fs, const char *dir, const char *name, const ext3d_attr *a)
{
	char mode[11], when[32], path[4096], target[4096];
	time_t t = (time_t)a->mtime;
	struct tm tm;
	ssize_t n;

	cli_mode_string(a->mode, mode);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M", gmtime_r(&t, &tm));
	if (S_ISCHR(a->mode) || S_ISBLK(a->mode))
		printf("%s %3u %5u %5u %4u, %4u %s %s", mode, a->nlink, a->uid, a->gid,
		       major(a->rdev), minor(a->rdev), when, name);
	else
		printf("%s %3u %5u %5u %10" PRIu64 " %s %s", mode, a->nlink, a->uid, a->gid, a->size,
		       when, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (S_ISLNK(a->mode) && (n = ext3d_readlink(fs, path, target, sizeof(target) - 1)) >= 0)
		printf(" -> %.*s", (int)n, target);
	putchar('\n');
}

/* The inode numbers of the directories ls -R has listed (open addressing). */
typedef struct cli_seen {
	uint64_t *v;
	size_t cap, n;
} cli_seen;

/* Adds ino; returns 1 if it was there already, 0 if added, -ENOMEM. */
static int cli_seen_add(cli_seen *s, uint64_t ino)
{
	if (2 * (s->n + 1) > s->cap) {
		cli_seen g = {calloc(s->cap ? 2 * s->cap : 64, sizeof(uint64_t)),
			      s->cap ? 2 * s->cap : 64, 0};
		if (!g.v)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i])
				(void)cli_seen_add(&g, s->v[i]);
		free(s->v);
		*s = g;
	}
	size_t i = (size_t)(ino * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
	for (; s->v[i]; i = (i + 1) & (s->cap - 1))
		if (s->v[i] == ino)
			return 1;
	s->v[i] = ino;
	s->n++;
	return 0;
}

typedef struct cli_ls_opts {
	bool lng, rec, all, header;
	cli_seen seen; /* with rec: directories listed so far */
} cli_ls_opts;

static int cli_ls_dir(ext3d *fs, const char *path, uint64_t ino, cli_ls_opts *o)
{
	const ext3d_dirent *de;
	ext3d_dir *d;
	struct cli_subdir {
		char *path;
		uint64_t ino;
	} *sub = NULL;
	size_t nsub = 0;
	int r;

	if (o->rec && (r = cli_seen_add(&o->seen, ino)) != 0) {
		if (r < 0)
			return cli_fail(path, r);
		fprintf(stderr, "ext3d: ls: %s: not listing already-listed directory\n", path);
		return 2;
	}
	r = ext3d_opendir(fs, path, &d);
	if (r < 0)
		return cli_fail(path, r);
	if (o->header)
		printf("%s:\n", path);
	while ((r = ext3d_readdir(d, &de)) > 0) {
		if (de->name[0] == '.' && !o->all)
			continue;
		if (o->lng)
			cli_print_long(fs, path, de->name, &de->attr);
		else
			printf("%s\n", de->name);
		if (o->rec && S_ISDIR(de->attr.mode) && strcmp(de->name, ".") &&
		    strcmp(de->name, "..")) {
			struct cli_subdir *grown = realloc(sub, (nsub + 1) * sizeof(*sub));
			if (!grown) {
				r = -ENOMEM;
				break;
			}
			sub = grown;
			sub[nsub].ino = de->ino;
			if (asprintf(&sub[nsub].path, "%s/%s", strcmp(path, "/") ? path : "",
				     de->name) > 0)
				nsub++;
		}
	}
	ext3d_closedir(d);
	int status = r < 0 ? cli_fail(path, r) : 0;
	o->header = true;
	for (size_t i = 0; i < nsub; i++) {
		putchar('\n');
		int s = cli_ls_dir(fs, sub[i].path, sub[i].ino, o);
		status = s > status ? s : status;
		free(sub[i].path);
	}
	free(sub);
	return status;
}

int cli_ls(cli_ctx *c, int argc, char **argv)
{
	cli_ls_opts o = {0};
	const char *path = "/";
	ext3d_attr a;
	ext3d *fs;
	int status, r;

	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-' && argv[i][1]) {
			o.lng |= strchr(argv[i], 'l') != NULL;
			o.rec |= strchr(argv[i], 'R') != NULL;
			o.all |= strchr(argv[i], 'a') != NULL;
		} else {
			path = argv[i];
		}
	}
	if (cli_attach(c, &fs))
		return 1;
	o.header = o.rec;
	r = ext3d_stat(fs, path, &a);
	if (r < 0)
		status = cli_fail(path, r);
	else if (S_ISDIR(a.mode))
		status = cli_ls_dir(fs, path, a.ino, &o);
	else if (o.lng)
		cli_print_long(fs, ".", path, &a), status = 0;
	else
		status = (printf("%s\n", path), 0);
	free(o.seen.v);
	ext3d_detach(fs);
	return status;
}

int cli_stat(cli_ctx *c, int argc, char **argv)
{
	char mode[11];
	ext3d_attr a;
	ext3d *fs;
	int r;

	if (argc != 2)
		return cli_fail("usage: stat PATH", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	r = ext3d_lstat(fs, argv[1], &a);
	ext3d_detach(fs);
	if (r < 0)
		return cli_fail(argv[1], r);
	cli_mode_string(a.mode, mode);
	printf("  File: %s\n  Size: %" PRIu64 "\tBlocks: %" PRIu64 "\tIO Block: %u\n", argv[1],
	       a.size, a.blocks, a.blksize);
	printf(" Inode: %" PRIu64 "\tLinks: %u\tDevice type: %u,%u\n", a.ino, a.nlink,
	       major(a.rdev), minor(a.rdev));
	printf("Access: (%04o/%s)  Uid: %u  Gid: %u\n", a.mode & 07777, mode, a.uid, a.gid);
	printf("Access: %" PRId64 "\nModify: %" PRId64 "\nChange: %" PRId64 "\n", a.atime, a.mtime,
	       a.ctime);
	return 0;
}

/* Copies the file at path to fd, with a progress line when progress. */
static int cli_copy_out(ext3d *fs, const char *path, int fd, bool progress)
{
	char *buf = malloc(CLI_IO_CHUNK);
	ext3d_file *f = NULL;
	ext3d_attr a;
	ssize_t n;
	int r;

	if (!buf)
		return -ENOMEM;
	r = ext3d_open(fs, path, O_RDONLY, &f);
	if (r == 0 && progress)
		cm_progress_begin(path, NULL, ext3d_fstat(f, &a) == 0 ? a.size : 0);
	while (r == 0 && (n = ext3d_read(f, buf, CLI_IO_CHUNK)) != 0) {
		if (n < 0)
			r = (int)n;
		else
			r = cm_write_full(fd, buf, (size_t)n);
		if (r == 0)
			cm_progress_add((uint64_t)n);
	}
	cm_progress_end();
	if (f)
		ext3d_close(f);
	free(buf);
	return r;
}

int cli_cat(cli_ctx *c, int argc, char **argv)
{
	ext3d *fs;
	int status = 0;

	if (argc < 2)
		return cli_fail("usage: cat PATH...", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	for (int i = 1; i < argc; i++) {
		int r = cli_copy_out(fs, argv[i], STDOUT_FILENO, false);
		if (r < 0)
			status = cli_fail(argv[i], r);
	}
	ext3d_detach(fs);
	return status;
}

int cli_get(cli_ctx *c, int argc, char **argv)
{
	ext3d *fs;
	int fd, r;

	if (argc != 3)
		return cli_fail("usage: get PATH LOCALFILE", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	r = fd < 0 ? -errno : cli_copy_out(fs, argv[1], fd, true);
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	ext3d_detach(fs);
	return r < 0 ? cli_fail(argv[1], r) : 0;
}
