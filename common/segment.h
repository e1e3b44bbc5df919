/* segment.h - a client session's private shared memory.
 *
 * The client creates the segment (a memfd) and hands it to inode-svc when
 * it attaches; it maps nothing of the arena. The segment holds CM_SEG_LANES
 * lanes; a lane is a request ring, a response ring (records of
 * CM_FS_REC_SIZE bytes) and a data buffer of CM_SEG_DATA bytes. One client
 * thread uses a lane at a time; inode-svc serves each lane with a thread.
 * inode-svc trusts nothing in the segment: it checks the header and the
 * rings' shape once at attach (so that a blank or foreign memfd is refused
 * by name), then computes every offset from these constants and reads rings
 * with cm_ring_*_untrusted().
 */
#ifndef CM_SEGMENT_H
#define CM_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "fsproto.h"
#include "ring.h"

#define CM_SEG_MAGIC 0x47455344u /* "DSEG" */
#define CM_SEG_VERSION 1
/* Calls of one session in flight at once. A FUSE mount is one session for
 * all its threads: with 4, eight fsync threads shared four lanes and the
 * writes waited behind the fsyncs; 8 lanes took 8 fsync threads through
 * the mount from about 10000 to 15000 a second (docs/fuse.md, "Speed"). */
#define CM_SEG_LANES 8
#define CM_SEG_DEPTH 4
#define CM_SEG_DATA (1u << 20)

/* The segment's first bytes, written by the client before it attaches. */
typedef struct cm_seg_hdr {
	uint32_t magic;      /* CM_SEG_MAGIC */
	uint32_t version;    /* CM_SEG_VERSION: this layout */
	uint32_t lanes;      /* CM_SEG_LANES */
	uint32_t depth;      /* CM_SEG_DEPTH: records per ring */
	uint32_t rec_size;   /* CM_FS_REC_SIZE */
	uint32_t data_size;  /* CM_SEG_DATA */
} cm_seg_hdr;

typedef struct cm_seg {
	uint8_t *base;
	size_t size;
	int fd;
} cm_seg;

extern const cm_ring_geom cm_seg_geom;

size_t cm_seg_size(void);
/* Client: a new, initialised segment. */
int cm_seg_create(cm_seg **ret);
/* inode-svc: maps a client's segment; -EPROTO, with *why set, if its size
 * is wrong, it is not sealed against shrinking and growing, or its header
 * or a ring is not of this layout (a blank memfd, another version). */
int cm_seg_map(int fd, cm_seg **ret, const char **why);
cm_seg *cm_seg_free(cm_seg *s);
cm_ring *cm_seg_req(cm_seg *s, unsigned lane);
cm_ring *cm_seg_resp(cm_seg *s, unsigned lane);
uint8_t *cm_seg_data(cm_seg *s, unsigned lane);

#endif
