/* internal.h - alloc-svc's parts: the filesystem it allocates in and the
 * shared counters (fs.c), one block group's bitmap and descriptor (group.c),
 * block allocation and freeing (balloc.c), inode allocation with Orlov's
 * placement (ialloc.c), the requests of allocproto.h (dispatch.c) and the
 * worker threads that serve them (worker.c).
 *
 * Every request runs inside the caller's journal handle (jbd_join): the
 * bitmaps and descriptors change through jbd_get_undo_access (block
 * bitmaps: a block freed by an uncommitted transaction stays taken in the
 * committed copy) or jbd_get_write_access (inode bitmaps, descriptors),
 * then jbd_dirty_metadata, before the join stops.
 *
 * Lock order, outermost first (lockset.h has the ranks):
 *   the bitmap buffer's bh_state (jbd_lock_bh_state; the big lock, entered
 *   again, in --locking=big) -> the group's lock (lockset group[g %
 *   CM_GROUP_LOCKS]) -> a counter lock (cm_fc_add folding a slot).
 * One group at a time. Nothing is held while waiting: a group's buffers
 * are read and its journal access taken before its locks. bh_state keeps
 * a bitmap still while the journal copies it (frozen and committed
 * copies) and guards the committed copy; the group lock guards the
 * group's bits and its descriptor's counts, which are also read racily
 * (atomic 16-bit loads) to choose groups, as ext3 reads them.
 */
#ifndef AL_INTERNAL_H
#define AL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "allocproto.h"
#include "bcache.h"
#include "bitmap.h"
#include "journal.h"
#include "ondisk.h"
#include "service.h"

#define AL_MAX_WORKERS 16

/* al_svc.checked: a bitmap is checked once, when first locked (group.c);
 * one found bad stays refused, as ext4's BBITMAP_CORRUPT. */
enum {
	AL_BLOCKS_CHECKED = 1,
	AL_BLOCKS_BAD = 2,
	AL_INODES_CHECKED = 4,
	AL_INODES_BAD = 8,
};

typedef struct al_worker al_worker;

typedef struct al_svc {
	cm_service svc;
	uint32_t nworkers;           /* [immutable] --workers */
	cm_bcache *cache;            /* [immutable after start] */
	jbd_ctx *jc;                 /* [immutable after start] NULL: no journal, refuse */
	cm_lockset *ls;              /* [immutable] the arena's */
	cm_alloc_shared *shared;     /* [immutable after start] the counters */
	cm_ext3_geom g;              /* [immutable after start] */
	uint32_t first_ino;          /* [immutable after start] first non-reserved inode */
	uint32_t r_blocks;           /* [immutable after start] s_r_blocks_count */
	uint32_t sb_free_blocks;     /* [immutable after start] the superblock's totals at start */
	uint32_t sb_free_inodes;     /* [immutable after start] */
	uint32_t sb_blocks;          /* [immutable after start] superblock, GDT and reserved
				      * GDT blocks at the start of a group holding a copy */
	bool sparse_super;           /* [immutable after start] */
	uint8_t *bad;                /* [immutable after start] per group: its descriptor
				      * failed its check; the group is never used */
	_Atomic uint8_t *warned;     /* [atomic] per group: corruption logged once */
	_Atomic uint8_t *checked;    /* [atomic; set under the group's lock] per group:
				      * AL_*_CHECKED, AL_*_BAD of its bitmaps */
	al_worker *workers;          /* [immutable after start] nworkers */
} al_svc;

struct al_worker {
	al_svc *s;                   /* [immutable] */
	uint32_t id;                 /* [immutable] its counter slot and channel share */
	pthread_t thread;            /* [main thread] */
	cm_bdev *bd;                 /* [this worker] its blockdev channel */
	uint64_t rng;                /* [this worker] Orlov's random first group */
};

/* One request: the worker serving it and the handle it joined. */
typedef struct al_req {
	al_worker *w;
	jbd_handle *h;
	uint32_t flags;              /* CM_AL_* of the request */
} al_req;

/* ---- fs.c ---- */
/* Attaches the cache and journal, reads the superblock and checks every
 * descriptor, and finds (after a restart) or makes the shared counters. */
int al_fs_open(al_svc *s, cm_bdev *bd);
void al_fs_close(al_svc *s);
/* True if group g holds a superblock copy (and a GDT copy). */
bool al_group_has_super(const al_svc *s, uint32_t g);

