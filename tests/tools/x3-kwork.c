/* x3-kwork.c - the workload of the random-kill test (wkill.t), and its
 * checker.
 *
 *   x3-kwork --instance N run DIR LOG SEED
 *     In DIR (made here), one client creates files, appends to them,
 *     renames them (into subdirectories too), unlinks them, makes
 *     directories, and now and then fsyncs a file or syncs everything,
 *     until a call fails (a kill) or 400 operations are done. Every step
 *     goes to LOG (a host file, written before and after each call, so a
 *     SIGKILL of this process loses nothing it knew): "B op" before a
 *     call, "D op" after it succeeded, "E errno" when it failed.
 *     With --mount=MNT, the same calls go through the FUSE mount at MNT
 *     as system calls (DIR is then a path inside the mount; check still
 *     reads through libext3d). There a sync is syncfs(2), which the
 *     kernel does not pass to a FUSE daemon (FUSE_SYNCFS goes to virtiofs
 *     only): it returns 0 and makes nothing durable, so it is logged
 *     "D s", which check does not count as a durable point. With --wlog=PATH (blockdev-svc's write log of the run), each
 *     durable point's line ends in "@SIZE", the log's size when the call
 *     returned: a power cut after that many bytes of the log keeps it
 *     (wpowercut.t drops the later ones before checking a cut).
 *     With --stop-at=N it stops itself (SIGSTOP) after its Nth append, so
 *     that a test can kill a service between two calls and continue it.
 *   x3-kwork --instance N check DIR LOG
 *     Replays LOG and checks DIR as ext3d serves it after the kill and
 *     its recovery: every file that an fsync or a sync made durable is
 *     there, under a name it had since then, at least as long as it was
 *     then; every file has bytes that only its own appends wrote (nothing
 *     half-written or stale is visible); no file has two names; no name
 *     is unknown. Exit 0 when all holds, 1 with the reasons on stdout.
 *     With --stale-ok (data=writeback, which orders no data before the
 *     commit that grows a file, as the kernel's does not), only the bytes
 *     an fsync or sync made durable are compared: past them a crash may
 *     leave stale bytes.
 *
 * File K's byte at offset i is x3k_byte(K, i); names are fK, then gK-N
 * after its Nth rename, in DIR or in a subdirectory dM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ext3d.h"

#define X3K_FILES 64
#define X3K_OPS 400
#define X3K_STATES 64

static uint8_t x3k_byte(unsigned k, uint64_t i)
{
	return (uint8_t)((i * 31 + k * 7919) ^ (i >> 9) ^ (k << 3));
}

/* ---- run ---- */

struct x3k_file {
	bool live;
	char path[128];             /* relative to DIR */
	uint64_t size;
	unsigned renames;
};

static int x3k_log_fd = -1;
static const char *x3k_wlog;    /* --wlog: the write log whose size a durable point records */
static bool x3k_stale_ok;       /* --stale-ok: bytes past the durable size are not compared */
static const char *x3k_mnt;     /* --mount: run with system calls through this mount point */
static unsigned x3k_stop_at;    /* --stop-at: stop (SIGSTOP) after this many appends */

__attribute__((format(printf, 1, 2)))
static void x3k_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(x3k_log_fd, line, (size_t)n) != n)
		exit(2);
}

/* " @SIZE" with the write log's size now, or "" without --wlog. */
static const char *x3k_wlog_mark(void)
{
	static char mark[32];
	struct stat st;

	mark[0] = '\0';
	if (x3k_wlog && stat(x3k_wlog, &st) == 0)
		snprintf(mark, sizeof(mark), " @%lld", (long long)st.st_size);
	return mark;
}

/* path as the mount shows it (--mount), in buf. */
static const char *x3k_host(const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", x3k_mnt, path);
	return buf;
}

/* -errno of a system call's result r. */
static int x3k_sys(long r)
{
	return r < 0 ? -errno : 0;
}

/* Opens path through the mount: a descriptor, or -errno. */
static int x3k_sys_open(const char *path, int flags)
{
	char host[600];
	int fd = open(x3k_host(path, host, sizeof(host)), flags | O_CLOEXEC, 0644);

	return fd < 0 ? -errno : fd;
}

