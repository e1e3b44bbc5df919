/* x3-fsx.c - a file-system exerciser after fsx: a long seeded sequence of
 * read, write, truncate, mmap read and write, fallocate punch-hole,
 * copy_file_range within the file, fsync and close-reopen on one file,
 * the file checked against an in-memory model after every step (its size,
 * and all its bytes). On a mismatch it prints the failing step, the first
 * bad offset with expected and found bytes, and the last steps; exit 1.
 * An operation the file system refuses as unsupported is reported once
 * and left out afterwards, unless --strict.
 *
 *   x3-fsx [--seed N] [--steps N] [--maxlen BYTES] [--strict] FILE
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FX_HIST 24

enum { FX_READ, FX_WRITE, FX_TRUNC, FX_MREAD, FX_MWRITE, FX_PUNCH, FX_COPY, FX_FSYNC, FX_REOPEN, FX_NOPS };

static const char *const fx_names[FX_NOPS] = { "read", "write", "truncate", "mapread", "mapwrite",
	"punch_hole", "copy_file_range", "fsync", "reopen" };
static const int fx_weights[FX_NOPS] = { 20, 20, 8, 10, 10, 8, 8, 2, 2 };

typedef struct fx_step {
	long n;
	int op;
	long long off, len, dst;
	long long size_after;
} fx_step;

typedef struct fx {
	const char *path;
	int fd;
	uint64_t rng;
	unsigned char *model, *buf;
	long long size, maxlen;
	long page;
	bool off[FX_NOPS];      /* refused as unsupported */
	bool strict;
	fx_step hist[FX_HIST];
	long nhist;
} fx;

