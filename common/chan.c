/* chan.c - request/response channels and their resubmission protocol; see
 * chan.h. Client state (in-flight FIFO) is process-private; everything the
 * service needs after a restart (done_seq, the rings) is in the arena. */
#include "chan.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cm_chan_client {
	cm_arena *arena;
	cm_chan *ch;
	cm_ring *req, *resp;
	cm_event *doorbell;     /* the service's */
	uint16_t version;
	uint64_t next_seq;
	uint32_t seen_epoch;    /* server_epoch we last resubmitted for */
	uint64_t resubmitted;
	/* In-flight requests, oldest first; a slot holds the request until its
	 * response arrives, then the response. */
	uint32_t first, count;
	uint8_t done[CM_CHAN_DEPTH];
	uint8_t recs[CM_CHAN_DEPTH][CM_CHAN_REC_SIZE];
};

#define CM_CHAN_REQ_DEPTH (2 * CM_CHAN_DEPTH)

int cm_chan_carve(cm_arena *a, cm_chan *ch)
{
	cm_off req = cm_arena_alloc(a, cm_ring_bytes(CM_CHAN_REC_SIZE, CM_CHAN_REQ_DEPTH), 64);
	cm_off resp = cm_arena_alloc(a, cm_ring_bytes(CM_CHAN_REC_SIZE, CM_CHAN_DEPTH), 64);

	if (!req || !resp)
		return -ENOMEM;
	ch->req_rel = (int64_t)(req - cm_arena_off(a, ch));
	ch->resp_rel = (int64_t)(resp - cm_arena_off(a, ch));
	return 0;
}

cm_chan *cm_chan_at(cm_layout *l, cm_arena *a, uint32_t i)
{
	return cm_arena_ptr(a, l->chans + i * sizeof(cm_chan), sizeof(cm_chan));
}

cm_ring *cm_chan_req(cm_chan *ch)
{
	return (cm_ring *)((uint8_t *)ch + ch->req_rel);
}

cm_ring *cm_chan_resp(cm_chan *ch)
{
	return (cm_ring *)((uint8_t *)ch + ch->resp_rel);
}

/* Takes a FREE channel for pid: owner first, so that a client dying after
 * any step is found by cm_chan_release_owner(). */
static bool cm_chan_claim(cm_chan *ch, int32_t pid)
{
	uint32_t expect = CM_CHAN_FREE;
	int32_t nobody = 0;

	if (atomic_load(&ch->state) != CM_CHAN_FREE ||
	    !atomic_compare_exchange_strong(&ch->owner, &nobody, pid))
		return false;
	if (atomic_compare_exchange_strong(&ch->state, &expect, CM_CHAN_CLAIMED))
		return true;
	atomic_store(&ch->owner, 0); /* freed and not yet FREE again: not ours */
	return false;
}

/* Sets up a claimed channel as new for a client of server. */
static int cm_chan_setup(cm_layout *l, cm_chan *ch, uint32_t server, uint16_t version)
{
	int r;

	ch->server = server;
	atomic_store(&ch->server_epoch, 0);
	atomic_store(&ch->client_epoch, 0);
	atomic_store(&ch->done_seq, 0);
	atomic_store(&ch->exec_seq, 0);
	atomic_store(&ch->requests, 0);
	r = cm_ring_init(cm_chan_req(ch), version, CM_CHAN_REC_SIZE, CM_CHAN_REQ_DEPTH, false,
			 &l->svcs[server].doorbell);
	if (r == 0)
		r = cm_ring_init(cm_chan_resp(ch), version, CM_CHAN_REC_SIZE, CM_CHAN_DEPTH,
				 false, NULL);
	return r;
}

