/* test-chan.c - request/response channels (chan.h) against a real server
 * process: pipelined requests answered in order with the right results;
 * the server SIGKILLed and restarted under load (one response per request,
 * resubmission, no double execution except of the request the dead server
 * was executing); channels of a dead client released and reused, with and
 * without requests in flight; -EBUSY, -EAGAIN, error statuses; two client
 * processes at once; a client dead in the middle of claiming or closing a
 * channel; the scratch space a channel keeps across clients; serving
 * threads that share a service's channels. The exec log
 * in the arena counts executions per seq.
 * EXT3D_LONG=1 runs 10x the requests; EXT3D_SEED=n repeats the kill points.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "chan.h"
#include "layout.h"
#include "t_arena.h"
#include "t_env.h"
#include "tap.h"

#define T_VERSION 5
#define T_SVC "echo-svc"
#define T_IDLE_SVC "idle-svc"     /* a slot nobody serves */
#define T_CLIENTS 4
#define T_ACCS 16                 /* accumulators per client */
#define T_KILLS 5
#define T_NO_ECHO 0xdeadbeefdeadbeefULL

enum t_op {
	T_OP_ADD = 1,   /* acc[k] += value; answers the new sum and an echo */
	T_OP_FAIL = 2,  /* executes, then fails with -EIO */
	T_OP_SLOW = 3,  /* T_OP_ADD after sleeping 2 ms */
};

/* Requests and responses share this layout. */
struct t_msg {
	cm_rec_hdr hdr;
	uint32_t client;   /* whose exec log and accumulators */
	uint32_t k;        /* accumulator index */
	uint64_t value;
	uint64_t echo;     /* response: t_echo() of the request; request: T_NO_ECHO */
	uint64_t acc;      /* response: the accumulator after the add */
	uint8_t pad[CM_CHAN_REC_SIZE - sizeof(cm_rec_hdr) - 32];
};
_Static_assert(sizeof(struct t_msg) == CM_CHAN_REC_SIZE, "a message is one record");

/* What a client saw, written by the client, read by the parent after it
 * exits (reaped is also read while it runs). */
struct t_report {
	_Atomic uint64_t reaped;   /* responses received */
	uint64_t submitted;
	uint64_t order_errors;     /* a response not for the oldest request */
	uint64_t wrong;            /* a result that does not match the request */
	uint64_t bad_status;
	uint64_t replayed;         /* status 0 but no result (a replay that lost it) */
	uint64_t early_eagain;     /* submit -EAGAIN with fewer than DEPTH in flight */
	uint64_t resubmitted;      /* cm_chan_resubmitted() at the end */
	uint64_t owned;            /* channels owned by the client's pid */
	int64_t error;             /* first failed submit/reap/open */
	uint64_t ns;               /* time for the whole run */
};

/* One test's shared state, in the arena. */
struct t_state {
	cm_off execs[T_CLIENTS];          /* uint8_t per seq: times executed */
	uint64_t max_seq;                 /* execs hold seq 0..max_seq */
	_Atomic uint64_t acc[T_CLIENTS * T_ACCS];
	_Atomic uint64_t executing[T_CLIENTS]; /* seq whose exec last started */
	_Atomic uint32_t stop_server;
	_Atomic uint32_t stop_client;
	struct t_report rep[T_CLIENTS];
};

/* How a client runs its pipeline. */
struct t_run {
	uint32_t client;
	uint16_t op;
	uint64_t n;                /* requests, at least */
	bool until_stop;           /* then keep going until stop_client */
	bool check_acc;            /* nobody else adds to its accumulators */
	int timeout_ms;            /* per reap */
};

struct t_job {
	cm_off state;
	uint32_t id;
	uint64_t n;
};

static cm_arena *t_a;
static cm_off t_st_off;
static uint64_t t_seed;
static uint64_t t_scale = 1;
static int t_wait_ms = 60000;

/* ---- processes ---- */

/* A child running fn on a copy of a job. */
struct t_spawned {
	int (*fn)(const struct t_job *j);
	struct t_job job;
};

static int t_spawned_run(void *arg)
{
	const struct t_spawned *sp = arg;

	return sp->fn(&sp->job);
}

static pid_t t_spawn(int (*fn)(const struct t_job *j), uint32_t id, uint64_t n)
{
	struct t_spawned sp = {.fn = fn, .job = {.state = t_st_off, .id = id, .n = n}};

	return t_fork(t_spawned_run, &sp);
}

/* Waits until *word >= target: 0, or -1 if pid exited or time ran out. */
static int t_wait_progress(pid_t pid, _Atomic uint64_t *word, uint64_t target)
{
	uint64_t deadline = cm_now_ns() + (uint64_t)t_wait_ms * 1000000ULL;

	while (atomic_load(word) < target) {
		if (waitpid(pid, NULL, WNOHANG) != 0 || cm_now_ns() >= deadline)
			return -1;
		usleep(50);
	}
	return 0;
}

/* ---- the arena of one test ---- */

static struct t_state *t_state_at(cm_arena *m, cm_off off)
{
	return cm_arena_ptr(m, off, sizeof(struct t_state));
}

static uint8_t *t_execs(cm_arena *m, struct t_state *st, uint32_t client)
{
	return cm_arena_ptr(m, st->execs[client], st->max_seq + 1);
}

/* A fresh laid-out arena with two named slots and exec logs for nclients
 * clients of up to max_seq requests each; replaces the previous one. */
static struct t_state *t_arena_fresh(uint32_t nclients, uint64_t max_seq)
{
	struct t_state *st;
	cm_layout *l;
	int r;