static int x3k_mkdir(ext3d *fs, const char *path)
{
	char host[600];

	if (x3k_mnt)
		return x3k_sys(mkdir(x3k_host(path, host, sizeof(host)), 0755));
	return ext3d_mkdir(fs, path, 0755);
}

static int x3k_create(ext3d *fs, const char *path)
{
	ext3d_file *fh;
	int r;

	if (x3k_mnt) {
		r = x3k_sys_open(path, O_WRONLY | O_CREAT | O_EXCL);
		return r < 0 ? r : x3k_sys(close(r));
	}
	r = ext3d_create(fs, path, O_WRONLY | O_CREAT | O_EXCL, 0644, &fh);
	if (r == 0)
		ext3d_close(fh);
	return r;
}

static int x3k_rename(ext3d *fs, const char *from, const char *to)
{
	char h1[600], h2[600];

	if (x3k_mnt)
		return x3k_sys(rename(x3k_host(from, h1, sizeof(h1)), x3k_host(to, h2, sizeof(h2))));
	return ext3d_rename(fs, from, to);
}

static int x3k_unlink(ext3d *fs, const char *path)
{
	char host[600];

	if (x3k_mnt)
		return x3k_sys(unlink(x3k_host(path, host, sizeof(host))));
	return ext3d_unlink(fs, path);
}

static int x3k_sync(ext3d *fs)
{
	int fd, r;

	if (!x3k_mnt)
		return ext3d_sync(fs);
	fd = x3k_sys_open("/", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	r = x3k_sys(syncfs(fd));
	close(fd);
	return r;
}

/* Appends len bytes through the mount: -errno, or -EIO if short. */
static int x3k_sys_append(const char *path, const uint8_t *buf, size_t len)
{
	int fd = x3k_sys_open(path, O_WRONLY | O_APPEND), r;
	ssize_t n;

	if (fd < 0)
		return fd;
	n = write(fd, buf, len);
	r = n < 0 ? -errno : n != (ssize_t)len ? -EIO : 0;
	close(fd);
	return r;
}

static int x3k_append(ext3d *fs, const char *dir, unsigned k, struct x3k_file *f, size_t len)
{
	char path[300];
	uint8_t buf[16384];
	ext3d_file *fh;
	ssize_t n;
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, f->path);
	for (size_t i = 0; i < len; i++)
		buf[i] = x3k_byte(k, f->size + i);
	if (x3k_mnt)
		return x3k_sys_append(path, buf, len);
	r = ext3d_open(fs, path, O_WRONLY | O_APPEND, &fh);
	if (r < 0)
		return r;
	n = ext3d_write(fh, buf, len);
	r = n < 0 ? (int)n : n != (ssize_t)len ? -EIO : 0;
	ext3d_close(fh);
	return r;
}

static int x3k_fsync(ext3d *fs, const char *dir, struct x3k_file *f)
{
	char path[300];
	ext3d_file *fh;
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, f->path);
	if (x3k_mnt) {
		int fd = x3k_sys_open(path, O_WRONLY);
		if (fd < 0)
			return fd;
		r = x3k_sys(fsync(fd));
		close(fd);
		return r;
	}
	r = ext3d_open(fs, path, O_WRONLY, &fh);
	if (r < 0)
		return r;
	r = ext3d_fsync(fh);
	ext3d_close(fh);
	return r;
}