static uint64_t fx_next(fx *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static long long fx_rnd(fx *f, long long n)
{
	return n > 0 ? (long long)(fx_next(f) % (uint64_t)n) : 0;
}

static void fx_history(const fx *f)
{
	long first = f->nhist > FX_HIST ? f->nhist - FX_HIST : 0;

	fprintf(stderr, "x3-fsx: the last %ld steps:\n", f->nhist - first);
	for (long i = first; i < f->nhist; i++) {
		const fx_step *s = &f->hist[i % FX_HIST];

		fprintf(stderr, "  %6ld %-16s off=%lld len=%lld", s->n, fx_names[s->op], s->off, s->len);
		if (s->op == FX_COPY)
			fprintf(stderr, " dst=%lld", s->dst);
		fprintf(stderr, " size=%lld\n", s->size_after);
	}
}

static int fx_fail(const fx *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fx_fail(const fx *f, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "x3-fsx: FAIL at step %ld (%s): ", f->nhist ? f->hist[(f->nhist - 1) % FX_HIST].n : 0,
		f->nhist ? fx_names[f->hist[(f->nhist - 1) % FX_HIST].op] : "-");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fx_history(f);
	return -1;
}

/* Compares the file's size and every byte with the model. */
static int fx_check(fx *f)
{
	struct stat st;
	ssize_t n;

	if (fstat(f->fd, &st) < 0)
		return fx_fail(f, "fstat: %s", strerror(errno));
	if (st.st_size != f->size)
		return fx_fail(f, "size %lld, model %lld", (long long)st.st_size, f->size);
	n = pread(f->fd, f->buf, (size_t)f->size + 1, 0);
	if (n != f->size)
		return fx_fail(f, "read of the whole file gave %zd bytes (%s)", n, n < 0 ? strerror(errno) : "short");
	for (long long i = 0; i < f->size; i++)
		if (f->buf[i] != f->model[i]) {
			fprintf(stderr, "x3-fsx: at %lld: expected %02x found %02x; next 16 expected/found:\n  ", i,
				f->model[i], f->buf[i]);
			for (long long j = i; j < i + 16 && j < f->size; j++)
				fprintf(stderr, "%02x/%02x ", f->model[j], f->buf[j]);
			fprintf(stderr, "\n");
			return fx_fail(f, "bytes differ from offset %lld (page %lld)", i, i / f->page);
		}
	return 0;
}

static void fx_grow(fx *f, long long end)
{
	if (end > f->size) {
		memset(f->model + f->size, 0, (size_t)(end - f->size));
		f->size = end;
	}
}

static int fx_unsupported(fx *f, int op, int err)
{
	if (f->strict || (err != EOPNOTSUPP && err != ENOSYS && err != EXDEV))
		return fx_fail(f, "%s refused: %s", fx_names[op], strerror(err));
	fprintf(stderr, "x3-fsx: %s refused (%s), left out from now on\n", fx_names[op], strerror(err));
	f->off[op] = true;
	return 0;
}

static int fx_map(fx *f, int op, long long off, long long len)
{
	long long start = off / f->page * f->page, mlen = off + len - start;
	unsigned char *m;

	if (op == FX_MWRITE && off + len > f->size) {
		if (ftruncate(f->fd, off + len) < 0)
			return fx_fail(f, "ftruncate before mapwrite: %s", strerror(errno));
		fx_grow(f, off + len);
	}
	m = mmap(NULL, (size_t)mlen, op == FX_MWRITE ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, f->fd, start);
	if (m == MAP_FAILED)
		return fx_fail(f, "mmap: %s", strerror(errno));
	if (op == FX_MREAD) {
		int bad = memcmp(m + (off - start), f->model + off, (size_t)len);

		munmap(m, (size_t)mlen);
		return bad ? fx_fail(f, "mapped bytes at %lld+%lld differ from the model", off, len) : 0;
	}
	for (long long i = 0; i < len; i++)
		f->model[off + i] = (unsigned char)fx_next(f);
	memcpy(m + (off - start), f->model + off, (size_t)len);
	if (msync(m, (size_t)mlen, MS_SYNC) < 0)
		return munmap(m, (size_t)mlen), fx_fail(f, "msync: %s", strerror(errno));
	munmap(m, (size_t)mlen);
	return 0;
}

static int fx_io(fx *f, fx_step *s)
{
	long long off = s->off, len = s->len;
	ssize_t n;

	switch (s->op) {
	case FX_READ:
		n = pread(f->fd, f->buf, (size_t)len, off);
		if (n != (off >= f->size ? 0 : off + len > f->size ? f->size - off : len))
			return fx_fail(f, "pread returned %zd at %lld", n, off);
		return n > 0 && memcmp(f->buf, f->model + off, (size_t)n) ?
			fx_fail(f, "read bytes at %lld+%lld differ from the model", off, len) : 0;
	case FX_WRITE:
		for (long long i = 0; i < len; i++)
			f->buf[i] = (unsigned char)fx_next(f);
		if ((n = pwrite(f->fd, f->buf, (size_t)len, off)) != len)
			return fx_fail(f, "pwrite returned %zd (%s)", n, n < 0 ? strerror(errno) : "short");
		fx_grow(f, off + len);
		memcpy(f->model + off, f->buf, (size_t)len);
		return 0;
	case FX_TRUNC:
		if (ftruncate(f->fd, off) < 0)
			return fx_fail(f, "ftruncate %lld: %s", off, strerror(errno));
		if (off < f->size)
			f->size = off;
		fx_grow(f, off);
		return 0;
	case FX_PUNCH:
		if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len) < 0)
			return fx_unsupported(f, s->op, errno);
		if (off < f->size)
			memset(f->model + off, 0, (size_t)((off + len > f->size ? f->size : off + len) - off));
		return 0;
	case FX_COPY: {
		loff_t in = off, out = s->dst;
		long long want = off >= f->size ? 0 : off + len > f->size ? f->size - off : len;

		n = copy_file_range(f->fd, &in, f->fd, &out, (size_t)len, 0);
		if (n < 0)
			return fx_unsupported(f, s->op, errno);
		if (n > want || (n == 0 && want > 0))
			return fx_fail(f, "copy_file_range copied %zd of %lld", n, want);
		if (n > 0) {
			memmove(f->buf, f->model + off, (size_t)n);
			fx_grow(f, s->dst + n);
			memcpy(f->model + s->dst, f->buf, (size_t)n);
		}
		return 0;
	}
	case FX_FSYNC:
		return fsync(f->fd) < 0 ? fx_fail(f, "fsync: %s", strerror(errno)) : 0;
	case FX_REOPEN:
		close(f->fd);
		f->fd = open(f->path, O_RDWR);
		return f->fd < 0 ? fx_fail(f, "reopen: %s", strerror(errno)) : 0;
	}
	return fx_map(f, s->op, off, len);
}

