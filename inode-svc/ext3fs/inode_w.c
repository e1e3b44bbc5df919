/*
 * inode_w.c - an ino_inode encoded into its inode-table slot, a newly
 * allocated inode set up, the times an operation sets.  Fields ino_inode
 * does not hold (i_faddr, osd fields, an in-inode xattr area) are kept, and
 * i_size_high stays i_dir_acl on all but regular files (ext3_update_inode).
 * On the orphan list an inode's i_dtime is the list's link (orphan.c), so
 * that is written instead of the caller's copy.  Large inodes get the
 * nanoseconds and epochs of each time i_extra_isize covers (itime.c).
 */
#include "internal_w.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* ext4's EXTRA_ISIZE ro_compat feature: s_want/min_extra_isize count. */
#define INO_RO_COMPAT_EXTRA_ISIZE	0x0040
/* What the kernel gives new large inodes: sizeof(struct ext4_inode) - 128. */
#define INO_EXTRA_ISIZE_DEFAULT		32

/* The next i_generation, seeded at random once per process (ext3's
 * s_next_generation). */
static _Atomic uint32_t next_generation;
static pthread_once_t generation_once = PTHREAD_ONCE_INIT;

static void generation_seed(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = (uint32_t)time(NULL) ^ (uint32_t)getpid();
	atomic_store(&next_generation, v);
}

int ino_slot_get(ino_fs *fs, ino_txn *t, uint32_t ino, ino_wbuf *b,
		 struct ext3_inode **raw)
{
	uint32_t group, index, bs = fs->geom.block_size;
	uint64_t byte;
	int r;

	if (cm_ext3_inode_locate(&fs->geom, ino, &group, &index) < 0)
		return -EINVAL;
	byte = (uint64_t)index * fs->geom.inode_size;
	r = ino_txn_get_write(t, fs->itable[group] + byte / bs, b);
	if (r < 0)
		return r;
	*raw = (struct ext3_inode *)(b->data + byte % bs);
	return 0;
}

int ino_sb_get(ino_fs *fs, ino_txn *t, ino_wbuf *b, struct ext3_super_block **sb)
{
	uint32_t bs = fs->geom.block_size;
	int r;

	r = ino_txn_get_write(t, EXT3_SUPERBLOCK_OFFSET / bs, b);
	if (r < 0)
		return r;
	*sb = (struct ext3_super_block *)(b->data + EXT3_SUPERBLOCK_OFFSET % bs);
	return 0;
}

/* The large-inode fields in use: i_extra_isize when the slot has room. */
static uint16_t slot_extra(const ino_fs *fs, uint16_t extra)
{
	uint32_t isize = fs->geom.inode_size;

	if (isize <= EXT3_GOOD_OLD_INODE_SIZE ||
	    extra > isize - EXT3_GOOD_OLD_INODE_SIZE || (extra & 3))
		return 0;
	return extra;
}

/* The *_extra field f of raw when extra covers it, else NULL. */
#define EXTRA_OR_NULL(raw, extra, f) \
	(EXT3_INODE_FITS(extra, f) ? &(raw)->f : NULL)

static void encode(const ino_fs *fs, const ino_inode *in, struct ext3_inode *raw)
{
	uint16_t extra = slot_extra(fs, in->extra_isize);
	unsigned i;

	cm_set_le16(&raw->i_mode, in->mode);
	cm_set_le16(&raw->i_uid, in->uid & 0xffff);
	cm_set_le16(&raw->i_uid_high, in->uid >> 16);
	cm_set_le16(&raw->i_gid, in->gid & 0xffff);
	cm_set_le16(&raw->i_gid_high, in->gid >> 16);
	cm_set_le32(&raw->i_size, (uint32_t)in->size);
	if (ino_is_type(in, EXT3_S_IFREG))
		cm_set_le32(&raw->i_size_high, (uint32_t)(in->size >> 32));
	cm_set_le32(&raw->i_dtime, in->dtime);
	cm_set_le16(&raw->i_links_count, in->links);
	cm_set_le32(&raw->i_blocks, (uint32_t)in->blocks512);
	cm_set_le32(&raw->i_flags, in->flags);
	for (i = 0; i < EXT3_N_BLOCKS; i++)
		cm_set_le32(&raw->i_block[i], in->block[i]);
	cm_set_le32(&raw->i_generation, in->generation);
	cm_set_le32(&raw->i_file_acl, in->file_acl);
	if (fs->geom.inode_size > EXT3_GOOD_OLD_INODE_SIZE)
		cm_set_le16(&raw->i_extra_isize, extra);
	ino_time_encode(in->atime, in->atime_ns, &raw->i_atime,
			EXTRA_OR_NULL(raw, extra, i_atime_extra));
	ino_time_encode(in->ctime, in->ctime_ns, &raw->i_ctime,
			EXTRA_OR_NULL(raw, extra, i_ctime_extra));
	ino_time_encode(in->mtime, in->mtime_ns, &raw->i_mtime,
			EXTRA_OR_NULL(raw, extra, i_mtime_extra));
}

