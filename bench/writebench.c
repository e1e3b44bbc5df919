/* writebench.c - the write path of one backend, timed: file creates, 4 KiB
 * writes each followed by fsync, one large sequential write, and a mixed
 * create/write/rename/stat/unlink load, with N clients; and, for the
 * FUSE benchmark (bench/fusepath), stats of existing files and one large
 * sequential read of the file a seqwrite left. The backend is
 * ext3d through libext3d (each client its own attached session) or any
 * POSIX mount (the kernel's ext3, fuse2fs; each client a thread).
 * A benchmark, not a test: it prints one "result key=value ..." line per
 * run and judges none; bench/writepath runs it and compares.
 *
 *   writebench [--name B] posix DIR | ext3d INSTANCE  WORKLOAD [options]
 *   WORKLOAD: create | pcreate | fsync | seqwrite | mixed | stat | seqread
 *   (create: ext3d by inode number, a mknod and a forget per file;
 *   pcreate: by path, ext3d_create and ext3d_close; POSIX: both open(2)
 *   with O_CREAT | O_EXCL and close(2); stat: --files made first, untimed,
 *   then stat(2) round them for --seconds; seqread: reads TAG/cN/big that
 *   a seqwrite with the same --tag wrote, 1 MiB at a time)
 *   --threads N  clients (1)        --files N   creates per client (5000)
 *   --seconds S  fsync, mixed (3)   --mib M     seqwrite size (256)
 *   --tag T      a directory name unique to this run (required)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ext3d.h"

#define WB_THREADS_MAX 16
#define WB_PATH_MAX 512
#define WB_CHUNK (1u << 20)

typedef struct wb_cfg {
	bool posix;             /* else ext3d */
	const char *target;     /* the mount directory, or the instance */
	const char *name;
	const char *workload;
	const char *tag;
	int threads;
	unsigned files;
	double seconds;
	unsigned mib;
} wb_cfg;

/* One client: its session (ext3d) and what it did. */
typedef struct wb_client {
	const wb_cfg *cfg;
	int id;
	ext3d *fs;
	uint64_t ops;
	int err;
	double start, end;
} wb_client;