/* Chooses the next step; ranges stay within maxlen, copies never overlap. */
static void fx_choose(fx *f, fx_step *s)
{
	int total = 0, r;

	do {
		total = 0;
		for (int k = 0; k < FX_NOPS; k++)
			total += f->off[k] ? 0 : fx_weights[k];
		r = (int)fx_rnd(f, total);
		for (s->op = 0; f->off[s->op] || r >= fx_weights[s->op]; s->op++)
			r -= f->off[s->op] ? 0 : fx_weights[s->op];
		s->off = fx_rnd(f, f->maxlen);
		s->len = 1 + fx_rnd(f, fx_rnd(f, 4) ? 8192 : f->maxlen / 4);
		if (s->off + s->len > f->maxlen)
			s->len = f->maxlen - s->off;
		if (s->op == FX_MREAD && s->off + s->len > f->size) {
			s->off = fx_rnd(f, f->size);
			s->len = f->size - s->off < s->len ? f->size - s->off : s->len;
		}
		s->dst = fx_rnd(f, f->maxlen - s->len);
	} while ((s->op == FX_MREAD && s->len <= 0) ||
		 (s->op == FX_COPY && s->dst < s->off + s->len && s->off < s->dst + s->len));
}

static int fx_usage(void)
{
	fprintf(stderr, "usage: x3-fsx [--seed N] [--steps N] [--maxlen BYTES] [--strict] FILE\n");
	return 2;
}

/* Opens the file and runs the steps; 0 when every byte was as modelled. */
static int fx_run(fx *f, long steps)
{
	if ((f->fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC, 0644)) < 0) {
		fprintf(stderr, "x3-fsx: %s: %s\n", f->path, strerror(errno));
		return 1;
	}
	printf("x3-fsx seed %llu steps %ld maxlen %lld\n", (unsigned long long)f->rng, steps,
	       f->maxlen);
	for (long n = 1; n <= steps; n++) {
		fx_step *s = &f->hist[f->nhist % FX_HIST];

		fx_choose(f, s);
		s->n = n;
		f->nhist++;
		if (fx_io(f, s) < 0 || (s->size_after = f->size, fx_check(f)) < 0) {
			close(f->fd);
			return 1;
		}
	}
	printf("x3-fsx: %ld steps, final size %lld, all bytes as modelled\n", steps, f->size);
	return close(f->fd) < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	fx f = { .maxlen = 256 << 10, .rng = 1 };
	long steps = 10000;
	int i, rc = 1;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--strict"))
			f.strict = true;
		else if (i + 1 < argc && !strcmp(argv[i], "--seed"))
			f.rng = strtoull(argv[++i], NULL, 0);
		else if (i + 1 < argc && !strcmp(argv[i], "--steps"))
			steps = strtol(argv[++i], NULL, 0);
		else if (i + 1 < argc && !strcmp(argv[i], "--maxlen"))
			f.maxlen = strtoll(argv[++i], NULL, 0);
		else
			return fx_usage();
	}
	if (i != argc - 1 || f.maxlen < 4096)
		return fx_usage();
	f.path = argv[i];
	f.page = sysconf(_SC_PAGESIZE);
	f.model = calloc(1, (size_t)f.maxlen + 1);
	f.buf = calloc(1, (size_t)f.maxlen + 1);
	if (f.model && f.buf)
		rc = fx_run(&f, steps);
	free(f.model);
	free(f.buf);
	return rc;
}
