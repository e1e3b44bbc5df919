/* x3-storm - clients that read files through libext3d and check every byte
 * against the same files on the host, while a test kills or stops the
 * instance's services. Each thread is a client of its own (its own
 * attach); it opens a random file, reads a random range, closes it, again,
 * until the stop file exists (or --seconds pass). Every libext3d call is
 * timed.
 *
 *   x3-storm [--instance NAME] [--threads N] [--seconds S] [--stop FILE]
 *            HOSTDIR NAME...
 *
 * NAME is a file at /NAME in the image and at HOSTDIR/NAME on the host.
 * Prints one line: calls ok eio etimedout other bad max_wait_ms, and one
 * "# other: ..." line per unexpected error. Exits 1 if any byte was wrong
 * or a call failed with anything but EIO or ETIMEDOUT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ext3d.h"

#define XS_MAX_FILES 64
#define XS_MAX_READ (256 * 1024)

struct xs_file {
	const char *name;
	unsigned char *data;
	size_t size;
};

static struct xs_file xs_files[XS_MAX_FILES];
static int xs_nfiles;
static const char *xs_instance, *xs_stop;
static double xs_seconds = 3600;
static atomic_ulong xs_calls, xs_ok, xs_eio, xs_etimedout, xs_other, xs_bad;
static atomic_ulong xs_max_wait_us;

static uint64_t xs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int xs_load(const char *dir, const char *name, struct xs_file *f)
{
	char path[4096];
	FILE *fp;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "rb");
	if (!fp || fseek(fp, 0, SEEK_END) < 0 || (n = ftell(fp)) < 0) {
		if (fp)
			fclose(fp);
		return -1;
	}
	rewind(fp);
	f->name = name;
	f->size = (size_t)n;
	f->data = malloc(f->size + 1);
	if (!f->data || fread(f->data, 1, f->size, fp) != f->size) {
		fclose(fp);
		return -1;
	}
	fclose(fp);
	return 0;
}

/* Records one call's result and wait; r < 0 is -errno. */
static void xs_count(long r, uint64_t start, const char *what)
{
	uint64_t wait = xs_now_us() - start;
	unsigned long max = atomic_load(&xs_max_wait_us);

	while (wait > max && !atomic_compare_exchange_weak(&xs_max_wait_us, &max, wait))
		;
	atomic_fetch_add(&xs_calls, 1);
	if (r >= 0)
		return;
	if (r == -EIO) {
		atomic_fetch_add(&xs_eio, 1);
	} else if (r == -ETIMEDOUT) {
		atomic_fetch_add(&xs_etimedout, 1);
		printf("# timed out: %s after %llu ms\n", what, (unsigned long long)wait / 1000);
	} else {
		atomic_fetch_add(&xs_other, 1);
		printf("# other: %s: %s\n", what, strerror((int)-r));
	}
}

static bool xs_done(uint64_t end)
{
	return xs_now_us() >= end || (xs_stop && access(xs_stop, F_OK) == 0);
}

/* One open, read, check, close on fs. */
static void xs_one(ext3d *fs, unsigned *seed, unsigned char *buf)
{
	struct xs_file *f = &xs_files[rand_r(seed) % xs_nfiles];
	size_t off = f->size ? (size_t)rand_r(seed) % f->size : 0;
	size_t len = 1 + (size_t)rand_r(seed) % XS_MAX_READ;
	char path[512];
	ext3d_file *h;
	uint64_t t;
	ssize_t n;
	int r;

	snprintf(path, sizeof(path), "/%s", f->name);
	t = xs_now_us();
	r = ext3d_open(fs, path, 0, &h);
	xs_count(r, t, "open");
	if (r < 0)
		return;
	t = xs_now_us();
	n = ext3d_pread(h, buf, len, off);
	xs_count(n, t, "pread");
	if (n >= 0) {
		size_t want = off + len > f->size ? f->size - off : len;
		/* A short read is a clean error part-way; its bytes must be right. */
		if ((size_t)n > want || memcmp(buf, f->data + off, (size_t)n) != 0) {
			atomic_fetch_add(&xs_bad, 1);
			printf("# bad: %s at %zu, %zd bytes\n", f->name, off, n);
		} else {
			atomic_fetch_add(&xs_ok, 1);
		}
	}
	(void)ext3d_close(h);
}

static void *xs_client(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u + (unsigned)getpid();
	uint64_t end = xs_now_us() + (uint64_t)(xs_seconds * 1e6);
	unsigned char *buf = malloc(XS_MAX_READ);
	ext3d *fs = NULL;

	while (buf && !xs_done(end)) {
		uint64_t t;
		int r;
		if (!fs) {
			t = xs_now_us();
			r = ext3d_attach(xs_instance, &fs);
			xs_count(r, t, "attach");
			if (r < 0) {
				fs = NULL;
				usleep(20000);
				continue;
			}
		}
		xs_one(fs, &seed, buf);
	}
	ext3d_detach(fs);
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	int nthreads = 4, i = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (strcmp(argv[i], "--instance") == 0)
			xs_instance = argv[i + 1];
		else if (strcmp(argv[i], "--threads") == 0)
			nthreads = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--seconds") == 0)
			xs_seconds = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--stop") == 0)
			xs_stop = argv[i + 1];
		else
			break;
	}
	if (argc - i < 2 || nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "usage: x3-storm [--instance NAME] [--threads N] [--seconds S] "
				"[--stop FILE] HOSTDIR NAME...\n");
		return 2;
	}
	for (int k = i + 1; k < argc && xs_nfiles < XS_MAX_FILES; k++) {
		if (xs_load(argv[i], argv[k], &xs_files[xs_nfiles]) < 0) {
			fprintf(stderr, "x3-storm: cannot read %s/%s\n", argv[i], argv[k]);
			return 2;
		}
		xs_nfiles++;
	}
	for (int t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, xs_client, (void *)(uintptr_t)t);
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	printf("calls %lu ok %lu eio %lu etimedout %lu other %lu bad %lu max_wait_ms %lu\n",
	       atomic_load(&xs_calls), atomic_load(&xs_ok), atomic_load(&xs_eio),
	       atomic_load(&xs_etimedout), atomic_load(&xs_other), atomic_load(&xs_bad),
	       atomic_load(&xs_max_wait_us) / 1000);
	return atomic_load(&xs_bad) || atomic_load(&xs_other) ? 1 : 0;
}
