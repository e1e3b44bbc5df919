/* segment.c - layout, creation, checking and mapping of client session
 * segments; see segment.h. Every offset is a function of the constants
 * only; the header and rings a client wrote are checked once at attach. */
#define _GNU_SOURCE
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CM_SEG_HDR 4096
#define CM_SEG_RING_BYTES 4096
#define CM_SEG_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

_Static_assert(sizeof(cm_ring) + CM_FS_REC_SIZE * CM_SEG_DEPTH <= CM_SEG_RING_BYTES,
	       "a lane ring fits its slot");

const cm_ring_geom cm_seg_geom = {CM_FS_REC_SIZE, CM_SEG_DEPTH};

static size_t cm_seg_lane_bytes(void)
{
	return 2 * CM_SEG_RING_BYTES + CM_SEG_DATA;
}

size_t cm_seg_size(void)
{
	return CM_SEG_HDR + CM_SEG_LANES * cm_seg_lane_bytes();
}

static uint8_t *cm_seg_lane(cm_seg *s, unsigned lane)
{
	return s->base + CM_SEG_HDR + (size_t)(lane % CM_SEG_LANES) * cm_seg_lane_bytes();
}

cm_ring *cm_seg_req(cm_seg *s, unsigned lane)
{
	return (cm_ring *)cm_seg_lane(s, lane);
}

cm_ring *cm_seg_resp(cm_seg *s, unsigned lane)
{
	return (cm_ring *)(cm_seg_lane(s, lane) + CM_SEG_RING_BYTES);
}

uint8_t *cm_seg_data(cm_seg *s, unsigned lane)
{
	return cm_seg_lane(s, lane) + 2 * CM_SEG_RING_BYTES;
}

/* NULL on failure, with *err set to -errno (see cm_arena_map). */
static cm_seg *cm_seg_mmap(int fd, int *err)
{
	cm_seg *s = calloc(1, sizeof(*s));
	void *base;

	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	base = mmap(NULL, cm_seg_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		*err = -errno;
		free(s);
		return NULL;
	}
	s->base = base;
	s->size = cm_seg_size();
	s->fd = fd;
	return s;
}

int cm_seg_create(cm_seg **ret)
{
	int fd = memfd_create("ext3d-session", MFD_CLOEXEC | MFD_ALLOW_SEALING), r;
	cm_seg *s;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)cm_seg_size()) < 0 ||
	    fcntl(fd, F_ADD_SEALS, CM_SEG_SEALS) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	s = cm_seg_mmap(fd, &r);
	if (!s) {
		close(fd);
		return r;
	}
	*(cm_seg_hdr *)s->base = (cm_seg_hdr){
		.magic = CM_SEG_MAGIC, .version = CM_SEG_VERSION, .lanes = CM_SEG_LANES,
		.depth = CM_SEG_DEPTH, .rec_size = CM_FS_REC_SIZE, .data_size = CM_SEG_DATA,
	};
	r = 0;
	for (unsigned i = 0; i < CM_SEG_LANES && r == 0; i++) {
		r = cm_ring_init(cm_seg_req(s, i), CM_FS_VERSION, CM_FS_REC_SIZE, CM_SEG_DEPTH,
				 false, NULL);
		if (r == 0)
			r = cm_ring_init(cm_seg_resp(s, i), CM_FS_VERSION, CM_FS_REC_SIZE,
					 CM_SEG_DEPTH, false, NULL);
	}
	if (r < 0) {
		cm_seg_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* A ring of a fresh segment: this shape, its own event, no lock. */
static bool cm_seg_ring_ok(const cm_ring *r)
{
	return cm_ring_check(r, CM_FS_VERSION, CM_FS_REC_SIZE) == 0 &&
	       r->capacity == CM_SEG_DEPTH && r->multi_producer == 0 &&
	       r->not_empty_rel == (int64_t)offsetof(cm_ring, own_not_empty);
}

/* Checks what the client wrote before attaching; the client may change it
 * later, which is why nothing here is used afterwards. */
static int cm_seg_check(cm_seg *s, const char **why)
{
	cm_seg_hdr h;

	memcpy(&h, s->base, sizeof(h));
	if (h.magic != CM_SEG_MAGIC)
		return *why = "segment header: bad magic (blank or not a session segment)", -EPROTO;
	if (h.version != CM_SEG_VERSION)
		return *why = "segment header: unsupported segment version", -EPROTO;
	if (h.lanes != CM_SEG_LANES || h.depth != CM_SEG_DEPTH ||
	    h.rec_size != CM_FS_REC_SIZE || h.data_size != CM_SEG_DATA)
		return *why = "segment header: ring geometry differs from this version's", -EPROTO;
	for (unsigned i = 0; i < CM_SEG_LANES; i++)
		if (!cm_seg_ring_ok(cm_seg_req(s, i)) || !cm_seg_ring_ok(cm_seg_resp(s, i)))
			return *why = "segment: a lane's ring is not initialised as this version's",
			       -EPROTO;
	return 0;
}

int cm_seg_map(int fd, cm_seg **ret, const char **why)
{
	int seals = fcntl(fd, F_GET_SEALS), r;
	struct stat st;
	cm_seg *s;

	*why = "segment is not a sealed memfd";
	if (fstat(fd, &st) < 0 || seals < 0)
		return -errno;
	/* Unsealed, the client could shrink it under us: SIGBUS. */
	if ((seals & CM_SEG_SEALS) != CM_SEG_SEALS)
		return *why = "segment is not sealed against shrinking and growing", -EPROTO;
	if ((size_t)st.st_size != cm_seg_size())
		return *why = "segment is not of this version's size", -EPROTO;
	s = cm_seg_mmap(fd, &r);
	if (!s)
		return r;
	r = cm_seg_check(s, why);
	if (r < 0) {
		s->fd = -1; /* the caller still owns fd */
		cm_seg_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

cm_seg *cm_seg_free(cm_seg *s)
{
	if (!s)
		return NULL;
	munmap(s->base, s->size);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	return NULL;
}
