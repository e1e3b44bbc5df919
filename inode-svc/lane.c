/* lane.c - the worker thread of one lane of a session: take a request from
 * the lane's request ring, dispatch it, put the response on the response
 * ring. The rings are the client's memory: read with the server's own
 * geometry (cm_ring_*_untrusted). Ends when the session closes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define INO_LANE_SPIN_NS 50000

/* Waits for a request; false when the session is closing. */
static bool ino_lane_wait(ino_session *ss, cm_ring *req, cm_fs_req *rq)
{
	uint64_t spin_end = cm_now_ns() + INO_LANE_SPIN_NS;
	cm_event *ev = &req->own_not_empty;

	for (;;) {
		if (atomic_load(&ss->closing))
			return false;
		if (cm_ring_peek_untrusted(req, &cm_seg_geom, rq) == 0)
			return true;
		if (cm_now_ns() < spin_end) {
			cm_cpu_relax();
			continue;
		}
		uint32_t seq = cm_event_prepare(ev);
		if (cm_ring_peek_untrusted(req, &cm_seg_geom, rq) == 0) {
			cm_event_cancel(ev);
			return true;
		}
		(void)cm_event_wait(ev, seq, 200);
	}
}

/* Puts the response; a client that does not take its responses is dropped
 * by waiting here until it does or the session closes. */
static void ino_lane_respond(ino_session *ss, cm_ring *resp, const cm_fs_resp *rs)
{
	while (cm_ring_push_untrusted(resp, &cm_seg_geom, rs) == -EAGAIN) {
		if (atomic_load(&ss->closing))
			return;
		uint32_t seq = cm_event_prepare(&resp->not_full);
		(void)cm_event_wait(&resp->not_full, seq, 50);
	}
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
