/* cmd_status.c - ext3d status [--json], kill SERVICE and shutdown: control
 * requests to the instance's supervisor.
 *
 * status exits with the instance's state: 0 ready, 1 not reachable (or
 * another error), 3 degraded or stalled, 4 starting or restarting, 5
 * failed, 6 stopping. shutdown of an instance whose supervisor is dead
 * removes the files it left and succeeds, as does shutdown of an instance
 * that is not there at all; either unmounts the stale mount a killed
 * ext3d-fuse left at the mount point that RUNDIR/mount names. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rpc.h"

int cli_call(cli_ctx *c, Ext3d__Request *req, Ext3d__Reply **ret, int timeout_ms)
{
	char what[128];
	int r = rpc_call(c->url, req, ret, timeout_ms);

	snprintf(what, sizeof(what), "instance %s", c->instance);
	if (r < 0)
		return cli_fail(what, r);
	if ((*ret)->status < 0) {
		fprintf(stderr, "ext3d: %s%s%s\n", strerror(-(*ret)->status),
			*(*ret)->detail ? ": " : "", (*ret)->detail);
		rpc_reply_free(*ret);
		return 1;
	}
	return 0;
}

/* Names in status are ext3d's own, but escape them anyway. */
static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void lock_json(const Ext3d__LockStatus *l, bool first)
{
	printf("%s{\"name\":", first ? "" : ",");
	json_str(l->name);
	printf(",\"instances\":%u,\"acquisitions\":%llu,\"contended\":%llu,\"wait_ns\":%llu}",
	       l->instances, (unsigned long long)l->acquisitions,
	       (unsigned long long)l->contended, (unsigned long long)l->wait_ns);
}

/* Handles and blocks per committed transaction (0 before the first). */
static double per_commit(uint64_t n, uint64_t commits)
{
	return commits ? (double)n / (double)commits : 0.0;
}

/* Starts the optional section name: ,"name": then null when it is absent;
 * whether it is present, its body to follow. */
static bool json_section(const char *name, const void *present)
{
	printf(",\"%s\":", name);
	if (!present)
		printf("null");
	return present != NULL;
}

static void recovery_json(const Ext3d__RecoveryStatus *r)
{
	if (!json_section("recovery", r))
		return;
	printf("{\"pass\":");
	json_str(r->pass);
	printf(",\"done\":%llu,\"total\":%llu,\"blocks_written\":%llu}",
	       (unsigned long long)r->done, (unsigned long long)r->total,
	       (unsigned long long)r->blocks_written);
}

static void device_json(const Ext3d__DeviceStatus *d)
{
	if (!json_section("device", d))
		return;
	printf("{\"transport\":");
	json_str(d->transport);
	printf(",\"where\":");
	json_str(d->where);
	printf(",\"read_only\":%s,\"link\":", d->read_only ? "true" : "false");
	json_str(d->link);
	printf(",\"requests\":%llu,\"errors\":%llu,\"reconnects\":%llu,\"replayed\":%llu,"
	       "\"in_flight\":%u,\"max_in_flight\":%u,\"p50_us\":%llu,\"p99_us\":%llu,"
	       "\"last_error\":", (unsigned long long)d->requests,
	       (unsigned long long)d->errors, (unsigned long long)d->reconnects,
	       (unsigned long long)d->replayed, d->in_flight, d->max_in_flight,
	       (unsigned long long)d->p50_us, (unsigned long long)d->p99_us);
	json_str(d->last_error);
	putchar('}');
}

