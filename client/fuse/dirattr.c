/* dirattr.c - directories' attributes as a create in them left them, to
 * answer the GETATTR that follows without asking inode-svc.
 *
 * The kernel drops a directory's attributes after every create in it and
 * asks for them again before the next permission check in it: one more
 * round trip to inode-svc per create. A create's reply brings the
 * directory's attributes just after it (CM_FS_MKNOD_DIRATTR), and this
 * table keeps them for the attribute timeout, the time the kernel itself
 * would have kept them had it not dropped them: a change made elsewhere
 * (another session, another mount) shows no later here than it would
 * through the kernel's own cache.
 *
 * A change made through this mount must show at once. Every handler that
 * may change a directory's attributes brackets its call with
 * xf_dir_begin/xf_dir_end on that directory (or xf_dir_all_begin/_end when
 * it cannot name it: rename, rmdir). An entry is stored only by a call
 * that nothing overlapped: no change of the same slot began before it
 * ended or was still running when it began, and no change of unknown
 * directories began or ended meanwhile; otherwise the reply could hold
 * attributes older than another change's. A slot with a change running
 * answers nothing. A fixed table indexed by inode number; two directories
 * sharing a slot only cost a round trip. dir_mtx covers it. */
#include <time.h>

#include "xfuse.h"

static uint64_t xf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Slots go by inode number; ino may be a node (with its generation). */
static xf_dirslot *xf_dir_slot_locked(xf_fs *x, uint64_t ino)
{
	uint64_t n = (uint32_t)ino;

	return &x->dir[(n * 0x9e3779b97f4a7c15ull >> 40) % XF_DIR_SLOTS];
}

/* Does a describe node (a bare number matches any generation)? */
static bool xf_dir_is(const ext3d_attr *a, uint64_t node)
{
	return node >> 32 ? ext3d_node(a) == node : a->ino == node;
}

xf_dirtok xf_dir_begin(xf_fs *x, uint64_t ino)
{
	xf_dirtok tok;

	pthread_mutex_lock(&x->dir_mtx);
	xf_dirslot *s = xf_dir_slot_locked(x, ino);
	s->valid = false;
	s->running++;
	s->gen++;
	tok = (xf_dirtok){.ino = ino, .gen = s->gen, .epoch = x->dir_epoch,
			  .alone = s->running == 1 && x->dir_all_running == 0};
	pthread_mutex_unlock(&x->dir_mtx);
	return tok;
}

void xf_dir_end(xf_fs *x, const xf_dirtok *tok, const ext3d_attr *after)
{
	pthread_mutex_lock(&x->dir_mtx);
	xf_dirslot *s = xf_dir_slot_locked(x, tok->ino);
	s->running--;
	if (after && xf_dir_is(after, tok->ino) && tok->alone && s->gen == tok->gen && x->dir_epoch == tok->epoch &&
	    x->cfg.attr_timeout > 0) {
		s->attr = *after;
		s->epoch = x->dir_epoch;
		s->expires_ns = xf_now_ns() + (uint64_t)(x->cfg.attr_timeout * 1e9);
		s->valid = true;
	}
	pthread_mutex_unlock(&x->dir_mtx);
}

void xf_dir_all_begin(xf_fs *x)
{
	pthread_mutex_lock(&x->dir_mtx);
	x->dir_all_running++;
	x->dir_epoch++;
	pthread_mutex_unlock(&x->dir_mtx);
}

void xf_dir_all_end(xf_fs *x)
{
	pthread_mutex_lock(&x->dir_mtx);
	x->dir_all_running--;
	x->dir_epoch++;
	pthread_mutex_unlock(&x->dir_mtx);
}

bool xf_dir_cached(xf_fs *x, uint64_t ino, ext3d_attr *a)
{
	bool hit;

	pthread_mutex_lock(&x->dir_mtx);
	xf_dirslot *s = xf_dir_slot_locked(x, ino);
	hit = s->valid && xf_dir_is(&s->attr, ino) && s->running == 0 && s->epoch == x->dir_epoch &&
	      x->dir_all_running == 0 && xf_now_ns() < s->expires_ns;
	if (hit)
		*a = s->attr;
	pthread_mutex_unlock(&x->dir_mtx);
	return hit;
}
