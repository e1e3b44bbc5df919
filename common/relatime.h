/* relatime.h - the rule of a relatime mount (the kernel's default, and
 * ext3's): a read moves atime only when it is not later than mtime or
 * ctime, or is a day old (relatime_need_update). One copy, for inode-svc,
 * which applies it, and ext3d-fuse, which decides from it whether a
 * file's page cache may be kept (a cached read would not be timed). */
#ifndef CM_RELATIME_H
#define CM_RELATIME_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define CM_RELATIME_SECS (24 * 60 * 60)

static inline bool cm_ts_le(int64_t s1, uint32_t ns1, int64_t s2, uint32_t ns2)
{
	return s1 < s2 || (s1 == s2 && ns1 <= ns2);
}

static inline bool cm_relatime_due(int64_t atime, uint32_t atime_ns, int64_t mtime,
				   uint32_t mtime_ns, int64_t ctime, uint32_t ctime_ns)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return cm_ts_le(atime, atime_ns, mtime, mtime_ns) ||
	       cm_ts_le(atime, atime_ns, ctime, ctime_ns) ||
	       (int64_t)now.tv_sec - atime >= CM_RELATIME_SECS;
}

#endif