	t_a = cm_arena_free(t_a);
	r = cm_arena_create(64 << 20, 16 << 20, 0, &t_a);
	if (r == 0)
		r = cm_layout_init(t_a, CM_LOCKING_FINE);
	t_st_off = r == 0 ? cm_arena_alloc(t_a, sizeof(*st), 64) : 0;
	if (!t_st_off) {
		printf("Bail out! arena: %s\n", strerror(r < 0 ? -r : ENOMEM));
		exit(1);
	}
	l = cm_layout_get(t_a);
	strcpy(l->svcs[0].name, T_SVC);
	strcpy(l->svcs[1].name, T_IDLE_SVC);
	st = t_state_at(t_a, t_st_off);
	st->max_seq = max_seq;
	for (uint32_t c = 0; c < nclients; c++) {
		st->execs[c] = cm_arena_alloc_data(t_a, max_seq + 1, 64);
		if (!st->execs[c]) {
			printf("Bail out! data zone full\n");
			exit(1);
		}
	}
	return st;
}

static uint32_t t_slot(const char *name)
{
	int slot = cm_layout_find_svc(cm_layout_get(t_a), name);

	if (slot < 0) {
		printf("Bail out! no slot %s\n", name);
		exit(1);
	}
	return (uint32_t)slot;
}

/* A mapping of the arena of this child's own, as a service would make. */
static cm_arena *t_remap(void)
{
	char why[160];
	cm_arena *m;

	if (cm_arena_attach(dup(t_a->fd), &m, why, sizeof(why)) < 0)
		_exit(90);
	return m;
}

/* ---- the server ---- */

static uint64_t t_echo(uint64_t seq, uint64_t value)
{
	return (seq * 0x9e3779b97f4a7c15ULL) ^ value;
}

struct t_server_ctx {
	cm_arena *m;
	struct t_state *st;
};

static int t_exec_add(struct t_server_ctx *x, const struct t_msg *q, struct t_msg *p)
{
	uint8_t *execs = t_execs(x->m, x->st, q->client);

	execs[q->hdr.seq]++;
	p->acc = atomic_fetch_add(&x->st->acc[q->k], q->value) + q->value;
	p->echo = t_echo(q->hdr.seq, q->value);
	return 0;
}

/* The exec callback: logs each execution per (client, seq) in the arena. */
static int t_exec(void *ctx, const void *req, void *resp)
{
	struct t_server_ctx *x = ctx;
	const struct t_msg *q = req;

	if (q->client >= T_CLIENTS || !x->st->execs[q->client] || q->hdr.seq > x->st->max_seq ||
	    q->k >= T_CLIENTS * T_ACCS)
		return -EINVAL;
	atomic_store(&x->st->executing[q->client], q->hdr.seq);
	switch (q->hdr.op) {
	case T_OP_SLOW:
		usleep(2000);
		return t_exec_add(x, q, resp);
	case T_OP_ADD:
		return t_exec_add(x, q, resp);
	case T_OP_FAIL:
		t_execs(x->m, x->st, q->client)[q->hdr.seq]++;
		return -EIO;
	default:
		return -EPROTONOSUPPORT;
	}
}

/* A service instance on its own mapping, until stop_server. */
static int t_server(const struct t_job *j)
{
	cm_arena *m = t_remap();
	struct t_server_ctx x = {.m = m, .st = t_state_at(m, j->state)};
	cm_chan_server s;

	cm_chan_server_init(&s, m, j->id);
	while (!atomic_load(&x.st->stop_server)) {
		uint32_t armed = cm_chan_server_arm(&s);
		if (cm_chan_server_poll(&s, 32, t_exec, &x) == 0)
			cm_chan_server_wait(&s, armed, 100);
	}
	return 0;
}

/* Starts a server instance and records it in its slot, as the supervisor
 * does. */
static pid_t t_server_start(void)
{
	cm_svc_slot *slot = &cm_layout_get(t_a)->svcs[t_slot(T_SVC)];
	pid_t pid = t_spawn(t_server, t_slot(T_SVC), 0);

	atomic_store(&slot->pid, pid);
	atomic_store(&slot->state, CM_SVC_READY);
	return pid;
}

/* Waits for a server instance that was killed or told to stop; clears its
 * slot. Its wait status. */
static int t_server_reap(pid_t pid)
{
	cm_svc_slot *slot = &cm_layout_get(t_a)->svcs[t_slot(T_SVC)];
	int status = t_wait(pid, 10000);

	atomic_store(&slot->pid, 0);
	atomic_store(&slot->state, CM_SVC_EXITED);
	return status;
}

/* Asks the server to stop; its wait status. */
static int t_server_stop(pid_t pid)
{
	struct t_state *st = t_state_at(t_a, t_st_off);

	atomic_store(&st->stop_server, 1);
	cm_event_signal(&cm_layout_get(t_a)->svcs[t_slot(T_SVC)].doorbell);
	return t_server_reap(pid);
}

/* ---- the client ---- */

static void t_msg_make(struct t_msg *q, const struct t_run *run, uint64_t seq)
{
	memset(q, 0, sizeof(*q));
	q->hdr.op = run->op;
	q->client = run->client;
	q->k = run->client * T_ACCS + (uint32_t)(seq % T_ACCS);
	q->value = ((seq * 2654435761ULL) & 0xffff) + 1;
	q->echo = T_NO_ECHO;
}

/* Checks the response to request seq (the oldest in flight). */
static void t_check_resp(const struct t_run *run, struct t_report *rep, const struct t_msg *p,
			 uint64_t seq, uint64_t *sums)
{
	struct t_msg q;

	t_msg_make(&q, run, seq);
	sums[q.k % T_ACCS] += q.value;
	if (p->hdr.seq != seq || p->client != q.client || p->k != q.k || p->value != q.value) {
		rep->order_errors++;
		return;
	}
	if (p->hdr.status != 0)
		rep->bad_status++;
	else if (p->echo == T_NO_ECHO)
		rep->replayed++;
	else if (p->echo != t_echo(seq, q.value) ||
		 (run->check_acc && p->acc != sums[q.k % T_ACCS]))
		rep->wrong++;
}

