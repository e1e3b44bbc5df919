/* chan.h - request/response channels between a client and a service.
 *
 * A channel is a pair of single-producer rings in the arena: requests from
 * one client thread to one service, responses back. Every record starts with
 * cm_rec_hdr; the channel numbers requests 1, 2, 3... and the service
 * answers them in order.
 *
 * Surviving a service restart (the resubmission protocol):
 *  - Each service instance adopts every open channel it serves by bumping
 *    server_epoch, then serves the channel only once the client has set
 *    client_epoch to match.
 *  - A client that sees server_epoch change drains the published responses,
 *    empties the request ring (nobody consumes it meanwhile), resubmits every
 *    request that has no response, in order, then sets client_epoch.
 *  - The service executes a request, then keeps its response in done_resp
 *    and records done_seq, then publishes the response, then consumes the
 *    request. A request the dead instance executed but did not answer comes
 *    back with seq == done_seq and is answered from done_resp, not executed
 *    twice; one it died executing is executed again. That is right for
 *    block I/O, which is idempotent, and wrong for a call that is not
 *    (allocation, the journal): exec_seq names the request being executed,
 *    and the supervisor restarts the whole group when such a service dies
 *    in the middle of one (cm_chan_server_busy).
 *
 * Claiming: a client first records itself as the owner of a FREE channel
 * (a CAS of owner from 0 to its pid), then moves it to CLAIMED; a client
 * that dies anywhere on the way is therefore named by owner, and the
 * supervisor's cm_chan_release_owner() gives the channel back whatever
 * state it was left in. Owner is cleared last when a channel is closed,
 * for the same reason.
 *
 * Closing: a client (or the supervisor, for a dead client) marks the
 * channel CLOSING; the serving process frees it at its next poll, when it
 * is surely not inside that channel, so a new client never inherits a
 * request or response of the old one. With no server running, the
 * supervisor frees it (cm_chan_server_gone).
 *
 * Scratch: a channel keeps CM_CHAN_SCRATCH bytes of data-zone space for
 * its client (blockdev's scatter tables), made when a client first asks
 * and handed from owner to owner, so clients that come and go never grow
 * the arena (the arena never frees).
 *
 * A cm_chan_client is private to the client process and used by one thread
 * at a time.
 */
#ifndef CM_CHAN_H
#define CM_CHAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "layout.h"
#include "ring.h"

#define CM_CHAN_SCRATCH (32u << 10)

typedef struct cm_rec_hdr {
	uint16_t version; /* the service's record layout version */
	uint16_t op;      /* the service's operation code */
	int32_t status;   /* responses: 0 or -errno */
	uint64_t seq;     /* set by cm_chan_submit() */
} cm_rec_hdr;

enum cm_chan_state {
	CM_CHAN_FREE = 0,    /* owner 0, or the pid of a client claiming it */
	CM_CHAN_CLAIMED = 1, /* a client is setting it up */
	CM_CHAN_OPEN = 2,
	CM_CHAN_CLOSING = 3, /* closed; its server frees it */
};

typedef struct cm_chan {
	_Atomic uint32_t state;        /* [atomic] enum cm_chan_state */
	_Atomic int32_t owner;         /* [atomic] pid of the client; see Claiming */
	uint32_t server;               /* [client, before OPEN] serving slot */
	_Atomic uint32_t server_epoch; /* [server] set when an instance adopts it */
	_Atomic uint32_t client_epoch; /* [client] server_epoch it resubmitted for */
	_Atomic uint64_t done_seq;     /* [server] last request executed */
	_Atomic uint64_t exec_seq;     /* [server] request being executed; executed
					* once it equals done_seq, 0: none */
	uint8_t done_resp[CM_CHAN_REC_SIZE]; /* [server] its response; valid once done_seq names it */
	_Atomic uint64_t requests;     /* [server] executed, for status */
	_Atomic cm_off scratch;        /* [owner] CM_CHAN_SCRATCH bytes in the data zone, or 0 */
	int64_t req_rel, resp_rel;     /* [immutable] rings, relative to this struct */
} cm_chan;

typedef struct cm_chan_client cm_chan_client;

/* Arena set-up: gives ch its two rings. */
int cm_chan_carve(cm_arena *a, cm_chan *ch);
cm_chan *cm_chan_at(cm_layout *l, cm_arena *a, uint32_t i);
cm_ring *cm_chan_req(cm_chan *ch);
cm_ring *cm_chan_resp(cm_chan *ch);

/* Client: opens a free channel to service slot `server`; -EBUSY if none. */
int cm_chan_open(cm_arena *a, uint32_t server, uint16_t version, cm_chan_client **ret);
cm_chan_client *cm_chan_close(cm_chan_client *cc);
/* Queues a request (rec is CM_CHAN_REC_SIZE bytes, its seq is set);
 * -EAGAIN when CM_CHAN_DEPTH requests are already in flight. The request
 * ring holds twice that, since the service answers a request before it
 * consumes it. */
int cm_chan_submit(cm_chan_client *cc, void *rec);
/* The channel's scratch space (see Scratch), aligned to 4096 bytes; 0 if
 * the data zone is full. */
cm_off cm_chan_scratch(cm_chan_client *cc);
/* The response to the oldest request in flight: 0, -ETIMEDOUT, -EPROTO. */
int cm_chan_reap(cm_chan_client *cc, void *resp, int timeout_ms);
/* Submit and reap one request. */
int cm_chan_call(cm_chan_client *cc, void *rec, void *resp, int timeout_ms);
uint32_t cm_chan_inflight(const cm_chan_client *cc);
/* Resubmissions done after service restarts, for tests and status. */
uint64_t cm_chan_resubmitted(const cm_chan_client *cc);

/* Service side. Executes one request into resp (same layout); returns the
 * status to record (0 or -errno). */
typedef int cm_chan_exec(void *ctx, const void *req, void *resp);
typedef struct cm_chan_server {
	cm_arena *arena;
	cm_layout *layout;
	uint32_t slot;
	uint32_t part, nparts;          /* serves channels i with i % nparts == part */
	uint32_t adopted[CM_MAX_CHANS]; /* epoch this instance set, 0 = not adopted */
} cm_chan_server;

void cm_chan_server_init(cm_chan_server *s, cm_arena *a, uint32_t slot);
/* For a service with several serving threads, each with its own server:
 * this one serves the channels whose index is part modulo nparts, so that
 * every channel has one thread (a channel is served in order). */
void cm_chan_server_share(cm_chan_server *s, uint32_t part, uint32_t nparts);
/* Serves up to `budget` requests per channel; returns how many it served. */
int cm_chan_server_poll(cm_chan_server *s, uint32_t budget, cm_chan_exec *exec, void *ctx);
/* The doorbell's sequence: take it before polling, then wait with it, so
 * that a request published after the poll wakes the wait at once. */
uint32_t cm_chan_server_arm(cm_chan_server *s);
void cm_chan_server_wait(cm_chan_server *s, uint32_t armed, int timeout_ms);
/* Supervisor: gives back every channel that a client process that died
 * owned or was claiming or closing. */
void cm_chan_release_owner(cm_layout *l, cm_arena *a, int32_t pid);
/* Supervisor: true if service slot `server` died in the middle of executing
 * a request (exec_seq set, not done); *chan gets that channel's index. */
bool cm_chan_server_busy(cm_layout *l, cm_arena *a, uint32_t server, uint32_t *chan);
/* Supervisor: service slot `server` is not running: free its closing channels. */
void cm_chan_server_gone(cm_layout *l, cm_arena *a, uint32_t server);

#endif