int cm_chan_open(cm_arena *a, uint32_t server, uint16_t version, cm_chan_client **ret)
{
	cm_layout *l = cm_layout_get(a);
	cm_chan_client *cc;
	int r;

	if (!l || server >= CM_MAX_SVCS)
		return -EINVAL;
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return -ENOMEM;
	for (uint32_t i = 0; i < l->nchans; i++) {
		cm_chan *ch = cm_chan_at(l, a, i);
		if (!cm_chan_claim(ch, (int32_t)getpid()))
			continue;
		r = cm_chan_setup(l, ch, server, version);
		if (r < 0) {
			/* Never OPEN, so no server looked at it: free at once. */
			atomic_store(&ch->state, CM_CHAN_FREE);
			atomic_store(&ch->owner, 0);
			free(cc);
			return r;
		}
		atomic_store(&ch->state, CM_CHAN_OPEN);
		cc->arena = a;
		cc->ch = ch;
		cc->req = cm_chan_req(ch);
		cc->resp = cm_chan_resp(ch);
		cc->doorbell = &l->svcs[server].doorbell;
		cc->version = version;
		cc->next_seq = 1;
		*ret = cc;
		cm_event_signal(cc->doorbell);
		return 0;
	}
	free(cc);
	return -EBUSY;
}

cm_chan_client *cm_chan_close(cm_chan_client *cc)
{
	if (!cc)
		return NULL;
	/* Owner last: until it is cleared nobody can claim the channel, and
	 * if we die before, the supervisor finds it by our pid. */
	atomic_store(&cc->ch->state, CM_CHAN_CLOSING);
	atomic_store(&cc->ch->owner, 0);
	cm_event_signal(cc->doorbell);
	free(cc);
	return NULL;
}

cm_off cm_chan_scratch(cm_chan_client *cc)
{
	cm_off off = atomic_load(&cc->ch->scratch);

	if (!off) {
		off = cm_arena_alloc_data(cc->arena, CM_CHAN_SCRATCH, 4096);
		atomic_store(&cc->ch->scratch, off);
	}
	return off;
}

uint32_t cm_chan_inflight(const cm_chan_client *cc)
{
	return cc->count;
}

uint64_t cm_chan_resubmitted(const cm_chan_client *cc)
{
	return cc->resubmitted;
}

static uint8_t *cm_chan_slot(cm_chan_client *cc, uint32_t k, uint8_t **done)
{
	uint32_t i = (cc->first + k) % CM_CHAN_DEPTH;

	*done = &cc->done[i];
	return cc->recs[i];
}

/* Files one response against the in-flight FIFO: duplicates of answered
 * requests are dropped, anything else out of order is a protocol error. */
static int cm_chan_file_response(cm_chan_client *cc, const uint8_t *rec)
{
	const cm_rec_hdr *h = (const cm_rec_hdr *)rec;
	uint8_t *done;

	for (uint32_t k = 0; k < cc->count; k++) {
		uint8_t *slot = cm_chan_slot(cc, k, &done);
		uint64_t seq = ((cm_rec_hdr *)slot)->seq;
		if (*done && seq == h->seq)
			return 0;
		if (*done)
			continue;
		if (seq > h->seq)
			return 0;
		if (seq < h->seq)
			return -EPROTO;
		memcpy(slot, rec, CM_CHAN_REC_SIZE);
		*done = 1;
		return 0;
	}
	return 0;
}

/* The service restarted: take what it answered, resend the rest, in order. */
static int cm_chan_resync(cm_chan_client *cc, uint32_t epoch)
{
	uint8_t rec[CM_CHAN_REC_SIZE], *done;
	int r;

	while (cm_ring_peek(cc->resp, rec) == 0) {
		cm_ring_consume(cc->resp);
		r = cm_chan_file_response(cc, rec);
		if (r < 0)
			return r;
	}
	cm_ring_reset(cc->req);
	for (uint32_t k = 0; k < cc->count; k++) {
		uint8_t *slot = cm_chan_slot(cc, k, &done);
		if (*done)
			continue;
		r = cm_ring_try_push(cc->req, slot);
		if (r < 0)
			return r;
		cc->resubmitted++;
	}
	cc->seen_epoch = epoch;
	atomic_store(&cc->ch->client_epoch, epoch);
	cm_event_signal(cc->doorbell);
	return 0;
}

static int cm_chan_check_epoch(cm_chan_client *cc)
{
	uint32_t epoch = atomic_load(&cc->ch->server_epoch);

	return epoch == cc->seen_epoch ? 0 : cm_chan_resync(cc, epoch);
}

