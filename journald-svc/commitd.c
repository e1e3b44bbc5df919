/* commitd.c - journald-svc after recovery: makes the buffer cache if no
 * service made it yet, maps the journal (jmap.c) into a jbd_geometry,
 * creates the run-time journal in the arena with needs_recovery durable,
 * then runs the commit thread: it wakes on j_wait_commit or every
 * JD_POLL_MS, commits when asked, when the running transaction expired
 * with handles in it, or when a starter waits for space, and checkpoints
 * when a starter waits for space or half of the log is in use (committing
 * the running transaction first when it holds the tail back). Each commit
 * journals the superblock's free counts (sbcounts.c). On SIGTERM it shuts
 * the journal down cleanly (commit.h, jbd_shutdown). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commit.h"
#include "internal.h"
#include "jd.h"
#include "log.h"

#define JD_POLL_MS 200

static const char *const jd_mode_names[] = {
	[JBD_DATA_ORDERED] = "ordered",
	[JBD_DATA_JOURNAL] = "journal",
	[JBD_DATA_WRITEBACK] = "writeback",
};

static int jd_cache(jd_svc *s, uint32_t bs)
{
	int r = cm_bcache_open_shared(s->svc.arena, s->cache_bytes, bs, &s->cache);

	return r < 0 ? cm_log_errno(r, "buffer cache of %llu bytes: %m",
				    (unsigned long long)s->cache_bytes) : 0;
}

/* The geometry of the (recovered) journal: its map, its superblock's UUID
 * and sequence. */
static int jd_geometry(jd_svc *s, jd_log *lg, jbd_geometry *g)
{
	journal_superblock_t *jsb;
	char why[256];
	int r;

	r = jd_log_open(&s->dev, lg, why, sizeof(why));
	if (r < 0)
		return cm_log_errno(r, "journal: %s", why);
	if (!lg->has_journal)
		return 0;
	jsb = malloc(lg->bs);
	if (!jsb)
		return -ENOMEM;
	r = jd_log_read(lg, 0, jsb);
	if (r == 0)
		*g = (jbd_geometry){
			.block_size = lg->bs, .fs_blocks = lg->fs_blocks, .first = lg->first,
			.last = lg->maxlen, .sequence = lg->sequence + 1, .logmap = lg->map,
			.fs_sb_block = lg->bs == 1024 ? 1 : 0,
			.fs_sb_offset = lg->bs == 1024 ? 0 : 1024,
			.data_mode = s->data_mode, .commit_interval_ms = s->commit_ms,
		};
	if (r == 0)
		memcpy(g->uuid, jsb->s_uuid, sizeof(g->uuid));
	free(jsb);
	return r < 0 ? cm_log_errno(r, "reading the journal superblock: %m") : 0;
}

int jd_journal_start(jd_svc *s)
{
	jbd_geometry g;
	jd_log lg;
	cm_off off;
	int r;

	r = jd_geometry(s, &lg, &g);
	jd_dev_close(&s->dev);
	if (r < 0)
		return r;
	if (!lg.has_journal) {
		cm_info("no journal: nothing to commit");
		return 0;
	}
	r = jd_cache(s, g.block_size);
	if (r == 0 && (r = jbd_create(s->svc.arena, &g, &off)) < 0)
		cm_log_errno(r, "creating the journal in the arena: %m");
	jd_log_close(&lg);
	if (r < 0)
		return r;
	if ((r = jbd_attach(s->svc.arena, s->cache, (uint32_t)s->svc.slot, &s->jc)) < 0)
		return cm_log_errno(r, "attaching the journal: %m");
	if ((r = cm_bdev_open(s->svc.arena, &s->bd)) < 0)
		return cm_log_errno(r, "blockdev-svc: %m");
	if (jd_device_read_only(s)) {
		cm_info("read-only device: the journal is not opened for writing");
		return 0;
	}
	if ((r = jbd_jsb_open(s->jc, s->bd)) < 0)
		return cm_log_errno(r, "setting needs_recovery: %m");
	jd_sbcounts_start(s);
	cm_info("journal: %u log blocks from %u, %u per transaction at most, first tid %u, "
		"commit every %u ms, data=%s", g.last - g.first, g.first, g.last / 4, g.sequence,
		s->jc->j->commit_interval_ms, jd_mode_names[g.data_mode]);
	return 0;
}

static void jd_report(int r, const char *what, int *last)
{
	if (r < 0 && r != *last)
		cm_log_errno(r, "%s: %m", what);
	*last = r < 0 ? r : 0;
}

int jd_commit_loop(jd_svc *s)
{
	jbd_ctx *jc = s->jc;
	bool stuck = false;
	int r, last = 0;

	while (!cm_service_stopping()) {
		cm_event *ev = jc ? &jc->j->j_wait_commit : &s->svc.layout->svcs[s->svc.slot].doorbell;
		uint32_t seq = cm_event_prepare(ev);

		if (!jc || (!jbd_commit_wanted(jc) && (stuck || !jbd_checkpoint_wanted(jc)))) {
			cm_event_wait(ev, seq, JD_POLL_MS);
			if (!jc)
				continue;
		} else {
			cm_event_cancel(ev);
		}
		if (jbd_commit_wanted(jc)) {
			jd_report(jbd_commit(jc, s->bd), "commit", &last);
			stuck = false;
		}
		if (stuck || !jbd_checkpoint_wanted(jc))
			continue;
		r = jbd_checkpoint(jc, s->bd, 0);
		jd_report(r, "checkpoint", &last);
		/* Nothing freed: the running transaction logged again what the
		 * oldest one waits for. Committing it lets the next checkpoint
		 * go on; with nothing to commit, wait for the next commit. */
		if (r == 0 && (r = jbd_commit(jc, s->bd)) == 1)
			r = jbd_checkpoint(jc, s->bd, 0);
		jd_report(r, "commit or checkpoint", &last);
		stuck = r <= 0;
	}
	if (!jc || jd_device_read_only(s))
		return 0;
	/* data=writeback leaves file data only dirty in the cache (no commit
	 * orders it): it goes home before the journal is shut down. */
	if ((r = cm_bcache_sync(s->cache, s->bd)) < 0)
		cm_log_errno(r, "writing back file data: %m, ignoring");
	/* The superblock's counts, if still stale, in a last handle that
	 * jbd_shutdown commits; the log is emptied first so that its start
	 * cannot wait for this thread. */
	if ((r = jbd_commit(jc, s->bd)) >= 0 && (r = jbd_checkpoint(jc, s->bd, 0)) >= 0)
		r = jd_sbcounts_shutdown(s);
	if (r < 0)
		cm_log_errno(r, "the superblock's free counts: %m, ignoring");
	r = jbd_shutdown(jc, s->bd);
	if (r < 0)
		return cm_log_errno(r, "clean shutdown failed (the journal will be replayed): %m");
	cm_info("journal shut down cleanly: %llu commits, %llu blocks logged, %llu checkpoints",
		(unsigned long long)atomic_load(&jc->j->stats.commits),
		(unsigned long long)atomic_load(&jc->j->stats.blocks),
		(unsigned long long)atomic_load(&jc->j->stats.checkpoints));
	return 0;
}

void jd_stop(jd_svc *s)
{
	s->jc = s->jc ? jbd_detach(s->jc) : NULL;
	s->bd = cm_bdev_close(s->bd);
	s->cache = cm_bcache_detach(s->cache);
}