/*
 * The first file over 2 GiB marks the fs large_file (and a revision 0 fs
 * dynamic), as ext3_update_inode does.  The superblock is read first and
 * changed only when the feature is missing.
 */
static int note_large_file(ino_fs *fs, ino_txn *t)
{
	struct ext3_super_block *sb;
	ino_buf rb = { 0 };
	ino_wbuf b = { 0 };
	bool have;
	int r;

	if (cm_le32(fs->sb.s_feature_ro_compat) & EXT3_FEATURE_RO_COMPAT_LARGE_FILE)
		return 0;
	r = ino_blk_get(fs, EXT3_SUPERBLOCK_OFFSET / fs->geom.block_size, &rb);
	if (r < 0)
		return r;
	sb = (struct ext3_super_block *)(rb.data +
					 EXT3_SUPERBLOCK_OFFSET % fs->geom.block_size);
	have = cm_le32(sb->s_feature_ro_compat) & EXT3_FEATURE_RO_COMPAT_LARGE_FILE;
	ino_blk_put(fs, &rb);
	if (have)
		return 0;
	r = ino_sb_get(fs, t, &b, &sb);
	if (r < 0)
		return r;
	if (cm_le32(sb->s_rev_level) == EXT3_GOOD_OLD_REV) {
		cm_set_le32(&sb->s_first_ino, EXT3_GOOD_OLD_FIRST_INO);
		cm_set_le16(&sb->s_inode_size, EXT3_GOOD_OLD_INODE_SIZE);
		cm_set_le32(&sb->s_rev_level, EXT3_DYNAMIC_REV);
	}
	cm_set_le32(&sb->s_feature_ro_compat, cm_le32(sb->s_feature_ro_compat) |
						      EXT3_FEATURE_RO_COMPAT_LARGE_FILE);
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	return r;
}

/* One recorded error's fields in the superblock: the first's or the
 * last's (laid out in different orders). */
struct sb_err {
	cm_le32_t *time, *ino, *line;
	cm_le64_t *block;
	char *func;		/* 32 bytes, NUL-padded, not terminated when full */
	uint8_t *code;
};

static void sb_err_set(const struct sb_err *e, const char *func, uint32_t ino, uint32_t now)
{
	cm_set_le32(e->time, now);
	cm_set_le32(e->ino, ino);
	cm_set_le32(e->line, 0);
	cm_set_le64(e->block, 0);
	memset(e->func, 0, 32);
	memcpy(e->func, func, strnlen(func, 32));
	*e->code = EXT3_ERR_EFSCORRUPTED;
}

static void sb_error_fill(struct ext3_super_block *sb, const char *func, uint32_t ino,
			  uint32_t now)
{
	struct sb_err first = {&sb->s_first_error_time, &sb->s_first_error_ino,
			       &sb->s_first_error_line, &sb->s_first_error_block,
			       sb->s_first_error_func, &sb->s_first_error_errcode};
	struct sb_err last = {&sb->s_last_error_time, &sb->s_last_error_ino,
			      &sb->s_last_error_line, &sb->s_last_error_block,
			      sb->s_last_error_func, &sb->s_last_error_errcode};

	cm_set_le16(&sb->s_state, cm_le16(sb->s_state) | EXT3_ERROR_FS);
	if (!sb->s_first_error_time)
		sb_err_set(&first, func, ino, now);
	sb_err_set(&last, func, ino, now);
	cm_set_le32(&sb->s_error_count, cm_le32(sb->s_error_count) + 1);
}

int ino_sb_error(ino_fs *fs, ino_txn *t, const char *func, uint32_t ino)
{
	struct ext3_super_block *sb;
	ino_wbuf b = {0};
	int r;

	r = ino_sb_get(fs, t, &b, &sb);
	if (r < 0)
		return r;
	sb_error_fill(sb, func, ino, (uint32_t)ino_txn_now(t).tv_sec);
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	return r;
}

