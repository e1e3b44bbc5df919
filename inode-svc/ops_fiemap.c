/* ops_fiemap.c - FIEMAP (filefrag) of a regular file or a directory,
 * from its block map, as the kernel's ext3 (the ext4 driver's
 * iomap_fiemap on a block-mapped file) reports it: from the block that
 * holds the start to the end of the range or of the file, each run of
 * blocks that are physically contiguous and mapped through one leaf
 * (the direct blocks, or one indirect block) is an extent flagged
 * FIEMAP_EXTENT_MERGED, holes are not reported, and the last extent is
 * flagged FIEMAP_EXTENT_LAST unless the room ran out first. Runs under
 * the inode's shared lock, as reads do. */
#include <errno.h>
#include <linux/fiemap.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "ops.h"

/* Where the extents go: up to max in out, n counted in all. */
struct ino_fm {
	cm_fs_extent *out;
	uint32_t max, n;
	uint64_t bs, apb;
	cm_fs_extent cur; /* the run being grown; length 0: none */
};

/* Does a run end before lblk: the direct blocks end, or a leaf
 * indirect block (apb pointers) begins there? */
static bool ino_fm_leaf_starts(const struct ino_fm *f, uint64_t lblk)
{
	return lblk >= EXT3_NDIR_BLOCKS && (lblk - EXT3_NDIR_BLOCKS) % f->apb == 0;
}

static void ino_fm_emit(struct ino_fm *f)
{
	if (f->cur.length == 0)
		return;
	if (f->n < f->max)
		f->out[f->n] = f->cur;
	f->n++;
	f->cur.length = 0;
}

static void ino_fm_block(struct ino_fm *f, uint64_t lblk, uint64_t pblk)
{
	cm_fs_extent *c = &f->cur;

	if (c->length && !ino_fm_leaf_starts(f, lblk) && c->logical + c->length == lblk * f->bs &&
	    c->physical + c->length == pblk * f->bs) {
		c->length += f->bs;
		return;
	}
	ino_fm_emit(f);
	*c = (cm_fs_extent){.logical = lblk * f->bs,
			    .physical = pblk * f->bs,
			    .length = f->bs,
			    .flags = FIEMAP_EXTENT_MERGED};
}

/* The extents of in's blocks from first to before end. */
static int ino_fm_scan(ino_fs *fs, const ino_inode *in, uint64_t first, uint64_t end,
		       struct ino_fm *f)
{
	for (uint64_t lblk = first; lblk < end;) {
		uint64_t pblk = 0, span = 1;
		int r = ino_bmap_span(fs, in, lblk, &pblk, &span);

		if (r == -EFBIG)
			break; /* past what the map can address */
		if (r < 0)
			return r;
		if (pblk)
			ino_fm_block(f, lblk, pblk);
		lblk += span;
	}
	ino_fm_emit(f);
	return 0;
}

int ino_h_fiemap(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		 uint8_t *data)
{
	uint32_t room = rq->length < CM_SEG_DATA ? rq->length : CM_SEG_DATA;
	struct ino_fm f = {.out = (cm_fs_extent *)data, .max = room / sizeof(cm_fs_extent)};
	uint64_t end;
	ino_inode in;
	int r;

	(void)c;
	if (rq->flags & ~(uint32_t)FIEMAP_FLAG_SYNC)
		return -EBADR; /* fiemap_prep: a flag not supported */
	if (rq->range == 0)
		return -EINVAL;
	r = ino_op_read(ss->svc, rq->ino, &in);
	if (r < 0)
		return r;
	if (!S_ISREG(in.mode) && !S_ISDIR(in.mode))
		return -EOPNOTSUPP;
	f.bs = ino_fs_geom(ss->svc->fs)->block_size;
	f.apb = f.bs / 4;
	end = rq->offset + rq->range < rq->offset ? UINT64_MAX : rq->offset + rq->range;
	if (end > in.size)
		end = in.size;
	r = ino_fm_scan(ss->svc->fs, &in, rq->offset / f.bs, (end + f.bs - 1) / f.bs, &f);
	if (r < 0)
		return r;
	if (f.n && f.n <= f.max)
		f.out[f.n - 1].flags |= FIEMAP_EXTENT_LAST;
	rs->count = f.n < f.max || f.max == 0 ? f.n : f.max;
	rs->length = (f.n < f.max ? f.n : f.max) * (uint32_t)sizeof(cm_fs_extent);
	return 0;
}
