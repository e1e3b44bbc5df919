/* allocproto.h - what inode-svc asks alloc-svc over a channel (chan.h),
 * version CM_AL_VERSION, and the allocator state the other services read
 * in the arena.
 *
 * Every request names the caller's open journal handle (jbd_handle_token):
 * alloc-svc joins it (jbd_join), changes the bitmaps and group descriptors
 * inside it with the caller's credits, and stops its join before it
 * answers. So an allocation or a free is part of the caller's one
 * transaction, and never commits apart from the operation that made it.
 *
 * Credits the caller reserves for alloc-svc: two per block group a request
 * touches (the bitmap and the descriptor block); a run of blocks never
 * crosses a group, so ALLOC_BLOCKS needs 2, FREE_BLOCKS 2 per group its
 * range covers, ALLOC_INODE and FREE_INODE 2.
 */
#ifndef CM_ALLOCPROTO_H
#define CM_ALLOCPROTO_H

#include <stdint.h>

#include "arena.h"
#include "chan.h"
#include "fcounter.h"

#define CM_AL_VERSION 1

enum cm_al_op {
	/* goal: the block to place near (0: none); count: blocks wanted, at
	 * least 1. -> result: the first block of a run of count blocks (1 <=
	 * count <= asked) inside one group, as near the goal as ext3 places
	 * it; -ENOSPC when no block is free (the reserved blocks count as free
	 * only for CM_AL_RESERVED callers). */
	CM_AL_ALLOC_BLOCKS = 1,
	/* goal: the first block, count: how many. Freed blocks stay unusable
	 * until the freeing transaction commits (committed-data bitmaps).
	 * -EUCLEAN (logged) for blocks outside the data area or already free;
	 * in a group whose bitmap failed its check (internal.h) a block it
	 * says is free is taken as freed, its bit left clear. */
	CM_AL_FREE_BLOCKS = 2,
	/* goal: the parent directory's inode; mode: the new inode's type and
	 * bits (directories are spread across groups, Orlov's way: those
	 * under the root or under a CM_AL_TOPDIR parent as top-level ones;
	 * other inodes go to the parent's group) -> result: the inode number.
	 * -ENOSPC when none is free. The caller initialises the inode. */
	CM_AL_ALLOC_INODE = 3,
	/* goal: the inode, mode: its type (a directory lowers the group's
	 * directory count). -EUCLEAN for an inode already free. */
	CM_AL_FREE_INODE = 4,
};

/* flags */
#define CM_AL_RESERVED 0x1u /* may use the root-reserved blocks (uid 0 or resgid) */
#define CM_AL_TOPDIR 0x2u   /* ALLOC_INODE: the parent has EXT3_TOPDIR_FL */

typedef struct cm_al_rec {
	cm_rec_hdr hdr;        /* hdr.status: 0 or -errno */
	cm_off handle;         /* jbd_handle_token() of the caller's open handle */
	uint64_t goal;
	uint64_t result;
	uint32_t count;
	uint32_t mode;
	uint32_t flags;
	uint32_t reserved;
	uint8_t pad[CM_CHAN_REC_SIZE - 56];
} cm_al_rec;
_Static_assert(sizeof(cm_al_rec) == CM_CHAN_REC_SIZE, "alloc record fills a channel slot");

/* In the arena at layout->alloc, made by alloc-svc when it starts from the
 * group descriptors' counts (and kept across alloc-svc restarts: a new
 * instance finds it and uses it). Readers: inode-svc's statfs
 * (cm_fc_read_positive), journald-svc writing the superblock's counts at
 * commit and at unmount (cm_fc_sum). */
typedef struct cm_alloc_shared {
	uint32_t magic;              /* [immutable] CM_AL_MAGIC */
	uint32_t groups;             /* [immutable] */
	cm_fcounter free_blocks;     /* s_free_blocks_count */
	cm_fcounter free_inodes;     /* s_free_inodes_count */
	cm_fcounter dirs;            /* directories in use */
} cm_alloc_shared;
#define CM_AL_MAGIC 0x616c6c63u

#endif
