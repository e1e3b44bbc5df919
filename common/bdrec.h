/* bdrec.h - the records on channels to blockdev-svc (version CM_BD_VERSION).
 *
 * Addresses are 512-byte sectors: blockdev-svc does not interpret the
 * filesystem, so it does not know its block size. Data moves through a
 * buffer in the arena's data zone named by data_off; blockdev-svc refuses
 * any other offset.
 */
#ifndef CM_BDREC_H
#define CM_BDREC_H

#include <stdint.h>

#include "chan.h"

#define CM_BD_VERSION 1
#define CM_BD_SECTOR 512
#define CM_BD_MAX_SECTORS 2048 /* 1 MiB per request */

enum cm_bd_op {
	CM_BD_INFO = 1,  /* response: dev_sectors */
	CM_BD_READ = 2,
	CM_BD_WRITE = 3, /* flags: CM_BD_FUA, CM_BD_PREFLUSH */
	CM_BD_FLUSH = 4, /* everything written before it is durable */
	CM_BD_READV = 16, /* nsect sectors into nsect / chunk buffers: data_off
			   * names a table of their offsets (uint64_t each),
			   * table and buffers in the data zone */
	CM_BD_WRITEV = 17, /* the gathering write: nsect sectors from nsect /
			    * chunk buffers named as for CM_BD_READV; flags
			    * as CM_BD_WRITE's */
};

#define CM_BD_MAX_IOV 256 /* buffers per CM_BD_READV or CM_BD_WRITEV */

#define CM_BD_FUA 0x1u      /* the write is durable when answered */
#define CM_BD_PREFLUSH 0x2u /* a flush first: every write answered before
			     * this one is durable before it is written (a
			     * commit block in one request, not three) */
#define CM_BD_WRITE_FLAGS (CM_BD_FUA | CM_BD_PREFLUSH)

typedef struct cm_bd_rec {
	cm_rec_hdr hdr;
	uint64_t sector;
	uint32_t nsect;
	uint32_t flags;
	uint64_t data_off;    /* arena offset of the buffer (data zone) */
	uint64_t dev_sectors; /* CM_BD_INFO response */
	uint32_t chunk;       /* CM_BD_READV, CM_BD_WRITEV: sectors per buffer */
	uint32_t pad;
	uint8_t reserved[CM_CHAN_REC_SIZE - 56];
} cm_bd_rec;
_Static_assert(sizeof(cm_bd_rec) == CM_CHAN_REC_SIZE, "bd record fills a channel slot");

#endif
