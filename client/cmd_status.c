/* cmd_status.c - ext3d status [--json], kill SERVICE and shutdown: control
 * requests to the instance's supervisor. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rpc.h"

static int cli_call(cli_ctx *c, Ext3d__Request *req, Ext3d__Reply **ret)
{
	char what[128];
	int r = rpc_call(c->url, req, ret, CLI_TIMEOUT_MS);

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

static void status_json(const Ext3d__StatusReply *st)
{
	printf("{\"instance\":");
	json_str(st->instance);
	printf(",\"supervisor\":{\"pid\":%d,\"state\":", st->supervisor_pid);
	json_str(st->state);
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
		printf(",\"last_exit_status\":%d,\"last_exit_signal\":%d}", s->last_exit_status,
		       s->last_exit_signal);
	}
	printf("],\"locks\":[");
	for (size_t i = 0; i < st->n_locks; i++) {
		const Ext3d__LockStatus *l = st->locks[i];
		printf("%s{\"name\":", i ? "," : "");
		json_str(l->name);
		printf(",\"instances\":%u,\"acquisitions\":%llu,\"contended\":%llu,\"wait_ns\":%llu}",
		       l->instances, (unsigned long long)l->acquisitions,
		       (unsigned long long)l->contended, (unsigned long long)l->wait_ns);
	}
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
	printf("}\n");
}

static void status_text(const Ext3d__StatusReply *st)
{
	printf("instance %s: %s (supervisor pid %d, generation %llu, locking %s)\n",
	       st->instance, st->state, st->supervisor_pid, (unsigned long long)st->generation,
	       st->locking);
	printf("%-16s %8s %-10s %8s %-7s %s\n", "SERVICE", "PID", "STATE", "RESTARTS",
	       "POLICY", "LAST EXIT");
	for (size_t i = 0; i < st->n_services; i++) {
		const Ext3d__ServiceStatus *s = st->services[i];
		char last[32] = "-";
		if (s->last_exit_signal)
			snprintf(last, sizeof(last), "signal %d", s->last_exit_signal);
		else if (s->last_exit_status >= 0)
			snprintf(last, sizeof(last), "status %d", s->last_exit_status);
		printf("%-16s %8d %-10s %8u %-7s %s\n", s->name, s->pid, s->state, s->restarts,
		       s->restart_policy, last);
	}
	printf("\n%-14s %6s %14s %12s %14s\n", "LOCK", "COUNT", "ACQUISITIONS", "CONTENDED",
	       "WAIT (us)");
	for (size_t i = 0; i < st->n_locks; i++) {
		const Ext3d__LockStatus *l = st->locks[i];
		printf("%-14s %6u %14llu %12llu %14llu\n", l->name, l->instances,
		       (unsigned long long)l->acquisitions, (unsigned long long)l->contended,
		       (unsigned long long)(l->wait_ns / 1000));
	}
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
}

int cli_status(cli_ctx *c, int argc, char **argv)
{
	Ext3d__StatusRequest body = EXT3D__STATUS_REQUEST__INIT;
	Ext3d__Request req = EXT3D__REQUEST__INIT;
	bool json = argc > 1 && strcmp(argv[1], "--json") == 0;
	Ext3d__Reply *reply;

	if (argc > (json ? 2 : 1))
		return cli_fail("status: unexpected argument", -EINVAL);
	req.body_case = EXT3D__REQUEST__BODY_STATUS;
	req.status = &body;
	if (cli_call(c, &req, &reply))
		return 1;
	if (reply->body_case != EXT3D__REPLY__BODY_STATUS_REPLY) {
		rpc_reply_free(reply);
		return cli_fail("status", -EPROTO);
	}
	if (json)
		status_json(reply->status_reply);
	else
		status_text(reply->status_reply);
	rpc_reply_free(reply);
	return 0;
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
	if (cli_call(c, &req, &reply))
		return 1;
	rpc_reply_free(reply);
	return 0;
}

int cli_shutdown(cli_ctx *c, int argc, char **argv)
{
	Ext3d__ShutdownRequest body = EXT3D__SHUTDOWN_REQUEST__INIT;
	Ext3d__StatusRequest probe_body = EXT3D__STATUS_REQUEST__INIT;
	Ext3d__Request req = EXT3D__REQUEST__INIT, probe = EXT3D__REQUEST__INIT;
	Ext3d__Reply *reply;

	if (argc != 1)
		return cli_fail("usage: shutdown", -EINVAL);
	req.body_case = EXT3D__REQUEST__BODY_SHUTDOWN;
	req.shutdown = &body;
	if (cli_call(c, &req, &reply))
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