static void journal_json(const Ext3d__JournalStatus *j)
{
	if (!json_section("journal", j))
		return;
	printf("{\"data_mode\":");
	json_str(j->data_mode);
	printf(",\"commit_interval_ms\":%u,\"block_size\":%u,\"aborted\":%s,"
	       "\"abort_errno\":%d,\"running_tid\":%u,\"running_updates\":%u,"
	       "\"running_handles\":%u,\"committing_tid\":%u,\"committing_state\":",
	       j->commit_interval_ms, j->block_size, j->aborted ? "true" : "false",
	       j->abort_errno, j->running_tid, j->running_updates, j->running_handles,
	       j->committing_tid);
	json_str(j->committing_state);
	printf(",\"commit_sequence\":%u,\"next_tid\":%u,\"commits\":%llu,\"handles\":%llu,"
	       "\"blocks\":%llu,\"log_blocks\":%llu,\"average_handles\":%.2f,"
	       "\"average_blocks\":%.2f,\"commit_ns\":%llu,\"average_commit_ns\":%llu,",
	       j->commit_sequence, j->next_tid, (unsigned long long)j->commits,
	       (unsigned long long)j->handles, (unsigned long long)j->blocks,
	       (unsigned long long)j->log_blocks, per_commit(j->handles, j->commits),
	       per_commit(j->blocks, j->commits), (unsigned long long)j->commit_ns,
	       (unsigned long long)j->average_commit_ns);
	printf("\"log\":{\"first\":%u,\"size\":%u,\"head\":%u,\"tail\":%u,\"free\":%u},",
	       j->log_first, j->log_size, j->head, j->tail, j->free);
	printf("\"checkpoints\":%llu,\"checkpoint_blocks\":%llu,\"revokes\":%llu,"
	       "\"frozen\":%llu,\"escaped\":%llu,\"space_waits\":%llu,\"handle_starts\":%llu,"
	       "\"locked_wait_ns\":%llu,\"locks\":[",
	       (unsigned long long)j->checkpoints, (unsigned long long)j->checkpoint_blocks,
	       (unsigned long long)j->revokes, (unsigned long long)j->frozen,
	       (unsigned long long)j->escaped, (unsigned long long)j->space_waits,
	       (unsigned long long)j->handle_starts, (unsigned long long)j->locked_wait_ns);
	for (size_t i = 0; i < j->n_locks; i++)
		lock_json(j->locks[i], i == 0);
	printf("]}");
}

static void status_json(const Ext3d__StatusReply *st)
{
	printf("{\"instance\":");
	json_str(st->instance);
	printf(",\"supervisor\":{\"pid\":%d,\"state\":", st->supervisor_pid);
	json_str(st->state);
	printf(",\"reason\":");
	json_str(st->reason);
	printf(",\"watchdog_ms\":%u", st->watchdog_ms);
	printf("},\"generation\":%llu,\"locking\":", (unsigned long long)st->generation);
	json_str(st->locking);
	printf(",\"services\":[");
	for (size_t i = 0; i < st->n_services; i++) {
		const Ext3d__ServiceStatus *s = st->services[i];
		printf("%s{\"name\":", i ? "," : "");
		json_str(s->name);
		printf(",\"pid\":%d,\"state\":", s->pid);
		json_str(s->state);
		printf(",\"restarts\":%u,\"restart_policy\":", s->restarts);
		json_str(s->restart_policy);
		printf(",\"last_exit_status\":%d,\"last_exit_signal\":%d,\"stalls\":%u,"
		       "\"last_exit\":", s->last_exit_status, s->last_exit_signal, s->stalls);
		json_str(s->last_exit);
		printf(",\"mount\":");
		json_str(s->mount);
		printf(",\"mount_options\":");
		json_str(s->mount_options);
		putchar('}');
	}
	printf("],\"locks\":[");
	for (size_t i = 0; i < st->n_locks; i++)
		lock_json(st->locks[i], i == 0);
	printf("],\"dead_owner_reports\":%u,\"channels\":{\"open\":%u,\"requests\":%llu}",
	       st->dead_owner_reports, st->channels_open,
	       (unsigned long long)st->channel_requests);
	if (st->cache)
		printf(",\"cache\":{\"buffers\":%u,\"block_size\":%u,\"hits\":%llu,"
		       "\"misses\":%llu,\"evictions\":%llu,\"reads\":%llu,\"writes\":%llu,"
		       "\"errors\":%llu}",
		       st->cache->buffers, st->cache->block_size,
		       (unsigned long long)st->cache->hits, (unsigned long long)st->cache->misses,
		       (unsigned long long)st->cache->evictions,
		       (unsigned long long)st->cache->reads, (unsigned long long)st->cache->writes,
		       (unsigned long long)st->cache->errors);
	printf(",\"filesystem\":{\"errors\":%u,\"read_only\":%s,\"last_error\":", st->fs_errors,
	       st->read_only ? "true" : "false");
	json_str(st->fs_error ? st->fs_error : "");
	putchar('}');
	recovery_json(st->recovery);
	device_json(st->device);
	journal_json(st->journal);
	printf("}\n");
}

