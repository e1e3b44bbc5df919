/* test-dirattr.c - ext3d-fuse's kept directory attributes (client/fuse/
 * dirattr.c) under every interleaving that matters: a lone create's reply
 * answers; overlapping changes of the same directory keep nothing, in
 * either order of their ends; a change of another directory, or one of
 * unnamed directories (rename, rmdir) that begins or ends meanwhile, keeps
 * nothing and drops what was kept; a kept entry answers only its own
 * directory (with its generation), never while a change of it runs, and
 * not at all with attr_timeout 0 or once the timeout has passed. */
#include <stdlib.h>
#include <time.h>

#include "tap.h"
#include "xfuse.h"

static ext3d_attr t_dir(uint64_t ino, int64_t mtime)
{
	return (ext3d_attr){.ino = ino, .generation = 7, .mode = 040755, .mtime = mtime};
}

static int64_t t_cached_mtime(xf_fs *x, uint64_t node)
{
	ext3d_attr a;

	return xf_dir_cached(x, node, &a) ? a.mtime : -1;
}

static xf_fs *t_fs(double timeout)
{
	xf_fs *x = calloc(1, sizeof(*x));

	x->cfg.attr_timeout = timeout;
	pthread_mutex_init(&x->dir_mtx, NULL);
	return x;
}

int main(void)
{
	xf_fs *x = t_fs(60);
	ext3d_attr d1 = t_dir(12, 100), d2 = t_dir(12, 200), e = t_dir(13, 300);
	uint64_t node12 = 12 | (uint64_t)7 << 32;
	xf_dirtok a, b;

	a = xf_dir_begin(x, 12);
	t_is_int(t_cached_mtime(x, 12), -1, "nothing kept before a create ends");
	xf_dir_end(x, &a, &d1);
	t_is_int(t_cached_mtime(x, 12), 100, "a lone create's reply answers");
	t_is_int(t_cached_mtime(x, node12), 100, "and answers the node with its generation");
	t_is_int(t_cached_mtime(x, 12 | (uint64_t)8 << 32), -1, "but not another generation");
	t_is_int(t_cached_mtime(x, 13), -1, "nor another directory");

	a = xf_dir_begin(x, 12);
	t_is_int(t_cached_mtime(x, 12), -1, "a change under way answers nothing");
	xf_dir_end(x, &a, NULL);
	t_is_int(t_cached_mtime(x, 12), -1, "a change without attributes drops what was kept");

	a = xf_dir_begin(x, 12);
	b = xf_dir_begin(x, 12);
	xf_dir_end(x, &b, &d2);
	xf_dir_end(x, &a, &d1);
	t_is_int(t_cached_mtime(x, 12), -1, "two overlapping creates, the later begun ending first: none kept");
	a = xf_dir_begin(x, 12);
	b = xf_dir_begin(x, 12);
	xf_dir_end(x, &a, &d1);
	xf_dir_end(x, &b, &d2);
	t_is_int(t_cached_mtime(x, 12), -1, "the earlier begun ending first: none kept either");

	a = xf_dir_begin(x, 12);
	b = xf_dir_begin(x, 13);
	xf_dir_end(x, &b, &e);
	xf_dir_end(x, &a, &d1);
	t_is_int(t_cached_mtime(x, 12), 100, "creates in two directories overlap: each keeps its own");
	t_is_int(t_cached_mtime(x, 13), 300, "(the other's)");

	xf_dir_all_begin(x);
	t_is_int(t_cached_mtime(x, 12), -1, "a rename under way: nothing answers");
	a = xf_dir_begin(x, 12);
	xf_dir_end(x, &a, &d1);
	xf_dir_all_end(x);
	t_is_int(t_cached_mtime(x, 12), -1, "a create begun during a rename keeps nothing");
	a = xf_dir_begin(x, 12);
	xf_dir_all_begin(x);
	xf_dir_all_end(x);
	xf_dir_end(x, &a, &d1);
	t_is_int(t_cached_mtime(x, 12), -1, "nor one a whole rename ran inside");
	a = xf_dir_begin(x, 12);
	xf_dir_end(x, &a, &d1);
	xf_dir_all_begin(x);
	xf_dir_all_end(x);
	t_is_int(t_cached_mtime(x, 12), -1, "a rename drops what was kept before it");

	a = xf_dir_begin(x, 12);
	xf_dir_end(x, &a, &e);
	t_is_int(t_cached_mtime(x, 13), -1, "attributes of another directory than the one changed are not kept");
	free(x);

	x = t_fs(0);
	a = xf_dir_begin(x, 12);
	xf_dir_end(x, &a, &d1);
	t_is_int(t_cached_mtime(x, 12), -1, "attr_timeout 0 keeps nothing");
	free(x);

	x = t_fs(1);
	a = xf_dir_begin(x, 12);
	xf_dir_end(x, &a, &d1);
	t_is_int(t_cached_mtime(x, 12), 100, "attr_timeout 1 s: kept");
	nanosleep(&(struct timespec){.tv_sec = 1, .tv_nsec = 200000000}, NULL);
	t_is_int(t_cached_mtime(x, 12), -1, "and gone 1.2 s later");
	free(x);
	return t_done();
}
