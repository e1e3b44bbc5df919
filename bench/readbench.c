/* readbench.c - the read path of one backend, timed: sequential reads of
 * large files and a metadata walk (readdir every directory, stat every
 * entry), with N client threads. The backend is ext3d through libext3d
 * (one handle shared by all threads) or any POSIX mount (the kernel's ext3,
 * fuse2fs). Walk threads share one job queue (rb2_queue, its own mutex):
 * a job lists one directory or stats one batch of its entries.
 * A benchmark, not a test: it prints one "result key=value ..." line per
 * measurement and judges none; bench/readpath runs it and compares.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ext3d.h"

#define RB2_THREADS_MAX 16
#define RB2_BATCH 256           /* names per stat job */
#define RB2_DIRENTS 1024        /* entries per ext3d_readdir_ino call */
#define RB2_PATH_MAX 4096
#define RB2_BS_DEFAULT (1u << 20)

enum rb2_mode { RB2_PLUS, RB2_STAT, RB2_LOOKUP };
static const char *const rb2_mode_name[] = {"plus", "stat", "lookup"};

typedef struct rb2_job {
	struct rb2_job *next;
	char *path;             /* full path of the directory (posix: with the mount) */
	uint64_t ino;           /* ext3d: the directory's inode number */
	int n;                  /* stat job: names[0..n); list job: 0 */
	char *names[RB2_BATCH];
} rb2_job;

/* Jobs waiting and in progress; the walk ends when none are left. */
typedef struct rb2_queue {
	pthread_mutex_t mtx;
	pthread_cond_t cond;
	rb2_job *head;          /* [mtx] */
	unsigned pending;       /* [mtx] queued + being worked on */
	int err;                /* [mtx] first error, -errno */
} rb2_queue;

typedef struct rb2_ctx {
	bool posix;             /* [immutable] else ext3d */
	ext3d *fs;              /* [immutable] ext3d only */
	const char *root;       /* [immutable] posix: the mount directory */
	const char *name;       /* [immutable] backend name printed */
	const char *cache;      /* [immutable] cache label printed */
	int threads;            /* [immutable] */
	enum rb2_mode mode;     /* [immutable] */
	size_t bs;              /* [immutable] bytes per read call */
	uint64_t length;        /* [immutable] bytes to read per file, 0: all */
	bool sum;               /* [immutable] checksum what is read */
	rb2_queue q;
	uint64_t entries;       /* [atomic] */
	uint64_t dirs;          /* [atomic] */
} rb2_ctx;

/* One thread's share of a sequential read. */
typedef struct rb2_span {
	rb2_ctx *c;
	const char *path;
	uint64_t start, end;    /* end UINT64_MAX: to the end of file */
	uint64_t bytes, sum;
	int err;
} rb2_span;

static double rb2_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Path of the file as the backend names it: posix under the mount. */
static int rb2_path(const rb2_ctx *c, const char *dir, const char *name, char *buf)
{
	int n;

	if (!dir)
		n = snprintf(buf, RB2_PATH_MAX, "%s/%s", c->posix ? c->root : "",
			     name[0] == '/' ? name + 1 : name);
	else
		n = snprintf(buf, RB2_PATH_MAX, "%s/%s", dir, name);
	return n < 0 || n >= RB2_PATH_MAX ? -ENAMETOOLONG : 0;
}

/* Opens the file; sets *size. Returns an fd (posix) or 0 with *ef set. */
static int rb2_file_open(rb2_ctx *c, const char *path, ext3d_file **ef, uint64_t *size)
{
	char full[RB2_PATH_MAX];
	struct stat st;
	ext3d_attr a;
	int fd, r;

	r = rb2_path(c, NULL, path, full);
	if (r < 0)
		return r;
	if (!c->posix) {
		r = ext3d_open(c->fs, full, O_RDONLY, ef);
		if (r == 0 && (r = ext3d_fstat(*ef, &a)) < 0)
			(void)ext3d_close(*ef);
		if (r == 0)
			*size = a.size;
		return r;
	}
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

/* Adds the words of p (at file offset off) to sum: order-free, so the
 * sum of a file does not depend on how threads split it. */
static uint64_t rb2_sum(uint64_t sum, const uint8_t *p, size_t n, uint64_t off)
{
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		w ^= (off + i) * 0x9e3779b97f4a7c15ull;
		w = (w ^ (w >> 31)) * 0xbf58476d1ce4e5b9ull;
		sum += w ^ (w >> 29);
	}
	return sum;
}