int ino_inode_write(ino_fs *fs, ino_txn *t, const ino_inode *in)
{
	struct ext3_inode *raw;
	struct ino_orphan *o;
	ino_wbuf b = { 0 };
	int r;

	r = ino_slot_get(fs, t, in->ino, &b, &raw);
	if (r < 0)
		return r;
	if (atomic_load_explicit(&fs->orphans_any, memory_order_acquire)) {
		pthread_mutex_lock(&fs->orphan_mtx);
		encode(fs, in, raw);
		o = ino_orphan_find(fs, in->ino);
		if (o)
			cm_set_le32(&raw->i_dtime, o->next);
		pthread_mutex_unlock(&fs->orphan_mtx);
	} else {
		encode(fs, in, raw);
	}
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	if (r == 0 && ino_is_type(in, EXT3_S_IFREG) && in->size > 0x7fffffffu)
		r = note_large_file(fs, t);
	return r;
}

/* i_extra_isize for a new inode, as the kernel picks it at mount. */
static uint16_t new_extra_isize(const ino_fs *fs)
{
	uint32_t room = fs->geom.inode_size - EXT3_GOOD_OLD_INODE_SIZE;
	uint32_t want = INO_EXTRA_ISIZE_DEFAULT;

	if (fs->geom.inode_size <= EXT3_GOOD_OLD_INODE_SIZE)
		return 0;
	if (cm_le32(fs->sb.s_feature_ro_compat) & INO_RO_COMPAT_EXTRA_ISIZE) {
		if (want < cm_le16(fs->sb.s_want_extra_isize))
			want = cm_le16(fs->sb.s_want_extra_isize);
		if (want < cm_le16(fs->sb.s_min_extra_isize))
			want = cm_le16(fs->sb.s_min_extra_isize);
	}
	if (want > room)
		want = room < INO_EXTRA_ISIZE_DEFAULT ? room : INO_EXTRA_ISIZE_DEFAULT;
	return want & ~3u;
}

int ino_inode_new(ino_fs *fs, ino_txn *t, uint32_t ino, uint16_t mode, uint32_t uid,
		  uint32_t gid, ino_inode *ret)
{
	struct timespec now = ino_txn_now(t);
	uint16_t extra = new_extra_isize(fs);
	struct ext3_inode *raw;
	ino_wbuf b = { 0 };
	int r;

	if (ino < fs->first_ino || ino > fs->geom.inodes_count)
		return -EINVAL;
	r = ino_slot_get(fs, t, ino, &b, &raw);
	if (r < 0)
		return r;
	memset(raw, 0, fs->geom.inode_size);
	if (extra) {
		cm_set_le16(&raw->i_extra_isize, extra);
		if (EXT3_INODE_FITS(extra, i_crtime_extra))
			ino_time_encode(now.tv_sec, (uint32_t)now.tv_nsec, &raw->i_crtime,
					&raw->i_crtime_extra);
	}
	r = ino_txn_dirty(t, &b);
	ino_txn_put(t, &b);
	if (r < 0)
		return r;
	pthread_once(&generation_once, generation_seed);
	memset(ret, 0, sizeof(*ret));
	ret->ino = ino;
	ret->mode = mode;
	ret->uid = uid;
	ret->gid = gid;
	ret->extra_isize = extra;
	ret->generation = atomic_fetch_add(&next_generation, 1);
	ret->atime = ret->ctime = ret->mtime = now.tv_sec;
	if (EXT3_INODE_FITS(extra, i_ctime_extra))
		ret->ctime_ns = now.tv_nsec;
	if (EXT3_INODE_FITS(extra, i_mtime_extra))
		ret->mtime_ns = now.tv_nsec;
	if (EXT3_INODE_FITS(extra, i_atime_extra))
		ret->atime_ns = now.tv_nsec;
	return 0;
}

void ino_inode_touch(ino_txn *t, ino_inode *in, bool mtime)
{
	struct timespec now = ino_txn_now(t);

	in->ctime = now.tv_sec;
	in->ctime_ns = EXT3_INODE_FITS(in->extra_isize, i_ctime_extra) ? now.tv_nsec : 0;
	if (!mtime)
		return;
	in->mtime = in->ctime;
	in->mtime_ns = EXT3_INODE_FITS(in->extra_isize, i_mtime_extra) ? now.tv_nsec : 0;
}
