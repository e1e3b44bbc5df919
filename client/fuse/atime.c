/* atime.c - access times, as the kernel's ext3 keeps them on a relatime
 * mount (its default). The FUSE module times no read itself (its inodes
 * are S_NOATIME): after each read, readdir and readlink it drops the
 * cached attributes and leaves atime to the file system, so the daemon
 * asks inode-svc to touch it (EXT3D_SET_ATIME_ACCESS, which applies
 * relatime's rule). A read the kernel serves from its page cache never
 * reaches the daemon, so an open whose reads relatime would time does
 * not keep the page cache (xf_atime_due). */
#include <time.h>

#include "xfuse.h"

#define XF_RELATIME_SECS (24 * 60 * 60)

static bool xf_ts_le(int64_t s1, uint32_t ns1, int64_t s2, uint32_t ns2)
{
	return s1 < s2 || (s1 == s2 && ns1 <= ns2);
}

bool xf_atime_due(const ext3d_attr *a)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return xf_ts_le(a->atime, a->atime_ns, a->mtime, a->mtime_ns) ||
	       xf_ts_le(a->atime, a->atime_ns, a->ctime, a->ctime_ns) ||
	       (int64_t)now.tv_sec - a->atime >= XF_RELATIME_SECS;
}

void xf_accessed(xf_fs *x, fuse_ino_t ino)
{
	ext3d_setattr none = {0};

	/* An access time that could not be kept fails no read. */
	(void)ext3d_setattr_ino(x->fs, xf_ino(ino), &none, EXT3D_SET_ATIME_ACCESS, NULL);
}
