/* grant.c - the inode numbers a session may name, with their lookup counts,
 * as FUSE keeps node ids: a lookup that returns an inode (or a readdir that
 * returns it with its attributes) grants it once more, a forget gives
 * grants back, and at zero the inode is no longer the session's to use.
 * The root is always granted; a root peer may name any inode, but its
 * grants are counted too, as holds.
 *
 * The table is an open-addressing hash (linear probing, deletion by
 * shifting back), grown by doubling up to twice INO_GRANTS_MAX slots: a
 * session holds at most INO_GRANTS_MAX inodes (-ENFILE beyond; a root
 * session just stops counting). Its mutex (grants.mtx) is taken by the
 * session's lane workers and the session manager.
 *
 * Holds: a granted inode is held open (the kernel's open file). holds_mtx
 * (process-private, a leaf after grants.mtx) covers a table of the inodes
 * granted to any session, with how many sessions hold each and whether it
 * was unlinked while held; when the last session lets such an orphan go,
 * it is freed (ino_op_release, with no grant lock held).
 *
 * A grant must be taken while the name that reached the inode is still
 * there, under a lock its unlink needs (the directory's stripe, shared for
 * a lookup or readdir; the inode locks of the create or link that made the
 * name): an unlink then either sees the hold and makes the inode an
 * orphan, or has freed the inode before the name could be found. A grant
 * taken after an unlink freed the inode would let writes allocate blocks
 * to a free inode, blocks no file owns; ino_op_read refuses such an inode
 * (-ESTALE) since it is held but not marked orphan.
 */
#include <errno.h>
#include <stdlib.h>

#include "ops.h"

#define INO_HOLD_BUCKETS 4096u

typedef struct ino_hold {
	uint32_t ino;
	uint32_t sessions;         /* [holds_mtx] sessions that have it granted */
	bool orphan;               /* [holds_mtx] unlinked while held */
	struct ino_hold *next;     /* [holds_mtx] */
} ino_hold;

static pthread_mutex_t ino_holds_mtx = PTHREAD_MUTEX_INITIALIZER;
static ino_hold *ino_holds[INO_HOLD_BUCKETS]; /* [holds_mtx] */

/* Called with holds_mtx held: ino's entry, or where it would go. */
static ino_hold **ino_hold_find_locked(uint32_t ino)
{
	ino_hold **pp = &ino_holds[ino % INO_HOLD_BUCKETS];

	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->next;
	return pp;
}

/* One more session holds ino. */
static int ino_hold_get(uint32_t ino)
{
	ino_hold **pp, *h;
	int r = 0;

	pthread_mutex_lock(&ino_holds_mtx);
	pp = ino_hold_find_locked(ino);
	if (*pp) {
		(*pp)->sessions++;
	} else if ((h = calloc(1, sizeof(*h)))) {
		h->ino = ino;
		h->sessions = 1;
		*pp = h;
	} else {
		r = -ENOMEM;
	}
	pthread_mutex_unlock(&ino_holds_mtx);
	return r;
}

/* One session less holds ino: true when it was the last hold of an
 * orphan, which the caller frees. */
static bool ino_hold_put(uint32_t ino)
{
	ino_hold **pp, *h;
	bool release = false;

	pthread_mutex_lock(&ino_holds_mtx);
	pp = ino_hold_find_locked(ino);
	h = *pp;
	if (h && --h->sessions == 0) {
		release = h->orphan;
		*pp = h->next;
		free(h);
	}
	pthread_mutex_unlock(&ino_holds_mtx);
	return release;
}

unsigned ino_hold_count(uint32_t ino)
{
	ino_hold *h;
	unsigned n;

	pthread_mutex_lock(&ino_holds_mtx);
	h = *ino_hold_find_locked(ino);
	n = h ? h->sessions : 0;
	pthread_mutex_unlock(&ino_holds_mtx);
	return n;
}

bool ino_hold_is_orphan(uint32_t ino)
{
	ino_hold *h;
	bool orphan;

	pthread_mutex_lock(&ino_holds_mtx);
	h = *ino_hold_find_locked(ino);
	orphan = h && h->orphan;
	pthread_mutex_unlock(&ino_holds_mtx);
	return orphan;
}

bool ino_hold_orphan(uint32_t ino)
{
	ino_hold *h;

	pthread_mutex_lock(&ino_holds_mtx);
	h = *ino_hold_find_locked(ino);
	if (h)
		h->orphan = true;
	pthread_mutex_unlock(&ino_holds_mtx);
	return h != NULL;
}

#define INO_GRANTS_MIN_SLOTS 64u

static uint32_t ino_grant_hash(uint32_t ino, uint32_t mask)
{
	return (ino * 0x9e3779b1u) & mask;
}

void ino_grants_init(ino_grants *g)
{
	pthread_mutex_init(&g->mtx, NULL);
	g->slots = NULL;
	g->nslots = g->used = 0;
}

