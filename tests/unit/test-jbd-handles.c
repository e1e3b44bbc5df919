/* test-jbd-handles.c - the handle side of the run-time journal, in one
 * arena shared by forked processes, with the commit's state changes made by
 * hand where a test needs them: credits and nesting, the lists buffers go
 * to, forget giving credits back, revoke and its cancellation, a start that
 * waits while the running transaction is locked, frozen copies for a
 * buffer the committing transaction owns, a wait for a buffer under log
 * I/O, a handle joined from a second process (changing a bitmap under
 * bh_state with its committed copy, as alloc-svc does), commit waits, the
 * pre-commit hook, abort; and jbd_check after each step, what it catches,
 * and (lockdep builds) the check at a state change. Runs in both locking
 * modes. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/jbd/commit.h"
#include "../../common/jbd/runtime.h"
#include "t_arena.h"
#include "tap.h"

#define T_BS 1024u
#define T_LOG 1024u
#define T_SEQ 5u

/* In the arena, for the children. */
struct t_shared {
	_Atomic uint32_t step;      /* the parent moves the children on */
	_Atomic uint32_t child_tid; /* what a child's handle got */
	_Atomic int32_t child_r;
	_Atomic uint64_t token;
};

static cm_arena *t_a;
static cm_bcache *t_c;
static jbd_ctx *t_jc;
static struct t_shared *t_sh;

static cm_bh *t_buf(uint64_t blk, uint8_t fill)
{
	cm_bh *bh = NULL;

	if (cm_bcache_getblk(t_c, blk, &bh) < 0)
		return NULL;
	if (!cm_bh_test(bh, CM_BH_UPTODATE)) {
		memset(cm_bh_data(t_c, bh), fill, T_BS);
		cm_bh_set_uptodate(bh);
	}
	return bh;
}

static jbd_jh *t_jh(cm_bh *bh)
{
	return bh->b_jh ? jbd_jh_of(t_jc, bh) : NULL;
}

static void t_setup(enum cm_locking_mode mode)
{
	static uint32_t logmap[T_LOG];
	jbd_geometry g = {
		.block_size = T_BS, .fs_blocks = 8192, .first = 1, .last = T_LOG,
		.sequence = T_SEQ, .logmap = logmap, .fs_sb_block = 1,
		.data_mode = JBD_DATA_ORDERED,
	};
	cm_layout *l;
	cm_off off;

	for (uint32_t i = 0; i < T_LOG; i++)
		logmap[i] = 4000 + i;
	t_a = t_arena_new(mode);
	l = cm_layout_get(t_a);
	t_sh = cm_arena_ptr(t_a, cm_arena_alloc(t_a, sizeof(*t_sh), 64), sizeof(*t_sh));
	if (cm_bcache_create(t_a, 1u << 20, T_BS, &off) < 0 || !t_sh)
		exit(99);
	atomic_store(&l->bcache, off);
	t_is_int(jbd_attach(t_a, NULL, 0, &t_jc), -ENOENT, "no journal before jbd_create");
	t_is_int(jbd_create(t_a, &g, &off), 0, "journal created in the arena");
	if (cm_bcache_attach(t_a, atomic_load(&l->bcache), &t_c) < 0)
		exit(99);
	t_is_int(jbd_attach(t_a, t_c, 1, &t_jc), 0, "attached");
}

static void t_teardown(void)
{
	t_jc = jbd_detach(t_jc);
	t_c = cm_bcache_detach(t_c);
	t_a = cm_arena_free(t_a);
}

/* RUNNING -> LOCKED by hand, as jbd_commit_lock does without waiting for
 * the handles; LOCKED -> FLUSH through jbd_commit_switch. */
static jbd_transaction *t_lock_running(void)
{
	jbd_transaction *t = jbd_t(t_jc, t_jc->j->j_running);

	if (!t)
		exit(99);
	atomic_store(&t->t_state, JBD_T_LOCKED);
	return t;
}

static void t_switch(jbd_transaction *t)
{
	if (jbd_commit_switch(t_jc, t) < 0)
		exit(99);
}

