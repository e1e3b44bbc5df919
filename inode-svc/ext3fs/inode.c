/*
 * inode.c - reading and decoding inodes, and device numbers.
 *
 * An inode is found through fs->itable (checked at mount to lie inside its
 * group), so its bytes are always inside the fs and inside one block: the
 * inode size is a power of two no larger than the block size.  Large
 * inodes add i_extra_isize and the nanoseconds and epochs of the three
 * times (itime.c), each used only when i_extra_isize covers it; an i_extra_isize that does not
 * fit the inode or is not a multiple of 4 counts as 0.
 * An in-use inode is served only if its i_size fits the largest file the
 * block size allows (fs->max_size): a corrupt size would otherwise read as
 * terabytes of holes.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

#include "log.h"

/* The *_extra field f of raw when i_extra_isize (extra) covers it. */
#define EXTRA_OR_NULL(raw, extra, f) \
	(EXT3_INODE_FITS(extra, f) ? &(raw)->f : NULL)

void ino_inode_decode(const struct ext3_inode *raw, uint32_t ino,
		      ino_inode *ret)
{
	unsigned i;

	memset(ret, 0, sizeof(*ret));
	ret->ino = ino;
	ret->mode = cm_le16(raw->i_mode);
	ret->uid = cm_le16(raw->i_uid) | (uint32_t)cm_le16(raw->i_uid_high) << 16;
	ret->gid = cm_le16(raw->i_gid) | (uint32_t)cm_le16(raw->i_gid_high) << 16;
	ret->size = cm_le32(raw->i_size);
	/* i_size_high is i_dir_acl on ext3 directories (ext3_iget) */
	if ((ret->mode & EXT3_S_IFMT) == EXT3_S_IFREG)
		ret->size |= (uint64_t)cm_le32(raw->i_size_high) << 32;
	ret->dtime = cm_le32(raw->i_dtime);
	ret->links = cm_le16(raw->i_links_count);
	ret->blocks512 = cm_le32(raw->i_blocks);
	ret->flags = cm_le32(raw->i_flags);
	for (i = 0; i < EXT3_N_BLOCKS; i++)
		ret->block[i] = cm_le32(raw->i_block[i]);
	ret->generation = cm_le32(raw->i_generation);
	ret->file_acl = cm_le32(raw->i_file_acl);
	ret->extra_isize = cm_le16(raw->i_extra_isize);
	ret->atime = ino_time_decode(raw->i_atime,
				     EXTRA_OR_NULL(raw, ret->extra_isize, i_atime_extra),
				     &ret->atime_ns);
	ret->ctime = ino_time_decode(raw->i_ctime,
				     EXTRA_OR_NULL(raw, ret->extra_isize, i_ctime_extra),
				     &ret->ctime_ns);
	ret->mtime = ino_time_decode(raw->i_mtime,
				     EXTRA_OR_NULL(raw, ret->extra_isize, i_mtime_extra),
				     &ret->mtime_ns);
}

uint64_t ino_inode_blocknr(const ino_fs *fs, uint32_t ino)
{
	uint32_t group, index;

	if (cm_ext3_inode_locate(&fs->geom, ino, &group, &index) < 0)
		return 0;
	return fs->itable[group] +
	       (uint64_t)index * fs->geom.inode_size / fs->geom.block_size;
}

int ino_inode_read_any(ino_fs *fs, uint32_t ino, ino_inode *ret)
{
	struct ext3_inode raw;
	uint32_t group, index, off, isize = fs->geom.inode_size, extra;
	uint64_t byte;
	ino_buf b = { 0 };
	int r;

	if (cm_ext3_inode_locate(&fs->geom, ino, &group, &index) < 0)
		return -EINVAL;
	byte = (uint64_t)index * fs->geom.inode_size;
	off = byte % fs->geom.block_size;
	r = ino_blk_get(fs, fs->itable[group] + byte / fs->geom.block_size,
			&b);
	if (r < 0)
		return r;
	memset(&raw, 0, sizeof(raw));
	memcpy(&raw, b.data + off, isize < sizeof(raw) ? isize : sizeof(raw));
	ino_blk_put(fs, &b);
	extra = cm_le16(raw.i_extra_isize);
	if (isize <= EXT3_GOOD_OLD_INODE_SIZE ||
	    extra > isize - EXT3_GOOD_OLD_INODE_SIZE || (extra & 3))
		cm_set_le16(&raw.i_extra_isize, 0);
	ino_inode_decode(&raw, ino, ret);
	return 0;
}

static bool mode_valid(uint16_t mode)
{
	switch (mode & EXT3_S_IFMT) {
	case EXT3_S_IFSOCK:
	case EXT3_S_IFLNK:
	case EXT3_S_IFREG:
	case EXT3_S_IFBLK:
	case EXT3_S_IFDIR:
	case EXT3_S_IFCHR:
	case EXT3_S_IFIFO:
		return true;
	default:
		return false;
	}
}

/* The types whose i_size counts bytes of a block map or a target. */
static bool has_size(const ino_inode *in)
{
	return ino_is_type(in, EXT3_S_IFREG) || ino_is_type(in, EXT3_S_IFDIR) ||
	       ino_is_type(in, EXT3_S_IFLNK);
}

int ino_inode_read(ino_fs *fs, uint32_t ino, ino_inode *ret)
{
	ino_inode in;
	int r;

	r = ino_inode_read_any(fs, ino, &in);
	if (r < 0)
		return r;
	if (in.links == 0)
		return -ESTALE;
	if (!mode_valid(in.mode)) {
		cm_warn("corrupt inode ino=%u blk=%llu: bad mode 0%o", ino,
			(unsigned long long)ino_inode_blocknr(fs, ino),
			in.mode);
		return -EUCLEAN;
	}
	if (has_size(&in) && in.size > fs->max_size) {
		cm_warn("corrupt inode ino=%u blk=%llu: size %llu beyond the largest file (%llu bytes)",
			ino, (unsigned long long)ino_inode_blocknr(fs, ino),
			(unsigned long long)in.size,
			(unsigned long long)fs->max_size);
		return -EUCLEAN;
	}
	*ret = in;
	return 0;
}

uint32_t ino_rdev(const ino_inode *in)
{
	uint32_t major, minor, dev;

	if (!ino_is_type(in, EXT3_S_IFCHR) && !ino_is_type(in, EXT3_S_IFBLK))
		return 0;
	if (in->block[0]) {
		/* old 8:8 encoding */
		major = (in->block[0] >> 8) & 0xff;
		minor = in->block[0] & 0xff;
	} else {
		/* new encoding: mmmM MMmm, 12-bit major, 20-bit minor */
		dev = in->block[1];
		major = (dev & 0xfff00) >> 8;
		minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
	}
	return (minor & 0xff) | (major & 0xfff) << 8 |
	       (minor & ~0xffu) << 12;
}
