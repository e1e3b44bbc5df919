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
 * A batch probes the index for the hash of its first position, then reads
 * leaves in index order. A leaf holds the hashes from its index entry's up
 * to the next leaf's (which, with bit 0 set, continues a run of one hash
 * across the two), so once a leaf is read every entry below the next
 * leaf's starting hash is known: the batch sorts what it has, and stops
 * reading once it holds enough complete entries. "." and ".." are block
 * 0's first two entries. A directory whose index root is corrupt is
 * listed by byte offset; an index found corrupt below the root ends the
 * listing with EUCLEAN.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
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
	dx_ent *ents;          /* the entries read, at or after from */
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

/* The smallest position of a hash (bit 0, the collision flag, ignored). */
static uint64_t dx_pos_of_hash(uint32_t hash)
{
	return DX_POS_FIRST + ((uint64_t)(hash >> 1) << 31);
}

static bool dx_is_dot(const char *name, size_t namelen, int dots)
{
	return namelen == (size_t)dots && name[0] == '.' && (dots == 1 || name[1] == '.');
}

/* Block 0's "." and "..": the walk stops after the second entry. */
static int dx_collect_dots(void *ctx, uint32_t ino, uint8_t type, const char *name,
			   size_t namelen, uint64_t next)
{
	dx_scan *s = ctx;

	(void)next;
	if (dx_is_dot(name, namelen, 1))
		s->dot = ino, s->dottype = type;
	else if (dx_is_dot(name, namelen, 2))
		s->dotdot = ino, s->dotdottype = type;
	return s->dotdot ? 1 : 0;
}

/* A leaf's entry, kept when at or after from. */
static int dx_collect(void *ctx, uint32_t ino, uint8_t type, const char *name,
		      size_t namelen, uint64_t next)
{
	dx_scan *s = ctx;
	uint64_t pos = dx_pos(s, name, namelen);
	dx_ent *e;

	(void)next;
	if (pos < s->from)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		dx_ent *p = realloc(s->ents, cap * sizeof(*p));
		if (!p)
			return s->err = -ENOMEM;
		s->ents = p, s->cap = cap;
	}
	e = &s->ents[s->n++];
	e->pos = pos, e->ino = ino, e->type = type, e->namelen = (uint8_t)namelen;
	memcpy(e->name, name, namelen);
	return 0;
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
static int dx_emit_dots(dx_scan *s, uint64_t cookie, ino_dir_fn *fn, void *ctx)
{
	int r;

	if (cookie < DX_POS_DOT && s->dot) {
		r = fn(ctx, s->dot, s->dottype, ".", 1, DX_POS_DOT);
		if (r)
			return r;
	}
	if (cookie < DX_POS_DOTDOT && s->dotdot) {
		r = fn(ctx, s->dotdot, s->dotdottype, "..", 2, DX_POS_DOTDOT);
		if (r)
			return r;
	}
	return 0;
}

/* Reads leaves from the one that holds from's hash until at least batch
 * entries are known complete or the leaves end: *complete gets the first
 * position not complete yet (UINT64_MAX after the last leaf). */
static int dx_read_leaves(dx_scan *s, const ino_inode *dir, size_t batch, uint64_t *complete)
{
	uint32_t hash = (uint32_t)(((s->from - DX_POS_FIRST) >> 31) << 1), next, lblk;
	ino_buf b = {0};
	ino_dx_path p;
	ino_dx_bad bad;
	size_t done;
	int r = ino_dx_probe_hash(s->fs, dir, NULL, 0, hash, &p, &bad);

	for (uint64_t n = 0; r == 0; n++) {
		if (n > p.nblocks) {
			r = INO_BAD_DX;
			snprintf(bad.why, sizeof(bad.why), "more leaves than blocks");
			bad.blk = p.frames[0].b.blocknr;
			break;
		}
		r = ino_dx_leaf(&p, &lblk, &bad);
		if (r == 0)
			r = ino_dir_block_get(s->fs, dir, lblk, &b);
		if (r == 0) {
			r = ino_dir_walk_block(s->fs, dir, &b, lblk, 0, dx_collect, s);
			ino_blk_put(s->fs, &b);
		}
		if (r)
			break;
		*complete = ino_dx_next_start(&p, &next) ? dx_pos_of_hash(next) : UINT64_MAX;
		done = 0;
		for (size_t i = 0; i < s->n; i++)
			done += s->ents[i].pos < *complete;
		if (done >= batch || *complete == UINT64_MAX)
			break;
		r = ino_dx_next_leaf(s->fs, dir, &p, &bad);
	}
	ino_dx_put(s->fs, &p);
	if (r == INO_BAD_DX) { /* met past the root: the listing stops there */
		cm_warn("corrupt htree ino=%u blk=%llu: %s", dir->ino,
			(unsigned long long)bad.blk, bad.why);
		r = -EUCLEAN;
	}
	return s->err < 0 ? s->err : r;
}

static int dx_readdir(ino_fs *fs, const ino_inode *dir, unsigned version, uint64_t cookie,
		      size_t batch, ino_dir_fn *fn, void *ctx)
{
	dx_scan s = {.fs = fs, .version = version,
		     .from = cookie < DX_POS_FIRST ? DX_POS_FIRST : cookie};
	uint64_t complete = 0;
	size_t i;
	int r = ino_dir_iterate(fs, dir, 0, dx_collect_dots, &s);

	if (r >= 0)
		r = dx_emit_dots(&s, cookie, fn, ctx);
	if (r == 0)
		r = dx_read_leaves(&s, dir, batch, &complete);
	if (r == 0) {
		if (s.n > 0) /* s.ents is NULL when no leaf held a name */
			qsort(s.ents, s.n, sizeof(*s.ents), dx_cmp_ent);
		for (i = 0; i < s.n && s.ents[i].pos < complete && r == 0; i++) {
			const dx_ent *e = &s.ents[i];
			uint64_t next = i + 1 < s.n && s.ents[i + 1].pos == e->pos ? e->pos
										   : e->pos + 1;
			r = fn(ctx, e->ino, e->type, e->name, e->namelen, next);
		}
		if (r == 0 && complete != UINT64_MAX)
			r = 1; /* the batch is done, the directory is not */
	}
	free(s.ents);
	return r;
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
