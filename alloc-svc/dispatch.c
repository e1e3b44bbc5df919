/* dispatch.c - allocproto.h's requests: each checked, run inside the
 * caller's handle (joined here, the join stopped before the answer), and
 * answered with 0 or -errno: -EPROTO for a record of another version,
 * -EPROTONOSUPPORT for an unknown operation, -EROFS without a journal,
 * -EINVAL for a token that names no open handle. The corruption and bad
 * requests the handlers find are logged here. */
#include <errno.h>

#include "internal.h"
#include "log.h"

typedef int al_handler(al_req *q, const cm_al_rec *rq, cm_al_rec *rs);

static int al_h_alloc_blocks(al_req *q, const cm_al_rec *rq, cm_al_rec *rs)
{
	uint64_t first;
	uint32_t got;
	int r = al_alloc_blocks(q, rq->goal, rq->count, &first, &got);

	if (r == 0) {
		rs->result = first;
		rs->count = got;
	}
	return r;
}

static int al_h_free_blocks(al_req *q, const cm_al_rec *rq, cm_al_rec *rs)
{
	return al_free_blocks(q, rq->goal, rq->count);
}

static int al_h_alloc_inode(al_req *q, const cm_al_rec *rq, cm_al_rec *rs)
{
	uint32_t ino;
	int r;

	if (rq->goal > UINT32_MAX)
		return -EINVAL;
	r = al_alloc_inode(q, (uint32_t)rq->goal, rq->mode, &ino);
	if (r == 0) {
		rs->result = ino;
		rs->count = 1;
	}
	return r;
}

static int al_h_free_inode(al_req *q, const cm_al_rec *rq, cm_al_rec *rs)
{
	if (rq->goal > UINT32_MAX)
		return al_refuse("freeing a nonexistent inode", rq->goal);
	return al_free_inode(q, (uint32_t)rq->goal, rq->mode);
}

static const struct {
	uint16_t op;
	al_handler *fn;
	const char *name;
} al_ops[] = {
	{CM_AL_ALLOC_BLOCKS, al_h_alloc_blocks, "alloc_blocks"},
	{CM_AL_FREE_BLOCKS, al_h_free_blocks, "free_blocks"},
	{CM_AL_ALLOC_INODE, al_h_alloc_inode, "alloc_inode"},
	{CM_AL_FREE_INODE, al_h_free_inode, "free_inode"},
};

int al_corrupt(al_svc *s, uint32_t g, const char *what, uint64_t nr)
{
	if (g < s->g.group_count && !atomic_exchange(&s->warned[g], 1))
		cm_err("group %u is corrupt: %s %llu; allocations go round it "
		       "(run e2fsck)", g, what, (unsigned long long)nr);
	return -EUCLEAN;
}

int al_refuse(const char *what, uint64_t nr)
{
	cm_warn("refusing a request: %s %llu", what, (unsigned long long)nr);
	return -EUCLEAN;
}

int al_exec(void *ctx, const void *req, void *resp)
{
	al_worker *w = ctx;
	const cm_al_rec *rq = req;
	cm_al_rec *rs = resp;
	al_req q = {.w = w, .flags = rq->flags};
	int r, r2;

	rs->result = 0;
	rs->count = 0;
	if (rq->hdr.version != CM_AL_VERSION)
		return -EPROTO;
	if (!w->s->jc)
		return -EROFS;
	for (size_t i = 0; i < sizeof(al_ops) / sizeof(al_ops[0]); i++) {
		if (al_ops[i].op != rq->hdr.op)
			continue;
		r = jbd_join(w->s->jc, rq->handle, &q.h);
		if (r < 0)
			return r;
		r = al_ops[i].fn(&q, rq, rs);
		r2 = jbd_stop(w->s->jc, q.h);
		if (r < 0 && r != -ENOSPC && r != -EUCLEAN)
			cm_debug("%s: %d", al_ops[i].name, r);
		return r < 0 ? r : r2;
	}
	return -EPROTONOSUPPORT;
}