static bool t_want_more(const struct t_run *run, struct t_state *st, uint64_t submitted)
{
	if (submitted >= st->max_seq)
		return false;
	if (submitted < run->n)
		return true;
	return run->until_stop && !atomic_load(&st->stop_client);
}

/* Keeps up to CM_CHAN_DEPTH requests in flight until the run is done and
 * every response is in; stops at the first failed submit or reap. */
static void t_pipeline(cm_chan_client *cc, const struct t_run *run, struct t_state *st)
{
	struct t_report *rep = &st->rep[run->client];
	uint64_t sums[T_ACCS] = {0}, t0 = cm_now_ns(), reaped = 0;
	struct t_msg q, p;
	int r;

	for (;;) {
		bool more = t_want_more(run, st, rep->submitted);
		if (more && cm_chan_inflight(cc) < CM_CHAN_DEPTH) {
			t_msg_make(&q, run, rep->submitted + 1);
			r = cm_chan_submit(cc, &q);
			if (r == 0 && q.hdr.seq != rep->submitted + 1)
				rep->order_errors++;
			if (r == 0) {
				rep->submitted++;
				continue;
			}
			if (r != -EAGAIN) {
				rep->error = r;
				break;
			}
			rep->early_eagain++;
		}
		if (cm_chan_inflight(cc) == 0) {
			if (!more)
				break;
			continue;
		}
		r = cm_chan_reap(cc, &p, run->timeout_ms);
		if (r < 0) {
			rep->error = r;
			break;
		}
		t_check_resp(run, rep, &p, ++reaped, sums);
		atomic_store(&rep->reaped, reaped);
	}
	rep->ns = cm_now_ns() - t0;
	rep->resubmitted = cm_chan_resubmitted(cc);
}

static uint64_t t_channels_owned_by(cm_arena *m, int32_t pid)
{
	cm_layout *l = cm_layout_get(m);
	uint64_t n = 0;

	for (uint32_t i = 0; i < l->nchans; i++) {
		cm_chan *ch = cm_chan_at(l, m, i);
		n += atomic_load(&ch->state) == CM_CHAN_OPEN && atomic_load(&ch->owner) == pid;
	}
	return n;
}

/* A client process: job->id is its client number, job->n its requests;
 * client 0 keeps going until stop_client (the server-kill test). */
static int t_client(const struct t_job *j)
{
	struct t_state *st = t_state_at(t_a, j->state);
	struct t_run run = {.client = j->id, .op = T_OP_ADD, .n = j->n,
			    .until_stop = j->id == 0, .check_acc = j->id != 0,
			    .timeout_ms = t_wait_ms};
	cm_chan_client *cc;
	int r = cm_chan_open(t_a, t_slot(T_SVC), T_VERSION, &cc);

	if (r < 0) {
		st->rep[j->id].error = r;
		return 2;
	}
	t_pipeline(cc, &run, st);
	st->rep[j->id].owned = t_channels_owned_by(t_a, getpid());
	cm_chan_close(cc);
	return st->rep[j->id].error ? 3 : 0;
}

/* Submits requests first..last of a run: how many were accepted. */
static int t_submit_range(cm_chan_client *cc, const struct t_run *run, uint64_t first,
			  uint64_t last)
{
	struct t_msg q;
	int ok = 0;

	for (uint64_t s = first; s <= last; s++) {
		t_msg_make(&q, run, s);
		ok += cm_chan_submit(cc, &q) == 0;
	}
	return ok;
}

/* The exec log of one client: how many seqs in 1..n ran once, how many
 * twice or more, how many never. */
static void t_exec_counts(struct t_state *st, uint32_t client, uint64_t n, uint64_t *once,
			  uint64_t *multi, uint64_t *never)
{
	const uint8_t *execs = t_execs(t_a, st, client);

	*once = *multi = *never = 0;
	for (uint64_t s = 1; s <= n; s++) {
		*once += execs[s] == 1;
		*multi += execs[s] > 1;
		*never += execs[s] == 0;
	}
}

/* The checks every run gets; exec_once: no server died, so each request
 * must have executed exactly once. */
static void t_report_checks(const char *name, struct t_state *st, uint32_t client,
			    uint64_t n_min, bool exec_once)
{
	struct t_report *rep = &st->rep[client];
	uint64_t once, multi, never;

	t_is_int(rep->error, 0, "%s: no submit or reap failed", name);
	t_ok(rep->submitted >= n_min, "%s: %llu requests submitted", name,
	     (unsigned long long)rep->submitted);
	t_is_int((int64_t)atomic_load(&rep->reaped), (int64_t)rep->submitted,
		 "%s: one response per request", name);
	t_is_int((int64_t)rep->order_errors, 0, "%s: responses in request order", name);
	t_is_int((int64_t)(rep->wrong + rep->bad_status), 0, "%s: every result right", name);
	if (!exec_once)
		return;
	t_exec_counts(st, client, rep->submitted, &once, &multi, &never);
	t_is_int((int64_t)once, (int64_t)rep->submitted, "%s: every request executed once",
		 name);
	if (once != rep->submitted)
		t_diag("%s: %llu executed more than once, %llu never", name,
		       (unsigned long long)multi, (unsigned long long)never);
}

/* ---- tests ---- */

