/*
 * check.c - the invariants of journal.h. jbd_check checks the whole journal
 * while nothing else runs (tests call it between steps; it takes no lock);
 * jbd_check_locked checks it at a state change of one transaction, each
 * part under the lock that guards what it reads, and lockdep builds call it
 * at every change (JBD_CHECK_LOCKED, runtime.h).
 *
 *   [j_state_lock]  j_running is RUNNING or LOCKED, j_committing FLUSH or
 *                   COMMIT; at most one transaction is RUNNING and at most
 *                   one is between LOCKED and COMMIT, each named by its
 *                   pointer; the log accounting stays inside the log.
 *   [t_handle_lock] t_updates and t_outstanding_credits are not negative,
 *                   and no handle is open from FLUSH on.
 *   [j_list_lock]   every journal head on a list of t names t and that
 *                   list, and t_nr_buffers counts its METADATA list; the
 *                   lists a state empties stay empty (RESERVED from FLUSH
 *                   on, all but FORGET from COMMIT on, all once FINISHED);
 *                   every head on t's checkpoint list names t;
 *                   j_checkpoint_transactions is a ring of every FINISHED
 *                   transaction, oldest first (and j_state_lock for their
 *                   states).
 *
 * An aborted journal keeps only the shape of its lists: a failed commit
 * leaves its transaction in the state where the error met it.
 */
#include <stdio.h>

#include "runtime.h"

static bool jbd_check_fail(const char *what, uint32_t a, uint32_t b)
{
	fprintf(stderr, "jbd_check: %s (%u, %u)\n", what, a, b);
	return false;
}

static bool jbd_check_aborted(jbd_ctx *jc)
{
	return atomic_load(&jc->j->j_flags) & JBD_F_ABORTED;
}

/* The states against j_running and j_committing; *finished counts the
 * FINISHED ones. Called with j_state_lock held. */
static bool jbd_check_states(jbd_ctx *jc, uint32_t *finished)
{
	jbd_journal *j = jc->j;
	uint32_t running = 0, committing = 0;

	*finished = 0;
	if (j->j_head < j->j_first || j->j_head >= j->j_last || j->j_free > j->j_last - j->j_first)
		return jbd_check_fail("log accounting", j->j_head, j->j_free);
	for (uint32_t i = 0; i < jc->tpool->nobj; i++) {
		jbd_transaction *t = cm_pool_obj(jc->a, jc->tpool, i);
		uint32_t s = atomic_load(&t->t_state), ti = i + 1;

		if (s == JBD_T_FINISHED)
			++*finished;
		if (s == JBD_T_RUNNING)
			running++;
		if (s >= JBD_T_LOCKED && s <= JBD_T_COMMIT)
			committing++;
		if (!s || jbd_check_aborted(jc))
			continue;
		if ((s <= JBD_T_LOCKED) != (j->j_running == ti))
			return jbd_check_fail("j_running and the RUNNING or LOCKED one differ", ti,
					      s);
		if ((s == JBD_T_FLUSH || s == JBD_T_COMMIT) != (j->j_committing == ti))
			return jbd_check_fail("j_committing and the one in FLUSH or COMMIT differ",
					      ti, s);
	}
	if (jbd_check_aborted(jc))
		return true;
	if (running > 1)
		return jbd_check_fail("more than one RUNNING transaction", running, 0);
	if (committing > 1)
		return jbd_check_fail("more than one between LOCKED and COMMIT", committing, 0);
	if (j->j_running && !jbd_t(jc, j->j_running)->t_state)
		return jbd_check_fail("j_running names a free transaction", j->j_running, 0);
	if (j->j_committing && !jbd_t(jc, j->j_committing)->t_state)
		return jbd_check_fail("j_committing names a free transaction", j->j_committing, 0);
	return true;
}

/* Called with t_handle_lock of t held. */
static bool jbd_check_updates(jbd_ctx *jc, jbd_transaction *t)
{
	if (t->t_updates < 0 || t->t_outstanding_credits < 0)
		return jbd_check_fail("negative updates or credits", (uint32_t)t->t_updates,
				      (uint32_t)t->t_outstanding_credits);
	if (!jbd_check_aborted(jc) && atomic_load(&t->t_state) >= JBD_T_FLUSH && t->t_updates)
		return jbd_check_fail("a handle open past LOCKED", t->t_tid,
				      (uint32_t)t->t_updates);
	return true;
}

/* Counts the ring at head (jlist < 0: a checkpoint list) and checks that
 * each head on it names t. Called with j_list_lock held. */
