/* main.c - journald-svc: replays the journal at start (recover.c), then
 * creates the run-time journal and runs its commit thread until SIGTERM,
 * when it shuts the journal down cleanly (commitd.c).
 *   --commit-interval=MS   commit the running transaction this long after
 *                          it started (default 5000)
 *   --cache-size=MiB       the buffer cache, if journald-svc makes it (64)
 *   --data=MODE            ordered (default), journal or writeback */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jd.h"
#include "log.h"
#include "sandbox.h"

enum { JD_OPT_COMMIT = 0x2000, JD_OPT_CACHE, JD_OPT_DATA };

static const struct option jd_options[] = {
	CM_SERVICE_OPTIONS,
	{"commit-interval", required_argument, NULL, JD_OPT_COMMIT},
	{"cache-size", required_argument, NULL, JD_OPT_CACHE},
	{"data", required_argument, NULL, JD_OPT_DATA},
	{0},
};

static int jd_parse(jd_svc *s, int argc, char **argv)
{
	unsigned long long v;
	char *end;
	int opt;

	while ((opt = getopt_long(argc, argv, "", jd_options, NULL)) != -1) {
		if (opt == JD_OPT_COMMIT || opt == JD_OPT_CACHE) {
			errno = 0;
			v = strtoull(optarg, &end, 10);
			if (errno || *end || v == 0 || v > (opt == JD_OPT_COMMIT ? 3600000 : 65536))
				return -EINVAL;
			if (opt == JD_OPT_COMMIT)
				s->commit_ms = (uint32_t)v;
			else
				s->cache_bytes = v << 20;
		} else if (opt == JD_OPT_DATA) {
			if (strcmp(optarg, "ordered") == 0)
				s->data_mode = JBD_DATA_ORDERED;
			else if (strcmp(optarg, "journal") == 0)
				s->data_mode = JBD_DATA_JOURNAL;
			else if (strcmp(optarg, "writeback") == 0)
				s->data_mode = JBD_DATA_WRITEBACK;
			else
				return -EINVAL;
		} else if (cm_service_option(&s->svc, opt, optarg) <= 0) {
			return -EINVAL;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	cm_sandbox_policy policy = {0};
	jd_svc s = {.commit_ms = JBD_DEFAULT_COMMIT_MS, .cache_bytes = CM_BCACHE_DEFAULT_BYTES,
		    .data_mode = JBD_DATA_ORDERED};
	int r;

	cm_service_init(&s.svc, "journald-svc");
	if (jd_parse(&s, argc, argv) < 0)
		return cm_log_errno(-EINVAL, "usage: journald-svc --arena-fd=N --slot=K "
				    "[--commit-interval=MS] [--cache-size=MiB] "
				    "[--data=ordered|journal|writeback]"), EXIT_FAILURE;
	if (cm_service_attach(&s.svc) < 0)
		return EXIT_FAILURE;
	r = cm_sandbox_enter(&policy);
	if (r < 0)
		return cm_log_errno(r, "sandbox: %m"), EXIT_FAILURE;
	if (jds_replay(&s) < 0 || jd_journal_start(&s) < 0)
		return EXIT_FAILURE;
	cm_service_ready(&s.svc);
	r = jd_commit_loop(&s);
	jd_stop(&s);
	cm_service_fini(&s.svc);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