static void t_pipelined(void)
{
	uint64_t n = 200000 * t_scale;
	struct t_state *st = t_arena_fresh(1, n + 1);
	struct t_run run = {.client = 0, .op = T_OP_ADD, .n = n, .check_acc = true,
			    .timeout_ms = t_wait_ms};
	pid_t srv = t_server_start();
	struct t_msg q, p;
	cm_chan_client *cc;

	t_is_int(cm_chan_open(t_a, t_slot(T_SVC), T_VERSION, &cc), 0, "pipelined: open");
	t_pipeline(cc, &run, st);
	t_report_checks("pipelined", st, 0, n, true);
	t_diag("pipelined: %llu requests in %.3f s: %.0f requests/s, %llu resubmitted, "
	       "%llu submits -EAGAIN with fewer than %d in flight",
	       (unsigned long long)n, (double)st->rep[0].ns / 1e9,
	       (double)n / ((double)st->rep[0].ns / 1e9),
	       (unsigned long long)st->rep[0].resubmitted,
	       (unsigned long long)st->rep[0].early_eagain, CM_CHAN_DEPTH);
	t_msg_make(&q, &run, n + 1);
	t_ok(cm_chan_call(cc, &q, &p, 5000) == 0 && p.hdr.status == 0 && p.hdr.seq == n + 1 &&
	     p.echo == t_echo(n + 1, q.value), "pipelined: then cm_chan_call answers too");
	cm_chan_close(cc);
	t_ok(t_exited_ok(t_server_stop(srv)), "pipelined: server stopped cleanly");
}

/* Kills the server once the client has reaped target responses (and 100
 * more since the server started), then starts another, as the supervisor
 * would. Returns the new server. */
static pid_t t_kill_server(pid_t srv, pid_t client, uint64_t target, int *killed,
			   uint64_t *executing)
{
	struct t_state *st = t_state_at(t_a, t_st_off);
	uint64_t floor = atomic_load(&st->rep[0].reaped) + 100;
	int status;

	if (t_wait_progress(client, &st->rep[0].reaped, target > floor ? target : floor) < 0)
		return srv;
	kill(srv, SIGKILL);
	status = t_server_reap(srv);
	*killed += t_was_killed(status);
	*executing = atomic_load(&st->executing[0]);
	return t_server_start();
}

/* Executions beyond the first, outside the allowance (the requests the
 * dead servers were executing), and beyond a second one. */
static uint64_t t_unallowed_reexec(struct t_state *st, uint64_t n, const uint64_t *allowed)
{
	const uint8_t *execs = t_execs(t_a, st, 0);
	uint64_t bad = 0;

	for (uint64_t s = 1; s <= n; s++) {
		bool ok = execs[s] <= 1;
		for (int k = 0; !ok && k < T_KILLS; k++)
			ok = execs[s] == 2 && allowed[k] == s;
		bad += !ok;
	}
	return bad;
}

/* Names the requests that ran more than once and what the dead servers
 * were executing. */
static void t_diag_reexec(struct t_state *st, uint64_t n, const uint64_t *allowed)
{
	const uint8_t *execs = t_execs(t_a, st, 0);

	for (int k = 0; k < T_KILLS; k++)
		t_diag("server-kill: kill %d: dead server was executing seq %llu", k + 1,
		       (unsigned long long)allowed[k]);
	for (uint64_t s = 1; s <= n; s++)
		if (execs[s] > 1)
			t_diag("server-kill: seq %llu executed %u times",
			       (unsigned long long)s, execs[s]);
}

static void t_server_killed(void)
{
	uint64_t n = 200000 * t_scale, rnd = t_seed ^ 0x5e, targets[T_KILLS], allowed[T_KILLS];
	uint64_t span = n * 3 / 4 / T_KILLS;
	struct t_state *st = t_arena_fresh(1, 4 * n);
	struct t_report *rep = &st->rep[0];
	pid_t srv = t_server_start(), client = t_spawn(t_client, 0, n);
	uint64_t once, multi, never;
	int killed = 0, cs;

	for (int k = 0; k < T_KILLS; k++) /* a random point in each of T_KILLS spans */
		targets[k] = 1000 + k * span + t_rand(&rnd) % span;
	memset(allowed, 0, sizeof(allowed));
	for (int k = 0; k < T_KILLS; k++)
		srv = t_kill_server(srv, client, targets[k], &killed, &allowed[k]);
	atomic_store(&st->stop_client, 1);
	cs = t_wait(client, t_wait_ms);
	if (!t_exited_ok(cs))
		t_diag("server-kill: client wait status %d", cs);
	t_is_int(killed, T_KILLS, "server-kill: %d servers SIGKILLed with requests in flight",
		 T_KILLS);
	t_ok(t_exited_ok(cs), "server-kill: the client finished");
	t_report_checks("server-kill", st, 0, n, false);
	t_exec_counts(st, 0, rep->submitted, &once, &multi, &never);
	t_is_int((int64_t)never, 0, "server-kill: no request lost (each executed)");
	t_is_int((int64_t)t_unallowed_reexec(st, rep->submitted, allowed), 0,
		 "server-kill: only a request a dead server was executing ran twice");
	t_ok(rep->resubmitted > 0, "server-kill: the client resubmitted after restarts "
	     "(cm_chan_resubmitted %llu)", (unsigned long long)rep->resubmitted);
	t_diag("server-kill: kill points %llu %llu %llu %llu %llu (responses reaped)",
	       (unsigned long long)targets[0], (unsigned long long)targets[1],
	       (unsigned long long)targets[2], (unsigned long long)targets[3],
	       (unsigned long long)targets[4]);
	t_diag("server-kill: %llu requests, %llu executed twice, %llu answered from "
	       "a replay without their result, %llu resubmitted, %llu early -EAGAIN",
	       (unsigned long long)rep->submitted, (unsigned long long)multi,
	       (unsigned long long)rep->replayed, (unsigned long long)rep->resubmitted,
	       (unsigned long long)rep->early_eagain);
	t_diag_reexec(st, rep->submitted, allowed);
	t_ok(t_exited_ok(t_server_stop(srv)), "server-kill: last server stopped cleanly");
}

/* One call on a fresh channel, a server restart, one more call: the new
 * instance must adopt the channel (chan.h: "Each service instance adopts
 * every open channel it serves by bumping server_epoch"). */