/* Thread body: reads [start, end) of one file in bs-sized calls. */
static void *rb2_span_run(void *arg)
{
	rb2_span *s = arg;
	rb2_ctx *c = s->c;
	ext3d_file *ef = NULL;
	uint64_t size = 0, off;
	uint8_t *buf = NULL;
	int fd;

	fd = rb2_file_open(c, s->path, &ef, &size);
	if (fd < 0) {
		s->err = fd;
		return NULL;
	}
	if (posix_memalign((void **)&buf, 4096, c->bs) != 0) {
		s->err = -ENOMEM;
		goto out;
	}
	if (s->end > size)
		s->end = size;
	for (off = s->start; off < s->end;) {
		size_t len = s->end - off < c->bs ? (size_t)(s->end - off) : c->bs;
		ssize_t n = c->posix ? pread(fd, buf, len, (off_t)off) : ext3d_pread(ef, buf, len, off);
		if (n < 0) {
			s->err = c->posix ? -errno : (int)n;
			break;
		}
		if (n == 0)
			break;
		if (c->sum)
			s->sum = rb2_sum(s->sum, buf, (size_t)n, off);
		off += (uint64_t)n;
		s->bytes += (uint64_t)n;
	}
out:
	free(buf);
	if (c->posix)
		close(fd);
	else
		(void)ext3d_close(ef);
	return NULL;
}

/* Splits the work: one file per thread, or one file in nthreads ranges. */
static int rb2_spans(rb2_ctx *c, char **files, int nfiles, rb2_span *spans)
{
	ext3d_file *ef = NULL;
	uint64_t size = 0, part;
	int fd;

	for (int i = 0; i < c->threads; i++)
		spans[i] = (rb2_span){.c = c, .path = files[i % nfiles], .end = UINT64_MAX};
	if (nfiles >= c->threads) {
		for (int i = 0; c->length && i < c->threads; i++)
			spans[i].end = c->length;
		return 0;
	}
	if (nfiles != 1)
		return -EINVAL;
	fd = rb2_file_open(c, files[0], &ef, &size);
	if (fd < 0)
		return fd;
	if (c->posix)
		close(fd);
	else
		(void)ext3d_close(ef);
	if (c->length && c->length < size)
		size = c->length;
	part = (size / (uint64_t)c->threads + 4095) & ~4095ull;
	for (int i = 0; i < c->threads; i++) {
		spans[i].start = part * (uint64_t)i;
		spans[i].end = part * (uint64_t)(i + 1);
	}
	return 0;
}