void ino_grants_fini(ino_grants *g)
{
	free(g->slots);
	g->slots = NULL;
	pthread_mutex_destroy(&g->mtx);
}

/* Called with g->mtx held: the slot of ino, or of the hole it would take. */
static ino_grant *ino_grant_slot_locked(ino_grants *g, uint32_t ino)
{
	uint32_t mask = g->nslots - 1, i = ino_grant_hash(ino, mask);

	while (g->slots[i].ino && g->slots[i].ino != ino)
		i = (i + 1) & mask;
	return &g->slots[i];
}

/* Called with g->mtx held: room for one more grant. */
static int ino_grants_grow_locked(ino_grants *g)
{
	ino_grants old = *g;
	uint32_t n = g->nslots ? 2 * g->nslots : INO_GRANTS_MIN_SLOTS;

	if (g->used < g->nslots / 2)
		return 0;
	if (g->used >= INO_GRANTS_MAX)
		return -ENFILE;
	g->slots = calloc(n, sizeof(*g->slots));
	if (!g->slots) {
		g->slots = old.slots;
		return -ENOMEM;
	}
	g->nslots = n;
	for (uint32_t i = 0; i < old.nslots; i++)
		if (old.slots[i].ino)
			*ino_grant_slot_locked(g, old.slots[i].ino) = old.slots[i];
	free(old.slots);
	return 0;
}

int ino_grant_add(ino_session *ss, uint32_t ino)
{
	ino_grants *g = &ss->grants;
	ino_grant *e;
	int r = 0;

	if (ino == EXT3_ROOT_INO)
		return 0;
	pthread_mutex_lock(&g->mtx);
	e = g->slots ? ino_grant_slot_locked(g, ino) : NULL;
	if (!e || !e->ino) {
		r = ino_grants_grow_locked(g);
		if (r == 0)
			r = ino_hold_get(ino);
		if (r == 0) {
			e = ino_grant_slot_locked(g, ino);
			e->ino = ino;
			e->count = 0;
			g->used++;
		}
	}
	if (r == 0 && e->count < UINT32_MAX)
		e->count++;
	pthread_mutex_unlock(&g->mtx);
	return ss->privileged ? 0 : r;
}

int ino_grant_check(ino_session *ss, uint64_t ino)
{
	ino_grants *g = &ss->grants;
	bool ok;

	if (ss->privileged || ino == EXT3_ROOT_INO)
		return 0;
	if (ino == 0 || ino > UINT32_MAX)
		return -EINVAL;
	pthread_mutex_lock(&g->mtx);
	ok = g->slots && ino_grant_slot_locked(g, (uint32_t)ino)->ino;
	pthread_mutex_unlock(&g->mtx);
	return ok ? 0 : -EACCES;
}

/* Called with g->mtx held: empties slot i, moving back the entries of its
 * probe run that a hole there would hide. */
static void ino_grant_remove_locked(ino_grants *g, uint32_t i)
{
	uint32_t mask = g->nslots - 1;

	g->slots[i].ino = 0;
	for (uint32_t j = (i + 1) & mask; g->slots[j].ino; j = (j + 1) & mask) {
		uint32_t home = ino_grant_hash(g->slots[j].ino, mask);
		/* An entry whose home lies cyclically in (i, j] is still reachable. */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		g->slots[i] = g->slots[j];
		g->slots[j].ino = 0;
		i = j;
	}
	g->used--;
}

int ino_grant_forget(ino_session *ss, uint64_t ino, uint64_t nlookup)
{
	ino_grants *g = &ss->grants;
	bool gone = false;
	ino_grant *e;
	int r = 0;

	if (ino == 0 || ino > UINT32_MAX)
		return -EINVAL;
	if (ino == EXT3_ROOT_INO)
		return 0;
	pthread_mutex_lock(&g->mtx);
	e = g->slots ? ino_grant_slot_locked(g, (uint32_t)ino) : NULL;
	if (!e || !e->ino) {
		r = ss->privileged ? 0 : -ENOENT;
	} else if (nlookup < e->count) {
		e->count -= (uint32_t)nlookup;
	} else {
		ino_grant_remove_locked(g, (uint32_t)(e - g->slots));
		gone = ino_hold_put((uint32_t)ino);
	}
	pthread_mutex_unlock(&g->mtx);
	if (gone)
		ino_op_release(ss->svc, (uint32_t)ino);
	return r;
}

void ino_grants_release(ino_session *ss)
{
	ino_grants *g = &ss->grants;

	pthread_mutex_lock(&g->mtx);
	for (uint32_t i = 0; i < g->nslots; i++) {
		uint32_t ino = g->slots[i].ino;
		if (!ino)
			continue;
		g->slots[i].ino = 0;
		g->used--;
		if (!ino_hold_put(ino))
			continue;
		/* Freeing takes inode locks: not under grants.mtx. */
		pthread_mutex_unlock(&g->mtx);
		ino_op_release(ss->svc, ino);
		pthread_mutex_lock(&g->mtx);
	}
	pthread_mutex_unlock(&g->mtx);
}