static void t_adoption(void)
{
	struct t_run run = {.client = 0, .op = T_OP_ADD, .n = 2, .timeout_ms = 5000};
	uint32_t before, after;
	struct t_msg q, p;
	cm_chan_client *cc;
	cm_chan *ch;
	pid_t srv;

	(void)t_arena_fresh(1, 16);
	ch = cm_chan_at(cm_layout_get(t_a), t_a, 0);
	srv = t_server_start();
	t_is_int(cm_chan_open(t_a, t_slot(T_SVC), T_VERSION, &cc), 0, "adoption: open");
	t_msg_make(&q, &run, 1);
	t_is_int(cm_chan_call(cc, &q, &p, 5000), 0, "adoption: a call to the first instance");
	before = atomic_load(&ch->server_epoch);
	kill(srv, SIGKILL);
	(void)t_server_reap(srv);
	srv = t_server_start();
	t_msg_make(&q, &run, 2);
	t_ok(cm_chan_call(cc, &q, &p, 5000) == 0 && p.hdr.status == 0 && p.hdr.seq == 2,
	     "adoption: a call to the restarted instance");
	after = atomic_load(&ch->server_epoch);
	t_ok(after != before, "adoption: the restarted instance adopted the channel "
	     "(server_epoch %u -> %u)", before, after);
	t_is_int(atomic_load(&ch->client_epoch), after, "adoption: the client caught up");
	cm_chan_close(cc);
	t_ok(t_exited_ok(t_server_stop(srv)), "adoption: server stopped cleanly");
}

/* Opens every channel to the idle slot and dies holding them. */
static int t_hog_and_die(const struct t_job *j)
{
	cm_chan_client *cc;

	for (uint32_t i = 0; i < CM_MAX_CHANS; i++)
		if (cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &cc) < 0)
			return 2;
	raise(SIGKILL);
	return 3;
}

static void t_exhaustion(void)
{
	cm_chan_client *cc[CM_MAX_CHANS], *extra;
	int opened = 0, status;
	pid_t pid;

	(void)t_arena_fresh(1, 16);
	for (int i = 0; i < CM_MAX_CHANS; i++)
		opened += cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &cc[i]) == 0;
	t_is_int(opened, CM_MAX_CHANS, "exhaustion: %d channels open", CM_MAX_CHANS);
	t_is_int(cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &extra), -EBUSY,
		 "exhaustion: one more: -EBUSY");
	for (int i = 0; i < opened; i++)
		cc[i] = cm_chan_close(cc[i]);
	t_is_int(cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &extra), -EBUSY,
		 "exhaustion: closed channels wait for their server to free them");
	cm_chan_server_gone(cm_layout_get(t_a), t_a, (uint32_t)t_slot(T_IDLE_SVC));
	t_is_int(cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &extra), 0,
		 "exhaustion: with no server running, the supervisor frees them; open succeeds");
	extra = cm_chan_close(extra);
	cm_chan_server_gone(cm_layout_get(t_a), t_a, (uint32_t)t_slot(T_IDLE_SVC));
	pid = t_spawn(t_hog_and_die, 0, 0);
	status = t_wait(pid, 10000);
	t_ok(t_was_killed(status), "dead client: took all %d channels and died", CM_MAX_CHANS);
	t_is_int(cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &extra), -EBUSY,
		 "dead client: its channels are still taken: -EBUSY");
	cm_chan_release_owner(cm_layout_get(t_a), t_a, pid);
	t_is_int((int64_t)t_channels_owned_by(t_a, pid), 0,
		 "dead client: release_owner closed all its channels");
	cm_chan_server_gone(cm_layout_get(t_a), t_a, (uint32_t)t_slot(T_IDLE_SVC));
	opened = 0;
	for (int i = 0; i < CM_MAX_CHANS; i++)
		opened += cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &cc[i]) == 0;
	t_is_int(opened, CM_MAX_CHANS, "dead client: another client opens all %d again",
		 CM_MAX_CHANS);
	for (int i = 0; i < opened; i++)
		cc[i] = cm_chan_close(cc[i]);
}

/* A client that died at each step of claiming or closing a channel
 * (forged: owner recorded, state FREE / CLAIMED / CLOSING) is found by
 * its pid and every such channel can be opened again. */
static void t_claim_death(void)
{
	cm_layout *l;
	cm_chan_client *cc[3];
	pid_t pid = fork();
	int opened = 0, status;

	(void)t_arena_fresh(1, 16);
	l = cm_layout_get(t_a);
	if (pid == 0)
		_exit(0);
	waitpid(pid, &status, 0);
	for (uint32_t i = 0; i < 3; i++)
		atomic_store(&cm_chan_at(l, t_a, i)->owner, pid);
	atomic_store(&cm_chan_at(l, t_a, 1)->state, CM_CHAN_CLAIMED);
	atomic_store(&cm_chan_at(l, t_a, 2)->state, CM_CHAN_CLOSING);
	cm_chan_at(l, t_a, 2)->server = (uint32_t)t_slot(T_IDLE_SVC);
	t_is_int(cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &cc[0]), 0,
		 "claim death: open skips channels a dead client was claiming");
	t_ok(cm_chan_at(l, t_a, 3)->owner == getpid(), "claim death: it got channel 3");
	cc[0] = cm_chan_close(cc[0]);
	cm_chan_release_owner(l, t_a, pid);
	for (uint32_t i = 0; i < 3; i++)
		t_is_int(atomic_load(&cm_chan_at(l, t_a, i)->owner), 0,
			 "claim death: release_owner cleared channel %u's owner", i);
	t_is_int(atomic_load(&cm_chan_at(l, t_a, 1)->state), CM_CHAN_FREE,
		 "claim death: a channel left CLAIMED is free at once");
	cm_chan_server_gone(l, t_a, (uint32_t)t_slot(T_IDLE_SVC));
	for (uint32_t i = 0; i < 3; i++)
		opened += cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &cc[i]) == 0 &&
			  cm_chan_at(l, t_a, i)->owner == getpid();
	t_is_int(opened, 3, "claim death: channels 0, 1 and 2 open again");
	for (int i = 0; i < 3; i++)
		cc[i] = cm_chan_close(cc[i]);
}