static int rb2_seqread(rb2_ctx *c, char **files, int nfiles)
{
	rb2_span spans[RB2_THREADS_MAX];
	pthread_t tid[RB2_THREADS_MAX];
	uint64_t bytes = 0, sum = 0;
	double t0, secs;
	int n, r;

	r = rb2_spans(c, files, nfiles, spans);
	if (r < 0)
		return r;
	t0 = rb2_now();
	for (n = 0; n < c->threads; n++)
		if (pthread_create(&tid[n], NULL, rb2_span_run, &spans[n]) != 0)
			break;
	for (int i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	secs = rb2_now() - t0;
	if (n < c->threads)
		return -EAGAIN;
	for (int i = 0; i < c->threads; i++) {
		if (spans[i].err < 0)
			return spans[i].err;
		bytes += spans[i].bytes;
		sum += spans[i].sum;
	}
	printf("result backend=%s workload=seqread threads=%d cache=%s bs=%zu bytes=%llu "
	       "secs=%.4f mbps=%.1f", c->name, c->threads, c->cache, c->bs,
	       (unsigned long long)bytes, secs, (double)bytes / 1e6 / secs);
	if (c->sum)
		printf(" sum=%016llx", (unsigned long long)sum);
	printf("\n");
	return 0;
}

/* Queues a job (NULL: only records err). Takes ownership of j. */
static void rb2_push(rb2_ctx *c, rb2_job *j, int err)
{
	pthread_mutex_lock(&c->q.mtx);
	if (j) {
		j->next = c->q.head;
		c->q.head = j;
		c->q.pending++;
	}
	if (err < 0 && c->q.err == 0)
		c->q.err = err;
	pthread_cond_signal(&c->q.cond);
	pthread_mutex_unlock(&c->q.mtx);
}

static rb2_job *rb2_job_new(const char *path, uint64_t ino)
{
	rb2_job *j = calloc(1, sizeof(*j));

	if (j && !(j->path = strdup(path))) {
		free(j);
		return NULL;
	}
	if (j)
		j->ino = ino;
	return j;
}

static void rb2_job_free(rb2_job *j)
{
	for (int i = 0; i < j->n; i++)
		free(j->names[i]);
	free(j->path);
	free(j);
}

/* A subdirectory found: queue it for listing. */
static int rb2_found_dir(rb2_ctx *c, const char *dir, const char *name, uint64_t ino)
{
	char path[RB2_PATH_MAX];
	rb2_job *j;
	int r = rb2_path(c, dir, name, path);

	if (r < 0)
		return r;
	j = rb2_job_new(path, ino);
	if (!j)
		return -ENOMEM;
	rb2_push(c, j, 0);
	return 0;
}

/* Adds a name to the stat batch *b, queueing the batch when full. */
static int rb2_batch_add(rb2_ctx *c, const rb2_job *dir, rb2_job **b, const char *name)
{
	if (!*b && !(*b = rb2_job_new(dir->path, dir->ino)))
		return -ENOMEM;
	if (!((*b)->names[(*b)->n] = strdup(name)))
		return -ENOMEM;
	if (++(*b)->n == RB2_BATCH) {
		rb2_push(c, *b, 0);
		*b = NULL;
	}
	return 0;
}

/* One entry listed: in plus mode it comes with its attributes (its stat);
 * else it goes into a stat batch. */
static int rb2_listed(rb2_ctx *c, const rb2_job *j, rb2_job **b, const char *name,
		      const ext3d_attr *a)
{
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (c->mode != RB2_PLUS)
		return rb2_batch_add(c, j, b, name);
	__atomic_add_fetch(&c->entries, 1, __ATOMIC_RELAXED);
	if (S_ISDIR(a->mode))
		return rb2_found_dir(c, j->path, name, a->ino);
	return 0;
}

/* List job, ext3d: ext3d_readdir_ino in every mode (it brings the
 * attributes along; stat and lookup modes ignore them). A call asks for
 * RB2_DIRENTS entries: more than inode-svc packs into the 64 KiB reply
 * buffer libext3d asks for (585 of the smallest), so no call is cut short.
 * With fewer, libext3d returns max entries and its cookie still skips
 * the rest of the reply (client/lib/ops.c, ext3d_readdir_ino). */
static int rb2_list_ext3d(rb2_ctx *c, const rb2_job *j, rb2_job **b)
{
	ext3d_dirent *ents = malloc(RB2_DIRENTS * sizeof(*ents));
	uint64_t cookie = 0;
	int n = 0, r = 0;

	if (!ents)
		return -ENOMEM;
	while (r == 0 && (n = ext3d_readdir_ino(c->fs, j->ino, &cookie, ents, RB2_DIRENTS)) > 0)
		for (int i = 0; i < n && r == 0; i++)
			r = rb2_listed(c, j, b, ents[i].name, &ents[i].attr);
	free(ents);
	return r < 0 ? r : n;
}

static int rb2_list_posix(rb2_ctx *c, const rb2_job *j, rb2_job **b)
{
	DIR *d = opendir(j->path);
	struct dirent *e;
	int r = 0;

	if (!d)
		return -errno;
	while (r == 0) {
		errno = 0;
		if (!(e = readdir(d))) {
			r = -errno;
			break;
		}
		r = rb2_listed(c, j, b, e->d_name, NULL);
	}
	closedir(d);
	return r;
}

/* Stat job: one stat per name, as the mode says; directories get listed. */
static int rb2_stat_batch(rb2_ctx *c, const rb2_job *j)
{
	char path[RB2_PATH_MAX];
	struct stat st;
	ext3d_attr a;
	int dfd = -1, r = 0;

	if (c->posix && (dfd = open(j->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	for (int i = 0; i < j->n && r == 0; i++) {
		if (c->posix) {
			r = fstatat(dfd, j->names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
			a = (ext3d_attr){.ino = st.st_ino, .mode = st.st_mode};
		} else if (c->mode == RB2_LOOKUP) {
			r = ext3d_lookup(c->fs, j->ino, j->names[i], &a);
		} else if ((r = rb2_path(c, j->path, j->names[i], path)) == 0) {
			r = ext3d_lstat(c->fs, path, &a);
		}
		if (r < 0)
			break;
		__atomic_add_fetch(&c->entries, 1, __ATOMIC_RELAXED);
		if (S_ISDIR(a.mode))
			r = rb2_found_dir(c, j->path, j->names[i], a.ino);
	}
	if (dfd >= 0)
		close(dfd);
	return r;
}

static int rb2_job_run(rb2_ctx *c, rb2_job *j)
{
	rb2_job *b = NULL;
	int r;

	if (j->n)
		return rb2_stat_batch(c, j);
	__atomic_add_fetch(&c->dirs, 1, __ATOMIC_RELAXED);
	r = c->posix ? rb2_list_posix(c, j, &b) : rb2_list_ext3d(c, j, &b);
	if (b && r >= 0)
		rb2_push(c, b, 0);
	else if (b)
		rb2_job_free(b);
	return r;
}

/* Thread body: takes jobs until none are pending or one failed. */
static void *rb2_walker(void *arg)
{
	rb2_ctx *c = arg;
	rb2_job *j;
	int r;

	pthread_mutex_lock(&c->q.mtx);
	for (;;) {
		while (!c->q.head && c->q.pending && !c->q.err)
			pthread_cond_wait(&c->q.cond, &c->q.mtx);
		if (!c->q.head || c->q.err)
			break;
		j = c->q.head;
		c->q.head = j->next;
		pthread_mutex_unlock(&c->q.mtx);
		r = rb2_job_run(c, j);
		rb2_job_free(j);
		pthread_mutex_lock(&c->q.mtx);
		if (r < 0 && !c->q.err)
			c->q.err = r;
		c->q.pending--;
	}
	pthread_cond_broadcast(&c->q.cond);
	pthread_mutex_unlock(&c->q.mtx);
	return NULL;
}

static int rb2_walk(rb2_ctx *c, const char *dir)
{
	pthread_t tid[RB2_THREADS_MAX];
	char path[RB2_PATH_MAX];
	ext3d_attr a = {0};
	rb2_job *j;
	double t0, secs;
	int n, r;

	if ((r = rb2_path(c, NULL, dir, path)) < 0)
		return r;
	t0 = rb2_now();
	if (!c->posix && (r = ext3d_stat(c->fs, path, &a)) < 0)
		return r;
	if (!(j = rb2_job_new(path, a.ino)))
		return -ENOMEM;
	rb2_push(c, j, 0);
	for (n = 0; n < c->threads; n++)
		if (pthread_create(&tid[n], NULL, rb2_walker, c) != 0)
			break;
	if (n == 0)
		return -EAGAIN;
	for (int i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	secs = rb2_now() - t0;
	for (j = c->q.head; j; j = c->q.head) {
		c->q.head = j->next;
		rb2_job_free(j);
	}
	if (c->q.err < 0)
		return c->q.err;
	if (n < c->threads)
		return -EAGAIN;
	printf("result backend=%s workload=walk mode=%s threads=%d cache=%s entries=%llu "
	       "dirs=%llu secs=%.4f eps=%.0f\n", c->name,
	       c->posix ? "fstatat" : rb2_mode_name[c->mode], c->threads, c->cache,
	       (unsigned long long)c->entries, (unsigned long long)c->dirs, secs,
	       (double)c->entries / secs);
	return 0;
}

static void rb2_usage(FILE *f)
{
	fprintf(f,
		"usage: readbench [OPTIONS] ext3d INSTANCE COMMAND ARGS...\n"
		"       readbench [OPTIONS] posix MOUNTDIR COMMAND ARGS...\n"
		"commands (paths are inside the filesystem):\n"
		"  seqread FILE [FILE...]  one file per thread, or one file split in ranges\n"
		"  walk DIR                readdir every directory, stat every entry\n"
		"  probe PATH              stat PATH once (is the backend usable?)\n"
		"options:\n"
		"  --threads N       client threads (default 1, at most %d)\n"
		"  --mode M          ext3d walk: plus (readdir attributes), stat (ext3d_lstat\n"
		"                    of each path) or lookup (ext3d_lookup in the directory)\n"
		"  --bs BYTES        bytes per read call (default %u)\n"
		"  --length BYTES    seqread: read only the first BYTES of each file\n"
		"  --sum             checksum the data read (printed as sum=)\n"
		"  --name NAME       backend name to print (default ext3d or posix)\n"
		"  --cache LABEL     cache state to print (default warm)\n",
		RB2_THREADS_MAX, RB2_BS_DEFAULT);
}

/* A byte count with an optional K, M or G (powers of 1024). */
static uint64_t rb2_size(const char *arg)
{
	char *end;
	uint64_t v = strtoull(arg, &end, 0);

	switch (*end) {
	case 'K': case 'k': return v << 10;
	case 'M': case 'm': return v << 20;
	case 'G': case 'g': return v << 30;
	default: return *end ? 0 : v;
	}
}

/* Fills c from the options; leaves the positional arguments in argv[optind..]. */
static int rb2_parse(int argc, char **argv, rb2_ctx *c)
{
	static const struct option opts[] = {
		{"threads", required_argument, NULL, 't'}, {"mode", required_argument, NULL, 'm'},
		{"bs", required_argument, NULL, 'b'},      {"sum", no_argument, NULL, 's'},
		{"name", required_argument, NULL, 'n'},    {"cache", required_argument, NULL, 'c'},
		{"length", required_argument, NULL, 'l'},  {"help", no_argument, NULL, 'h'},
		{0},
	};
	int o;

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 't': c->threads = atoi(optarg); break;
		case 'b': c->bs = (size_t)rb2_size(optarg); break;
		case 'l':
			if (!(c->length = rb2_size(optarg)))
				return -EINVAL;
			break;
		case 's': c->sum = true; break;
		case 'n': c->name = optarg; break;
		case 'c': c->cache = optarg; break;
		case 'm':
			for (c->mode = RB2_PLUS; c->mode <= RB2_LOOKUP; c->mode++)
				if (!strcmp(optarg, rb2_mode_name[c->mode]))
					break;
			if (c->mode > RB2_LOOKUP)
				return -EINVAL;
			break;
		case 'h': rb2_usage(stdout); exit(EXIT_SUCCESS);
		default: return -EINVAL;
		}
	}
	if (c->threads < 1 || c->threads > RB2_THREADS_MAX || c->bs < 512 || c->bs > (1u << 30))
		return -EINVAL;
	if (argc - optind < 4 || (strcmp(argv[optind], "ext3d") && strcmp(argv[optind], "posix")))
		return -EINVAL;
	c->posix = !strcmp(argv[optind], "posix");
	if (c->posix)
		c->mode = RB2_STAT; /* readdir, then fstatat per entry */
	if (!c->name)
		c->name = argv[optind];
	c->root = argv[optind + 1];
	return 0;
}

static int rb2_run(rb2_ctx *c, const char *cmd, char **args, int nargs)
{
	char path[RB2_PATH_MAX];
	ext3d_attr a;
	struct stat st;
	int r;

	if (!c->posix && (r = ext3d_attach(c->root, &c->fs)) < 0)
		return r;
	if (!strcmp(cmd, "seqread"))
		r = rb2_seqread(c, args, nargs);
	else if (!strcmp(cmd, "walk") && nargs == 1)
		r = rb2_walk(c, args[0]);
	else if (!strcmp(cmd, "probe") && nargs == 1 && (r = rb2_path(c, NULL, args[0], path)) == 0)
		r = c->posix ? (lstat(path, &st) < 0 ? -errno : 0) : ext3d_lstat(c->fs, path, &a);
	else
		r = -EINVAL;
	c->fs = ext3d_detach(c->fs);
	return r;
}

int main(int argc, char **argv)
{
	rb2_ctx c = {.threads = 1, .mode = RB2_PLUS, .bs = RB2_BS_DEFAULT, .cache = "warm"};
	int r;

	pthread_mutex_init(&c.q.mtx, NULL);
	pthread_cond_init(&c.q.cond, NULL);
	if (rb2_parse(argc, argv, &c) < 0) {
		rb2_usage(stderr);
		return 2;
	}
	r = rb2_run(&c, argv[optind + 2], argv + optind + 3, argc - optind - 3);
	if (r == -EINVAL)
		rb2_usage(stderr);
	if (r < 0) {
		fprintf(stderr, "readbench %s %s: %s\n", c.name, argv[optind + 2], strerror(-r));
		return 1;
	}
	return 0;
}
