/* x3-pseq-tree.c - the tree dump that closes an x3-posixseq run, and the
 * byte helpers (FNV-1a hash, seeded fill). One line per entry under ".",
 * names sorted bytewise: type, mode, owner, link count, size, blocks,
 * hard-link group (inode numbers only as equalities: the first inode met
 * is L1), then a hash of the bytes (files), the target (symlinks) or the
 * rdev (devices), then every xattr name sorted with its length and hash.
 * Files past 64 MiB are hashed over their first MiB and the bytes around
 * the size edges the sequence writes at, so a sparse 2 TiB file is cheap.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "x3-pseq.h"

#define PT_DEPTH 16
#define PT_INOS 4096
#define PT_FULL (64LL << 20)

static struct { dev_t dev; ino_t ino; } pt_inos[PT_INOS];
static int pt_ninos;
int ps_no_xattr;
static unsigned char pt_buf[1 << 20];

uint64_t ps_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	if (!h)
		h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

void ps_fill(unsigned char *buf, size_t n, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (unsigned char)(x >> 24);
	}
}

static int pt_group(const struct stat *st)
{
	for (int i = 0; i < pt_ninos; i++)
		if (pt_inos[i].dev == st->st_dev && pt_inos[i].ino == st->st_ino)
			return i + 1;
	if (pt_ninos == PT_INOS)
		return 0;
	pt_inos[pt_ninos].dev = st->st_dev;
	pt_inos[pt_ninos].ino = st->st_ino;
	return ++pt_ninos;
}

/* Hashes [off, off + len) of fd into *h; -errno on a read error. */
static int pt_hash_range(int fd, off_t off, off_t len, uint64_t *h)
{
	while (len > 0) {
		ssize_t n = pread(fd, pt_buf, (size_t)(len < (off_t)sizeof(pt_buf) ? len : (off_t)sizeof(pt_buf)), off);

		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		*h = ps_hash(*h, pt_buf, (size_t)n);
		off += n, len -= n;
	}
	return 0;
}

static void pt_content(const char *p, const struct stat *st)
{
	static const off_t edges[] = { 1LL << 32, (1LL << 34) - 8192, (1LL << 41) - 8192, 1LL << 44 };
	uint64_t h = 0;
	int fd, r;

	if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlink(p, (char *)pt_buf, sizeof(pt_buf));

		printf(" target=%zd:%016llx", n, (unsigned long long)(n > 0 ? ps_hash(0, pt_buf, (size_t)n) : 0));
		return;
	}
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		printf(" rdev=%u:%u", major(st->st_rdev), minor(st->st_rdev));
	if (!S_ISREG(st->st_mode))
		return;
	if ((fd = open(p, O_RDONLY)) < 0) {
		printf(" open=%s", strerrorname_np(errno));
		return;
	}
	if (st->st_size <= PT_FULL) {
		r = pt_hash_range(fd, 0, st->st_size, &h);
	} else {
		r = pt_hash_range(fd, 0, 1 << 20, &h);
		for (size_t i = 0; !r && i < sizeof(edges) / sizeof(edges[0]); i++)
			r = pt_hash_range(fd, edges[i], 16384, &h);
		r = r ? r : pt_hash_range(fd, st->st_size - 16384, 16384, &h);
	}
	close(fd);
	if (r < 0)
		printf(" read=%s", strerrorname_np(-r));
	else
		printf(" data=%016llx", (unsigned long long)h);
}

static int pt_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void pt_xattrs(const char *p)
{
	static char list[65536];
	char *names[256];
	ssize_t len = llistxattr(p, list, sizeof(list));
	int n = 0;

	if (len < 0) {
		printf(" xattrs=%s", strerrorname_np(errno));
		return;
	}
	for (ssize_t off = 0; off < len && n < 256; off += (ssize_t)strlen(list + off) + 1)
		names[n++] = list + off;
	qsort(names, (size_t)n, sizeof(names[0]), pt_cmp);
	for (int i = 0; i < n; i++) {
		ssize_t v = lgetxattr(p, names[i], pt_buf, sizeof(pt_buf));

		printf(" %.20s%s=%zd:%016llx", names[i], strlen(names[i]) > 20 ? "..." : "", v,
		       (unsigned long long)(v > 0 ? ps_hash(0, pt_buf, (size_t)v) : 0));
	}
}

static int pt_walk(const char *p, int depth)
{
	struct stat st;
	struct dirent *de;
	char **names = NULL, child[4096];
	size_t n = 0, cap = 0;
	int r = 0;
	DIR *d;

	if (lstat(p, &st) < 0) {
		printf("T %s lstat=%s\n", p, strerrorname_np(errno));
		return -1;
	}
	if (strlen(p) > 60)
		printf("T %.40s...[%zu]", p, strlen(p));
	else
		printf("T %s", p);
	printf(" mode=0%o uid=%u gid=%u nlink=%lu size=%lld blocks=%lld", st.st_mode, st.st_uid, st.st_gid,
	       (unsigned long)st.st_nlink, (long long)st.st_size, (long long)st.st_blocks);
	if (!S_ISDIR(st.st_mode) && st.st_nlink > 1)
		printf(" L%d", pt_group(&st));
	pt_content(p, &st);
	if (!ps_no_xattr)
		pt_xattrs(p);
	printf("\n");
	if (!S_ISDIR(st.st_mode) || depth >= PT_DEPTH)
		return 0;
	if (!(d = opendir(p)))
		return printf("T %s opendir=%s\n", p, strerrorname_np(errno)), -1;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap && !(names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*names))))
			return closedir(d), -ENOMEM;
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	if (n) /* qsort must not be given a null array, even of 0 names */
		qsort(names, n, sizeof(*names), pt_cmp);
	for (size_t i = 0; i < n; i++) {
		snprintf(child, sizeof(child), "%s/%s", p, names[i]);
		r |= pt_walk(child, depth + 1);
		free(names[i]);
	}
	free(names);
	return r;
}

int ps_tree_dump(void)
{
	pt_ninos = 0;
	fflush(stdout);
	return pt_walk(".", 0);
}