/* The scratch space stays with the channel: clients that come and go get
 * the same space and the data zone does not grow. */
static void t_scratch(void)
{
	cm_layout *l;
	cm_chan_client *cc;
	cm_off first = 0, off;
	uint64_t brk;
	int same = 0;

	(void)t_arena_fresh(1, 16);
	l = cm_layout_get(t_a);
	brk = atomic_load(&t_a->hdr->data_brk);
	for (int i = 0; i < 1000; i++) {
		if (cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &cc) < 0)
			break;
		off = cm_chan_scratch(cc);
		if (i == 0)
			first = off;
		same += off && off == first && off % 4096 == 0 &&
			cm_arena_in_data(t_a, off, CM_CHAN_SCRATCH);
		cc = cm_chan_close(cc);
		cm_chan_server_gone(l, t_a, (uint32_t)t_slot(T_IDLE_SVC));
	}
	t_is_int(same, 1000, "scratch: 1000 clients in turn got the same scratch space");
	brk = atomic_load(&t_a->hdr->data_brk) - brk;
	t_ok(brk >= CM_CHAN_SCRATCH && brk < CM_CHAN_SCRATCH + 4096,
	     "scratch: the data zone grew by one (page-aligned) scratch space only: %llu bytes",
	     (unsigned long long)brk);
}

/* Opens a channel to the server, submits job->n slow requests, waits for
 * the first answer (the server is then busy with the rest) and dies. */
static int t_submit_and_die(const struct t_job *j)
{
	struct t_run run = {.client = 1, .op = T_OP_SLOW};
	cm_chan_client *cc;
	struct t_msg p;

	if (cm_chan_open(t_a, t_slot(T_SVC), T_VERSION, &cc) < 0)
		return 2;
	if (t_submit_range(cc, &run, 1, j->n) != (int)j->n)
		return 3;
	if (j->n && cm_chan_reap(cc, &p, 5000) < 0)
		return 4;
	raise(SIGKILL);
	return 5;
}

/* Waits up to a second for ch to be free (at once, or once its server has
 * let go of it). */
static bool t_chan_freed(cm_chan *ch)
{
	for (int i = 0; i < 1000 && atomic_load(&ch->state) != CM_CHAN_FREE; i++)
		usleep(1000);
	return atomic_load(&ch->state) == CM_CHAN_FREE;
}

/* A client dies holding a channel to a live server (with n requests in
 * flight); the supervisor releases it; the next client gets the same
 * channel and must be served as on a new one. */
static void t_reuse(const char *name, uint64_t n)
{
	struct t_state *st = t_arena_fresh(2, 256);
	struct t_run run = {.client = 0, .op = T_OP_ADD, .timeout_ms = 2000};
	pid_t srv = t_server_start(), pid = t_spawn(t_submit_and_die, 0, n);
	int status = t_wait(pid, 10000), good = 0, r = 0;
	uint64_t once, multi, never;
	bool right;
	struct t_msg q, p;
	cm_chan_client *cc;

	t_ok(t_was_killed(status), "%s: a client died holding a channel", name);
	cm_chan_release_owner(cm_layout_get(t_a), t_a, pid);
	t_ok(t_chan_freed(cm_chan_at(cm_layout_get(t_a), t_a, 0)),
	     "%s: release_owner freed its channel", name);
	t_is_int(cm_chan_open(t_a, t_slot(T_SVC), T_VERSION, &cc), 0,
		 "%s: after release_owner another client opens a channel", name);
	t_is_int(atomic_load(&cm_chan_at(cm_layout_get(t_a), t_a, 0)->owner), getpid(),
		 "%s: it is the dead client's channel", name);
	for (uint64_t s = 1; s <= 50 && r == 0; s++) {
		t_msg_make(&q, &run, s);
		r = cm_chan_call(cc, &q, &p, run.timeout_ms);
		right = r == 0 && p.hdr.seq == s && p.hdr.status == 0 && p.client == 0 &&
			p.echo == t_echo(s, q.value);
		good += right;
		if (r == 0 && !right)
			t_diag("%s: call %llu: answered with seq %llu client %u status %d", name,
			       (unsigned long long)s, (unsigned long long)p.hdr.seq, p.client,
			       p.hdr.status);
	}
	if (r < 0)
		t_diag("%s: cm_chan_call: %s", name, strerror(-r));
	t_exec_counts(st, 0, 50, &once, &multi, &never);
	if (once != 50)
		t_diag("%s: of its 50 requests %llu executed twice or more, %llu never", name,
		       (unsigned long long)multi, (unsigned long long)never);
	t_ok(good == 50 && once == 50,
	     "%s: the new client's 50 calls all answered right, each executed once", name);
	cm_chan_close(cc);
	t_ok(t_exited_ok(t_server_stop(srv)), "%s: server stopped cleanly", name);
}

static void t_eagain(void)
{
	struct t_run run = {.client = 0, .op = T_OP_ADD};
	cm_chan_client *cc;
	struct t_msg q;

	(void)t_arena_fresh(1, 16);
	t_is_int(cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &cc), 0,
		 "eagain: open a channel nobody serves");
	t_is_int(t_submit_range(cc, &run, 1, CM_CHAN_DEPTH), CM_CHAN_DEPTH,
		 "eagain: %d submits accepted", CM_CHAN_DEPTH);
	t_is_int(cm_chan_inflight(cc), CM_CHAN_DEPTH, "eagain: %d in flight", CM_CHAN_DEPTH);
	t_msg_make(&q, &run, CM_CHAN_DEPTH + 1);
	t_is_int(cm_chan_submit(cc, &q), -EAGAIN, "eagain: one more: -EAGAIN");
	t_is_int(cm_chan_inflight(cc), CM_CHAN_DEPTH, "eagain: still %d in flight",
		 CM_CHAN_DEPTH);
	t_is_int(cm_chan_reap(cc, &q, 50), -ETIMEDOUT,
		 "eagain: reap with nobody serving: -ETIMEDOUT");
	cm_chan_close(cc);
}