static int x3k_run(ext3d *fs, const char *dir, unsigned seed)
{
	struct x3k_file files[X3K_FILES] = {0};
	unsigned nfiles = 0, ndirs = 0;
	char path[300], path2[300];
	int r;

	srandom(seed);
	r = x3k_mkdir(fs, dir);
	if (r < 0) {
		x3k_log("E %d mkdir", r);
		return 1;
	}
	for (int op = 0; op < X3K_OPS; op++) {
		unsigned pick = (unsigned)random() % 100, k = (unsigned)random() % X3K_FILES;
		struct x3k_file *f = &files[k];

		if (pick < 15 && nfiles < X3K_FILES) {
			k = nfiles++;
			f = &files[k];
			snprintf(f->path, sizeof(f->path), "f%u", k);
			snprintf(path, sizeof(path), "%s/%s", dir, f->path);
			x3k_log("B C %u", k);
			r = x3k_create(fs, path);
			if (r == 0) {
				f->live = true;
				x3k_log("D C %u", k);
			}
		} else if (pick < 50 && f->live) {
			size_t len = 1 + (size_t)random() % 16384;
			x3k_log("B A %u %llu", k, (unsigned long long)(f->size + len));
			r = x3k_append(fs, dir, k, f, len);
			if (r == 0) {
				f->size += len;
				x3k_log("D A %u %llu", k, (unsigned long long)f->size);
				if (x3k_stop_at && --x3k_stop_at == 0)
					raise(SIGSTOP);
			}
		} else if (pick < 62 && f->live) {
			char np[128];
			if (ndirs && random() % 2)
				snprintf(np, sizeof(np), "d%u/g%u-%u", (unsigned)random() % ndirs, k,
					 f->renames + 1);
			else
				snprintf(np, sizeof(np), "g%u-%u", k, f->renames + 1);
			snprintf(path, sizeof(path), "%s/%s", dir, f->path);
			snprintf(path2, sizeof(path2), "%s/%s", dir, np);
			x3k_log("B R %u %s", k, np);
			r = x3k_rename(fs, path, path2);
			if (r == 0) {
				snprintf(f->path, sizeof(f->path), "%s", np);
				f->renames++;
				x3k_log("D R %u %s", k, np);
			}
		} else if (pick < 68 && f->live) {
			snprintf(path, sizeof(path), "%s/%s", dir, f->path);
			x3k_log("B U %u", k);
			r = x3k_unlink(fs, path);
			if (r == 0) {
				f->live = false;
				x3k_log("D U %u", k);
			}
		} else if (pick < 72 && ndirs < 8) {
			snprintf(path, sizeof(path), "%s/d%u", dir, ndirs);
			x3k_log("B M %u", ndirs);
			r = x3k_mkdir(fs, path);
			if (r == 0)
				x3k_log("D M %u", ndirs++);
		} else if (pick < 92 && f->live) {
			x3k_log("B F %u", k);
			r = x3k_fsync(fs, dir, f);
			if (r == 0)
				x3k_log("D F %u%s", k, x3k_wlog_mark());
		} else if (pick >= 92) {
			x3k_log("B S");
			r = x3k_sync(fs);
			if (r == 0 && x3k_mnt)
				x3k_log("D s");
			else if (r == 0)
				x3k_log("D S%s", x3k_wlog_mark());
		} else {
			r = 0;
		}
		if (r < 0) {
			x3k_log("E %d", r);
			return 1;
		}
	}
	x3k_log("END");
	return 0;
}

/* ---- check ---- */

/* One state of a file: where it was and how long. */
struct x3k_state {
	char path[128];             /* "" when it has no name */
	uint64_t size;
};

struct x3k_hist {
	struct x3k_state st[X3K_STATES * 8];
	unsigned n;                 /* states so far; st[n - 1] is the latest */
	unsigned durable;           /* the first state recovery may show */
	bool created;               /* a create began */
};

static struct x3k_hist x3k_h[X3K_FILES];
static int x3k_bad;

__attribute__((format(printf, 1, 2)))
static void x3k_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	x3k_bad++;
}

static void x3k_push(struct x3k_hist *h, const char *path, uint64_t size)
{
	if (h->n >= sizeof(h->st) / sizeof(h->st[0]))
		return;
	char copy[sizeof(h->st[0].path)]; /* path may be an earlier state's */

	snprintf(copy, sizeof(copy), "%s", path);
	memcpy(h->st[h->n].path, copy, sizeof(copy));
	h->st[h->n].size = size;
	h->n++;
}

/* Replays the log. A begun operation's outcome is a state too (it may
 * have happened); durable points move the first allowed state. */