int cm_chan_submit(cm_chan_client *cc, void *rec)
{
	cm_rec_hdr *h = rec;
	uint8_t *done;
	int r;

	if (cc->count == CM_CHAN_DEPTH)
		return -EAGAIN;
	r = cm_chan_check_epoch(cc);
	if (r < 0)
		return r;
	h->version = cc->version;
	h->seq = cc->next_seq;
	r = cm_ring_try_push(cc->req, rec);
	if (r < 0)
		return r;
	cc->next_seq++;
	memcpy(cm_chan_slot(cc, cc->count, &done), rec, CM_CHAN_REC_SIZE);
	*done = 0;
	cc->count++;
	return 0;
}

struct cm_chan_reap_arg {
	cm_chan_client *cc;
	void *resp;
};

/* 1 once the oldest request's response is in resp; files every response
 * that arrived on the way. */
static int cm_chan_reap_poll(void *arg)
{
	struct cm_chan_reap_arg *x = arg;
	cm_chan_client *cc = x->cc;
	uint8_t rec[CM_CHAN_REC_SIZE], *done, *slot;
	int r;

	for (;;) {
		slot = cm_chan_slot(cc, 0, &done);
		if (*done) {
			memcpy(x->resp, slot, CM_CHAN_REC_SIZE);
			cc->first = (cc->first + 1) % CM_CHAN_DEPTH;
			cc->count--;
			return 1;
		}
		r = cm_chan_check_epoch(cc);
		if (r < 0)
			return r;
		if (cm_ring_peek(cc->resp, rec) < 0)
			return 0;
		cm_ring_consume(cc->resp);
		r = cm_chan_file_response(cc, rec);
		if (r < 0)
			return r;
	}
}

int cm_chan_reap(cm_chan_client *cc, void *resp, int timeout_ms)
{
	struct cm_chan_reap_arg x = {cc, resp};
	int r;

	if (cc->count == 0)
		return -EINVAL;
	r = cm_chan_reap_poll(&x);
	if (r == 0) {
		cm_lockdep_assert_none_held("waiting for a channel response");
		r = cm_wait(cm_ring_not_empty(cc->resp), cm_chan_reap_poll, &x, timeout_ms, 50);
	}
	return r > 0 ? 0 : r;
}

int cm_chan_call(cm_chan_client *cc, void *rec, void *resp, int timeout_ms)
{
	int r = cm_chan_submit(cc, rec);

	return r < 0 ? r : cm_chan_reap(cc, resp, timeout_ms);
}

void cm_chan_server_init(cm_chan_server *s, cm_arena *a, uint32_t slot)
{
	memset(s, 0, sizeof(*s));
	s->arena = a;
	s->layout = cm_layout_get(a);
	s->slot = slot;
	s->nparts = 1;
}

void cm_chan_server_share(cm_chan_server *s, uint32_t part, uint32_t nparts)
{
	s->nparts = nparts ? nparts : 1;
	s->part = part % s->nparts;
}

static void cm_chan_adopt(cm_chan_server *s, cm_chan *ch, uint32_t i)
{
	uint32_t epoch = atomic_load(&ch->server_epoch) + 1;

	if (epoch == 0)
		epoch = 1;
	s->adopted[i] = epoch;
	/* Whatever the last instance was executing is settled by now. */
	atomic_store(&ch->exec_seq, 0);
	atomic_store(&ch->server_epoch, epoch);
	cm_event_signal(cm_ring_not_empty(cm_chan_resp(ch)));
}

/* Serves one channel's queued requests, oldest first. */
static int cm_chan_serve(cm_chan *ch, uint32_t budget, cm_chan_exec *exec, void *ctx)
{
	_Alignas(8) uint8_t req[CM_CHAN_REC_SIZE], resp[CM_CHAN_REC_SIZE];
	cm_ring *in = cm_chan_req(ch), *out = cm_chan_resp(ch);
	int served = 0;

	while ((uint32_t)served < budget && cm_ring_peek(in, req) == 0) {
		const cm_rec_hdr *rh = (const cm_rec_hdr *)req;
		cm_rec_hdr *sh = (cm_rec_hdr *)resp;
		uint64_t done = atomic_load(&ch->done_seq);

		memcpy(resp, req, sizeof(resp));
		if (rh->seq == done) {
			memcpy(resp, ch->done_resp, sizeof(resp));
		} else if (rh->seq < done) {
			sh->status = -EPROTO;
		} else {
			atomic_store(&ch->exec_seq, rh->seq);
			sh->status = exec(ctx, req, resp);
			memcpy(ch->done_resp, resp, sizeof(resp));
			atomic_store_explicit(&ch->done_seq, rh->seq, memory_order_release);
			atomic_fetch_add_explicit(&ch->requests, 1, memory_order_relaxed);
		}
		if (cm_ring_try_push(out, resp) < 0)
			break; /* a client that does not reap: serve it later */
		cm_ring_consume(in);
		served++;
	}
	return served;
}

