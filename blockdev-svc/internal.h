/* internal.h - blockdev-svc: the only process that opens the device.
 *
 * It serves CM_BD_* requests (bdrec.h) from its channels, one thread, in
 * channel order, never interpreting what it moves. Every write and flush can
 * be recorded in order in a write log, from which crash tests rebuild the
 * device as a power cut at any flush would have left it.
 *
 * No locks: one thread owns all of this state.
 */
#ifndef BD_INTERNAL_H
#define BD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "arena.h"
#include "bdrec.h"
#include "devstat.h"

/* --fault=ioerr:transient:N fails the Nth write once; persistent fails the
 * Nth and every later write. Both with EIO, as a failing disk would. The
 * count is the process's: a restarted blockdev-svc starts it again. */
enum bd_fault_kind { BD_FAULT_NONE, BD_FAULT_TRANSIENT, BD_FAULT_PERSISTENT };

typedef struct bd_nbd bd_nbd;

typedef struct bd_device {
	int fd;                 /* the image file or block device; -1 for NBD */
	bd_nbd *nbd;            /* the NBD export, or NULL */
	cm_device *stat;        /* [immutable] in the arena's layout */
	bool read_only;         /* [immutable] the device refuses writes */
	uint32_t timeout_ms;    /* [immutable] --device-timeout (NBD) */
	uint64_t sectors;       /* [immutable] size in 512-byte sectors */
	enum bd_fault_kind fault;
	uint64_t fault_at;      /* write number (from 1) the fault hits */
	uint64_t writes;        /* writes seen so far */
} bd_device;

/* The smallest device served: one that can hold the superblock, which
 * every filesystem blockdev-svc serves has at bytes [1024, 2048). */
#define BD_DEVICE_MIN 2048u

/* Opens and sizes the device, a path or an NBD URI (cm_device_is_nbd_uri); on
 * failure why holds one line saying what is wrong (missing, empty, too
 * small, not a file or block device, server unreachable). */
int bd_device_open(bd_device *d, const char *path, char *why, size_t whylen);
int bd_device_parse_fault(bd_device *d, const char *spec);
/* Counts a write; true if the injected fault fails it. */
bool bd_device_fault_hits(bd_device *d);
int bd_device_read(bd_device *d, uint64_t sector, uint32_t nsect, void *buf);
int bd_device_readv(bd_device *d, uint64_t sector, struct iovec *iov, int iovcnt);
int bd_device_write(bd_device *d, uint64_t sector, uint32_t nsect, const void *buf, bool fua);
int bd_device_flush(bd_device *d);
void bd_device_close(bd_device *d);

/* nbd.c: the device as an NBD export (what the calls promise is there). */
#define BD_DEVICE_TIMEOUT_MS 8000 /* --device-timeout's default: under libext3d's 10 s call deadline */
int bd_nbd_open(bd_nbd **ret, const char *uri, uint32_t timeout_ms, cm_device *stat,
		char *why, size_t whylen);
uint64_t bd_nbd_size(const bd_nbd *n);
bool bd_nbd_read_only(const bd_nbd *n);
int bd_nbd_readv(bd_nbd *n, uint64_t off, const struct iovec *iov, int iovcnt);
/* bd_device_write refuses writes to a read-only export before this. */
int bd_nbd_write(bd_nbd *n, uint64_t off, const void *buf, size_t len, bool fua);
int bd_nbd_flush(bd_nbd *n);
void bd_nbd_close(bd_nbd *n);

/* devstat.c: a request's outcome and latency, for status. */
void bd_stat_request(cm_device *stat, uint64_t start_ns, int r);

/* The write log: "EXT3DWL1", then per write or flush a bd_wlog_rec,
 * followed for writes by nsect * 512 bytes of data. Host byte order. */
#define BD_WLOG_FILE_MAGIC "EXT3DWL1"
#define BD_WLOG_REC_MAGIC 0x474f4c57u /* "WLOG" */
enum bd_wlog_op { BD_WLOG_WRITE = 1, BD_WLOG_FLUSH = 2 };

struct bd_wlog_rec {
	uint32_t magic;
	uint32_t op;     /* enum bd_wlog_op */
	uint64_t sector;
	uint32_t nsect;
	uint32_t flags;  /* CM_BD_FUA */
};

typedef struct bd_wlog {
	int fd; /* -1: no log */
} bd_wlog;

int bd_wlog_open(bd_wlog *w, const char *path);
int bd_wlog_write(bd_wlog *w, uint64_t sector, uint32_t nsect, uint32_t flags, const void *data);
int bd_wlog_flush(bd_wlog *w);
void bd_wlog_close(bd_wlog *w);

typedef struct bd_svc {
	cm_arena *arena;
	bd_device dev;
	bd_wlog wlog;
	/* CM_BD_MAX_SECTORS sectors, private: a write copies the client's
	 * buffer here once, then logs and writes the copy, so the log and the
	 * device get the same bytes even if a client changes the shared
	 * buffer meanwhile. */
	void *bounce;
} bd_svc;

/* cm_chan_exec for blockdev requests: validates, then performs one. */
int bd_exec(void *ctx, const void *req, void *resp);

#endif
