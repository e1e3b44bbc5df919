/* txn.c - the write path's transactions: ext3fs_w.h's ino_txn over a JBD
 * handle on the shared journal. Blocks come from the shared buffer cache
 * and are declared to the journal before they change (get_write_access,
 * get_create_access, dirty_metadata; file data as the data mode says);
 * bitmaps and group descriptors change in alloc-svc, which joins the same
 * handle (allocproto.h), so an operation and its allocations commit
 * together.
 *
 * A thread runs one transaction at a time (its thread-local ino_txn) and
 * has its own channel to alloc-svc, opened on first use. No inode lock is
 * taken here: callers take theirs before ino_txn_start.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "allocproto.h"
#include "internal.h"
#include "journal.h"
#include "log.h"
#include "ops.h"

#define INO_ALLOC_TIMEOUT_MS 10000

struct ino_txn {
	ino_svc *s;
	jbd_handle *h;           /* NULL when the thread has no transaction */
	int err;                 /* the first error the transaction met */
	bool reserved;           /* may allocate the root-reserved blocks */
	struct timespec now;     /* the operation's time */
};

static _Thread_local struct ino_txn ino_tl_txn;
static _Thread_local cm_chan_client *ino_tl_alloc;

int ino_txn_setup(ino_svc *s)
{
	int r = jbd_attach(s->svc.arena, s->cache, (uint32_t)s->svc.slot, &s->jc);

	if (r == -ENOENT) {
		cm_warn("the image has no journal: serving it read-only");
		s->jc = NULL;
		return 0;
	}
	if (r < 0)
		return cm_log_errno(r, "cannot attach the journal: %m");
	return 0;
}

/* Records the first error; returns r. */
static int ino_txn_note(ino_txn *t, int r)
{
	if (r < 0 && t->err == 0)
		t->err = r;
	return r;
}

/* May c's allocations use the reserved blocks? As ext4_has_free_clusters
 * decides: the superblock's resuid (0 unless tune2fs -u), a member of its
 * resgid (unless that is 0), or root (capable(CAP_SYS_RESOURCE)). A
 * caller's checked creds count here too: ext3d-fuse writes as the daemon
 * but passes the writer, so that a non-root writer gets ENOSPC where the
 * kernel gives it. The service's own work (no creds) may. */
static bool ino_txn_may_reserve(ino_svc *s, const ino_creds *c)
{
	uint32_t resuid, resgid;

	ino_fs_resid(s->fs, &resuid, &resgid);
	return c->uid == 0 || c->uid == resuid || (resgid != 0 && ino_cred_in_group(c, resgid));
}

int ino_txn_start(ino_svc *s, const ino_creds *c, int credits, ino_txn **ret)
{
	ino_txn *t = &ino_tl_txn;
	int r;

	if (!s->jc || ino_fserror_read_only(s))
		return -EROFS;
	if (t->h)
		return -EBUSY;
	r = jbd_start(s->jc, credits, &t->h);
	if (r < 0) {
		t->h = NULL;
		return r;
	}
	t->s = s;
	t->err = 0;
	t->reserved = !c || ino_txn_may_reserve(s, c);
	clock_gettime(CLOCK_REALTIME, &t->now);
	*ret = t;
	return 0;
}

int ino_txn_stop(ino_txn *t, uint32_t *tid)
{
	int r;

	if (tid)
		*tid = jbd_handle_tid(t->h);
	r = jbd_stop(t->s->jc, t->h);
	t->h = NULL;
	return t->err ? t->err : r;
}

int ino_txn_stop_acked(ino_txn *t, uint32_t *tid)
{
	cm_errseq_ack(&t->s->svc.layout->errseq, jbd_handle_tid(t->h));
	return ino_txn_stop(t, tid);
}

/* data=writeback: file data is only dirty in the cache, never ordered
 * before a commit, so durability writes it out; then transaction tid
 * (committed) is durable with its data, and so is every one before it. */
static int ino_txn_flush_data(ino_svc *s, uint32_t tid)
{
	cm_bdev *bd;
	int r;

	if (s->jc->j->data_mode != JBD_DATA_WRITEBACK)
		return 0;
	bd = ino_thread_bdev(s);
	r = bd ? cm_bcache_sync(s->cache, bd) : -EIO;
	if (r == 0)
		cm_errseq_durable(&s->svc.layout->errseq, tid);
	return r;
}

int ino_txn_wait(ino_svc *s, uint32_t tid)
{
	int r;

	if (!s->jc)
		return 0;
	/* fsync is prompt: the commit starts now, not at the timer. */
	r = jbd_commit_tid(s->jc, tid);
	if (r == 0)
		r = jbd_wait_commit(s->jc, tid);
	return r == 0 ? ino_txn_flush_data(s, tid) : r;
}

