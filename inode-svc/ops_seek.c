/* ops_seek.c - lseek's SEEK_DATA and SEEK_HOLE, answered from the block
 * map as the kernel's ext3 (the ext4 driver on a block-mapped file,
 * iomap_seek_data / iomap_seek_hole) answers them: data is a mapped
 * block, a hole is a block with no mapping (a missing indirect block makes
 * all it would map one hole, skipped at once), the end of the file is a
 * hole, and an offset at or past the end is ENXIO. Runs under the inode's
 * shared lock, as reads do. */
#include <errno.h>
#include <sys/stat.h>

#include "internal.h"
#include "ops.h"

/* The first offset >= off that is data (want_data) or a hole, below size;
 * -ENXIO for data found nowhere, size for no hole before the end. */
static int64_t ino_seek_scan(ino_fs *fs, const ino_inode *in, uint64_t off, bool want_data)
{
	uint64_t bs = ino_fs_geom(fs)->block_size, lblk = off / bs;

	while (lblk * bs < in->size) {
		uint64_t pblk = 0, span = 1;
		int r = ino_bmap_span(fs, in, lblk, &pblk, &span);

		if (r == -EFBIG)
			break; /* past what the map can address: all hole */
		if (r < 0)
			return r;
		if ((pblk != 0) == want_data)
			return (int64_t)(lblk * bs > off ? lblk * bs : off);
		lblk += span;
	}
	return want_data ? -ENXIO : (int64_t)in->size;
}

int ino_h_lseek(ino_session *ss, const ino_creds *c, const cm_fs_req *rq, cm_fs_resp *rs,
		uint8_t *data)
{
	ino_inode in;
	int64_t r;

	(void)c;
	(void)data;
	if (rq->flags != CM_FS_SEEK_DATA && rq->flags != CM_FS_SEEK_HOLE)
		return -EINVAL;
	r = ino_op_read(ss->svc, rq->ino, &in);
	if (r < 0)
		return (int)r;
	if (!S_ISREG(in.mode))
		return -EINVAL;
	if (rq->offset >= in.size)
		return -ENXIO;
	r = ino_seek_scan(ss->svc->fs, &in, rq->offset, rq->flags == CM_FS_SEEK_DATA);
	if (r < 0)
		return (int)r;
	rs->next = (uint64_t)r;
	return 0;
}
