/* fcounter.c - fuzzy counters (fcounter.h): per-slot deltas folded into a
 * global value past a batch size under the counter's lock. */
#include "fcounter.h"

static cm_mutex *cm_fc_lock(cm_lockset *ls, const cm_fcounter *c)
{
	return &ls->counter[c->which % CM_COUNTERS];
}

void cm_fc_init(cm_fcounter *c, enum cm_fc_which which, int64_t value, int32_t batch)
{
	atomic_store(&c->count, value);
	c->batch = batch > 0 ? batch : CM_FC_DEFAULT_BATCH;
	c->which = which;
	for (int i = 0; i < CM_FC_SLOTS; i++)
		atomic_store(&c->slot[i].delta, 0);
}

int cm_fc_add(cm_lockset *ls, cm_fcounter *c, uint32_t slot, int64_t n)
{
	_Atomic int64_t *delta = &c->slot[slot % CM_FC_SLOTS].delta;
	int64_t d = atomic_fetch_add_explicit(delta, n, memory_order_relaxed) + n;
	int r;

	if (d < c->batch && d > -c->batch)
		return 0;
	r = cm_mutex_lock(cm_fc_lock(ls, c));
	if (r < 0)
		return r;
	/* Whatever the slot holds now, including adds that raced this one. */
	d = atomic_exchange_explicit(delta, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->count, d, memory_order_relaxed);
	cm_mutex_unlock(cm_fc_lock(ls, c));
	return 0;
}

int64_t cm_fc_read(const cm_fcounter *c)
{
	return atomic_load_explicit(&c->count, memory_order_relaxed);
}

int64_t cm_fc_read_positive(const cm_fcounter *c)
{
	int64_t v = cm_fc_read(c);

	return v < 0 ? 0 : v;
}

int cm_fc_sum(cm_lockset *ls, cm_fcounter *c, int64_t *ret)
{
	int64_t sum;
	int r = cm_mutex_lock(cm_fc_lock(ls, c));

	if (r < 0)
		return r;
	sum = atomic_load_explicit(&c->count, memory_order_relaxed);
	for (int i = 0; i < CM_FC_SLOTS; i++)
		sum += atomic_load_explicit(&c->slot[i].delta, memory_order_relaxed);
	cm_mutex_unlock(cm_fc_lock(ls, c));
	*ret = sum;
	return 0;
}
