/* test-arena.c - the shared arena: create, attach from another process by
 * fd, offsets and bounds, the two allocation zones, and the clear refusal
 * of what is not a live arena of this version (garbage, too small, wrong
 * version, wrong size, discarded). */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t_arena.h"
#include "tap.h"

static cm_arena *t_a;
static cm_off t_word;

static int t_child_attach(void *arg)
{
	char why[160];
	cm_arena *b;

	(void)arg;
	if (cm_arena_attach(t_a->fd, &b, why, sizeof(why)) < 0)
		return 2;
	*(uint64_t *)cm_arena_ptr(b, t_word, 8) = 0xfeedULL;
	cm_arena_free(b);
	return 0;
}

static void t_create_attach(void)
{
	int status;

	t_word = cm_arena_alloc(t_a, 8, 8);
	t_ok(t_word != 0 && t_word % 8 == 0, "metadata allocation aligned");
	status = t_wait(t_fork(t_child_attach, NULL), 10000);
	t_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	     "another process attaches by fd");
	t_is_int((int64_t)*(uint64_t *)cm_arena_ptr(t_a, t_word, 8), 0xfeed,
		 "its write through its own mapping is seen here");
	t_ok(cm_arena_ptr(t_a, 0, 1) == NULL, "offset 0 is no pointer");
	t_ok(cm_arena_ptr(t_a, t_a->size - 4, 8) == NULL, "a range past the end is refused");
	t_ok(cm_arena_ptr(t_a, UINT64_MAX - 2, 8) == NULL, "an overflowing range is refused");
}

static void t_zones(void)
{
	cm_off d = cm_arena_alloc_data(t_a, 4096, 4096);
	cm_off m = cm_arena_alloc(t_a, 4096, 64);

	t_ok(d && d % 4096 == 0, "data allocation aligned to 4096");
	t_ok(cm_arena_in_data(t_a, d, 4096), "data allocation is in the data zone");
	t_ok(!cm_arena_in_data(t_a, m, 8), "metadata allocation is not");
	t_ok(!cm_arena_in_data(t_a, d, t_a->size), "a data range past the end is not");
	t_is_int((int64_t)cm_arena_alloc(t_a, t_a->size, 8), 0, "an allocation too big gets 0");
}

/* A memfd holding a copy of our header, altered by fn. */
static int t_bad_fd(void (*fn)(struct cm_arena_hdr *h, int fd))
{
	struct cm_arena_hdr h = *t_a->hdr;
	int fd = memfd_create("t-bad", MFD_CLOEXEC);

	if (ftruncate(fd, (off_t)t_a->size) < 0)
		return -1;
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -1;
	fn(&h, fd);
	return fd;
}

static void t_put(struct cm_arena_hdr *h, int fd)
{
	(void)!pwrite(fd, h, sizeof(*h), 0);
}

static void t_garbage(struct cm_arena_hdr *h, int fd)
{
	memset(h, 0x5a, sizeof(*h));
	t_put(h, fd);
}

static void t_version(struct cm_arena_hdr *h, int fd)
{
	h->version = 99;
	t_put(h, fd);
}

static void t_stale(struct cm_arena_hdr *h, int fd)
{
	h->state = CM_ARENA_DISCARDED;
	t_put(h, fd);
}

static void t_size(struct cm_arena_hdr *h, int fd)
{
	(void)!ftruncate(fd, (off_t)h->size * 2);
}

static void t_small(struct cm_arena_hdr *h, int fd)
{
	(void)h;
	(void)!ftruncate(fd, 16);
}

static void t_refusals(void)
{
	static const struct {
		const char *what;
		void (*fn)(struct cm_arena_hdr *h, int fd);
		int err;
		const char *says;
	} cases[] = {
		{"garbage", t_garbage, -EPROTO, "not an ext3d arena"},
		{"wrong version", t_version, -EPROTO, "this build speaks"},
		{"wrong size", t_size, -EPROTO, "the memfd has"},
		{"discarded", t_stale, -ESTALE, "stale arena"},
		{"too small", t_small, -EPROTO, "too small"},
	};
	char why[160];
	cm_arena *b;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = t_bad_fd(cases[i].fn);
		why[0] = '\0';
		t_is_int(cm_arena_attach(fd, &b, why, sizeof(why)), cases[i].err,
			 "%s arena refused", cases[i].what);
		t_ok(strstr(why, cases[i].says) != NULL, "%s: reason says '%s' (%s)", cases[i].what,
		     cases[i].says, why);
		close(fd);
	}
	t_is_int(cm_arena_attach(9999, &b, why, sizeof(why)), -EBADF, "a closed fd refused");
}

int main(void)
{
	alarm(60);
	t_a = t_arena_new(CM_LOCKING_FINE);
	t_create_attach();
	t_zones();
	t_refusals();
	t_a = cm_arena_free(t_a);
	return t_done();
}
