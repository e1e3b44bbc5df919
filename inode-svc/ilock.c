/* ilock.c - inode locks: INO_ILOCK_STRIPES process-private rwlocks, an
 * inode's stripe chosen by its number. A write operation takes the stripes
 * of every inode it changes, write-locked, in stripe order (each stripe
 * once), before its transaction starts, so a thread never waits for an
 * inode lock while it holds a journal handle and two operations never wait
 * for each other's stripes in a cycle. Readers take one stripe shared.
 * Cross-directory renames also hold rename_mtx (outermost), so that the
 * ".." chains they walk to refuse a loop do not change under them.
 * Lock order: rename_mtx -> stripes in index order -> journal handle.
 */
#include "ops.h"

#define INO_ILOCK_STRIPES 1024u

static struct {
	pthread_rwlock_t lk;
	char pad[64 - sizeof(pthread_rwlock_t) % 64];
} ino_stripes[INO_ILOCK_STRIPES];

static pthread_mutex_t ino_rename_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t ino_stripes_once = PTHREAD_ONCE_INIT;

static void ino_stripes_init(void)
{
	for (unsigned i = 0; i < INO_ILOCK_STRIPES; i++)
		pthread_rwlock_init(&ino_stripes[i].lk, NULL);
}

static unsigned ino_stripe(uint32_t ino)
{
	return (ino * 0x9e3779b1u) >> 22; /* the top 10 bits: 0..1023 */
}

void ino_ilock(ino_ilockset *ls, const uint32_t *inos, unsigned n)
{
	pthread_once(&ino_stripes_once, ino_stripes_init);
	ls->n = 0;
	/* At most INO_ILOCK_MAX stripes: sorted by insertion. */
	for (unsigned i = 0; i < n && i < INO_ILOCK_MAX; i++) {
		unsigned st, k;
		if (!inos[i])
			continue;
		st = ino_stripe(inos[i]);
		for (k = ls->n++; k > 0 && ls->stripes[k - 1] > st; k--)
			ls->stripes[k] = ls->stripes[k - 1];
		ls->stripes[k] = st;
	}
	unsigned k = 0;
	for (unsigned i = 0; i < ls->n; i++)
		if (k == 0 || ls->stripes[k - 1] != ls->stripes[i])
			ls->stripes[k++] = ls->stripes[i];
	ls->n = k;
	for (unsigned i = 0; i < ls->n; i++)
		pthread_rwlock_wrlock(&ino_stripes[ls->stripes[i]].lk);
}

void ino_iunlock(ino_ilockset *ls)
{
	while (ls->n)
		pthread_rwlock_unlock(&ino_stripes[ls->stripes[--ls->n]].lk);
}

void ino_ilock_shared(uint32_t ino)
{
	pthread_once(&ino_stripes_once, ino_stripes_init);
	pthread_rwlock_rdlock(&ino_stripes[ino_stripe(ino)].lk);
}

void ino_iunlock_shared(uint32_t ino)
{
	pthread_rwlock_unlock(&ino_stripes[ino_stripe(ino)].lk);
}

void ino_rename_lock(void)
{
	pthread_mutex_lock(&ino_rename_mtx);
}

void ino_rename_unlock(void)
{
	pthread_mutex_unlock(&ino_rename_mtx);
}
