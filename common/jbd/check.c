/*
 * check.c - jbd_check: the invariants of journal.h, checked while nothing
 * else runs (tests call it between steps; it takes no lock).
 *
 *   - j_running is RUNNING, j_committing is between LOCKED and COMMIT;
 *   - every journal head on a list of transaction t names t and that list,
 *     and t_nr_buffers counts its JBD_METADATA list;
 *   - every head on t's checkpoint list names t as b_cp_transaction;
 *   - a transaction's t_updates and t_outstanding_credits are not negative;
 *   - the log accounting stays inside the log.
 */
#include <stdio.h>

#include "runtime.h"

static bool jbd_check_fail(const char *what, uint32_t a, uint32_t b)
{
	fprintf(stderr, "jbd_check: %s (%u, %u)\n", what, a, b);
	return false;
}

static bool jbd_check_list(jbd_ctx *jc, jbd_transaction *t, uint32_t head, int jlist,
			   uint32_t *count)
{
	uint32_t ti = jbd_tidx(jc, t), ji = head, n = 0;
	jbd_jh *jh;

	while (ji && (jh = jbd_jh_at(jc, ji))) {
		if (jlist >= 0 && (jh->b_transaction != ti || jh->b_jlist != (uint32_t)jlist))
			return jbd_check_fail("head on a list it does not name", ji, (uint32_t)jlist);
		if (jlist < 0 && jh->b_cp_transaction != ti)
			return jbd_check_fail("checkpoint head names another transaction", ji, ti);
		if (++n > jc->j->njheads)
			return jbd_check_fail("list does not end", ji, n);
		ji = jlist >= 0 ? jh->b_tnext : jh->b_cpnext;
		if (ji == head)
			break;
	}
	*count = n;
	return true;
}

static bool jbd_check_transaction(jbd_ctx *jc, jbd_transaction *t)
{
	uint32_t n;

	for (int l = 1; l < JBD_NLISTS; l++) {
		if (!jbd_check_list(jc, t, t->t_lists[l], l, &n))
			return false;
		if (l == JBD_METADATA && n != t->t_nr_buffers)
			return jbd_check_fail("t_nr_buffers", n, t->t_nr_buffers);
	}
	if (!jbd_check_list(jc, t, t->t_checkpoint_list, -1, &n))
		return false;
	if (t->t_updates < 0 || t->t_outstanding_credits < 0)
		return jbd_check_fail("negative updates or credits", (uint32_t)t->t_updates,
				      (uint32_t)t->t_outstanding_credits);
	return true;
}

bool jbd_check(jbd_ctx *jc)
{
	jbd_journal *j = jc->j;
	jbd_transaction *t;

	if ((t = jbd_t(jc, j->j_running)) && atomic_load(&t->t_state) != JBD_T_RUNNING &&
	    atomic_load(&t->t_state) != JBD_T_LOCKED)
		return jbd_check_fail("running transaction state", t->t_tid, t->t_state);
	if ((t = jbd_t(jc, j->j_committing)) &&
	    (atomic_load(&t->t_state) < JBD_T_LOCKED || atomic_load(&t->t_state) > JBD_T_COMMIT))
		return jbd_check_fail("committing transaction state", t->t_tid, t->t_state);
	if (j->j_head < j->j_first || j->j_head >= j->j_last || j->j_free > j->j_last - j->j_first)
		return jbd_check_fail("log accounting", j->j_head, j->j_free);
	for (uint32_t i = 0; i < jc->tpool->nobj; i++) {
		t = cm_pool_obj(jc->a, jc->tpool, i);
		if (t->t_state && !jbd_check_transaction(jc, t))
			return false;
	}
	return true;
}
