/* x3-tree - a manifest of a directory tree, one line per entry, sorted:
 *   path  type  mode  uid  gid  nlink  size  detail
 * detail: a 64-bit FNV-1a hash of a regular file's bytes, a symlink's
 * target, a device's major:minor. Hard links are shown by a link-group
 * number shared by all names of one inode.
 *
 *   x3-tree [--instance NAME] ext3d PATH   through libext3d
 *   x3-tree host DIR                       from the host's kernel
 *   x3-tree [--instance NAME] statfs       ext3d_statfs(), one "key value" a line
 *
 * The test compares the two with diff: the two sides share only this
 * formatting, never a reading path.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ext3d.h"

#define XT_BUF (1 << 20)

struct xt_entry {
	char *line;       /* everything but the link group */
	char *path;
	uint64_t ino;
	uint32_t nlink;
	int group;
};

static struct xt_entry *xt_ents;
static size_t xt_n, xt_cap;
static ext3d *xt_fs;
static uint8_t *xt_buf;

static uint64_t xt_fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void xt_add(const char *path, uint32_t mode, uint32_t uid, uint32_t gid, uint32_t nlink,
		   uint64_t size, uint64_t ino, const char *detail)
{
	if (xt_n == xt_cap) {
		xt_cap = xt_cap ? 2 * xt_cap : 1024;
		xt_ents = realloc(xt_ents, xt_cap * sizeof(*xt_ents));
		if (!xt_ents)
			exit(2);
	}
	struct xt_entry *e = &xt_ents[xt_n++];
	e->path = strdup(path);
	if (asprintf(&e->line, "%s\t%o\t%o\t%u\t%u\t%u\t%" PRIu64 "\t%s", path, mode >> 12,
		     mode & 07777, uid, gid, S_ISDIR(mode) ? 0 : nlink, S_ISDIR(mode) ? 0 : size,
		     detail) < 0)
		exit(2);
	e->ino = ino;
	e->nlink = nlink;
}

static int xt_fail(const char *what, int err)
{
	fprintf(stderr, "x3-tree: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

/* ---- through libext3d ---- */

static int xt_ext3d_detail(const char *path, const ext3d_attr *a, char *detail, size_t len)
{
	if (S_ISREG(a->mode)) {
		uint64_t h = 0xcbf29ce484222325ULL, off = 0;
		ssize_t n;
		while ((n = ext3d_read_ino(xt_fs, a->ino, xt_buf, XT_BUF, off)) > 0) {
			h = xt_fnv(h, xt_buf, (size_t)n);
			off += (uint64_t)n;
		}
		if (n < 0)
			return xt_fail(path, (int)n);
		snprintf(detail, len, "%016" PRIx64, h);
	} else if (S_ISLNK(a->mode)) {
		ssize_t n = ext3d_readlink_ino(xt_fs, a->ino, detail, len - 1);
		if (n < 0)
			return xt_fail(path, (int)n);
		detail[n] = '\0';
	} else if (S_ISCHR(a->mode) || S_ISBLK(a->mode)) {
		snprintf(detail, len, "%u:%u", major(a->rdev), minor(a->rdev));
	} else {
		snprintf(detail, len, "-");
	}
	return 0;
}

static int xt_ext3d_walk(const char *path, const char *rel, uint64_t dir)
{
	ext3d_dirent *ents = malloc(256 * sizeof(*ents));
	uint64_t cookie = 0;
	int n, status = 0;
	char detail[4200];

	if (!ents)
		return 2;
	while ((n = ext3d_readdir_ino(xt_fs, dir, &cookie, ents, 256)) > 0) {
		for (int i = 0; i < n; i++) {
			ext3d_dirent *e = &ents[i];
			char *child;
			if (!strcmp(e->name, ".") || !strcmp(e->name, "..") ||
			    (!*rel && !strcmp(e->name, "lost+found")))
				continue;
			if (asprintf(&child, "%s/%s", rel, e->name) < 0)
				return 2;
			status |= xt_ext3d_detail(child, &e->attr, detail, sizeof(detail));
			xt_add(child, e->attr.mode, e->attr.uid, e->attr.gid, e->attr.nlink,
			       e->attr.size, e->ino, detail);
			if (S_ISDIR(e->attr.mode))
				status |= xt_ext3d_walk(path, child, e->ino);
			free(child);
		}
	}
	free(ents);
	return n < 0 ? xt_fail(rel[0] ? rel : path, n) : status;
}

/* ---- from the host ---- */

static int xt_host_detail(int dfd, const char *name, const struct stat *st, char *detail,
			  size_t len)
{
	if (S_ISREG(st->st_mode)) {
		uint64_t h = 0xcbf29ce484222325ULL;
		ssize_t n;
		int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return xt_fail(name, errno);
		while ((n = read(fd, xt_buf, XT_BUF)) > 0)
			h = xt_fnv(h, xt_buf, (size_t)n);
		close(fd);
		snprintf(detail, len, "%016" PRIx64, h);
	} else if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlinkat(dfd, name, detail, len - 1);
		detail[n < 0 ? 0 : n] = '\0';
	} else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		snprintf(detail, len, "%u:%u", major(st->st_rdev), minor(st->st_rdev));
	} else {
		snprintf(detail, len, "-");
	}
	return 0;
}