/* The instant between cm_chan_serve() publishing a response and consuming
 * its request, played by the test on a channel nobody serves: the client
 * has reaped that response, so DEPTH - 1 requests are in flight, while the
 * request ring still holds DEPTH records. */
static void t_eagain_window(void)
{
	struct t_run run = {.client = 0, .op = T_OP_ADD};
	cm_chan *ch;
	cm_chan_client *cc;
	struct t_msg q, p;
	int ok, r;

	(void)t_arena_fresh(1, 16);
	ch = cm_chan_at(cm_layout_get(t_a), t_a, 0);
	t_is_int(cm_chan_open(t_a, t_slot(T_IDLE_SVC), T_VERSION, &cc), 0,
		 "eagain window: open a channel nobody serves");
	ok = t_submit_range(cc, &run, 1, CM_CHAN_DEPTH);
	r = cm_ring_peek(cm_chan_req(ch), &q);
	t_ok(ok == CM_CHAN_DEPTH && r == 0 && q.hdr.seq == 1,
	     "eagain window: %d requests queued, the oldest is seq 1", CM_CHAN_DEPTH);
	p = q;
	p.echo = t_echo(1, q.value);
	t_is_int(cm_ring_try_push(cm_chan_resp(ch), &p), 0,
		 "eagain window: 'server' publishes the response to seq 1, not yet consuming it");
	t_ok(cm_chan_reap(cc, &p, 1000) == 0 && p.hdr.seq == 1,
	     "eagain window: the client reaps it");
	t_is_int(cm_chan_inflight(cc), CM_CHAN_DEPTH - 1, "eagain window: %d in flight",
		 CM_CHAN_DEPTH - 1);
	t_msg_make(&q, &run, CM_CHAN_DEPTH + 1);
	r = cm_chan_submit(cc, &q);
	t_is_int(r, 0, "eagain window: so one more submit is accepted (chan.h: -EAGAIN only "
		 "with %d in flight)", CM_CHAN_DEPTH);
	cm_ring_consume(cm_chan_req(ch));
	if (r == -EAGAIN)
		r = cm_chan_submit(cc, &q);
	t_ok(r == 0 && cm_chan_inflight(cc) == CM_CHAN_DEPTH,
	     "eagain window: once the request is consumed it is");
	cm_chan_close(cc);
}

/* Plays an instance that answered requests 1..answered, executed the next
 * one and recorded it in done_seq, then died; and the next instance, which
 * adopts the channel by bumping server_epoch to epoch. */
static void t_play_dead_instance(struct t_state *st, cm_chan *ch, uint64_t answered,
				 uint32_t epoch)
{
	struct t_msg q;

	for (uint64_t s = 1; s <= answered; s++) {
		(void)cm_ring_peek(cm_chan_req(ch), &q);
		q.echo = t_echo(q.hdr.seq, q.value);
		t_execs(t_a, st, 0)[q.hdr.seq]++;
		(void)cm_ring_try_push(cm_chan_resp(ch), &q);
		cm_ring_consume(cm_chan_req(ch));
	}
	(void)cm_ring_peek(cm_chan_req(ch), &q);
	t_execs(t_a, st, 0)[q.hdr.seq]++;
	q.echo = t_echo(q.hdr.seq, q.value);
	q.hdr.status = 0;
	memcpy(ch->done_resp, &q, sizeof(q));
	atomic_store(&ch->done_seq, q.hdr.seq);
	atomic_store(&ch->server_epoch, epoch);
}

/* The resubmission protocol, step by step: requests 1..10 in flight, 1..3
 * answered and 4 executed by an instance that died, a new one adopts. */
static void t_resync(void)
{
	struct t_state *st = t_arena_fresh(1, 16);
	struct t_run run = {.client = 0, .op = T_OP_ADD};
	cm_chan *ch = cm_chan_at(cm_layout_get(t_a), t_a, 0);
	int right = 0, replay_ok = 0;
	uint64_t once, multi, never, left;
	cm_chan_client *cc;
	struct t_msg q, p;
	pid_t srv;

	t_is_int(cm_chan_open(t_a, t_slot(T_SVC), T_VERSION, &cc), 0, "resync: open");
	t_is_int(t_submit_range(cc, &run, 1, 10), 10, "resync: 10 requests in flight");
	t_play_dead_instance(st, ch, 3, 7);
	t_ok(cm_chan_reap(cc, &p, 1000) == 0 && p.hdr.seq == 1 && p.echo == t_echo(1, p.value),
	     "resync: after the epoch change, the response to 1 is reaped");
	t_is_int((int64_t)cm_chan_resubmitted(cc), 7, "resync: 4..10 resubmitted, 1..3 not");
	t_is_int(atomic_load(&ch->client_epoch), 7, "resync: client_epoch set to the new epoch");
	left = atomic_load(&cm_chan_req(ch)->head) - atomic_load(&cm_chan_req(ch)->tail);
	t_ok(left == 7 && cm_ring_peek(cm_chan_req(ch), &q) == 0 && q.hdr.seq == 4,
	     "resync: the request ring holds the 7 resubmitted, oldest first");
	srv = t_server_start();
	for (uint64_t s = 2; s <= 10; s++) {
		int r = cm_chan_reap(cc, &p, 5000);
		right += r == 0 && p.hdr.seq == s && p.hdr.status == 0;
		if (r == 0 && s == 4)
			replay_ok = p.echo == t_echo(4, p.value);
	}
	t_ok(replay_ok, "resync: seq 4 is answered from done_resp, with its result");
	t_is_int(right, 9, "resync: a real instance answers 2..10 in order, status 0");
	t_exec_counts(st, 0, 10, &once, &multi, &never);
	t_is_int((int64_t)once, 10, "resync: each executed once: 4 was answered from "
		 "done_resp, not run again");
	cm_chan_close(cc);
	t_ok(t_exited_ok(t_server_stop(srv)), "resync: server stopped cleanly");
}