static bool jbd_check_list(jbd_ctx *jc, jbd_transaction *t, uint32_t head, int jlist,
			   uint32_t *count)
{
	uint32_t ti = jbd_tidx(jc, t), ji = head, n = 0;
	jbd_jh *jh;

	while (ji && (jh = jbd_jh_at(jc, ji))) {
		if (jlist >= 0 && (jh->b_transaction != ti || jh->b_jlist != (uint32_t)jlist))
			return jbd_check_fail("head on a list it does not name", ji,
					      (uint32_t)jlist);
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

/* Whether list jlist may hold buffers in state s. */
static bool jbd_list_allowed(uint32_t s, int jlist)
{
	if (s == JBD_T_FINISHED)
		return false;
	if (s == JBD_T_COMMIT)
		return jlist == JBD_FORGET;
	return s != JBD_T_FLUSH || jlist != JBD_RESERVED;
}

/* Called with j_list_lock held (and j_state_lock for the states). */
static bool jbd_check_lists(jbd_ctx *jc, jbd_transaction *t)
{
	uint32_t s = atomic_load(&t->t_state), n;

	for (int l = 1; l < JBD_NLISTS; l++) {
		if (!jbd_check_list(jc, t, t->t_lists[l], l, &n))
			return false;
		if (l == JBD_METADATA && n != t->t_nr_buffers)
			return jbd_check_fail("t_nr_buffers", n, t->t_nr_buffers);
		if (n && !jbd_check_aborted(jc) && !jbd_list_allowed(s, l))
			return jbd_check_fail("a list its state empties holds buffers", t->t_tid,
					      (uint32_t)l);
	}
	return jbd_check_list(jc, t, t->t_checkpoint_list, -1, &n);
}

/* j_checkpoint_transactions: a well-linked ring of the FINISHED
 * transactions (finished of them) in tid order. Called with j_list_lock and j_state_lock held. */
static bool jbd_check_cp_ring(jbd_ctx *jc, uint32_t finished)
{
	uint32_t first = jc->j->j_checkpoint_transactions, ti = first, n = 0;

	while (ti) {
		jbd_transaction *t = jbd_t(jc, ti), *next = jbd_t(jc, t->t_cpnext);

		if (atomic_load(&t->t_state) != JBD_T_FINISHED)
			return jbd_check_fail("checkpoint ring holds one not FINISHED", t->t_tid,
					      t->t_state);
		if (!next || next->t_cpprev != ti)
			return jbd_check_fail("checkpoint ring badly linked", t->t_tid,
					      t->t_cpnext);
		if (++n > JBD_MAX_TRANSACTIONS)
			return jbd_check_fail("checkpoint ring does not end", ti, n);
		if ((ti = t->t_cpnext) == first)
			break;
		if ((int32_t)(next->t_tid - t->t_tid) <= 0)
			return jbd_check_fail("checkpoint ring out of order", t->t_tid,
					      next->t_tid);
	}
	if (n != finished)
		return jbd_check_fail("FINISHED transactions off the checkpoint ring", finished, n);
	return true;
}

bool jbd_check(jbd_ctx *jc)
{
	uint32_t finished;

	if (!jbd_check_states(jc, &finished))
		return false;
	for (uint32_t i = 0; i < jc->tpool->nobj; i++) {
		jbd_transaction *t = cm_pool_obj(jc->a, jc->tpool, i);

		if (t->t_state && (!jbd_check_updates(jc, t) || !jbd_check_lists(jc, t)))
			return false;
	}
	return jbd_check_cp_ring(jc, finished);
}

bool jbd_check_locked(jbd_ctx *jc, jbd_transaction *t)
{
	uint32_t finished;
	bool ok;

	cm_mutex_assert_held(jc->big ? &jc->ls->big_lock : jbd_state_lock(jc));
	if (!jbd_check_states(jc, &finished))
		return false;
	if (t && t->t_state) {
		if (jbd_lock(jc, &t->t_handle_lock) < 0)
			return true; /* lost with its holder: nothing left to check */
		ok = jbd_check_updates(jc, t);
		jbd_unlock(jc, &t->t_handle_lock);
		if (!ok)
			return false;
	}
	if (jbd_lock(jc, jbd_list_lock(jc)) < 0)
		return true;
	ok = (!t || !t->t_state || jbd_check_lists(jc, t)) && jbd_check_cp_ring(jc, finished);
	jbd_unlock(jc, jbd_list_lock(jc));
	return ok;
}
