/* cache.c - when an open keeps the kernel's page cache of a file: when the
 * file's mtime and size are what the last open (or the last release after
 * our writes) saw, nobody else changed it in between, so the pages cached
 * then are still right. A fixed table indexed by inode number; an entry
 * lost to another inode only costs one cold read. keep_mtx covers it. */
#include "xfuse.h"

static xf_keep *xf_keep_slot_locked(xf_fs *x, uint64_t ino)
{
	return &x->keep[(ino * 0x9e3779b97f4a7c15ull >> 40) % XF_KEEP_SLOTS];
}

bool xf_keep_cache(xf_fs *x, const ext3d_attr *a)
{
	xf_keep now = {.ino = a->ino, .mtime = a->mtime, .mtime_ns = a->mtime_ns,
		       .size = a->size};
	bool same;

	pthread_mutex_lock(&x->keep_mtx);
	xf_keep *k = xf_keep_slot_locked(x, a->ino);
	same = k->ino == now.ino && k->mtime == now.mtime && k->mtime_ns == now.mtime_ns &&
	       k->size == now.size;
	*k = now;
	pthread_mutex_unlock(&x->keep_mtx);
	return same;
}

void xf_keep_note(xf_fs *x, const ext3d_attr *a)
{
	pthread_mutex_lock(&x->keep_mtx);
	*xf_keep_slot_locked(x, a->ino) = (xf_keep){.ino = a->ino, .mtime = a->mtime,
						    .mtime_ns = a->mtime_ns, .size = a->size};
	pthread_mutex_unlock(&x->keep_mtx);
}
