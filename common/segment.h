/* segment.h - a client session's private shared memory.
 *
 * The client creates the segment (a memfd) and hands it to inode-svc when
 * it attaches; it maps nothing of the arena. The segment holds CM_SEG_LANES
 * lanes; a lane is a request ring, a response ring (records of
 * CM_FS_REC_SIZE bytes) and a data buffer of CM_SEG_DATA bytes. One client
 * thread uses a lane at a time; inode-svc serves each lane with a thread.
 * inode-svc trusts nothing in the segment: it computes every offset from
 * these constants and reads rings with cm_ring_*_untrusted().
 */
#ifndef CM_SEGMENT_H
#define CM_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "fsproto.h"
#include "ring.h"

#define CM_SEG_MAGIC 0x47455344u /* "DSEG" */
#define CM_SEG_LANES 4
#define CM_SEG_DEPTH 4
#define CM_SEG_DATA (1u << 20)

typedef struct cm_seg {
	uint8_t *base;
	size_t size;
	int fd;
} cm_seg;

extern const cm_ring_geom cm_seg_geom;

size_t cm_seg_size(void);
/* Client: a new, initialised segment. */
int cm_seg_create(cm_seg **ret);
/* inode-svc: maps a client's segment; -EPROTO if its size is wrong or it
 * is not sealed against shrinking and growing. */
int cm_seg_map(int fd, cm_seg **ret);
cm_seg *cm_seg_free(cm_seg *s);
cm_ring *cm_seg_req(cm_seg *s, unsigned lane);
cm_ring *cm_seg_resp(cm_seg *s, unsigned lane);
uint8_t *cm_seg_data(cm_seg *s, unsigned lane);

#endif