int cm_chan_server_poll(cm_chan_server *s, uint32_t budget, cm_chan_exec *exec, void *ctx)
{
	int served = 0;

	for (uint32_t i = s->part; i < s->layout->nchans; i += s->nparts) {
		cm_chan *ch = cm_chan_at(s->layout, s->arena, i);
		uint32_t state = atomic_load(&ch->state);
		if (state == CM_CHAN_CLOSING && ch->server == s->slot)
			atomic_store(&ch->state, CM_CHAN_FREE);
		if (state != CM_CHAN_OPEN || ch->server != s->slot) {
			s->adopted[i] = 0;
			continue;
		}
		if (!s->adopted[i] || atomic_load(&ch->server_epoch) != s->adopted[i]) {
			cm_chan_adopt(s, ch, i);
			continue;
		}
		if (atomic_load(&ch->client_epoch) != s->adopted[i])
			continue;
		served += cm_chan_serve(ch, budget, exec, ctx);
	}
	return served;
}

uint32_t cm_chan_server_arm(cm_chan_server *s)
{
	return atomic_load(&s->layout->svcs[s->slot].doorbell.seq);
}

struct cm_chan_bell_arg {
	cm_event *bell;
	uint32_t armed;
};

static int cm_chan_bell_poll(void *arg)
{
	struct cm_chan_bell_arg *x = arg;

	return atomic_load(&x->bell->seq) != x->armed;
}

void cm_chan_server_wait(cm_chan_server *s, uint32_t armed, int timeout_ms)
{
	struct cm_chan_bell_arg x = {&s->layout->svcs[s->slot].doorbell, armed};

	(void)cm_wait(x.bell, cm_chan_bell_poll, &x, timeout_ms, timeout_ms);
}

void cm_chan_release_owner(cm_layout *l, cm_arena *a, int32_t pid)
{
	for (uint32_t i = 0; i < l->nchans; i++) {
		cm_chan *ch = cm_chan_at(l, a, i);
		if (pid == 0 || atomic_load(&ch->owner) != pid)
			continue;
		switch (atomic_load(&ch->state)) {
		case CM_CHAN_CLAIMED:
			/* Died setting it up: never OPEN, so no server has it. */
			atomic_store(&ch->state, CM_CHAN_FREE);
			break;
		case CM_CHAN_OPEN:
			atomic_store(&ch->state, CM_CHAN_CLOSING);
			if (ch->server < CM_MAX_SVCS)
				cm_event_signal(&l->svcs[ch->server].doorbell);
			break;
		default:
			break; /* died inside claim or close: only owner is left */
		}
		atomic_store(&ch->owner, 0);
	}
}

bool cm_chan_server_busy(cm_layout *l, cm_arena *a, uint32_t server, uint32_t *chan)
{
	for (uint32_t i = 0; i < l->nchans; i++) {
		cm_chan *ch = cm_chan_at(l, a, i);
		uint64_t exec = atomic_load(&ch->exec_seq);
		if (ch->server != server || atomic_load(&ch->state) == CM_CHAN_FREE || exec == 0 ||
		    exec == atomic_load(&ch->done_seq))
			continue;
		*chan = i;
		return true;
	}
	return false;
}

void cm_chan_server_gone(cm_layout *l, cm_arena *a, uint32_t server)
{
	for (uint32_t i = 0; i < l->nchans; i++) {
		cm_chan *ch = cm_chan_at(l, a, i);
		if (ch->server == server && atomic_load(&ch->state) == CM_CHAN_CLOSING)
			atomic_store(&ch->state, CM_CHAN_FREE);
	}
}