static void t_credits(void)
{
	jbd_handle *h, *h2;
	jbd_transaction *t;
	cm_bh *a = t_buf(100, 0x11), *b = t_buf(101, 0x22);

	t_is_int(jbd_start(t_jc, 257, &h), -ENOSPC, "more credits than a transaction holds: ENOSPC");
	t_is_int(jbd_start(t_jc, 10, &h), 0, "start with 10 credits");
	t_is_int(jbd_handle_tid(h), T_SEQ, "first transaction has the journal's sequence");
	t = jbd_t(t_jc, h->h_transaction);
	t_is_int(jbd_start(t_jc, 3, &h2), 0, "nested start");
	t_ok(h2 == h && h->h_ref == 2, "nesting gives the same handle");
	jbd_stop(t_jc, h2);
	t_is_int(t->t_updates, 1, "one update open");
	t_is_int(jbd_dirty_metadata(t_jc, h, a), -EINVAL, "dirty without write access refused");
	t_is_int(jbd_get_write_access(t_jc, h, a), 0, "write access");
	t_is_int(t_jh(a)->b_jlist, JBD_RESERVED, "on the reserved list");
	memset(cm_bh_data(t_c, a), 0x33, T_BS);
	t_is_int(jbd_dirty_metadata(t_jc, h, a), 0, "dirty metadata");
	t_is_int(jbd_dirty_metadata(t_jc, h, a), 0, "dirty again");
	t_is_int(t_jh(a)->b_jlist, JBD_METADATA, "on the metadata list");
	t_is_int(h->h_buffer_credits, 9, "one credit per distinct buffer");
	t_is_int(t->t_nr_buffers, 1, "t_nr_buffers counts it");
	jbd_get_write_access(t_jc, h, b);
	jbd_dirty_metadata(t_jc, h, b);
	t_is_int(jbd_forget(t_jc, h, b), 0, "forget a buffer dirtied in this transaction");
	t_is_int(h->h_buffer_credits, 9, "its credit comes back");
	t_ok(!b->b_jh, "and its journal head is gone");
	t_is_int(jbd_revoke(t_jc, h, 200, NULL), 0, "revoke a block");
	t_is_int(jbd_revoke(t_jc, h, 200, NULL), -EIO, "a second revoke in one transaction: EIO");
	h->h_err = 0;
	cm_bh *c = t_buf(200, 0);
	t_is_int(jbd_get_write_access(t_jc, h, c), 0, "write access to the revoked block");
	t_is_int(t->t_revoke_records, 0, "cancels its revoke");
	t_is_int(jbd_stop(t_jc, h), 0, "stop");
	t_is_int(t->t_updates, 0, "no update open");
	t_is_int(t->t_outstanding_credits, 1, "outstanding credits: those used");
	t_ok(jbd_check(t_jc), "invariants hold");
	cm_bcache_put(t_c, a);
	cm_bcache_put(t_c, b);
	cm_bcache_put(t_c, c);
}

static int t_child_start(void *arg)
{
	jbd_handle *h;
	int r;

	(void)arg;
	r = jbd_start(t_jc, 4, &h);
	atomic_store(&t_sh->child_r, r);
	if (r < 0)
		return 1;
	atomic_store(&t_sh->child_tid, jbd_handle_tid(h));
	return jbd_stop(t_jc, h) < 0;
}

static void t_locked_wait(void)
{
	jbd_transaction *t = t_lock_running();
	pid_t pid;

	atomic_store(&t_sh->child_tid, 0);
	pid = t_fork(t_child_start, NULL);
	usleep(200000);
	t_is_int(atomic_load(&t_sh->child_tid), 0, "a start waits while the transaction is LOCKED");
	t_switch(t);
	t_ok(t_exited_ok(t_wait(pid, 10000)), "it goes on once the commit switched");
	t_is_int(atomic_load(&t_sh->child_tid), T_SEQ + 1, "in a new running transaction");
	t_ok(jbd_check(t_jc), "invariants hold");
}

static int t_child_shadow(void *arg)
{
	jbd_handle *h;
	cm_bh *bh = t_buf(100, 0);
	int r;

	(void)arg;
	if (jbd_start(t_jc, 4, &h) < 0)
		return 1;
	r = jbd_get_write_access(t_jc, h, bh);
	atomic_store(&t_sh->child_r, r == 0 ? 1 : r);
	jbd_stop(t_jc, h);
	return r < 0;
}