static void lock_text(const Ext3d__LockStatus *const *locks, size_t n)
{
	printf("%-14s %6s %14s %12s %14s\n", "LOCK", "COUNT", "ACQUISITIONS", "CONTENDED",
	       "WAIT (us)");
	for (size_t i = 0; i < n; i++)
		printf("%-14s %6u %14llu %12llu %14llu\n", locks[i]->name, locks[i]->instances,
		       (unsigned long long)locks[i]->acquisitions,
		       (unsigned long long)locks[i]->contended,
		       (unsigned long long)(locks[i]->wait_ns / 1000));
}

/* As /proc/fs/jbd2/ * /info, plus the log's place and the journal locks. */
static void journal_text(const Ext3d__JournalStatus *j)
{
	if (!j) {
		printf("\njournal: none\n");
		return;
	}
	printf("\njournal: data=%s, commit interval %u ms, %u-byte blocks%s\n", j->data_mode,
	       j->commit_interval_ms, j->block_size, j->aborted ? ", ABORTED" : "");
	if (j->aborted)
		printf("  aborted: %s\n", strerror(-j->abort_errno));
	if (j->running_tid)
		printf("  running transaction: %u (%u handles open, %u started)\n",
		       j->running_tid, j->running_updates, j->running_handles);
	else
		printf("  running transaction: none\n");
	if (j->committing_tid)
		printf("  committing transaction: %u (%s)\n", j->committing_tid,
		       j->committing_state);
	else
		printf("  committing transaction: none\n");
	printf("  last committed: %u; next tid: %u\n", j->commit_sequence, j->next_tid);
	printf("  %llu transactions committed; average %.1f handles and %.1f blocks per "
	       "transaction, %llu us per commit\n", (unsigned long long)j->commits,
	       per_commit(j->handles, j->commits), per_commit(j->blocks, j->commits),
	       (unsigned long long)(j->average_commit_ns / 1000));
	printf("  log: %u blocks from block %u; head %u, tail %u%s, %u free\n", j->log_size,
	       j->log_first, j->head, j->tail, j->tail ? "" : " (empty)", j->free);
	printf("  %llu log blocks written, %llu escaped; %llu checkpoints (%llu blocks home); "
	       "%llu revokes; %llu frozen copies\n", (unsigned long long)j->log_blocks,
	       (unsigned long long)j->escaped, (unsigned long long)j->checkpoints,
	       (unsigned long long)j->checkpoint_blocks, (unsigned long long)j->revokes,
	       (unsigned long long)j->frozen);
	printf("  %llu handles started, %llu waited for log space; %llu us waiting for "
	       "locked transactions\n\n", (unsigned long long)j->handle_starts,
	       (unsigned long long)j->space_waits, (unsigned long long)(j->locked_wait_ns / 1000));
	lock_text((const Ext3d__LockStatus *const *)j->locks, j->n_locks);
}

/* As ext3d-recover's progress line while journald-svc replays, then what
 * the replay came to. */
static void recovery_text(const Ext3d__RecoveryStatus *r)
{
	if (!r)
		return;
	if (strcmp(r->pass, "done") == 0)
		printf("recovered: %llu log blocks replayed, %llu blocks written\n",
		       (unsigned long long)r->done, (unsigned long long)r->blocks_written);
	else if (r->total)
		printf("recovering: %s %llu/%llu blocks\n", r->pass, (unsigned long long)r->done,
		       (unsigned long long)r->total);
	else
		printf("recovering: %s %llu blocks\n", r->pass, (unsigned long long)r->done);
}

