/* x3-statusload - status requests back to back from several threads, so
 * that the supervisor's control thread is always serving one: the load
 * under which killedge.t restarts the group, to catch a reply that is
 * still being packed when the main thread discards the arena.
 *
 *   x3-statusload --instance NAME THREADS STOPFILE
 *
 * Runs until STOPFILE exists, or until the test that started it dies;
 * prints "replies N" and "errors N" (a call that got no reply, as while the
 * supervisor is gone). Exit 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "rpc.h"
#include "rundir.h"

#define XS_MAX_THREADS 16
#define XS_TIMEOUT_MS 2000

static char xs_url[CM_PATH_MAX + 16];
static const char *xs_stop;
static atomic_ulong xs_replies, xs_errors;

static void *xs_loop(void *arg)
{
	Ext3d__StatusRequest body = EXT3D__STATUS_REQUEST__INIT;
	Ext3d__Request req = EXT3D__REQUEST__INIT;
	Ext3d__Reply *reply;

	(void)arg;
	req.body_case = EXT3D__REQUEST__BODY_STATUS;
	req.status = &body;
	while (access(xs_stop, F_OK) != 0) {
		if (rpc_call(xs_url, &req, &reply, XS_TIMEOUT_MS) < 0) {
			atomic_fetch_add(&xs_errors, 1);
			usleep(10000); /* no supervisor: do not spin */
			continue;
		}
		atomic_fetch_add(&xs_replies, 1);
		rpc_reply_free(reply);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[XS_MAX_THREADS];
	char instance[72], rundir[CM_PATH_MAX];
	int n;

	if (argc != 5 || strcmp(argv[1], "--instance") != 0 || (n = atoi(argv[3])) < 1 ||
	    n > XS_MAX_THREADS) {
		fprintf(stderr, "usage: x3-statusload --instance NAME THREADS(1-%d) STOPFILE\n",
			XS_MAX_THREADS);
		return 2;
	}
	xs_stop = argv[4];
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* a test that dies makes no STOPFILE */
	if (cm_instance_name(argv[2], instance, sizeof(instance)) < 0 ||
	    cm_rundir(instance, rundir, sizeof(rundir)) < 0 ||
	    cm_control_url(rundir, xs_url, sizeof(xs_url)) < 0) {
		fprintf(stderr, "x3-statusload: bad instance %s\n", argv[2]);
		return 2;
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&threads[i], NULL, xs_loop, NULL) != 0)
			n = i;
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	printf("replies %lu\nerrors %lu\n", atomic_load(&xs_replies), atomic_load(&xs_errors));
	return 0;
}
