/* rpc.c - encode, send, receive and decode control messages over nng
 * req/rep; see rpc.h. The only place protobuf meets the wire. */
#include "rpc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

struct rpc_server {
	nng_socket sock;
	_Atomic bool stop;  /* [atomic] rpc_serve returns at its next wake-up */
};

/* How often rpc_serve looks at stop, and how long a reply may take to go. */
#define RPC_POLL_MS 200
#define RPC_SEND_MS 1000

static int rpc_errno(int nng_err)
{
	switch (nng_err) {
	case 0:
		return 0;
	case NNG_ECONNREFUSED:
	case NNG_ENOENT:
		return -ECONNREFUSED;
	case NNG_ETIMEDOUT:
		return -ETIMEDOUT;
	case NNG_ENOMEM:
		return -ENOMEM;
	case NNG_EADDRINUSE:
		return -EADDRINUSE;
	case NNG_EPERM:
		return -EPERM;
	case NNG_ECLOSED:
		return -ESHUTDOWN;
	default:
		return -EIO;
	}
}

static int rpc_send_packed(nng_socket sock, const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	nng_msg *msg;
	int r;

	if (len > RPC_MAX_MSG)
		return -EMSGSIZE;
	r = nng_msg_alloc(&msg, len);
	if (r)
		return rpc_errno(r);
	protobuf_c_message_pack(m, nng_msg_body(msg));
	r = nng_sendmsg(sock, msg, 0);
	if (r)
		nng_msg_free(msg);
	return rpc_errno(r);
}

int rpc_call(const char *url, Ext3d__Request *req, Ext3d__Reply **ret, int timeout_ms)
{
	Ext3d__Header header = EXT3D__HEADER__INIT;
	Ext3d__Reply *reply;
	nng_socket sock;
	nng_msg *msg;
	int r;

	header.version = EXT3D__VERSION__VERSION_CURRENT;
	req->header = &header;
	r = nng_req0_open(&sock);
	if (r)
		return rpc_errno(r);
	nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, timeout_ms);
	nng_socket_set_ms(sock, NNG_OPT_SENDTIMEO, timeout_ms);
	r = rpc_errno(nng_dial(sock, url, NULL, 0));
	if (r == 0)
		r = rpc_send_packed(sock, &req->base);
	if (r == 0)
		r = rpc_errno(nng_recvmsg(sock, &msg, 0));
	req->header = NULL;
	if (r < 0) {
		nng_close(sock);
		return r;
	}
	reply = nng_msg_len(msg) > RPC_MAX_MSG ? NULL
		: ext3d__reply__unpack(NULL, nng_msg_len(msg), nng_msg_body(msg));
	nng_msg_free(msg);
	nng_close(sock);
	if (!reply)
		return -EPROTO;
	*ret = reply;
	return 0;
}

void rpc_reply_free(Ext3d__Reply *reply)
{
	if (reply)
		ext3d__reply__free_unpacked(reply, NULL);
}

int rpc_server_open(const char *url, rpc_server **ret)
{
	rpc_server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	r = nng_rep0_open(&s->sock);
	if (r == 0) {
		nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, RPC_MAX_MSG);
		nng_socket_set_ms(s->sock, NNG_OPT_RECVTIMEO, RPC_POLL_MS);
		nng_socket_set_ms(s->sock, NNG_OPT_SENDTIMEO, RPC_SEND_MS);
	}
	if (r == 0)
		r = nng_listen(s->sock, url, NULL, 0);
	if (r) {
		nng_close(s->sock);
		free(s);
		return rpc_errno(r);
	}
	*ret = s;
	return 0;
}

static void rpc_peer_of(nng_msg *msg, rpc_peer *peer)
{
	nng_pipe p = nng_msg_get_pipe(msg);
	uint64_t v;

	peer->uid = (uid_t)-1;
	peer->gid = (gid_t)-1;
	peer->pid = -1;
	if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &v) == 0)
		peer->uid = (uid_t)v;
	if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_GID, &v) == 0)
		peer->gid = (gid_t)v;
	if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_PID, &v) == 0)
		peer->pid = (pid_t)v;
}

static void rpc_handle_one(rpc_server *s, nng_msg *msg, rpc_handler *handle, rpc_done *done,
			   void *ctx)
{
	Ext3d__Reply reply = EXT3D__REPLY__INIT;
	Ext3d__Request *req;
	rpc_peer peer;

	rpc_peer_of(msg, &peer);
	req = ext3d__request__unpack(NULL, nng_msg_len(msg), nng_msg_body(msg));
	nng_msg_free(msg);
	if (!req) {
		reply.status = -EPROTO;
		reply.detail = "malformed request";
	} else if (!req->header || req->header->version != EXT3D__VERSION__VERSION_CURRENT) {
		reply.status = -EPROTONOSUPPORT;
		reply.detail = "unsupported control protocol version";
	} else {
		handle(ctx, &peer, req, &reply);
	}
	(void)rpc_send_packed(s->sock, &reply.base);
	if (req) {
		if (done)
			done(ctx, &reply);
		ext3d__request__free_unpacked(req, NULL);
	}
}

void rpc_serve(rpc_server *s, rpc_handler *handle, rpc_done *done, void *ctx)
{
	nng_msg *msg;
	int r;

	while (!atomic_load(&s->stop)) {
		r = nng_recvmsg(s->sock, &msg, 0);
		if (r == NNG_ECLOSED)
			return;
		if (r)
			continue;
		rpc_handle_one(s, msg, handle, done, ctx);
	}
}

/* Closing the socket under a thread blocked in it can hang inside nng:
 * the serving thread stops by itself, and the socket is closed after. */
void rpc_server_shutdown(rpc_server *s)
{
	atomic_store(&s->stop, true);
}

rpc_server *rpc_server_free(rpc_server *s)
{
	if (!s)
		return NULL;
	nng_close(s->sock);
	free(s);
	return NULL;
}