static int xt_host_walk(int dfd, const char *rel)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	char detail[4200];
	int status = 0;

	if (!d)
		return xt_fail(rel, errno);
	while ((de = readdir(d))) {
		struct stat st;
		char *child;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return xt_fail(de->d_name, errno);
		if (asprintf(&child, "%s/%s", rel, de->d_name) < 0)
			return 2;
		status |= xt_host_detail(dirfd(d), de->d_name, &st, detail, sizeof(detail));
		xt_add(child, st.st_mode, st.st_uid, st.st_gid, (uint32_t)st.st_nlink,
		       (uint64_t)st.st_size, st.st_ino, detail);
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			status |= sub < 0 ? xt_fail(child, errno) : xt_host_walk(sub, child);
		}
		free(child);
	}
	closedir(d);
	return status;
}

/* ---- output ---- */

static int xt_by_path(const void *a, const void *b)
{
	return strcmp(((const struct xt_entry *)a)->path, ((const struct xt_entry *)b)->path);
}

/* Link groups: numbered in path order by the first name of each inode. */
static void xt_print(void)
{
	int groups = 0;

	qsort(xt_ents, xt_n, sizeof(*xt_ents), xt_by_path);
	for (size_t i = 0; i < xt_n; i++) {
		xt_ents[i].group = 0;
		if (xt_ents[i].nlink < 2 || !strncmp(xt_ents[i].line + strlen(xt_ents[i].path), "\t4", 2))
			continue;
		for (size_t j = 0; j < i && !xt_ents[i].group; j++)
			if (xt_ents[j].ino == xt_ents[i].ino && xt_ents[j].group)
				xt_ents[i].group = xt_ents[j].group;
		if (!xt_ents[i].group)
			xt_ents[i].group = ++groups;
	}
	for (size_t i = 0; i < xt_n; i++)
		printf("%s\t%d\n", xt_ents[i].line, xt_ents[i].group);
}

static int xt_statfs(const char *instance)
{
	ext3d_fsstat st;
	int r = ext3d_attach(instance, &xt_fs);

	if (r == 0)
		r = ext3d_statfs(xt_fs, &st);
	ext3d_detach(xt_fs);
	if (r < 0)
		return xt_fail("statfs", r);
	printf("bsize %u\nblocks %" PRIu64 "\nbfree %" PRIu64 "\nbavail %" PRIu64
	       "\nfiles %" PRIu64 "\nffree %" PRIu64 "\nnamemax %u\n",
	       st.bsize, st.blocks, st.bfree, st.bavail, st.files, st.ffree, st.namemax);
	return 0;
}

int main(int argc, char **argv)
{
	const char *instance = NULL;
	ext3d_attr a;
	int i = 1, r;

	if (i + 1 < argc && !strcmp(argv[i], "--instance")) {
		instance = argv[i + 1];
		i += 2;
	}
	if (i + 1 == argc && !strcmp(argv[i], "statfs"))
		return xt_statfs(instance);
	xt_buf = malloc(XT_BUF);
	if (!xt_buf || i + 2 != argc)
		return fprintf(stderr, "usage: x3-tree [--instance NAME] ext3d PATH | host DIR\n"), 2;
	if (!strcmp(argv[i], "host")) {
		int fd = open(argv[i + 1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = fd < 0 ? xt_fail(argv[i + 1], errno) : xt_host_walk(fd, "");
	} else {
		r = ext3d_attach(instance, &xt_fs);
		if (r < 0)
			return xt_fail("attach", r);
		/* Open, not stat: an open directory holds its inode's grant. */
		ext3d_file *top = NULL;
		r = ext3d_open(xt_fs, argv[i + 1], O_RDONLY | O_DIRECTORY, &top);
		if (r == 0)
			r = ext3d_fstat(top, &a);
		r = r < 0 ? xt_fail(argv[i + 1], r) : xt_ext3d_walk(argv[i + 1], "", a.ino);
		if (top)
			ext3d_close(top);
		ext3d_detach(xt_fs);
	}
	xt_print();
	return r ? 1 : 0;
}
