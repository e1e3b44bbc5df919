/* lock-holder - a compose service that attaches to its instance's arena,
 * takes one piece of shared state and holds it until it is killed, so a
 * test can SIGKILL a process in the middle of holding it:
 *
 *   lock-holder --hold=WHAT [--block=N] [--once=PATH] --arena-fd=N --slot=K
 *
 * WHAT: j_list_lock, j_state_lock, bh_state (block N's stripe), stripe
 * (the buffer-cache hash stripe of block N), locked (block N's buffer,
 * LOCKED as for I/O and !UPTODATE if it was not cached: a reader of block N
 * then waits for it), handle (a journal handle from jbd_start, left open;
 * if the arena has no journal yet, it makes a small one first) or call (a
 * forked client sends this service one request, which it is still
 * executing when it dies: a call that must not run twice). The cache is
 * the one inode-svc made, so this service comes after inode-svc in the
 * compose file. With --once, it holds only if PATH does not exist yet (and
 * creates it): after the group restart its death causes, the new instance
 * of it holds nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "bcache.h"
#include "chan.h"
#include "jbd/journal.h"
#include "layout.h"
#include "log.h"
#include "service.h"

#define LH_LOG_BLOCKS 1024 /* the log of the journal it makes if need be */

static const struct option lh_options[] = {
	CM_SERVICE_OPTIONS,
	{"hold", required_argument, NULL, 'h'},
	{"block", required_argument, NULL, 'b'},
	{"once", required_argument, NULL, 'o'},
	{0},
};

/* A journal for --hold=handle when journald-svc has not made one: a small
 * log over nothing (it is never committed), published in the layout as
 * journald-svc publishes its own. */
static int lh_make_journal(cm_service *svc, cm_bcache *c)
{
	uint32_t logmap[LH_LOG_BLOCKS] = {0};
	cm_bcache_stats st;
	cm_off off;

	cm_bcache_stats_read(c, &st);
	jbd_geometry g = {
		.block_size = st.block_size, .fs_blocks = 1u << 16, .first = 1,
		.last = LH_LOG_BLOCKS, .sequence = 1, .logmap = logmap,
	};
	return jbd_create(svc->arena, &g, &off);
}

/* Opens a journal handle (jbd_start) and keeps it open. */
static int lh_handle(cm_service *svc, cm_bcache *c)
{
	jbd_handle *h;
	jbd_ctx *jc;
	int r;

	r = jbd_attach(svc->arena, c, (uint32_t)svc->slot, &jc);
	if (r == -ENOENT) {
		cm_info("no journal in the arena: making a small one to hold a handle of");
		r = lh_make_journal(svc, c);
		if (r == 0)
			r = jbd_attach(svc->arena, c, (uint32_t)svc->slot, &jc);
	}
	return r < 0 ? r : jbd_start(jc, 1, &h);
}

/* Takes what; 0 with it held. */
static int lh_take(cm_service *svc, const char *what, uint64_t block)
{
	cm_layout *l = svc->layout;
	cm_off off = atomic_load(&l->bcache);
	cm_bcache *c;
	cm_bh *bh;
	int r;

	if (strcmp(what, "j_list_lock") == 0)
		return cm_mutex_lock(&l->locks.j_list_lock);
	if (strcmp(what, "j_state_lock") == 0)
		return cm_mutex_lock(&l->locks.j_state_lock);
	if (strcmp(what, "bh_state") == 0)
		return cm_mutex_lock(cm_bh_state_lock(&l->locks, block));
	if (strcmp(what, "stripe") != 0 && strcmp(what, "locked") != 0 &&
	    strcmp(what, "handle") != 0)
		return -EINVAL;
	if (!off)
		return -ENOENT; /* no cache yet: inode-svc must come first */
	r = cm_bcache_attach(svc->arena, off, &c);
	if (r < 0)
		return r;
	if (strcmp(what, "handle") == 0)
		return lh_handle(svc, c);
	if (strcmp(what, "stripe") == 0)
		return cm_mutex_lock(cm_bcache_stripe(c, block));
	r = cm_bcache_getblk(c, block, &bh);
	return r < 0 ? r : cm_bh_lock(c, bh);
}

/* The one request of --hold=call: executed until this process is killed. */
static int lh_exec(void *ctx, const void *req, void *resp)
{
	(void)ctx, (void)req, (void)resp;
	cm_info("executing a call, never to finish");
	while (!cm_service_stopping())
		pause();
	return 0;
}

/* --hold=call: a child sends one request to this service, which executes
 * it (and nothing else) from then on. */
static int lh_call(cm_service *svc)
{
	uint8_t rec[CM_CHAN_REC_SIZE] = {0}, resp[CM_CHAN_REC_SIZE];
	cm_chan_server srv;
	cm_chan_client *cc;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cm_chan_open(svc->arena, (uint32_t)svc->slot, 1, &cc) < 0)
			_exit(2);
		((cm_rec_hdr *)rec)->version = 1;
		_exit(cm_chan_call(cc, rec, resp, -1) < 0 ? 2 : 0);
	}
	cm_chan_server_init(&srv, svc->arena, (uint32_t)svc->slot);
	while (!cm_service_stopping()) {
		uint32_t armed = cm_chan_server_arm(&srv);
		if (cm_chan_server_poll(&srv, 1, lh_exec, NULL) == 0)
			cm_chan_server_wait(&srv, armed, 100);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *hold = NULL, *once = NULL;
	unsigned long long block = 0;
	cm_service svc;
	int opt, r, fd;

	cm_service_init(&svc, "lock-holder");
	while ((opt = getopt_long(argc, argv, "", lh_options, NULL)) != -1) {
		if (opt == 'h')
			hold = optarg;
		else if (opt == 'b')
			block = strtoull(optarg, NULL, 0);
		else if (opt == 'o')
			once = optarg;
		else if (cm_service_option(&svc, opt, optarg) <= 0)
			return 2;
	}
	if (!hold || cm_service_attach(&svc) < 0)
		return cm_log_errno(-EINVAL, "usage: lock-holder --hold=WHAT [--block=N] "
				    "[--once=PATH] --arena-fd=N --slot=K"), 2;
	fd = once ? open(once, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
	if (strcmp(hold, "call") == 0 && (!once || fd >= 0)) {
		if (fd >= 0)
			close(fd);
		cm_service_ready(&svc);
		r = lh_call(&svc);
		cm_service_fini(&svc);
		return r < 0 ? 2 : 0;
	}
	if (!once || fd >= 0) {
		r = lh_take(&svc, hold, block);
		if (r < 0)
			return cm_log_errno(r, "cannot take %s: %m", hold), 2;
		cm_info("holding %s (block %llu)", hold, block);
	}
	if (fd >= 0)
		close(fd);
	cm_service_ready(&svc);
	while (!cm_service_stopping())
		pause();
	cm_service_fini(&svc);
	return 0;
}
