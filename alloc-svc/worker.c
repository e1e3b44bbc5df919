/* worker.c - alloc-svc's worker threads: each serves its share of the
 * channels open to alloc-svc (cm_chan_server_share: a channel is served
 * by one thread, in order), with a blockdev channel of its own and its
 * own slot in the fuzzy counters. Worker 0 is the main thread. They stop
 * at SIGTERM, between requests. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "internal.h"
#include "log.h"

#define AL_POLL_MS 200

int al_workers_init(al_svc *s, cm_bdev *bd)
{
	s->workers = calloc(s->nworkers, sizeof(*s->workers));
	if (!s->workers)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nworkers; i++) {
		al_worker *w = &s->workers[i];
		int r;

		w->s = s;
		w->id = i;
		w->rng = cm_now_ns() * 0x9e3779b97f4a7c15ULL + i + 1;
		if (i == 0)
			w->bd = bd;
		else if ((r = cm_bdev_open(s->svc.arena, &w->bd)) < 0)
			return r;
	}
	return 0;
}

static void *al_worker_main(void *arg)
{
	al_worker *w = arg;
	cm_chan_server srv;

	cm_chan_server_init(&srv, w->s->svc.arena, (uint32_t)w->s->svc.slot);
	cm_chan_server_share(&srv, w->id, w->s->nworkers);
	while (!cm_service_stopping()) {
		uint32_t armed = cm_chan_server_arm(&srv);

		if (cm_chan_server_poll(&srv, 32, al_exec, w) == 0)
			cm_chan_server_wait(&srv, armed, AL_POLL_MS);
	}
	return NULL;
}

int al_workers_run(al_svc *s)
{
	uint32_t started = 1;
	int r = 0;

	for (; started < s->nworkers; started++) {
		r = -pthread_create(&s->workers[started].thread, NULL, al_worker_main,
				    &s->workers[started]);
		if (r < 0) {
			/* Its share of the channels would go unserved: stop. */
			cm_log_errno(r, "starting worker %u: %m", started);
			raise(SIGTERM);
			break;
		}
	}
	al_worker_main(&s->workers[0]);
	for (uint32_t i = 1; i < started; i++)
		pthread_join(s->workers[i].thread, NULL);
	return r;
}

void al_workers_fini(al_svc *s)
{
	if (!s->workers)
		return;
	for (uint32_t i = 1; i < s->nworkers; i++)
		s->workers[i].bd = cm_bdev_close(s->workers[i].bd);
	free(s->workers);
	s->workers = NULL;
}
