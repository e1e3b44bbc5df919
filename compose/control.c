/* control.c - the supervisor's control socket: attach, status, kill,
 * shutdown, mount and umount over nng (rpc.h), served by a thread of its
 * own. All but attach and status are for the supervisor's own uid and root
 * only. A mount or umount request is run by the main thread (mount.c);
 * this thread waits for its answer. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "log.h"
#include "rpc.h"

static rpc_server *sv_rpc;
static char sv_detail[SV_REASON_MAX + CM_PATH_MAX]; /* [control thread] a mount reply's */
static pthread_t sv_rpc_thread;

static bool sv_peer_may_control(const rpc_peer *peer)
{
	return peer->uid == 0 || peer->uid == geteuid();
}

static void sv_handle_kill(sv_super *sv, const Ext3d__KillRequest *k, Ext3d__Reply *reply)
{
	sv_service *s = k->service ? sv_find(sv, k->service) : NULL;

	if (!s) {
		reply->status = -ENOENT;
		reply->detail = "no such service";
	} else if (!s->pid) {
		reply->status = -ESRCH;
		reply->detail = "service is not running";
	} else if (kill(s->pid, SIGKILL) < 0) {
		reply->status = -errno;
	}
}

static void sv_handle(void *ctx, const rpc_peer *peer, const Ext3d__Request *req,
		      Ext3d__Reply *reply)
{
	sv_super *sv = ctx;
	Ext3d__StatusReply *st;
	Ext3d__AttachReply *at;

	pthread_mutex_lock(&sv->mtx);
	switch (req->body_case) {
	case EXT3D__REQUEST__BODY_ATTACH:
		at = malloc(sizeof(*at));
		if (!at) {
			reply->status = -ENOMEM;
			break;
		}
		ext3d__attach_reply__init(at);
		at->instance = sv->cfg.instance;
		at->generation = sv->generation;
		at->ready = sv->state == SV_READY;
		reply->body_case = EXT3D__REPLY__BODY_ATTACH;
		reply->attach = at;
		break;
	case EXT3D__REQUEST__BODY_STATUS:
		st = calloc(1, sizeof(*st));
		if (!st) {
			reply->status = -ENOMEM;
			break;
		}
		ext3d__status_reply__init(st);
		reply->body_case = EXT3D__REPLY__BODY_STATUS_REPLY;
		reply->status_reply = st;
		if (sv_status_fill(sv, st) < 0)
			reply->status = -ENOMEM;
		break;
	case EXT3D__REQUEST__BODY_KILL:
		if (!sv_peer_may_control(peer)) {
			reply->status = -EPERM;
			break;
		}
		sv_handle_kill(sv, req->kill, reply);
		break;
	case EXT3D__REQUEST__BODY_MOUNT:
	case EXT3D__REQUEST__BODY_UMOUNT:
		if (!sv_peer_may_control(peer)) {
			reply->status = -EPERM;
			break;
		}
		sv_mount_request(sv, req->body_case == EXT3D__REQUEST__BODY_MOUNT ? SV_MOUNT_MOUNT
			       : SV_MOUNT_UMOUNT,
			       req->body_case == EXT3D__REQUEST__BODY_MOUNT ? req->mount->path : NULL,
			       req->body_case == EXT3D__REQUEST__BODY_MOUNT ? req->mount->options : NULL,
			       &reply->status, sv_detail, sizeof(sv_detail));
		reply->detail = sv_detail;
		break;
	case EXT3D__REQUEST__BODY_SHUTDOWN:
		if (!sv_peer_may_control(peer)) {
			reply->status = -EPERM;
			break;
		}
		kill(getpid(), SIGTERM);
		break;
	default:
		reply->status = -EPROTONOSUPPORT;
		reply->detail = "unknown request";
	}
	pthread_mutex_unlock(&sv->mtx);
}

static void sv_done(void *ctx, Ext3d__Reply *reply)
{
	(void)ctx;
	if (reply->body_case == EXT3D__REPLY__BODY_STATUS_REPLY) {
		sv_status_free(reply->status_reply);
		free(reply->status_reply);
	} else if (reply->body_case == EXT3D__REPLY__BODY_ATTACH) {
		free(reply->attach);
	}
}

static void *sv_control_main(void *arg)
{
	rpc_serve(sv_rpc, sv_handle, sv_done, arg);
	return NULL;
}

int sv_control_start(sv_super *sv)
{
	char url[CM_PATH_MAX + 16];
	sigset_t all, old;
	int r;

	r = cm_control_url(sv->cfg.rundir, url, sizeof(url));
	if (r == 0)
		r = rpc_server_open(url, &sv_rpc);
	if (r < 0)
		return cm_log_errno(r, "control socket %s: %m", url);
	/* The control thread must not take the signals the main loop reads. */
	sigfillset(&all);
	sv_fault_sigdel(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&sv_rpc_thread, NULL, sv_control_main, sv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

void sv_control_stop(sv_super *sv)
{
	(void)sv;
	if (!sv_rpc)
		return;
	rpc_server_shutdown(sv_rpc);
	pthread_join(sv_rpc_thread, NULL);
	sv_rpc = rpc_server_free(sv_rpc);
}