static double wb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The backend's name for path (relative to the filesystem's root). */
static void wb_path(const wb_client *c, char *buf, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void wb_path(const wb_client *c, char *buf, const char *fmt, ...)
{
	char rel[WB_PATH_MAX / 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(buf, WB_PATH_MAX, "%s/%s", c->cfg->posix ? c->cfg->target : "", rel);
}

/* ---- the few calls each backend offers, as -errno ---- */

static int wb_mkdir(wb_client *c, const char *p)
{
	if (!c->cfg->posix)
		return ext3d_mkdir(c->fs, p, 0755);
	return mkdir(p, 0755) < 0 ? -errno : 0;
}

typedef struct wb_fd {
	int fd;
	ext3d_file *f;
} wb_fd;

static int wb_open(wb_client *c, const char *p, int flags, wb_fd *ret)
{
	if (!c->cfg->posix) {
		ret->fd = -1;
		if (flags & O_CREAT)
			return ext3d_create(c->fs, p, flags, 0644, &ret->f);
		return ext3d_open(c->fs, p, flags, &ret->f);
	}
	ret->f = NULL;
	ret->fd = open(p, flags | O_CLOEXEC, 0644);
	return ret->fd < 0 ? -errno : 0;
}

static ssize_t wb_pwrite(wb_fd *f, const void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (f->f)
		return ext3d_pwrite(f->f, buf, len, off);
	n = pwrite(f->fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static int wb_fsync(wb_fd *f)
{
	if (f->f)
		return ext3d_fsync(f->f);
	return fsync(f->fd) < 0 ? -errno : 0;
}

static int wb_close(wb_fd *f)
{
	if (f->f)
		return ext3d_close(f->f);
	return close(f->fd) < 0 ? -errno : 0;
}

static int wb_rename(wb_client *c, const char *a, const char *b)
{
	if (!c->cfg->posix)
		return ext3d_rename(c->fs, a, b);
	return rename(a, b) < 0 ? -errno : 0;
}

static ssize_t wb_pread(wb_fd *f, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (f->f)
		return ext3d_pread(f->f, buf, len, off);
	n = pread(f->fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static int wb_stat(wb_client *c, const char *p)
{
	struct stat st;
	ext3d_attr a;

	if (!c->cfg->posix)
		return ext3d_stat(c->fs, p, &a);
	return stat(p, &st) < 0 ? -errno : 0;
}

static int wb_unlink(wb_client *c, const char *p)
{
	if (!c->cfg->posix)
		return ext3d_unlink(c->fs, p);
	return unlink(p) < 0 ? -errno : 0;
}

/* CPU time of this process, every thread, user and system (the client's
 * share of a run: libext3d or the system calls on a mount). */
static double wb_cpu_secs(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* ---- the workloads: each fills c->ops, returns 0 or -errno ---- */

/* ext3d by inode number, as a FUSE front end or an embedder works: the
 * directory looked up once, then one mknod and one forget per file (the
 * open and close of a POSIX create). */
static int wb_create_ino(wb_client *c)
{
	char name[32];
	ext3d_attr dir, a;
	int r;

	r = ext3d_lookup(c->fs, EXT3D_ROOT_INO, c->cfg->tag, &dir);
	snprintf(name, sizeof(name), "c%d", c->id);
	if (r == 0)
		r = ext3d_lookup(c->fs, dir.ino, name, &dir);
	for (unsigned i = 0; r == 0 && i < c->cfg->files; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		r = ext3d_mknod_ino(c->fs, dir.ino, name, S_IFREG | 0644, 0, &a);
		if (r == 0)
			r = ext3d_forget(c->fs, a.ino, 1);
		if (r == 0)
			c->ops++;
	}
	return r;
}

static int wb_create(wb_client *c)
{
	char p[WB_PATH_MAX];
	wb_fd f;
	int r;

	if (!c->cfg->posix && !strcmp(c->cfg->workload, "create"))
		return wb_create_ino(c);
	for (unsigned i = 0; i < c->cfg->files; i++) {
		wb_path(c, p, "%s/c%d/f%u", c->cfg->tag, c->id, i);
		r = wb_open(c, p, O_WRONLY | O_CREAT | O_EXCL, &f);
		if (r < 0 || (r = wb_close(&f)) < 0)
			return r;
		c->ops++;
	}
	return 0;
}

static int wb_fsync_loop(wb_client *c)
{
	char p[WB_PATH_MAX], buf[4096];
	double until = c->start + c->cfg->seconds;
	wb_fd f;
	int r;

	memset(buf, 'a' + c->id, sizeof(buf));
	wb_path(c, p, "%s/c%d/log", c->cfg->tag, c->id);
	r = wb_open(c, p, O_WRONLY | O_CREAT, &f);
	if (r < 0)
		return r;
	while (wb_now() < until) {
		ssize_t n = wb_pwrite(&f, buf, sizeof(buf), (c->ops % 256) * sizeof(buf));
		if (n != (ssize_t)sizeof(buf) || (r = wb_fsync(&f)) < 0) {
			(void)wb_close(&f);
			return n < 0 ? (int)n : n != (ssize_t)sizeof(buf) ? -EIO : r;
		}
		c->ops++;
	}
	return wb_close(&f);
}

static int wb_seqwrite(wb_client *c)
{
	char p[WB_PATH_MAX];
	uint8_t *buf = malloc(WB_CHUNK);
	wb_fd f;
	int r;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < WB_CHUNK; i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 12));
	wb_path(c, p, "%s/c%d/big", c->cfg->tag, c->id);
	r = wb_open(c, p, O_WRONLY | O_CREAT | O_TRUNC, &f);
	for (unsigned i = 0; r == 0 && i < c->cfg->mib; i++) {
		ssize_t n = wb_pwrite(&f, buf, WB_CHUNK, (uint64_t)i * WB_CHUNK);
		if (n != (ssize_t)WB_CHUNK)
			r = n < 0 ? (int)n : -EIO;
		else
			c->ops += WB_CHUNK;
	}
	if (r == 0)
		r = wb_fsync(&f);
	if (f.fd >= 0 || f.f)
		(void)wb_close(&f);
	free(buf);
	return r;
}

static int wb_seqread(wb_client *c)
{
	char p[WB_PATH_MAX];
	uint8_t *buf = malloc(WB_CHUNK);
	ssize_t n = 1;
	wb_fd f;
	int r;

	if (!buf)
		return -ENOMEM;
	wb_path(c, p, "%s/c%d/big", c->cfg->tag, c->id);
	r = wb_open(c, p, O_RDONLY, &f);
	for (uint64_t off = 0; r == 0 && n > 0; off += (uint64_t)n) {
		n = wb_pread(&f, buf, WB_CHUNK, off);
		if (n < 0)
			r = (int)n;
		else
			c->ops += (uint64_t)n;
	}
	if (f.fd >= 0 || f.f)
		(void)wb_close(&f);
	free(buf);
	return r;
}

/* Stats the client's --files files (made before the clock started) in
 * turn until --seconds have passed. */
static int wb_stat_loop(wb_client *c)
{
	char p[WB_PATH_MAX];
	double until = c->start + c->cfg->seconds;
	int r;

	for (unsigned i = 0; wb_now() < until; i = (i + 1) % c->cfg->files) {
		wb_path(c, p, "%s/c%d/f%u", c->cfg->tag, c->id, i);
		if ((r = wb_stat(c, p)) < 0)
			return r;
		c->ops++;
	}
	return 0;
}

static int wb_mixed(wb_client *c)
{
	char a[WB_PATH_MAX], b[WB_PATH_MAX], buf[4096];
	double until = c->start + c->cfg->seconds;
	wb_fd f;
	int r;

	memset(buf, 'm', sizeof(buf));
	for (uint64_t i = 0; wb_now() < until; i++) {
		wb_path(c, a, "%s/c%d/m%llu", c->cfg->tag, c->id, (unsigned long long)i);
		wb_path(c, b, "%s/c%d/n%llu", c->cfg->tag, c->id, (unsigned long long)i);
		r = wb_open(c, a, O_WRONLY | O_CREAT | O_EXCL, &f);
		if (r < 0)
			return r;
		if (wb_pwrite(&f, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) {
			(void)wb_close(&f);
			return -EIO;
		}
		if ((r = wb_close(&f)) < 0 || (r = wb_rename(c, a, b)) < 0 ||
		    (r = wb_stat(c, b)) < 0 || (r = wb_unlink(c, b)) < 0)
			return r;
		c->ops += 5;
	}
	return 0;
}

static void *wb_client_main(void *arg)
{
	wb_client *c = arg;
	const char *w = c->cfg->workload;

	if (!strcmp(w, "stat") && (c->err = wb_create(c)) < 0)
		return NULL;
	c->ops = 0;
	c->start = wb_now();
	if (!strcmp(w, "stat"))
		c->err = wb_stat_loop(c);
	else if (!strcmp(w, "seqread"))
		c->err = wb_seqread(c);
	else if (!strcmp(w, "create") || !strcmp(w, "pcreate"))
		c->err = wb_create(c);
	else if (!strcmp(w, "fsync"))
		c->err = wb_fsync_loop(c);
	else if (!strcmp(w, "seqwrite"))
		c->err = wb_seqwrite(c);
	else
		c->err = wb_mixed(c);
	c->end = wb_now();
	return NULL;
}

/* Attaches every client and makes its directory (seqread's exists). */
static int wb_setup(const wb_cfg *cfg, wb_client *cl)
{
	char p[WB_PATH_MAX];
	int r;

	for (int i = 0; i < cfg->threads; i++) {
		cl[i] = (wb_client){.cfg = cfg, .id = i};
		if (!cfg->posix && (r = ext3d_attach(cfg->target, &cl[i].fs)) < 0)
			return fprintf(stderr, "writebench: attach: %s\n", strerror(-r)), r;
	}
	if (!strcmp(cfg->workload, "seqread"))
		return 0;
	wb_path(&cl[0], p, "%s", cfg->tag);
	r = wb_mkdir(&cl[0], p);
	for (int i = 0; r == 0 && i < cfg->threads; i++) {
		wb_path(&cl[0], p, "%s/c%d", cfg->tag, i);
		r = wb_mkdir(&cl[0], p);
	}
	if (r < 0)
		fprintf(stderr, "writebench: mkdir %s: %s\n", p, strerror(-r));
	return r;
}

static int wb_usage(void)
{
	fprintf(stderr, "usage: writebench [--name B] posix DIR | ext3d INSTANCE "
			"create|pcreate|fsync|seqwrite|mixed|stat|seqread --tag T [--threads N] [--files N] "
			"[--seconds S] [--mib M]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'}, {"threads", required_argument, NULL, 't'},
		{"files", required_argument, NULL, 'f'}, {"seconds", required_argument, NULL, 's'},
		{"mib", required_argument, NULL, 'm'}, {"tag", required_argument, NULL, 'g'},
		{NULL, 0, NULL, 0},
	};
	wb_cfg cfg = {.threads = 1, .files = 5000, .seconds = 3, .mib = 256};
	wb_client cl[WB_THREADS_MAX];
	pthread_t th[WB_THREADS_MAX];
	double first = 0, last = 0;
	uint64_t ops = 0;
	int o, r = 0;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'n': cfg.name = optarg; break;
		case 't': cfg.threads = atoi(optarg); break;
		case 'f': cfg.files = (unsigned)atoi(optarg); break;
		case 's': cfg.seconds = atof(optarg); break;
		case 'm': cfg.mib = (unsigned)atoi(optarg); break;
		case 'g': cfg.tag = optarg; break;
		default: return wb_usage();
		}
	}
	if (argc - optind != 3 || !cfg.tag || cfg.threads < 1 || cfg.threads > WB_THREADS_MAX)
		return wb_usage();
	cfg.posix = !strcmp(argv[optind], "posix");
	if (!cfg.posix && strcmp(argv[optind], "ext3d"))
		return wb_usage();
	cfg.target = argv[optind + 1];
	cfg.workload = argv[optind + 2];
	if (strcmp(cfg.workload, "create") && strcmp(cfg.workload, "pcreate") &&
	    strcmp(cfg.workload, "fsync") &&
	    strcmp(cfg.workload, "seqwrite") && strcmp(cfg.workload, "mixed") &&
	    strcmp(cfg.workload, "stat") && strcmp(cfg.workload, "seqread"))
		return wb_usage();
	if (!cfg.name)
		cfg.name = argv[optind];
	if (wb_setup(&cfg, cl) < 0)
		return 1;
	double cpu0 = wb_cpu_secs();
	for (int i = 0; i < cfg.threads; i++)
		if (pthread_create(&th[i], NULL, wb_client_main, &cl[i]) != 0)
			return fprintf(stderr, "writebench: cannot start a thread\n"), 1;
	for (int i = 0; i < cfg.threads; i++) {
		pthread_join(th[i], NULL);
		if (cl[i].err < 0 && r == 0)
			r = cl[i].err;
		if (i == 0 || cl[i].start < first)
			first = cl[i].start;
		if (cl[i].end > last)
			last = cl[i].end;
		ops += cl[i].ops;
		cl[i].fs = ext3d_detach(cl[i].fs);
	}
	double cpu = wb_cpu_secs() - cpu0;
	if (r < 0) {
		fprintf(stderr, "writebench: %s %s: %s\n", cfg.name, cfg.workload, strerror(-r));
		return 1;
	}
	double secs = last - first;
	if (!strcmp(cfg.workload, "seqwrite") || !strcmp(cfg.workload, "seqread"))
		printf("result backend=%s workload=%s threads=%d secs=%.3f rate=%.1f unit=MB/s\n",
		       cfg.name, cfg.workload, cfg.threads, secs, (double)ops / 1e6 / secs);
	else
		printf("result backend=%s workload=%s threads=%d ops=%llu secs=%.3f rate=%.0f "
		       "unit=%s/s cpu_us=%.0f\n", cfg.name, cfg.workload, cfg.threads,
		       (unsigned long long)ops, secs, (double)ops / secs,
		       strstr(cfg.workload, "create") ? "creates" : "ops", cpu * 1e6);
	return 0;
}