int ino_txn_sync(ino_svc *s)
{
	uint32_t tid;
	int r;

	if (!s->jc)
		return 0;
	r = jbd_force_commit(s->jc, &tid);
	if (r == 0)
		r = jbd_wait_commit(s->jc, tid);
	return r == 0 ? ino_txn_flush_data(s, tid) : r;
}

int ino_txn_free_counts(ino_svc *s, uint64_t *bfree, uint64_t *ffree)
{
	cm_off off = atomic_load_explicit(&s->svc.layout->alloc, memory_order_acquire);
	cm_alloc_shared *as = off ? cm_arena_ptr(s->svc.arena, off, sizeof(*as)) : NULL;

	if (!as || as->magic != CM_AL_MAGIC)
		return -ENOENT;
	*bfree = (uint64_t)cm_fc_read_positive(&as->free_blocks);
	*ffree = (uint64_t)cm_fc_read_positive(&as->free_inodes);
	return 0;
}

struct timespec ino_txn_now(ino_txn *t)
{
	return t->now;
}

/* ---- blocks ---- */

static jbd_ctx *ino_jc(ino_txn *t)
{
	return t->s->jc;
}

static void ino_wbuf_set(ino_txn *t, cm_bh *bh, bool data, ino_wbuf *b)
{
	*b = (ino_wbuf){.data = cm_bh_data(t->s->cache, bh), .cookie = bh,
			.blocknr = cm_bh_blocknr(bh), .data_block = data};
}

static int ino_txn_read(ino_txn *t, uint64_t blocknr, cm_bh **bh)
{
	cm_bdev *bd = ino_thread_bdev(t->s);

	if (!bd)
		return -EIO;
	return cm_bcache_read(t->s->cache, bd, blocknr, bh);
}

int ino_txn_get_write(ino_txn *t, uint64_t blocknr, ino_wbuf *b)
{
	cm_bh *bh;
	int r = ino_txn_read(t, blocknr, &bh);

	if (r == 0) {
		r = jbd_get_write_access(ino_jc(t), t->h, bh);
		if (r < 0)
			cm_bcache_put(t->s->cache, bh);
	}
	if (r < 0)
		return ino_txn_note(t, r);
	ino_wbuf_set(t, bh, false, b);
	return 0;
}

/* A block nobody has read since it was allocated: its old contents in the
 * cache, if any, are stale, so it is zeroed rather than read. */
static int ino_txn_fresh(ino_txn *t, uint64_t blocknr, bool journalled, bool data, ino_wbuf *b)
{
	cm_bh *bh;
	int r = cm_bcache_getblk(t->s->cache, blocknr, &bh);

	if (r == 0 && journalled) {
		r = jbd_get_create_access(ino_jc(t), t->h, bh);
		if (r < 0)
			cm_bcache_put(t->s->cache, bh);
	}
	if (r < 0)
		return ino_txn_note(t, r);
	memset(cm_bh_data(t->s->cache, bh), 0, ino_fs_geom(t->s->fs)->block_size);
	cm_bh_set_uptodate(bh);
	ino_wbuf_set(t, bh, data, b);
	return 0;
}

int ino_txn_get_new(ino_txn *t, uint64_t blocknr, ino_wbuf *b)
{
	return ino_txn_fresh(t, blocknr, true, false, b);
}

int ino_txn_get_data(ino_txn *t, uint64_t blocknr, bool fresh, bool whole, ino_wbuf *b)
{
	bool journalled = ino_jc(t)->j->data_mode == JBD_DATA_JOURNAL;
	cm_bh *bh;
	int r;

	if (fresh)
		return ino_txn_fresh(t, blocknr, journalled, true, b);
	if (whole) {
		r = cm_bcache_getblk(t->s->cache, blocknr, &bh);
		if (r == 0 && !cm_bh_test(bh, CM_BH_UPTODATE)) {
			memset(cm_bh_data(t->s->cache, bh), 0, ino_fs_geom(t->s->fs)->block_size);
			cm_bh_set_uptodate(bh);
		}
	} else {
		r = ino_txn_read(t, blocknr, &bh);
	}
	if (r == 0 && journalled) {
		r = jbd_get_write_access(ino_jc(t), t->h, bh);
		if (r < 0)
			cm_bcache_put(t->s->cache, bh);
	}
	if (r < 0)
		return ino_txn_note(t, r);
	ino_wbuf_set(t, bh, true, b);
	return 0;
}

int ino_txn_dirty(ino_txn *t, ino_wbuf *b)
{
	cm_bh *bh = b->cookie;
	int r = b->data_block ? jbd_dirty_data(ino_jc(t), t->h, bh)
			      : jbd_dirty_metadata(ino_jc(t), t->h, bh);

	return ino_txn_note(t, r);
}

