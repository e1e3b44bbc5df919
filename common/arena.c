/* arena.c - create, attach, check and carve the shared arena; see arena.h.
 * Allocation is a lock-free bump of meta_brk or data_brk: nothing is freed
 * before the whole arena is discarded, so no lock is needed. */
#define _GNU_SOURCE
#include "arena.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Maps size bytes of fd. NULL on failure, with *err set to -errno; the
 * result says whether it worked, so no caller depends on errno being
 * positive to know that its arena was set. */
static cm_arena *cm_arena_map(int fd, uint64_t size, int *err)
{
	cm_arena *a = calloc(1, sizeof(*a));
	void *base;

	if (!a) {
		*err = -ENOMEM;
		return NULL;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		*err = -errno;
		free(a);
		return NULL;
	}
	a->base = base;
	a->size = size;
	a->fd = fd;
	a->hdr = base;
	return a;
}

int cm_arena_create(uint64_t size, uint64_t data_size, uint64_t generation, cm_arena **ret)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct cm_arena_hdr *h;
	cm_arena *a;
	int fd, r;

	if (size % page || data_size % page || data_size >= size)
		return -EINVAL;
	fd = memfd_create("ext3d-arena", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	a = cm_arena_map(fd, size, &r);
	if (!a) {
		close(fd);
		return r;
	}
	h = a->hdr;
	h->magic = CM_ARENA_MAGIC;
	h->version = CM_ARENA_VERSION;
	h->hdr_size = sizeof(*h);
	h->size = size;
	h->generation = generation;
	h->data_start = size - data_size;
	atomic_init(&h->meta_brk, (sizeof(*h) + 63) & ~(uint64_t)63);
	atomic_init(&h->data_brk, h->data_start);
	atomic_init(&h->state, CM_ARENA_LIVE);
	*ret = a;
	return 0;
}

int cm_arena_attach(int fd, cm_arena **ret, char *why, size_t whylen)
{
	struct cm_arena_hdr h;
	struct stat st;
	cm_arena *a;
	int r;

	if (fstat(fd, &st) < 0) {
		snprintf(why, whylen, "fd %d is not open: %s", fd, strerror(errno));
		return -EBADF;
	}
	if ((uint64_t)st.st_size < sizeof(h)) {
		snprintf(why, whylen, "%lld bytes is too small to be an ext3d arena",
			 (long long)st.st_size);
		return -EPROTO;
	}
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		snprintf(why, whylen, "cannot read the arena header");
		return -EPROTO;
	}
	if (h.magic != CM_ARENA_MAGIC) {
		snprintf(why, whylen, "bad magic 0x%016llx: not an ext3d arena",
			 (unsigned long long)h.magic);
		return -EPROTO;
	}
	if (h.version != CM_ARENA_VERSION || h.hdr_size != sizeof(h)) {
		snprintf(why, whylen, "arena version %u (header %u bytes); this build speaks %u (%zu)",
			 h.version, h.hdr_size, CM_ARENA_VERSION, sizeof(h));
		return -EPROTO;
	}
	if (h.size != (uint64_t)st.st_size || h.data_start >= h.size || h.layout >= h.size) {
		snprintf(why, whylen, "arena header says %llu bytes, the memfd has %lld",
			 (unsigned long long)h.size, (long long)st.st_size);
		return -EPROTO;
	}
	if (h.state != CM_ARENA_LIVE) {
		snprintf(why, whylen, "stale arena (generation %llu was discarded)",
			 (unsigned long long)h.generation);
		return -ESTALE;
	}
	a = cm_arena_map(fd, h.size, &r);
	if (!a) {
		snprintf(why, whylen, "mmap: %s", strerror(-r));
		return r;
	}
	*ret = a;
	return 0;
}

cm_arena *cm_arena_free(cm_arena *a)
{
	if (!a)
		return NULL;
	munmap(a->base, a->size);
	close(a->fd);
	free(a);
	return NULL;
}

void *cm_arena_ptr(const cm_arena *a, cm_off off, uint64_t len)
{
	if (off == 0 || off > a->size || len > a->size - off)
		return NULL;
	return a->base + off;
}

cm_off cm_arena_off(const cm_arena *a, const void *p)
{
	return (cm_off)((const uint8_t *)p - a->base);
}

static cm_off cm_arena_bump(_Atomic uint64_t *brk, uint64_t limit, uint64_t len, uint64_t align)
{
	uint64_t old = atomic_load(brk), start;

	do {
		start = (old + align - 1) & ~(align - 1);
		if (start > limit || len > limit - start)
			return 0;
	} while (!atomic_compare_exchange_weak(brk, &old, start + len));
	return start;
}

cm_off cm_arena_alloc(cm_arena *a, uint64_t len, uint64_t align)
{
	return cm_arena_bump(&a->hdr->meta_brk, a->hdr->data_start, len, align);
}

cm_off cm_arena_alloc_data(cm_arena *a, uint64_t len, uint64_t align)
{
	return cm_arena_bump(&a->hdr->data_brk, a->size, len, align);
}

bool cm_arena_in_data(const cm_arena *a, cm_off off, uint64_t len)
{
	return off >= a->hdr->data_start && off <= a->size && len <= a->size - off;
}
