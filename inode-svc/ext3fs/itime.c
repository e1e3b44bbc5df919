/*
 * itime.c - inode times in the kernel's encoding (ext4_encode_extra_time,
 * EXT4_INODE_GET_XTIME).  i_[acm]time and i_crtime hold the low 32 bits
 * of the seconds, read as signed; where i_extra_isize covers the *_extra
 * field, its low 2 bits add epochs of 2^32 seconds and the upper 30 hold
 * the nanoseconds, so times run from 1901 to 2446.  Without the field a
 * time is clamped to the signed 32-bit range (1901 to 2038).  A time set
 * from outside is first clamped to the fs's range, as the VFS's
 * timestamp_truncate does with s_time_min and s_time_max (and, as it
 * does, loses its nanoseconds at either end).
 */
#include "internal.h"

#include <stddef.h>

/* The seconds the epoch bits reach: 2^34 from -2^31. */
#define ITIME_EXTRA_MAX ((INT64_C(1) << 34) - 1 + INT32_MIN)

int64_t ino_time_decode(cm_le32_t sec, const cm_le32_t *extra, uint32_t *ret_ns)
{
	int64_t s = (int32_t)cm_le32(sec);
	uint32_t x = extra ? cm_le32(*extra) : 0;
	uint32_t ns = x >> EXT3_EXTRA_NSEC_SHIFT;

	*ret_ns = ns < 1000000000u ? ns : 0;
	return s + ((int64_t)(x & EXT3_EXTRA_EPOCH_MASK) << 32);
}

void ino_time_encode(int64_t sec, uint32_t ns, cm_le32_t *ret_sec, cm_le32_t *ret_extra)
{
	uint32_t epoch;

	if (!ret_extra) {
		sec = sec < INT32_MIN ? INT32_MIN : sec > INT32_MAX ? INT32_MAX : sec;
		cm_set_le32(ret_sec, (uint32_t)sec);
		return;
	}
	epoch = (uint32_t)((sec - (int32_t)sec) >> 32) & EXT3_EXTRA_EPOCH_MASK;
	cm_set_le32(ret_sec, (uint32_t)sec);
	cm_set_le32(ret_extra, epoch | ns << EXT3_EXTRA_NSEC_SHIFT);
}

void ino_time_truncate(const ino_fs *fs, int64_t *sec, uint32_t *ns)
{
	int64_t max = INT32_MAX;

	if (fs->geom.inode_size >= offsetof(struct ext3_inode, i_atime_extra) + sizeof(cm_le32_t))
		max = ITIME_EXTRA_MAX;
	else
		*ns = 0;
	*sec = *sec < INT32_MIN ? INT32_MIN : *sec > max ? max : *sec;
	if (*sec == INT32_MIN || *sec == max || *ns >= 1000000000u)
		*ns = 0;
}
