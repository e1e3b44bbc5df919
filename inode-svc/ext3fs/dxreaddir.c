/*
 * dxreaddir.c - readdir of an indexed (htree) directory in hash order, as
 * ext3_dx_readdir does. A leaf split moves half a leaf's entries to a new
 * block at the end of the directory, so a listing by byte offset that
 * spans the split meets the moved entries twice; an entry's hash does not
 * move. The cookie of an entry is its position: 0 is the start, "." is
 * followed by 1 and ".." by 2, and a named entry sits at
 * 3 + (major hash >> 1 << 31 | minor hash >> 1), below 2^63 as FUSE and
 * telldir need. Entries of one position (a collision of 62 bits of hash)
 * are listed together: each but the last of them gives its own position as
 * the next cookie, so a batch that ends inside such a run starts it again.
 *
 * Each batch walks the whole directory twice (the positions at or after
 * the cookie, to find the last one the batch can hold; then those entries
 * with their names) and sorts what it keeps: O(entries) per batch, as the
 * kernel's rebuilt hash tree is. A corrupt index is listed by byte offset.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define DX_POS_DOT 1u    /* the cookie after "." */
#define DX_POS_DOTDOT 2u /* after ".." */
#define DX_POS_FIRST 3u  /* the smallest position of a named entry */

typedef struct dx_ent {
	uint64_t pos;
	uint32_t ino;
	uint8_t type;
	uint8_t namelen;
	char name[EXT3_NAME_LEN];
} dx_ent;

typedef struct dx_scan {
	ino_fs *fs;
	unsigned version;      /* the root's hash version, unsigned variants included */
	uint64_t from;         /* the batch's first position */
	uint64_t last;         /* pass 2: the last position kept */
	uint64_t *pos;         /* pass 1: positions at or after from */
	dx_ent *ents;          /* pass 2: the entries kept */
	size_t n, cap;
	uint32_t dot, dotdot;  /* their inode numbers (0: not met) */
	uint8_t dottype, dotdottype;
	int err;
} dx_scan;

static uint64_t dx_pos(const dx_scan *s, const char *name, size_t namelen)
{
	uint32_t major = 0, minor = 0;

	(void)ino_hash(s->version, s->fs->hash_seed, name, namelen, &major, &minor);
	return DX_POS_FIRST + (((uint64_t)(major >> 1) << 31) | (minor >> 1));
}

static bool dx_is_dot(const char *name, size_t namelen, int dots)
{
	return namelen == (size_t)dots && name[0] == '.' && (dots == 1 || name[1] == '.');
}

/* Grows an array of elem-byte elements to hold one more: 0 or -ENOMEM. */
static int dx_grow(void **arr, size_t n, size_t *cap, size_t elem)
{
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*arr, (*cap ? *cap * 2 : 256) * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = *cap ? *cap * 2 : 256;
	return 0;
}

/* Pass 1: "." and "..", and the positions at or after from. */
static int dx_collect_pos(void *ctx, uint32_t ino, uint8_t type, const char *name,
			  size_t namelen, uint64_t next)
{
	dx_scan *s = ctx;
	uint64_t pos;

	(void)next;
	if (dx_is_dot(name, namelen, 1) && !s->dot) {
		s->dot = ino, s->dottype = type;
		return 0;
	}
	if (dx_is_dot(name, namelen, 2) && !s->dotdot) {
		s->dotdot = ino, s->dotdottype = type;
		return 0;
	}
	pos = dx_pos(s, name, namelen);
	if (pos < s->from)
		return 0;
	if ((s->err = dx_grow((void **)&s->pos, s->n, &s->cap, sizeof(*s->pos))) < 0)
		return s->err;
	s->pos[s->n++] = pos;
	return 0;
}

/* Pass 2: the entries from from to last, with their names. */
static int dx_collect_ent(void *ctx, uint32_t ino, uint8_t type, const char *name,
			  size_t namelen, uint64_t next)
{
	dx_scan *s = ctx;
	uint64_t pos;
	dx_ent *e;

	(void)next;
	if (dx_is_dot(name, namelen, 1) || dx_is_dot(name, namelen, 2))
		return 0;
	pos = dx_pos(s, name, namelen);
	if (pos < s->from || pos > s->last)
		return 0;
	if ((s->err = dx_grow((void **)&s->ents, s->n, &s->cap, sizeof(*s->ents))) < 0)
		return s->err;
	e = &s->ents[s->n++];
	e->pos = pos, e->ino = ino, e->type = type, e->namelen = (uint8_t)namelen;
	memcpy(e->name, name, namelen);
	return 0;
}