static int x3k_replay(const char *log)
{
	FILE *f = fopen(log, "r");
	char line[512], ch, what;
	unsigned k;
	unsigned long long size;
	char name[200];

	if (!f)
		return -errno;
	/* Before its create, a file has no name: state 0. */
	for (unsigned i = 0; i < X3K_FILES; i++)
		x3k_push(&x3k_h[i], "", 0);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%c %c", &ch, &what) != 2 || (ch != 'B' && ch != 'D'))
			continue;
		if (what == 'S' && ch == 'D') {
			for (unsigned i = 0; i < X3K_FILES; i++)
				x3k_h[i].durable = x3k_h[i].n ? x3k_h[i].n - 1 : 0;
			continue;
		}
		if (sscanf(line + 4, "%u", &k) != 1 || k >= X3K_FILES)
			continue;
		struct x3k_hist *h = &x3k_h[k];
		struct x3k_state *last = &h->st[h->n - 1];
		switch (what) {
		case 'C':
			if (ch == 'B') {
				char p[32];
				snprintf(p, sizeof(p), "f%u", k);
				x3k_push(h, p, 0);
				h->created = true;
			}
			break;
		case 'A':
			if (ch == 'B' && sscanf(line + 4, "%u %llu", &k, &size) == 2)
				x3k_push(h, last->path, size);
			break;
		case 'R':
			if (ch == 'B' && sscanf(line + 4, "%u %199s", &k, name) == 2)
				x3k_push(h, name, last->size);
			break;
		case 'U':
			if (ch == 'B')
				x3k_push(h, "", 0);
			break;
		case 'F':
			if (ch == 'D')
				h->durable = h->n - 1;
			break;
		}
	}
	fclose(f);
	return 0;
}

/* Checks one file found at rel (relative to DIR) with attributes a. */
static void x3k_check_file(ext3d *fs, const char *dir, const char *rel, const ext3d_attr *a,
			   bool *seen)
{
	unsigned k, gen;
	const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	char path[300];
	uint8_t buf[65536];
	ext3d_file *fh;
	uint64_t off = 0, maxsize = 0;
	bool match = false;

	if (sscanf(base, "f%u", &k) != 1 && sscanf(base, "g%u-%u", &k, &gen) != 2) {
		x3k_fail("unknown name %s", rel);
		return;
	}
	if (k >= X3K_FILES) {
		x3k_fail("unknown name %s", rel);
		return;
	}
	if (seen[k])
		x3k_fail("file %u has two names (one is %s)", k, rel);
	seen[k] = true;
	struct x3k_hist *h = &x3k_h[k];
	for (unsigned i = h->durable; i < h->n; i++) {
		if (strcmp(h->st[i].path, rel) == 0) {
			match = true;
			if (h->st[i].size > maxsize)
				maxsize = h->st[i].size;
		}
	}
	if (!match) {
		x3k_fail("file %u at %s: not a name it may have after its last durable point", k, rel);
		return;
	}
	if (a->size > maxsize)
		x3k_fail("file %u at %s: %llu bytes, more than it ever had (%llu)", k, rel,
			 (unsigned long long)a->size, (unsigned long long)maxsize);
	if (strcmp(h->st[h->durable].path, rel) == 0 && a->size < h->st[h->durable].size)
		x3k_fail("file %u at %s: %llu bytes, an fsync made %llu durable", k, rel,
			 (unsigned long long)a->size, (unsigned long long)h->st[h->durable].size);
	/* In writeback mode only what a durable point covered is sure. */
	uint64_t limit = UINT64_MAX;
	if (x3k_stale_ok)
		limit = strcmp(h->st[h->durable].path, rel) == 0 ? h->st[h->durable].size : 0;
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	int r = ext3d_open(fs, path, O_RDONLY, &fh);
	if (r < 0) {
		x3k_fail("file %u at %s: cannot open: %s", k, rel, strerror(-r));
		return;
	}
	for (;;) {
		ssize_t n = ext3d_pread(fh, buf, sizeof(buf), off);
		if (n < 0)
			x3k_fail("file %u at %s: read at %llu: %s", k, rel, (unsigned long long)off,
				 strerror((int)-n));
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n && off + (uint64_t)i < limit; i++) {
			if (buf[i] != x3k_byte(k, off + (uint64_t)i)) {
				x3k_fail("file %u at %s (%llu bytes): wrong byte at offset %llu: "
					 "0x%02x, want 0x%02x", k, rel, (unsigned long long)a->size,
					 (unsigned long long)(off + (uint64_t)i), buf[i],
					 x3k_byte(k, off + (uint64_t)i));
				ext3d_close(fh);
				return;
			}
		}
		off += (uint64_t)n;
	}
	ext3d_close(fh);
}