static void t_frozen(void)
{
	cm_bh *a = t_buf(100, 0);
	jbd_jh *jh = t_jh(a);
	jbd_transaction *ct = jbd_t(t_jc, t_jc->j->j_committing);
	jbd_handle *h;
	pid_t pid;

	t_ok(jh && jbd_t(t_jc, jh->b_transaction) == ct, "the committing transaction owns block 100");
	/* Log I/O under way: the buffer is the shadow of its log copy. */
	jbd_lock(t_jc, jbd_list_lock(t_jc));
	__jbd_file_buffer(t_jc, jh, ct, JBD_SHADOW);
	jbd_unlock(t_jc, jbd_list_lock(t_jc));
	atomic_store(&t_sh->child_r, 0);
	pid = t_fork(t_child_shadow, NULL);
	usleep(200000);
	t_is_int(atomic_load(&t_sh->child_r), 0, "write access waits while the buffer is JBD_SHADOW");
	jbd_lock(t_jc, jbd_list_lock(t_jc));
	__jbd_file_buffer(t_jc, jh, ct, JBD_FORGET);
	jbd_unlock(t_jc, jbd_list_lock(t_jc));
	cm_event_signal(&t_jc->j->j_wait_unshadow);
	t_ok(t_exited_ok(t_wait(pid, 10000)), "and goes on when the I/O ends");
	t_is_int(atomic_load(&t_sh->child_r), 1, "with write access");
	t_ok(!jh->b_frozen_data, "no frozen copy: the commit no longer needs the contents");
	t_ok(jh->b_next_transaction && jh->b_next_transaction != jh->b_transaction,
	     "the running transaction waits for the buffer");

	/* Before its log I/O: a frozen copy keeps what the commit logs. */
	jh->b_next_transaction = 0;
	jbd_lock(t_jc, jbd_list_lock(t_jc));
	__jbd_file_buffer(t_jc, jh, ct, JBD_METADATA);
	jbd_unlock(t_jc, jbd_list_lock(t_jc));
	jbd_start(t_jc, 4, &h);
	t_is_int(jbd_get_undo_access(t_jc, h, a), 0, "undo access to a buffer being committed");
	t_ok(jh->b_frozen_data != 0, "makes a frozen copy");
	t_ok(jh->b_committed_data != 0, "and a committed copy");
	memset(cm_bh_data(t_c, a), 0x44, T_BS);
	jbd_dirty_metadata(t_jc, h, a);
	t_is_int(((uint8_t *)jbd_copy_ptr(t_jc, jh->b_frozen_data))[7], 0x33,
		 "the frozen copy keeps the committed contents");
	t_is_int(((const uint8_t *)jbd_committed_data(t_jc, a))[7], 0x33,
		 "so does the committed copy");
	t_is_int(jh->b_jlist, JBD_METADATA, "the buffer stays on the committing list");
	t_is_int(jbd_forget(t_jc, h, a), -EIO, "a buffer with a committed copy is not forgotten");
	h->h_err = 0;
	jbd_stop(t_jc, h);
	t_ok(jbd_check(t_jc), "invariants hold");
	cm_bcache_put(t_c, a);
}

static int t_child_join(void *arg)
{
	jbd_handle *h;
	cm_bh *bh = t_buf(300, 0x55);

	(void)arg;
	while (atomic_load(&t_sh->step) != 1)
		usleep(1000);
	if (jbd_join(t_jc, 12345, &h) != -EINVAL)
		return 2;
	if (jbd_join(t_jc, atomic_load(&t_sh->token), &h) < 0)
		return 3;
	if (jbd_get_write_access(t_jc, h, bh) < 0 || jbd_dirty_metadata(t_jc, h, bh) < 0)
		return 4;
	/* A bitmap as alloc-svc changes one inside a join: in big mode the
	 * joiner holds the big lock, and bh_state must not lock it again. */
	cm_bh *map = t_buf(301, 0);
	if (jbd_get_undo_access(t_jc, h, map) < 0 || jbd_lock_bh_state(t_jc, map) < 0)
		return 6;
	const uint8_t *committed = jbd_committed_data(t_jc, map);
	((uint8_t *)cm_bh_data(t_c, map))[0] |= 1;
	jbd_unlock_bh_state(t_jc, map);
	if (!committed || committed[0] != 0 || jbd_dirty_metadata(t_jc, h, map) < 0)
		return 7;
	cm_bcache_put(t_c, map);
	atomic_store(&t_sh->child_tid, jbd_handle_tid(h));
	if (jbd_stop(t_jc, h) < 0)
		return 5;
	atomic_store(&t_sh->step, 2);
	return 0;
}