static int dx_cmp_pos(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* By position, then by name: the order of a run of one position is fixed. */
static int dx_cmp_ent(const void *a, const void *b)
{
	const dx_ent *x = a, *y = b;
	int c;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	c = memcmp(x->name, y->name, x->namelen < y->namelen ? x->namelen : y->namelen);
	return c ? c : (int)x->namelen - (int)y->namelen;
}

/* "." and "..", for a batch that starts before them. */
static int dx_emit_dots(dx_scan *s, uint64_t *cookie, ino_dir_fn *fn, void *ctx)
{
	int r;

	if (*cookie < DX_POS_DOT && s->dot) {
		r = fn(ctx, s->dot, s->dottype, ".", 1, DX_POS_DOT);
		if (r)
			return r;
	}
	if (*cookie < DX_POS_DOTDOT && s->dotdot) {
		r = fn(ctx, s->dotdot, s->dotdottype, "..", 2, DX_POS_DOTDOT);
		if (r)
			return r;
	}
	if (*cookie < DX_POS_FIRST)
		*cookie = DX_POS_FIRST;
	return 0;
}

static int dx_readdir(ino_fs *fs, const ino_inode *dir, unsigned version, uint64_t cookie,
		      size_t batch, ino_dir_fn *fn, void *ctx)
{
	dx_scan s = {.fs = fs, .version = version, .from = cookie < DX_POS_FIRST ? DX_POS_FIRST : cookie};
	bool more;
	int r;

	r = ino_dir_iterate(fs, dir, 0, dx_collect_pos, &s);
	if (r == 0)
		r = dx_emit_dots(&s, &cookie, fn, ctx);
	if (r || s.n == 0)
		goto out;
	qsort(s.pos, s.n, sizeof(*s.pos), dx_cmp_pos);
	s.last = s.pos[(s.n > batch ? batch : s.n) - 1];
	more = s.pos[s.n - 1] > s.last;
	s.n = 0;
	s.cap = 0;
	r = ino_dir_iterate(fs, dir, 0, dx_collect_ent, &s);
	if (r)
		goto out;
	qsort(s.ents, s.n, sizeof(*s.ents), dx_cmp_ent);
	for (size_t i = 0; i < s.n && r == 0; i++) {
		const dx_ent *e = &s.ents[i];
		uint64_t next = i + 1 < s.n && s.ents[i + 1].pos == e->pos ? e->pos : e->pos + 1;
		r = fn(ctx, e->ino, e->type, e->name, e->namelen, next);
	}
	if (r == 0 && more)
		r = 1; /* the batch is done, the directory is not */
out:
	free(s.pos);
	free(s.ents);
	return s.err < 0 ? s.err : r;
}

int ino_dir_readdir(ino_fs *fs, const ino_inode *dir, uint64_t cookie, size_t batch,
		    ino_dir_fn *fn, void *ctx)
{
	ino_dx_path p;
	ino_dx_bad bad;
	unsigned version;
	int r;

	if (!ino_is_type(dir, EXT3_S_IFDIR))
		return -ENOTDIR;
	if (!ino_is_dx(fs, dir))
		return ino_dir_iterate(fs, dir, cookie, fn, ctx);
	r = ino_dx_probe(fs, dir, ".", 1, &p, &bad);
	version = p.version;
	ino_dx_put(fs, &p);
	if (r == INO_BAD_DX) {
		cm_warn("corrupt htree ino=%u blk=%llu: %s; listing by offset", dir->ino,
			(unsigned long long)bad.blk, bad.why);
		return ino_dir_iterate(fs, dir, cookie, fn, ctx);
	}
	if (r < 0)
		return r;
	return dx_readdir(fs, dir, version, cookie, batch ? batch : 1, fn, ctx);
}