static void x3k_walk(ext3d *fs, const char *dir, const char *rel, bool *seen)
{
	char path[300];
	ext3d_dir *d;
	const ext3d_dirent *e;
	int r;

	snprintf(path, sizeof(path), "%s%s%s", dir, *rel ? "/" : "", rel);
	r = ext3d_opendir(fs, path, &d);
	if (r < 0) {
		x3k_fail("cannot open directory %s: %s", path, strerror(-r));
		return;
	}
	while (ext3d_readdir(d, &e) > 0) {
		char sub[300];
		if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", e->name);
		if (e->type == 4 /* DT_DIR */) {
			if (*rel || e->name[0] != 'd')
				x3k_fail("unexpected directory %s", sub);
			else
				x3k_walk(fs, dir, sub, seen);
		} else {
			x3k_check_file(fs, dir, sub, &e->attr, seen);
		}
	}
	ext3d_closedir(d);
}

static int x3k_check(ext3d *fs, const char *dir, const char *log)
{
	bool seen[X3K_FILES] = {false};
	ext3d_attr a;
	int r = x3k_replay(log);

	if (r < 0)
		return printf("cannot read %s\n", log), 1;
	r = ext3d_stat(fs, dir, &a);
	if (r == -ENOENT) {
		/* The kill came before the directory's mkdir was durable: then
		 * no fsync or sync in it could have returned. */
		for (unsigned k = 0; k < X3K_FILES; k++)
			if (x3k_h[k].durable)
				x3k_fail("%s is gone, but file %u was made durable in it", dir, k);
		return x3k_bad ? 1 : 0;
	}
	x3k_walk(fs, dir, "", seen);
	for (unsigned k = 0; k < X3K_FILES; k++) {
		struct x3k_hist *h = &x3k_h[k];
		bool may_be_absent = false;
		for (unsigned i = h->durable; i < h->n; i++)
			may_be_absent |= h->st[i].path[0] == '\0';
		if (!seen[k] && !may_be_absent)
			x3k_fail("file %u (durable at %s) is missing", k, h->st[h->durable].path);
	}
	return x3k_bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *instance = NULL;
	ext3d *fs = NULL;
	int r;

	if (argc > 2 && strcmp(argv[1], "--instance") == 0) {
		instance = argv[2];
		argv += 2;
		argc -= 2;
	}
	for (; argc > 1 && strncmp(argv[1], "--", 2) == 0; argv++, argc--) {
		if (strncmp(argv[1], "--wlog=", 7) == 0)
			x3k_wlog = argv[1] + 7;
		else if (strcmp(argv[1], "--stale-ok") == 0)
			x3k_stale_ok = true;
		else if (strncmp(argv[1], "--mount=", 8) == 0)
			x3k_mnt = argv[1] + 8;
		else if (strncmp(argv[1], "--stop-at=", 10) == 0)
			x3k_stop_at = (unsigned)strtoul(argv[1] + 10, NULL, 10);
		else
			break;
	}
	if (argc < 4 || (strcmp(argv[1], "run") && strcmp(argv[1], "check"))) {
		fprintf(stderr, "usage: x3-kwork [--instance N] [--wlog=PATH] [--stale-ok] "
			"[--mount=MNT] [--stop-at=N] run DIR LOG SEED | check DIR LOG\n");
		return 2;
	}
	/* Through a mount, run needs no session of its own. */
	r = x3k_mnt && strcmp(argv[1], "run") == 0 ? 0 : ext3d_attach(instance, &fs);
	if (r < 0) {
		fprintf(stderr, "x3-kwork: attach: %s\n", strerror(-r));
		return 2;
	}
	if (strcmp(argv[1], "run") == 0) {
		x3k_log_fd = open(argv[3], O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (x3k_log_fd < 0 || argc < 5)
			return 2;
		r = x3k_run(fs, argv[2], (unsigned)strtoul(argv[4], NULL, 10));
	} else {
		r = x3k_check(fs, argv[2], argv[3]);
	}
	ext3d_detach(fs);
	return r;
}
