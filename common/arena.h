/* arena.h - the shared memory of one ext3d instance.
 *
 * The supervisor creates the arena (a memfd) and hands its descriptor to
 * every service at exec. Each process maps it wherever mmap puts it, so the
 * arena is addressed by offsets (cm_off), never by raw pointers. A versioned
 * header at offset 0 lets each process refuse an arena it does not speak.
 *
 * Two zones: metadata (rings, locks, tables) grows up from the header; the
 * data zone at the top holds I/O buffers, and only offsets inside it may be
 * named as I/O buffers in requests to blockdev-svc.
 */
#ifndef CM_ARENA_H
#define CM_ARENA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CM_ARENA_MAGIC 0x4e52413344335845ULL /* "EXT3DARN" */
#define CM_ARENA_VERSION 9

/* A byte offset from the start of the arena; 0 means "none". */
typedef uint64_t cm_off;

enum cm_arena_state {
	CM_ARENA_LIVE = 1,
	CM_ARENA_DISCARDED = 2, /* a group restart abandoned it: nobody may use it */
};

struct cm_arena_hdr {
	uint64_t magic;            /* [immutable] CM_ARENA_MAGIC */
	uint32_t version;          /* [immutable] CM_ARENA_VERSION */
	uint32_t hdr_size;         /* [immutable] sizeof(struct cm_arena_hdr) */
	uint64_t size;             /* [immutable] bytes mapped */
	uint64_t generation;       /* [immutable] group restarts before this arena */
	_Atomic uint32_t state;    /* [atomic] enum cm_arena_state */
	uint32_t reserved;
	_Atomic uint64_t meta_brk; /* [atomic] next free byte of the metadata zone */
	_Atomic uint64_t data_brk; /* [atomic] next free byte of the data zone */
	uint64_t data_start;       /* [immutable] first byte of the data zone */
	cm_off layout;             /* [immutable] the instance layout (layout.h) */
};

typedef struct cm_arena {
	uint8_t *base;             /* this process's mapping */
	uint64_t size;
	int fd;
	struct cm_arena_hdr *hdr;
} cm_arena;

/* Creates and maps a new arena of size bytes, the top data_size of them the
 * data zone. The descriptor is close-on-exec; the supervisor clears that for
 * the services it starts. */
int cm_arena_create(uint64_t size, uint64_t data_size, uint64_t generation, cm_arena **ret);
/* Maps an arena received as fd and checks its header. On -EPROTO (not an
 * arena, wrong version or size) or -ESTALE (discarded), why says which. */
int cm_arena_attach(int fd, cm_arena **ret, char *why, size_t whylen);
/* Unmaps and closes; accepts NULL; returns NULL. */
cm_arena *cm_arena_free(cm_arena *a);

/* NULL if [off, off+len) is not inside the arena. */
void *cm_arena_ptr(const cm_arena *a, cm_off off, uint64_t len);
cm_off cm_arena_off(const cm_arena *a, const void *p);
/* Zeroed, aligned allocations that live as long as the arena; 0 when full. */
cm_off cm_arena_alloc(cm_arena *a, uint64_t len, uint64_t align);
cm_off cm_arena_alloc_data(cm_arena *a, uint64_t len, uint64_t align);
bool cm_arena_in_data(const cm_arena *a, cm_off off, uint64_t len);

#endif
