/* lockset.c - initialise and walk the shared lock set; see lockset.h. */
#include "lockset.h"

#include <stdio.h>

int cm_lockset_init(cm_lockset *ls, enum cm_locking_mode mode)
{
	int r;

	ls->mode = mode;
	r = cm_mutex_init(&ls->big_lock, CM_RANK_BIG, "big_lock");
	if (!r)
		r = cm_mutex_init(&ls->j_state_lock, CM_RANK_J_STATE, "j_state_lock");
	if (!r)
		r = cm_mutex_init(&ls->j_list_lock, CM_RANK_J_LIST, "j_list_lock");
	if (!r)
		r = cm_mutex_init(&ls->j_revoke_lock, CM_RANK_J_REVOKE, "j_revoke_lock");
	for (int i = 0; !r && i < CM_BH_STRIPES; i++) {
		r = cm_mutex_init(&ls->bh_state[i], CM_RANK_BH_STATE, "bh_state");
		if (!r)
			r = cm_mutex_init(&ls->journal_head[i], CM_RANK_JOURNAL_HEAD,
					  "journal_head");
	}
	for (int i = 0; !r && i < CM_GROUP_LOCKS; i++)
		r = cm_mutex_init(&ls->group[i], CM_RANK_GROUP, "group");
	for (int i = 0; !r && i < CM_COUNTERS; i++)
		r = cm_mutex_init(&ls->counter[i], CM_RANK_COUNTER, "counter");
	return r;
}

void cm_lockset_foreach(cm_lockset *ls, void (*fn)(cm_mutex *m, void *ctx), void *ctx)
{
	fn(&ls->big_lock, ctx);
	fn(&ls->j_state_lock, ctx);
	fn(&ls->j_list_lock, ctx);
	fn(&ls->j_revoke_lock, ctx);
	for (int i = 0; i < CM_BH_STRIPES; i++)
		fn(&ls->bh_state[i], ctx);
	for (int i = 0; i < CM_BH_STRIPES; i++)
		fn(&ls->journal_head[i], ctx);
	for (int i = 0; i < CM_GROUP_LOCKS; i++)
		fn(&ls->group[i], ctx);
	for (int i = 0; i < CM_COUNTERS; i++)
		fn(&ls->counter[i], ctx);
}
