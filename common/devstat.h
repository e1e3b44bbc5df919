/* devstat.h - the device as blockdev-svc sees it, published in the arena
 * for status: what it is (a file, a block device, an NBD export over TCP or
 * a unix socket), whether it takes writes, whether it is reachable, and
 * the cost of its requests. Written by blockdev-svc only; a restarted
 * blockdev-svc fills it again and keeps the counters going.
 */
#ifndef CM_DEVSTAT_H
#define CM_DEVSTAT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum cm_transport {
	CM_TRANSPORT_NONE = 0, /* blockdev-svc has not opened the device yet */
	CM_TRANSPORT_FILE = 1,
	CM_TRANSPORT_BLOCK = 2,
	CM_TRANSPORT_NBD_TCP = 3,
	CM_TRANSPORT_NBD_UNIX = 4,
};

enum cm_link_state {
	CM_LINK_UP = 0,
	CM_LINK_RECONNECTING = 1, /* lost; requests wait, within --device-timeout */
	CM_LINK_FAILED = 2,       /* gone past --device-timeout: requests get EIO */
};

/* Request latencies in powers of two of microseconds: bucket i counts
 * those in [2^i, 2^(i+1)) us, bucket 0 also those under 1 us. */
#define CM_DEV_LAT_BUCKETS 32
#define CM_DEV_TEXT_MAX 160

typedef struct cm_device {
	_Atomic uint32_t transport;          /* [blockdev-svc] enum cm_transport */
	_Atomic uint32_t read_only;          /* [blockdev-svc] 1: the device refuses writes */
	_Atomic uint32_t link;               /* [blockdev-svc] enum cm_link_state */
	_Atomic uint32_t in_flight;          /* [blockdev-svc] device requests outstanding */
	_Atomic uint32_t max_in_flight;      /* [blockdev-svc] the most seen at once */
	_Atomic uint64_t requests;           /* [blockdev-svc] served, with or without error */
	_Atomic uint64_t errors;             /* [blockdev-svc] answered with an error */
	_Atomic uint64_t reconnects;         /* [blockdev-svc] connections made again */
	_Atomic uint64_t replayed;           /* [blockdev-svc] unflushed writes sent again after one */
	_Atomic uint64_t lat[CM_DEV_LAT_BUCKETS]; /* [blockdev-svc] see CM_DEV_LAT_BUCKETS */
	char where[CM_DEV_TEXT_MAX];         /* [racy read ok: diagnostics] path or URI */
	char last_error[CM_DEV_TEXT_MAX];    /* [racy read ok: diagnostics] */
} cm_device;

/* True if an image name is an NBD URI (nbd://HOST[:PORT]/EXPORT,
 * nbd+unix:///EXPORT?socket=PATH, or their TLS forms nbds and
 * nbds+unix), not a path. */
static inline bool cm_device_is_nbd_uri(const char *name)
{
	return strncmp(name, "nbd://", 6) == 0 || strncmp(name, "nbd+unix://", 11) == 0 ||
	       strncmp(name, "nbds://", 7) == 0 || strncmp(name, "nbds+unix://", 12) == 0;
}

#endif
