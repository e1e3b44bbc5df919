/* segment.c - layout, creation and mapping of client session segments;
 * see segment.h. Every offset is a function of the constants only. */
#define _GNU_SOURCE
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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
	*(uint32_t *)s->base = CM_SEG_MAGIC;
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

int cm_seg_map(int fd, cm_seg **ret)
{
	int seals = fcntl(fd, F_GET_SEALS), r;
	struct stat st;
	cm_seg *s;

	if (fstat(fd, &st) < 0 || seals < 0)
		return -errno;
	/* Unsealed, the client could shrink it under us: SIGBUS. */
	if ((size_t)st.st_size != cm_seg_size() || (seals & CM_SEG_SEALS) != CM_SEG_SEALS)
		return -EPROTO;
	s = cm_seg_mmap(fd, &r);
	if (!s)
		return r;
	*ret = s;
	return 0;
}

cm_seg *cm_seg_free(cm_seg *s)
{
	if (!s)
		return NULL;
	munmap(s->base, s->size);
	close(s->fd);
	free(s);
	return NULL;
}
