/* grant.c - the inode numbers a session may name, with their lookup counts,
 * as FUSE keeps node ids: a lookup that returns an inode (or a readdir that
 * returns it with its attributes) grants it once more, a forget gives
 * grants back, and at zero the inode is no longer the session's to use.
 * The root is always granted; a root peer may name any inode.
 *
 * The table is an open-addressing hash (linear probing, deletion by
 * shifting back), grown by doubling up to twice INO_GRANTS_MAX slots: a
 * session holds at most INO_GRANTS_MAX inodes (-ENFILE beyond). Its mutex
 * (grants.mtx) is a leaf, taken by the session's lane workers.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

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

	if (ss->privileged || ino == EXT3_ROOT_INO)
		return 0;
	pthread_mutex_lock(&g->mtx);
	e = g->slots ? ino_grant_slot_locked(g, ino) : NULL;
	if (!e || !e->ino) {
		r = ino_grants_grow_locked(g);
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
	return r;
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
	ino_grant *e;
	int r = 0;

	if (ino == 0 || ino > UINT32_MAX)
		return -EINVAL;
	if (ss->privileged || ino == EXT3_ROOT_INO)
		return 0;
	pthread_mutex_lock(&g->mtx);
	e = g->slots ? ino_grant_slot_locked(g, (uint32_t)ino) : NULL;
	if (!e || !e->ino)
		r = -ENOENT;
	else if (nlookup < e->count)
		e->count -= (uint32_t)nlookup;
	else
		ino_grant_remove_locked(g, (uint32_t)(e - g->slots));
	pthread_mutex_unlock(&g->mtx);
	return r;
}