static void t_join(void)
{
	pid_t pid = t_fork(t_child_join, NULL);
	jbd_transaction *t;
	jbd_handle *h;
	cm_mutex *big;
	cm_bh *bh;
	int status;

	jbd_start(t_jc, 5, &h);
	t = jbd_t(t_jc, h->h_transaction);
	atomic_store(&t_sh->token, jbd_handle_token(t_jc, h));
	atomic_store(&t_sh->step, 1);
	/* The owner waits for the joiner as on a ring: in big mode it gives
	 * up the big lock meanwhile, as every sleep in ext3d does. */
	big = cm_big_release();
	status = t_wait(pid, 10000);
	cm_big_reacquire(big);
	t_ok(t_exited_ok(status), "a second process joins the handle and works in it, "
	     "a bitmap with its committed copy under bh_state too");
	t_is_int(atomic_load(&t_sh->child_tid), h->h_tid, "in the same transaction");
	t_is_int(h->h_buffer_credits, 3, "using the owner's credits");
	t_is_int(h->h_ref, 1, "the join ended");
	t_is_int(t->t_updates, 1, "the owner's update is the only one");
	bh = t_buf(300, 0);
	t_ok(t_jh(bh) && t_jh(bh)->b_jlist == JBD_METADATA &&
	     jbd_t(t_jc, t_jh(bh)->b_transaction) == t, "its buffer is in the transaction");
	t_is_int(jbd_stop(t_jc, h), 0, "the owner stops");
	cm_bcache_put(t_c, bh);
}

static int t_child_wait(void *arg)
{
	return jbd_wait_commit(t_jc, (uint32_t)(uintptr_t)arg) != 0;
}

static void t_commit_wait(void)
{
	uint32_t tid;
	pid_t pid;

	t_is_int(jbd_force_commit(t_jc, &tid), 0, "force commit");
	t_is_int(tid, T_SEQ + 1, "names the running transaction");
	t_is_int(t_jc->j->j_commit_request, tid, "and asks for its commit");
	pid = t_fork(t_child_wait, (void *)(uintptr_t)tid);
	usleep(100000);
	t_is_int(waitpid(pid, NULL, WNOHANG), 0, "a wait for the commit waits");
	atomic_store(&t_jc->j->j_commit_sequence, tid);
	cm_event_signal(&t_jc->j->j_wait_done_commit);
	t_ok(t_exited_ok(t_wait(pid, 10000)), "and returns once it is committed");
}

struct t_hook {
	int calls;
	bool use;            /* dirty a buffer with the hook's credit */
	int32_t credits;     /* what the hook's handle held */
	uint32_t ti;         /* its transaction */
	int r;
};

static void t_precommit_fn(void *ctx, jbd_ctx *jc, jbd_handle *h)
{
	struct t_hook *k = ctx;
	cm_bh *bh = t_buf(400, 0);

	k->calls++;
	k->credits = h->h_buffer_credits;
	k->ti = h->h_transaction;
	if (k->use) {
		k->r = jbd_get_write_access(jc, h, bh);
		memset(cm_bh_data(t_c, bh), 0x77, T_BS);
		if (k->r == 0)
			k->r = jbd_dirty_metadata(jc, h, bh);
	}
	cm_bcache_put(t_c, bh);
}

/* The pre-commit hook on a transaction locked with no update open: a
 * handle on it with JBD_PRECOMMIT_CREDITS, the credits it did not use
 * given back, what it dirtied on the transaction's metadata list. */
