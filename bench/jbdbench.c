/* jbdbench - handles and commits per second on a running instance's
 * journal, from P processes at once.
 *
 *   jbdbench --instance NAME --first=BLOCK --count=N [--procs=P]
 *            [--seconds=S] [--commit] [--blocks=1|2] [--update]
 *
 * Attaches to the instance's arena as arena-probe --usage does (the
 * supervisor's memfd through /proc, so it runs as root or as the
 * instance's owner), forks P processes, and gives each a private slice of
 * the N free blocks from BLOCK. Each process reads its blocks once, then
 * loops for S seconds: jbd_start(2 credits), get_write_access and
 * dirty_metadata on 1 or 2 of its blocks (a counter written into each),
 * jbd_stop; with --commit it also forces and waits for the commit of each
 * handle's transaction. Prints "handles H seconds T rate R" with the
 * total over all processes. With --update, each handle changes the whole
 * of each block as a metadata update does (it reads every word, as a
 * directory search or a bitmap scan would, and rewrites it): work that
 * the big lock serialises and the fine set lets run side by side.
 * The blocks must be free in the filesystem:
 * they are logged and later written home with whatever the bench put in.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bcache.h"
#include "bdclient.h"
#include "futex.h"
#include "journal.h"
#include "layout.h"
#include "rundir.h"

#define JB_MAX_PROCS 16
#define JB_MAX_BLOCKS 4096 /* per process */

typedef struct jb_config {
	const char *instance;
	uint64_t first;
	uint32_t count, procs, blocks, seconds;
	bool commit;
	bool update;   /* rewrite the whole block in each handle */
} jb_config;

/* Results, in a shared anonymous mapping: each child fills its own. */
typedef struct jb_result {
	uint64_t handles;
	uint64_t ns;
	int32_t err;
} jb_result;

/* The live arena of the instance's supervisor, opened read-write. */
static int jb_open_arena(const char *instance, cm_arena **ret)
{
	char rundir[CM_PATH_MAX], dir[64], link[128], why[160];
	struct dirent *e;
	int pid, r, fd = -1;
	DIR *d;

	r = cm_rundir(instance, rundir, sizeof(rundir));
	if (r == 0)
		r = cm_rundir_supervisor(rundir, &pid);
	if (r < 0)
		return fprintf(stderr, "jbdbench: instance %s: %s\n", instance, strerror(-r)), r;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	d = opendir(dir);
	if (!d)
		return -errno;
	while (fd < 0 && (e = readdir(d))) {
		ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		if (strncmp(link, "/memfd:ext3d-arena", 18) != 0)
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDWR | O_CLOEXEC);
		if (fd >= 0 && cm_arena_attach(fd, ret, why, sizeof(why)) < 0) {
			close(fd);
			fd = -1;
		}
	}
	closedir(d);
	if (fd < 0)
		return fprintf(stderr, "jbdbench: no live arena in the supervisor (pid %d)\n", pid),
		       -ENOENT;
	return 0;
}

/* The cache's block size, read once by each child after it attaches. */
static uint32_t jb_block_size;

/* A metadata update's work on one block: every word read and rewritten. */
static void jb_update(uint64_t *w, uint64_t i)
{
	uint64_t sum = i;

	for (uint32_t k = 0; k < jb_block_size / sizeof(*w); k++) {
		sum = sum * 31 + w[k];
		w[k] = sum;
	}
}

/* One handle on one or two of the process's blocks. */
static int jb_one(jbd_ctx *jc, cm_bcache *c, cm_bh **bhs, uint32_t nbh, uint64_t i,
		  const jb_config *cfg)
{
	jbd_handle *h;
	uint32_t tid;
	int r;

	r = jbd_start(jc, 2, &h);
	if (r < 0)
		return r;
	for (uint32_t k = 0; k < cfg->blocks && r == 0; k++) {
		cm_bh *bh = bhs[(i * cfg->blocks + k) % nbh];
		r = jbd_get_write_access(jc, h, bh);
		if (r == 0) {
			if (cfg->update)
				jb_update(cm_bh_data(c, bh), i);
			else
				memcpy(cm_bh_data(c, bh), &i, sizeof(i));
			r = jbd_dirty_metadata(jc, h, bh);
		}
	}
	tid = jbd_handle_tid(h);
	if (r < 0) {
		(void)jbd_stop(jc, h);
		return r;
	}
	r = jbd_stop(jc, h);
	if (r == 0 && cfg->commit) {
		r = jbd_force_commit(jc, &tid);
		if (r == 0)
			r = jbd_wait_commit(jc, tid);
	}
	return r;
}

/* A child: attach, read its slice, say so on ready_fd ('r', or 'e' when it
 * cannot), wait for the start on go_fd, run, give back what it holds. */