/* The device line: what it is, whether it is reachable, what it costs. */
static void device_text(const Ext3d__DeviceStatus *d)
{
	if (!d)
		return;
	printf("device: %s %s%s, link %s; %llu requests (p50 %llu us, p99 %llu us), "
	       "%u in flight (at most %u), %llu errors, %llu reconnects\n", d->transport,
	       d->where, d->read_only ? " (READ-ONLY export: writes get EROFS)" : "", d->link,
	       (unsigned long long)d->requests, (unsigned long long)d->p50_us,
	       (unsigned long long)d->p99_us, d->in_flight, d->max_in_flight,
	       (unsigned long long)d->errors, (unsigned long long)d->reconnects);
	if (*d->last_error && (d->errors || strcmp(d->link, "up") != 0 || d->reconnects))
		printf("  last device error: %s\n", d->last_error);
}

static void status_text(const Ext3d__StatusReply *st)
{
	printf("instance %s: %s (supervisor pid %d, generation %llu, locking %s, "
	       "watchdog %u ms)\n", st->instance, st->state, st->supervisor_pid,
	       (unsigned long long)st->generation, st->locking, st->watchdog_ms);
	if (*st->reason)
		printf("reason: %s\n", st->reason);
	if (st->fs_errors)
		printf("filesystem: %u error%s recorded%s; last: %s\n", st->fs_errors,
		       st->fs_errors == 1 ? "" : "s",
		       st->read_only ? ", READ-ONLY (errors=remount-ro): writes get EROFS" : "",
		       st->fs_error);
	recovery_text(st->recovery);
	device_text(st->device);
	printf("%-16s %8s %-10s %8s %6s %-7s %s\n", "SERVICE", "PID", "STATE", "RESTARTS",
	       "STALLS", "POLICY", "LAST EXIT");
	for (size_t i = 0; i < st->n_services; i++) {
		const Ext3d__ServiceStatus *s = st->services[i];
		printf("%-16s %8d %-10s %8u %6u %-7s %s\n", s->name, s->pid, s->state,
		       s->restarts, s->stalls, s->restart_policy,
		       *s->last_exit ? s->last_exit : "-");
	}
	for (size_t i = 0; i < st->n_services; i++)
		if (*st->services[i]->mount)
			printf("mount: %s at %s%s%s\n", st->services[i]->name, st->services[i]->mount,
			       *st->services[i]->mount_options ? " -o " : "",
			       st->services[i]->mount_options);
	putchar('\n');
	lock_text((const Ext3d__LockStatus *const *)st->locks, st->n_locks);
	printf("\ndead lock owners reported: %u; channels open: %u, requests served: %llu\n",
	       st->dead_owner_reports, st->channels_open,
	       (unsigned long long)st->channel_requests);
	if (st->cache)
		printf("buffer cache: %u buffers of %u bytes; %llu hits, %llu misses, "
		       "%llu evictions, %llu device reads, %llu writes, %llu errors\n",
		       st->cache->buffers, st->cache->block_size,
		       (unsigned long long)st->cache->hits, (unsigned long long)st->cache->misses,
		       (unsigned long long)st->cache->evictions,
		       (unsigned long long)st->cache->reads, (unsigned long long)st->cache->writes,
		       (unsigned long long)st->cache->errors);
	journal_text(st->journal);
}

/* The exit status that tells the instance's state (see the header). */
static int status_code(const char *state)
{
	static const struct {
		const char *state;
		int code;
	} codes[] = {
		{"ready", 0}, {"degraded", 3}, {"stalled", 3}, {"starting", 4},
		{"restarting", 4}, {"failed", 5}, {"stopping", 6},
	};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(state, codes[i].state) == 0)
			return codes[i].code;
	return 1;
}

