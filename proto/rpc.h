/* rpc.h - the one nng request/reply helper of the control plane.
 *
 * One protobuf message per nng message (nng frames them); a message larger
 * than RPC_MAX_MSG is refused before it is decoded. Clients call
 * rpc_call(); servers run rpc_serve() in a thread of their own, which calls
 * the handler once per request with the peer's credentials.
 */
#ifndef RPC_H
#define RPC_H

#include <stdint.h>
#include <sys/types.h>

#include "supervisor.pb-c.h"

#define RPC_MAX_MSG (256 * 1024)

typedef struct rpc_peer {
	uid_t uid;
	gid_t gid;
	pid_t pid;
} rpc_peer;

/* Sends req (its header is filled in) and returns the decoded reply, to be
 * freed with rpc_reply_free(). -ECONNREFUSED if nobody listens at url. */
int rpc_call(const char *url, Ext3d__Request *req, Ext3d__Reply **ret, int timeout_ms);
void rpc_reply_free(Ext3d__Reply *reply);

/* The handler fills reply (status, detail, body); anything it allocates for
 * the body it frees in the done callback after the reply is sent. */
typedef void rpc_handler(void *ctx, const rpc_peer *peer, const Ext3d__Request *req,
			 Ext3d__Reply *reply);
typedef void rpc_done(void *ctx, Ext3d__Reply *reply);

typedef struct rpc_server rpc_server;
int rpc_server_open(const char *url, rpc_server **ret);
/* Serves until rpc_server_shutdown() is called from another thread (it
 * notices within RPC_POLL_MS). */
void rpc_serve(rpc_server *s, rpc_handler *handle, rpc_done *done, void *ctx);
void rpc_server_shutdown(rpc_server *s);
/* Closes the socket; only after rpc_serve() has returned. Accepts NULL,
 * returns NULL. */
rpc_server *rpc_server_free(rpc_server *s);

#endif