/* ---- group.c: one group's bitmap and descriptor ---- */
typedef struct al_group {
	uint32_t g;
	bool inodes;                 /* the inode bitmap, else the block bitmap */
	uint64_t first;              /* the group's first block (or inode - 1) */
	uint32_t nbits;              /* bits in use in its bitmap */
	cm_bh *map, *gdb;            /* the bitmap, the descriptor's block */
	uint8_t *live;               /* the bitmap's data */
	struct ext3_group_desc *gd;  /* in gdb */
} al_group;

/* Racy reads of a descriptor's counts, to choose groups (all 0 for a
 * group whose descriptor is bad); 0 or a read error. */
typedef struct al_gd_counts {
	uint32_t free_blocks, free_inodes, used_dirs;
} al_gd_counts;
int al_gd_peek(al_req *q, uint32_t g, al_gd_counts *ret);
/* Reads group g's bitmap and descriptor block and takes journal access to
 * both (undo access to a block bitmap). al_group_close drops them. */
int al_group_open(al_req *q, uint32_t g, bool inodes, al_group *x);
void al_group_close(al_req *q, al_group *x);
/* bh_state of the bitmap, then the group lock. 0 or -EOWNERDEAD. */
int al_group_lock(al_req *q, al_group *x);
/* Whether x's bitmap may be allocated from: 0, or -EUCLEAN (logged once)
 * when it fails its check, made the first time: padding past the group's
 * last bit not all set (e2fsck's "padding at end of bitmap"), or, in a
 * block bitmap, one of the group's own bitmaps or inode table blocks free
 * (ext4_valid_block_bitmap). Such a bitmap is garbage in part or whole,
 * and what it says is free may be in use. Frees in it go on, each of a
 * bit found set: clearing the bit of a block or inode its owner gives
 * back brings the bitmap nearer the truth. Called with the group locked. */
int al_group_check(al_req *q, al_group *x);
void al_group_unlock(al_req *q, al_group *x);
/* Aborts unless this thread holds x's group lock. */
void al_group_assert_locked(al_req *q, al_group *x);
/* dirty_metadata on both buffers: before the change, once the locked look
 * found one to make, so that a handle short of credits fails before
 * anything changed. */
int al_group_dirty(al_req *q, al_group *x);
/* The committed copy of a block bitmap (NULL for inode bitmaps). Called
 * with the group locked. */
const uint8_t *al_group_committed(al_req *q, al_group *x);
/* A 16-bit descriptor count as it is now (other groups' writers may store
 * theirs meanwhile: read whole). */
uint16_t al_load16(const cm_le16_t *f);
/* Adds delta to a 16-bit descriptor count, refusing (-EUCLEAN) to go
 * below 0 or above max. Called with the group locked. */
int al_gd_add(al_req *q, al_group *x, cm_le16_t *field, int delta, uint32_t max);
/* True if blocks [blk, blk + n) of group g meet its bitmaps, inode table
 * or superblock and GDT copy. */
bool al_system_zone(al_svc *s, const al_group *x, uint64_t blk, uint32_t n);

/* ---- balloc.c ---- */
int al_alloc_blocks(al_req *q, uint64_t goal, uint32_t want, uint64_t *first, uint32_t *got);
int al_free_blocks(al_req *q, uint64_t first, uint32_t count);

/* ---- ialloc.c ---- */
int al_alloc_inode(al_req *q, uint32_t dir, uint32_t mode, uint32_t *ino);
int al_free_inode(al_req *q, uint32_t ino, uint32_t mode);

/* ---- dispatch.c ---- */
/* Logs the first corruption found in group g, then returns -EUCLEAN. */
int al_corrupt(al_svc *s, uint32_t g, const char *what, uint64_t nr);
/* Logs a request that names blocks or inodes it must not, then returns
 * -EUCLEAN. */
int al_refuse(const char *what, uint64_t nr);
/* cm_chan_exec for allocproto.h records; ctx is the al_worker. */
int al_exec(void *ctx, const void *req, void *resp);

/* ---- worker.c ---- */
/* Opens each worker's blockdev channel (worker 0's is bd). */
int al_workers_init(al_svc *s, cm_bdev *bd);
/* Starts workers 1.. as threads and serves as worker 0 until SIGTERM,
 * then joins them. A worker that cannot start stops them all: 0 or its
 * error. */
int al_workers_run(al_svc *s);
void al_workers_fini(al_svc *s);

#endif