int cli_status(cli_ctx *c, int argc, char **argv)
{
	Ext3d__StatusRequest body = EXT3D__STATUS_REQUEST__INIT;
	Ext3d__Request req = EXT3D__REQUEST__INIT;
	bool json = argc > 1 && strcmp(argv[1], "--json") == 0;
	Ext3d__Reply *reply;
	int r;

	if (argc > (json ? 2 : 1))
		return cli_fail("status: unexpected argument", -EINVAL);
	req.body_case = EXT3D__REQUEST__BODY_STATUS;
	req.status = &body;
	if (cli_call(c, &req, &reply, CLI_TIMEOUT_MS))
		return 1;
	if (reply->body_case != EXT3D__REPLY__BODY_STATUS_REPLY) {
		rpc_reply_free(reply);
		return cli_fail("status", -EPROTO);
	}
	if (json)
		status_json(reply->status_reply);
	else
		status_text(reply->status_reply);
	r = status_code(reply->status_reply->state);
	rpc_reply_free(reply);
	return r;
}

int cli_kill(cli_ctx *c, int argc, char **argv)
{
	Ext3d__KillRequest body = EXT3D__KILL_REQUEST__INIT;
	Ext3d__Request req = EXT3D__REQUEST__INIT;
	Ext3d__Reply *reply;

	if (argc != 2)
		return cli_fail("usage: kill SERVICE", -EINVAL);
	body.service = argv[1];
	req.body_case = EXT3D__REQUEST__BODY_KILL;
	req.kill = &body;
	if (cli_call(c, &req, &reply, CLI_TIMEOUT_MS))
		return 1;
	rpc_reply_free(reply);
	return 0;
}

/* An instance whose supervisor is not running: removes what it left (a
 * stale mount too) and returns 0; -1 when the supervisor runs (or may run). */
static int shutdown_dead(cli_ctx *c)
{
	char rundir[CM_PATH_MAX];
	int pid, r;

	if (cm_rundir(c->instance, rundir, sizeof(rundir)) < 0)
		return -1;
	r = cm_rundir_supervisor(rundir, &pid);
	if (r == -ENOENT || r == 0)
		cli_clean_mount(rundir);
	if (r == -ENOENT) {
		printf("ext3d: instance %s is not running: nothing to stop\n", c->instance);
		return 0;
	}
	if (r != 0)
		return -1;
	cm_rundir_clean(rundir);
	printf("ext3d: instance %s was not running (its supervisor, pid %d, is gone): "
	       "removed the files it left in %s\n", c->instance, pid, rundir);
	return 0;
}

int cli_shutdown(cli_ctx *c, int argc, char **argv)
{
	Ext3d__ShutdownRequest body = EXT3D__SHUTDOWN_REQUEST__INIT;
	Ext3d__StatusRequest probe_body = EXT3D__STATUS_REQUEST__INIT;
	Ext3d__Request req = EXT3D__REQUEST__INIT, probe = EXT3D__REQUEST__INIT;
	Ext3d__Reply *reply;
	int r;

	if (argc != 1)
		return cli_fail("usage: shutdown", -EINVAL);
	req.body_case = EXT3D__REQUEST__BODY_SHUTDOWN;
	req.shutdown = &body;
	r = shutdown_dead(c);
	if (r >= 0)
		return r;
	if (cli_call(c, &req, &reply, CLI_TIMEOUT_MS))
		return 1;
	rpc_reply_free(reply);
	probe.body_case = EXT3D__REQUEST__BODY_STATUS;
	probe.status = &probe_body;
	/* The supervisor answers until its services have stopped. */
	for (int i = 0; i < CLI_TIMEOUT_MS / 50; i++) {
		if (rpc_call(c->url, &probe, &reply, 1000) < 0)
			return 0;
		rpc_reply_free(reply);
		usleep(50000);
	}
	return cli_fail("shutdown", -ETIMEDOUT);
}
