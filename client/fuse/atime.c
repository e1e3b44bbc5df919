/* atime.c - access times, as the kernel's ext3 keeps them on a relatime
 * mount (its default). The FUSE module times no read itself (its inodes
 * are S_NOATIME): after each read, readdir and readlink it drops the
 * cached attributes and leaves atime to the file system, so the daemon
 * asks inode-svc to touch it (EXT3D_SET_ATIME_ACCESS, which applies
 * relatime's rule). A read the kernel serves from its page cache never
 * reaches the daemon, so an open whose reads relatime would time does
 * not keep the page cache (xf_atime_due). */
#include "relatime.h"
#include "xfuse.h"

bool xf_atime_due(const ext3d_attr *a)
{
	return cm_relatime_due(a->atime, a->atime_ns, a->mtime, a->mtime_ns, a->ctime, a->ctime_ns);
}

void xf_accessed(xf_fs *x, fuse_ino_t ino)
{
	ext3d_setattr none = {0};
	xf_dirtok tok = xf_dir_begin(x, xf_ino(ino));

	/* An access time that could not be kept fails no read. */
	(void)ext3d_setattr_ino(x->fs, xf_ino(ino), &none, EXT3D_SET_ATIME_ACCESS, NULL);
	xf_dir_end(x, &tok, NULL);
}
