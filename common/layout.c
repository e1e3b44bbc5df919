/* layout.c - lay out an instance arena and find things in it; see layout.h.
 * Channel rings are carved here, once, so a channel keeps its rings for the
 * arena's life and clients only reset them when they open the channel. */
#include "layout.h"

#include <errno.h>
#include <string.h>

#include "chan.h"
#include "log.h"

static cm_layout *cm_layout_alloc(cm_arena *a, cm_off *ret_off)
{
	cm_off off = cm_arena_alloc(a, sizeof(cm_layout), 64);

	*ret_off = off;
	return off ? cm_arena_ptr(a, off, sizeof(cm_layout)) : NULL;
}

int cm_layout_init(cm_arena *a, enum cm_locking_mode mode)
{
	cm_off off, chans;
	cm_layout *l = cm_layout_alloc(a, &off);
	int r;

	if (!l)
		return -ENOMEM;
	r = cm_lockset_init(&l->locks, mode);
	if (r < 0)
		return r;
	for (int i = 0; i < CM_MAX_SVCS; i++)
		cm_event_init(&l->svcs[i].doorbell);
	chans = cm_arena_alloc(a, sizeof(cm_chan) * CM_MAX_CHANS, 64);
	if (!chans)
		return -ENOMEM;
	l->chans = chans;
	l->nchans = CM_MAX_CHANS;
	for (uint32_t i = 0; i < l->nchans; i++) {
		r = cm_chan_carve(a, cm_arena_ptr(a, chans + i * sizeof(cm_chan), sizeof(cm_chan)));
		if (r < 0)
			return r;
	}
	a->hdr->layout = off;
	return 0;
}

cm_layout *cm_layout_get(cm_arena *a)
{
	return cm_arena_ptr(a, a->hdr->layout, sizeof(cm_layout));
}

int cm_layout_find_svc(cm_layout *l, const char *name)
{
	for (int i = 0; i < CM_MAX_SVCS; i++)
		if (strncmp(l->svcs[i].name, name, CM_SVC_NAME_MAX) == 0)
			return i;
	return -ENOENT;
}

static void cm_layout_dead_owner(cm_mutex *m, int32_t dead_pid, void *ctx)
{
	cm_dead_box *box = ctx;

	atomic_store(&box->pid, dead_pid);
	memcpy(box->lock, m->name, sizeof(box->lock));
	atomic_fetch_add(&box->reports, 1);
}

void cm_layout_report_dead_owners(cm_layout *l)
{
	cm_lock_set_dead_owner_hook(cm_layout_dead_owner, &l->dead);
}
