/* lane.c - the worker thread of one lane of a session: take a request from
 * the lane's request ring, dispatch it, put the response on the response
 * ring. The rings are the client's memory: read with the server's own
 * geometry (cm_ring_*_untrusted). Ends when the session closes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "wait.h"

struct ino_lane_poll_arg {
	ino_session *ss;
	cm_ring *ring;
	void *rec;
};

/* A request on the lane: 1; the session closing: -ESHUTDOWN. */
static int ino_lane_req_poll(void *arg)
{
	struct ino_lane_poll_arg *x = arg;

	if (atomic_load(&x->ss->closing))
		return -ESHUTDOWN;
	return cm_ring_peek_untrusted(x->ring, &cm_seg_geom, x->rec) == 0;
}

/* The response is on the ring: 1; the session closing: -ESHUTDOWN. */
static int ino_lane_resp_poll(void *arg)
{
	struct ino_lane_poll_arg *x = arg;

	if (atomic_load(&x->ss->closing))
		return -ESHUTDOWN;
	return cm_ring_push_untrusted(x->ring, &cm_seg_geom, x->rec) == 0;
}

/* Waits for a request; false when the session is closing. */
static bool ino_lane_wait(ino_session *ss, cm_ring *req, cm_fs_req *rq)
{
	struct ino_lane_poll_arg x = {ss, req, rq};

	return cm_wait(&req->own_not_empty, ino_lane_req_poll, &x, -1, 200) > 0;
}

/* Puts the response; a client that does not take its responses is dropped
 * by waiting here until it does or the session closes. */
static void ino_lane_respond(ino_session *ss, cm_ring *resp, const cm_fs_resp *rs)
{
	struct ino_lane_poll_arg x = {ss, resp, (void *)rs};

	(void)cm_wait(&resp->not_full, ino_lane_resp_poll, &x, -1, 50);
}

void *ino_lane_main(void *arg)
{
	struct ino_lane_arg *la = arg;
	ino_session *ss = la->ss;
	cm_ring *req = cm_seg_req(ss->seg, la->lane), *resp = cm_seg_resp(ss->seg, la->lane);
	uint8_t *data = cm_seg_data(ss->seg, la->lane);
	_Alignas(8) uint8_t rqbuf[CM_FS_REC_SIZE], rsbuf[CM_FS_REC_SIZE];
	cm_fs_req *rq = (cm_fs_req *)rqbuf;
	cm_fs_resp *rs = (cm_fs_resp *)rsbuf;

	free(la);
	while (ino_lane_wait(ss, req, rq)) {
		memset(rsbuf, 0, sizeof(rsbuf));
		rs->hdr = rq->hdr;
		ino_dispatch(ss, rq, rs, data);
		cm_ring_consume(req);
		ino_lane_respond(ss, resp, rs);
	}
	ino_thread_bdev_close();
	ino_txn_thread_end();
	return NULL;
}