static void t_precommit(void)
{
	struct t_hook k = {0};
	jbd_transaction *t;
	jbd_handle *h;
	int32_t before;
	cm_bh *bh;

	jbd_set_precommit(t_jc, t_precommit_fn, &k);
	jbd_start(t_jc, 2, &h);
	jbd_stop(t_jc, h);
	t = t_lock_running();
	before = t->t_outstanding_credits;
	t_is_int(jbd_run_precommit(t_jc, t), 0, "the pre-commit hook runs");
	t_ok(k.calls == 1 && k.credits == JBD_PRECOMMIT_CREDITS && k.ti == jbd_tidx(t_jc, t),
	     "once, with a handle on the locked transaction and its credits");
	t_is_int(t->t_outstanding_credits, before, "an unused credit goes back");
	k.use = true;
	t_is_int(jbd_run_precommit(t_jc, t), 0, "again, dirtying a buffer");
	t_is_int(k.r, 0, "write access and dirty_metadata through the hook's handle");
	t_is_int(t->t_outstanding_credits, before + 1, "the credit it used stays counted");
	t_is_int(t->t_updates, 0, "no update was opened");
	bh = t_buf(400, 0);
	t_ok(t_jh(bh) && t_jh(bh)->b_jlist == JBD_METADATA &&
	     jbd_t(t_jc, t_jh(bh)->b_transaction) == t, "the buffer is logged by the transaction");
	cm_bcache_put(t_c, bh);
	t_ok(jbd_check(t_jc), "invariants hold");
	jbd_set_precommit(t_jc, NULL, NULL);
}

/* A transaction that jbd_start did not make: RUNNING, but not j_running. */
static jbd_transaction *t_stray_transaction(void)
{
	jbd_transaction *t;

	jbd_lock(t_jc, jbd_state_lock(t_jc));
	t = __jbd_new_transaction(t_jc);
	jbd_unlock(t_jc, jbd_state_lock(t_jc));
	if (!t)
		exit(99);
	return t;
}

/* jbd_check finds each invariant broken by hand (and put back). */
static void t_check_catches(void)
{
	jbd_transaction *t = t_stray_transaction();
	jbd_transaction *ct = jbd_t(t_jc, t_jc->j->j_committing);

	t_ok(!jbd_check(t_jc), "jbd_check: a second RUNNING transaction breaks it");
	atomic_store(&t->t_state, JBD_T_FINISHED);
	t_ok(!jbd_check(t_jc), "jbd_check: a FINISHED transaction off the checkpoint ring too");
	jbd_free_transaction(t_jc, t);
	t_ok(ct && atomic_load(&ct->t_state) == JBD_T_FLUSH, "a transaction is in FLUSH");
	ct->t_updates = 1;
	t_ok(!jbd_check(t_jc), "jbd_check: a handle open on it breaks it");
	ct->t_updates = 0;
	t_ok(jbd_check(t_jc), "all put back, invariants hold");
}

/* A child breaks an invariant and moves a transaction to LOCKED: a
 * lockdep build checks the journal at that change, under j_state_lock,
 * and aborts. */
#ifdef CM_LOCKDEP
static int t_child_stray_commit(void *arg)
{
	struct rlimit none = {0, 0};
	jbd_transaction *t;
	jbd_handle *h;

	(void)arg;
	(void)setrlimit(RLIMIT_CORE, &none);
	if (jbd_start(t_jc, 1, &h) < 0 || jbd_stop(t_jc, h) < 0)
		return 2;
	t_stray_transaction();
	return jbd_commit_lock(t_jc, &t) < 0 ? 3 : 0;
}

static void t_check_at_changes(void)
{
	int status = t_wait(t_fork(t_child_stray_commit, NULL), 10000);

	t_ok(status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	     "a state change on a broken journal aborts (status 0x%x)", (unsigned)status);
}
#else
static void t_check_at_changes(void)
{
	t_skip("built without lockdep", "a state change on a broken journal aborts");
}
#endif

static void t_abort(void)
{
	jbd_handle *h;

	jbd_abort(t_jc, -EIO);
	t_is_int(jbd_start(t_jc, 1, &h), -EROFS, "after an abort a start gets EROFS");
	t_is_int(jbd_wait_commit(t_jc, 1000), -EIO, "and a commit wait EIO");
}

int main(void)
{
	enum cm_locking_mode modes[] = {CM_LOCKING_FINE, CM_LOCKING_BIG};

	for (int m = 0; m < 2; m++) {
		t_diag("locking=%s", m ? "big" : "fine");
		t_setup(modes[m]);
		t_credits();
		t_precommit();
		t_locked_wait();
		t_frozen();
		t_join();
		t_commit_wait();
		t_check_catches();
		t_abort();
		t_teardown();
		/* On an arena of its own: the child dies holding j_state_lock. */
		t_setup(modes[m]);
		t_check_at_changes();
		t_teardown();
	}
	return t_done();
}