static int jb_child(const jb_config *cfg, uint32_t idx, int ready_fd, int go_fd,
		    jb_result *res)
{
	uint32_t nbh = cfg->count / cfg->procs;
	cm_bh *bhs[JB_MAX_BLOCKS];
	cm_bcache *c = NULL;
	jbd_ctx *jc = NULL;
	cm_bdev *bd = NULL;
	uint64_t t0, end, i = 0;
	uint32_t nread = 0;
	cm_arena *a;
	cm_layout *l;
	char go;
	int r;

	if (nbh > JB_MAX_BLOCKS)
		nbh = JB_MAX_BLOCKS;
	r = jb_open_arena(cfg->instance, &a);
	if (r < 0)
		return (void)!write(ready_fd, "e", 1), r;
	l = cm_layout_get(a);
	r = l ? cm_bcache_attach(a, atomic_load(&l->bcache), &c) : -EPROTO;
	if (r == 0 && (r = jbd_attach(a, c, CM_MAX_SVCS - 1, &jc)) == -ENOENT)
		fprintf(stderr, "jbdbench: no run-time journal in the arena: journald-svc made none\n");
	if (r == 0) {
		jb_block_size = jc->j->block_size;
		r = cm_bdev_open(a, &bd);
	}
	while (r == 0 && nread < nbh) {
		r = cm_bcache_read(c, bd, cfg->first + (uint64_t)idx * nbh + nread, &bhs[nread]);
		if (r == 0)
			nread++;
	}
	if (r < 0)
		fprintf(stderr, "jbdbench[%u]: attach: %s\n", idx, strerror(-r));
	if (write(ready_fd, r < 0 ? "e" : "r", 1) != 1 || (r == 0 && read(go_fd, &go, 1) != 1))
		r = r < 0 ? r : -EPIPE;
	t0 = cm_now_ns();
	end = t0 + (uint64_t)cfg->seconds * 1000000000ull;
	while (r == 0 && (i & 63 || cm_now_ns() < end))
		if ((r = jb_one(jc, c, bhs, nbh, i, cfg)) == 0)
			i++;
	res->handles = i;
	res->ns = cm_now_ns() - t0;
	res->err = r;
	for (uint32_t k = 0; k < nread; k++)
		cm_bcache_put(c, bhs[k]);
	cm_bdev_close(bd);
	jbd_detach(jc);
	cm_bcache_detach(c);
	cm_arena_free(a);
	return r;
}

static const struct option jb_options[] = {
	{"instance", required_argument, NULL, 'i'}, {"first", required_argument, NULL, 'f'},
	{"count", required_argument, NULL, 'n'},    {"procs", required_argument, NULL, 'p'},
	{"seconds", required_argument, NULL, 's'},  {"blocks", required_argument, NULL, 'b'},
	{"commit", no_argument, NULL, 'c'},         {"update", no_argument, NULL, 'u'},
	{0},
};

static int jb_parse(int argc, char **argv, jb_config *cfg)
{
	int opt;

	*cfg = (jb_config){.procs = 1, .blocks = 1, .seconds = 3};
	while ((opt = getopt_long(argc, argv, "", jb_options, NULL)) != -1) {
		unsigned long long v = optarg ? strtoull(optarg, NULL, 10) : 0;
		switch (opt) {
		case 'i': cfg->instance = optarg; break;
		case 'f': cfg->first = v; break;
		case 'n': cfg->count = (uint32_t)v; break;
		case 'p': cfg->procs = (uint32_t)v; break;
		case 's': cfg->seconds = (uint32_t)v; break;
		case 'b': cfg->blocks = (uint32_t)v; break;
		case 'c': cfg->commit = true; break;
		case 'u': cfg->update = true; break;
		default: return -EINVAL;
		}
	}
	if (!cfg->instance || !cfg->first || cfg->procs < 1 || cfg->procs > JB_MAX_PROCS ||
	    cfg->blocks < 1 || cfg->blocks > 2 || cfg->seconds < 1 ||
	    cfg->count / cfg->procs < cfg->blocks)
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	jb_result *res;
	pid_t pids[JB_MAX_PROCS];
	uint64_t handles = 0, ns = 0;
	jb_config cfg;
	int go[2], ready[2], failed = 0;
	char ready_st;

	if (jb_parse(argc, argv, &cfg) < 0) {
		fprintf(stderr, "usage: jbdbench --instance NAME --first=BLOCK --count=N "
				"[--procs=1..%d] [--seconds=S] [--blocks=1|2] [--commit]\n",
			JB_MAX_PROCS);
		return 2;
	}
	res = mmap(NULL, sizeof(*res) * JB_MAX_PROCS, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED || pipe(go) < 0 || pipe(ready) < 0)
		return 2;
	for (uint32_t p = 0; p < cfg.procs; p++) {
		pids[p] = fork();
		if (pids[p] == 0) {
			close(go[1]);
			close(ready[0]);
			_exit(jb_child(&cfg, p, ready[1], go[0], &res[p]) < 0 ? 1 : 0);
		}
	}
	close(go[0]);
	close(ready[1]);
	for (uint32_t p = 0; p < cfg.procs; p++)
		if (read(ready[0], &ready_st, 1) != 1 || ready_st != 'r')
			failed = 1;
	/* Everyone starts at once, or nobody does (closing go ends the waits). */
	for (uint32_t p = 0; !failed && p < cfg.procs; p++)
		if (write(go[1], "g", 1) != 1)
			failed = 1;
	close(go[1]);
	for (uint32_t p = 0; p < cfg.procs; p++) {
		int st;
		if (waitpid(pids[p], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "jbdbench: process %u failed (%s)\n", p,
				res[p].err ? strerror(-res[p].err) : "died");
			failed = 1;
		}
		handles += res[p].handles;
		if (res[p].ns > ns)
			ns = res[p].ns;
	}
	printf("handles %llu seconds %.3f rate %.0f\n", (unsigned long long)handles, ns / 1e9,
	       ns ? handles / (ns / 1e9) : 0.0);
	return failed;
}