static void t_statuses(void)
{
	struct t_state *st = t_arena_fresh(1, 16);
	struct t_run run = {.client = 0, .op = T_OP_FAIL};
	pid_t srv = t_server_start();
	cm_chan_client *cc;
	struct t_msg q, p;

	t_is_int(cm_chan_open(t_a, t_slot(T_SVC), T_VERSION, &cc), 0, "status: open");
	t_msg_make(&q, &run, 1);
	t_is_int(cm_chan_call(cc, &q, &p, 5000), 0, "status: a failing op is still answered");
	t_is_int(p.hdr.status, -EIO, "status: hdr.status carries the exec's -EIO");
	t_is_int(t_execs(t_a, st, 0)[1], 1, "status: the failing op executed once");
	t_msg_make(&q, &run, 2);
	q.hdr.op = 99;
	t_ok(cm_chan_call(cc, &q, &p, 5000) == 0 && p.hdr.status == -EPROTONOSUPPORT,
	     "status: an unknown op: -EPROTONOSUPPORT");
	run.op = T_OP_ADD;
	t_msg_make(&q, &run, 3);
	t_ok(cm_chan_call(cc, &q, &p, 5000) == 0 && p.hdr.status == 0 && p.hdr.seq == 3,
	     "status: the channel works on after errors");
	cm_chan_close(cc);
	t_ok(t_exited_ok(t_server_stop(srv)), "status: server stopped cleanly");
}

/* Two serving threads' shares (cm_chan_server_share): each serves only
 * the channels of its part, so together they serve each channel once. */
static void t_shares(void)
{
	struct t_state *st = t_arena_fresh(1, 16);
	struct t_server_ctx x = {.m = t_a, .st = st};
	struct t_run run = {.client = 0, .op = T_OP_ADD};
	cm_chan_server srv[2];
	cm_chan_client *cc[4];
	struct t_msg q, p;
	int served[3] = {0}, ok = 0;

	for (uint32_t k = 0; k < 2; k++) {
		cm_chan_server_init(&srv[k], t_a, t_slot(T_SVC));
		cm_chan_server_share(&srv[k], k, 2);
	}
	for (int i = 0; i < 4; i++)
		if (cm_chan_open(t_a, t_slot(T_SVC), T_VERSION, &cc[i]) < 0)
			return;
	for (int k = 0; k < 2; k++)
		(void)cm_chan_server_poll(&srv[k], 32, t_exec, &x); /* adopts its channels */
	for (int i = 0; i < 4; i++) {
		t_msg_make(&q, &run, 1);
		q.k = (uint32_t)i;
		ok += cm_chan_submit(cc[i], &q) == 0;
	}
	t_is_int(ok, 4, "shares: a request on each of four channels");
	served[0] = cm_chan_server_poll(&srv[0], 32, t_exec, &x);
	served[1] = cm_chan_server_poll(&srv[1], 32, t_exec, &x);
	served[2] = cm_chan_server_poll(&srv[0], 32, t_exec, &x) +
		    cm_chan_server_poll(&srv[1], 32, t_exec, &x);
	t_ok(served[0] == 2 && served[1] == 2 && served[2] == 0,
	     "shares: each of two servers serves its two channels, once (%d, %d, %d)", served[0],
	     served[1], served[2]);
	ok = 0;
	for (int i = 0; i < 4; i++) {
		ok += cm_chan_reap(cc[i], &p, 1000) == 0 && p.hdr.status == 0;
		cm_chan_close(cc[i]);
	}
	t_is_int(ok, 4, "shares: every request answered");
}

static void t_two_clients(void)
{
	uint64_t n = 50000 * t_scale;
	struct t_state *st = t_arena_fresh(3, n);
	pid_t srv = t_server_start(), c1 = t_spawn(t_client, 1, n), c2 = t_spawn(t_client, 2, n);
	int s1 = t_wait(c1, t_wait_ms), s2 = t_wait(c2, t_wait_ms);

	t_ok(t_exited_ok(s1) && t_exited_ok(s2),
	     "two clients: both processes finished %llu requests", (unsigned long long)n);
	for (uint32_t c = 1; c <= 2; c++) {
		char name[32];
		snprintf(name, sizeof(name), "two clients, client %u", c);
		t_report_checks(name, st, c, n, true);
		t_is_int((int64_t)st->rep[c].owned, 1, "%s: on a channel of its own", name);
	}
	t_ok(t_exited_ok(t_server_stop(srv)), "two clients: server stopped cleanly");
}

static void t_setup(void)
{
	t_env env;

	t_env_start("test-chan", &env);
	t_seed = env.seed;
	t_scale = env.scale;
	t_wait_ms = env.wait_ms;
}

int main(void)
{
	t_setup();
	t_pipelined();
	t_statuses();
	t_shares();
	t_eagain();
	t_eagain_window();
	t_exhaustion();
	t_claim_death();
	t_scratch();
	t_two_clients();
	t_adoption();
	t_resync();
	t_server_killed();
	t_reuse("reuse idle", 0);
	t_reuse("reuse busy", 64);
	t_a = cm_arena_free(t_a);
	return t_done();
}