void ino_txn_put(ino_txn *t, ino_wbuf *b)
{
	if (b->cookie)
		cm_bcache_put(t->s->cache, b->cookie);
	memset(b, 0, sizeof(*b));
}

int ino_txn_forget(ino_txn *t, uint64_t blocknr, bool metadata)
{
	jbd_ctx *jc = ino_jc(t);
	cm_bh *bh;
	int r = cm_bcache_getblk(t->s->cache, blocknr, &bh);

	if (r < 0)
		return ino_txn_note(t, r);
	if (metadata || jc->j->data_mode == JBD_DATA_JOURNAL)
		r = jbd_revoke(jc, t->h, blocknr, bh);
	else
		r = jbd_forget(jc, t->h, bh);
	cm_bcache_put(t->s->cache, bh);
	return ino_txn_note(t, r);
}

int ino_txn_ensure(ino_txn *t, int credits)
{
	int r = jbd_extend(ino_jc(t), t->h, credits);

	if (r == 1) {
		r = jbd_restart(ino_jc(t), t->h, credits);
		if (r == 0)
			return 1;
	}
	return ino_txn_note(t, r);
}

/* ---- allocation, through alloc-svc ---- */

static int ino_alloc_call(ino_txn *t, uint16_t op, uint64_t goal, uint32_t count,
			  uint32_t mode, uint32_t flags, cm_al_rec *resp)
{
	cm_al_rec rq;
	int r;

	if (!ino_tl_alloc) {
		int slot = cm_layout_find_svc(t->s->svc.layout, "alloc-svc");
		r = slot < 0 ? slot : cm_chan_open(t->s->svc.arena, (uint32_t)slot,
						   CM_AL_VERSION, &ino_tl_alloc);
		if (r < 0)
			return ino_txn_note(t, r == -ENOENT ? -EIO : r);
	}
	memset(&rq, 0, sizeof(rq));
	rq.hdr.version = CM_AL_VERSION;
	rq.hdr.op = op;
	rq.handle = jbd_handle_token(ino_jc(t), t->h);
	rq.goal = goal;
	rq.count = count;
	rq.mode = mode;
	rq.flags = flags;
	r = cm_chan_call(ino_tl_alloc, &rq, resp, INO_ALLOC_TIMEOUT_MS);
	if (r == 0)
		r = resp->hdr.status;
	else
		r = -EIO;
	/* ENOSPC is an answer, not a failure of the transaction. */
	return r == -ENOSPC ? r : ino_txn_note(t, r);
}

void ino_txn_thread_end(void)
{
	ino_tl_alloc = cm_chan_close(ino_tl_alloc);
}

int ino_txn_alloc_blocks(ino_txn *t, uint64_t goal, uint32_t want, uint64_t *first,
			 uint32_t *got)
{
	cm_al_rec rs;
	int r = ino_alloc_call(t, CM_AL_ALLOC_BLOCKS, goal, want, 0,
			       t->reserved ? CM_AL_RESERVED : 0, &rs);

	if (r < 0)
		return r;
	if (rs.count == 0 || rs.count > want)
		return ino_txn_note(t, -EPROTO);
	*first = rs.result;
	*got = rs.count;
	return 0;
}

int ino_txn_free_blocks(ino_txn *t, uint64_t first, uint32_t count)
{
	cm_al_rec rs;

	return ino_alloc_call(t, CM_AL_FREE_BLOCKS, first, count, 0, 0, &rs);
}

/* CM_AL_TOPDIR for a directory made in a parent marked as the top of a
 * hierarchy, which Orlov spreads like the root's subdirectories. */
static uint32_t ino_topdir_flag(ino_txn *t, uint32_t dir, uint16_t mode)
{
	ino_inode parent;

	if ((mode & 0xf000) != EXT3_S_IFDIR || dir == EXT3_ROOT_INO ||
	    ino_inode_read_any(t->s->fs, dir, &parent) < 0)
		return 0;
	return parent.flags & EXT3_TOPDIR_FL ? CM_AL_TOPDIR : 0;
}

int ino_txn_alloc_inode(ino_txn *t, uint32_t dir, uint16_t mode, uint32_t *ret)
{
	cm_al_rec rs;
	int r = ino_alloc_call(t, CM_AL_ALLOC_INODE, dir, 1, mode, ino_topdir_flag(t, dir, mode),
			       &rs);

	if (r < 0)
		return r;
	if (rs.result == 0 || rs.result > ino_fs_geom(t->s->fs)->inodes_count)
		return ino_txn_note(t, -EPROTO);
	*ret = (uint32_t)rs.result;
	return 0;
}

int ino_txn_free_inode(ino_txn *t, uint32_t ino, uint16_t mode)
{
	cm_al_rec rs;

	return ino_alloc_call(t, CM_AL_FREE_INODE, ino, 1, mode, 0, &rs);
}
