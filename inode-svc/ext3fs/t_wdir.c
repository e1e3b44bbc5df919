/*
 * t_wdir.c - helpers of test-ext3fs-dir (see t_wdir.h): a directory and
 * its model, random names, operations checked against the model, and the
 * read side's view of the result compared with it.
 */
#define _GNU_SOURCE
#include "t_wdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t_wfile.h"
#include "tap.h"

#define NSLOTS (1u << 18)

static uint64_t rnd(struct t_dir *d)
{
	d->rng ^= d->rng << 13;
	d->rng ^= d->rng >> 7;
	d->rng ^= d->rng << 17;
	return d->rng;
}

static size_t hash_name(const char *s, uint8_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (unsigned i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return (size_t)(h % NSLOTS);
}

/* The slot of name: where it is, or the empty slot that ends its probe. */
static size_t slot_of(const struct t_dir *d, const char *s, uint8_t len)
{
	size_t i = hash_name(s, len);

	while (d->slots[i] && (d->slots[i]->len != len || memcmp(d->slots[i]->name, s, len)))
		i = (i + 1) % NSLOTS;
	return i;
}

static struct t_ent *find(const struct t_dir *d, const char *s, size_t len)
{
	return len > 255 ? NULL : d->slots[slot_of(d, s, (uint8_t)len)];
}

/* Takes e out of the table, moving the probe run after it back. */
static void unslot(struct t_dir *d, const struct t_ent *e)
{
	size_t i = slot_of(d, e->name, e->len), j = i, h;

	d->slots[i] = NULL;
	for (;;) {
		j = (j + 1) % NSLOTS;
		if (!d->slots[j])
			return;
		h = hash_name(d->slots[j]->name, d->slots[j]->len);
		/* moves back when its home is not in (i, j] */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			d->slots[i] = d->slots[j];
			d->slots[j] = NULL;
			i = j;
		}
	}
}

static unsigned pool_index(const struct t_dir *d, uint32_t ino)
{
	for (unsigned k = 0; k < d->npool; k++)
		if (d->pool[k] == ino)
			return k;
	return 0;
}

static uint16_t mode_of(const struct t_dir *d, uint32_t ino)
{
	return d->pool_mode[pool_index(d, ino)];
}

bool t_dir_inode(const struct t_dir *d, ino_inode *in)
{
	return ino_inode_read(wf.w.fs, d->ino, in) == 0;
}

bool t_dir_new(struct t_dir *d, const char *label, unsigned npool, uint64_t seed)
{
	uint16_t dmode = EXT3_S_IFDIR | 0755;
	ino_inode root, dir, f;
	char name[64];
	uint32_t ino;
	int r;

	memset(d, 0, sizeof(*d));
	d->label = label;
	d->rng = seed * 2654435761u + 1;
	d->slots = calloc(NSLOTS, sizeof(*d->slots));
	d->npool = npool;
	if (!d->slots || ino_inode_read(wf.w.fs, EXT3_ROOT_INO, &root))
		return false;
	r = ino_txn_alloc_inode(&wf.t, EXT3_ROOT_INO, dmode, &ino);
	if (r == 0)
		r = ino_inode_new(wf.w.fs, &wf.t, ino, dmode, 0, 0, &dir);
	if (r == 0)
		r = ino_dir_init(wf.w.fs, &wf.t, &dir, EXT3_ROOT_INO);
	dir.links = 2;
	if (r == 0)
		r = ino_inode_write(wf.w.fs, &wf.t, &dir);
	if (r == 0)
		r = ino_dir_add(wf.w.fs, &wf.t, &root, label, strlen(label), ino, dmode);
	root.links++;
	if (r == 0)
		r = ino_inode_write(wf.w.fs, &wf.t, &root);
	d->ino = ino;
	for (unsigned k = 0; r == 0 && k < npool; k++) {
		d->pool_mode[k] = (k % 3 == 2 ? EXT3_S_IFIFO : EXT3_S_IFREG) | 0644;
		r = ino_txn_alloc_inode(&wf.t, ino, d->pool_mode[k], &d->pool[k]);
		if (r == 0)
			r = ino_inode_new(wf.w.fs, &wf.t, d->pool[k], d->pool_mode[k], 0, 0, &f);
		f.links = 1;
		if (r == 0)
			r = ino_inode_write(wf.w.fs, &wf.t, &f);
		snprintf(name, sizeof(name), "%s-target-%u", label, k);
		if (r == 0)
			r = ino_dir_add(wf.w.fs, &wf.t, &root, name, strlen(name), d->pool[k],
					d->pool_mode[k]);
	}
	return t_is_int(r, 0, "%s: made with ino_dir_init and ino_dir_add, %u targets", label,
			npool);
}

void t_dir_free(struct t_dir *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i]);
	free(d->v);
	free(d->slots);
	memset(d, 0, sizeof(*d));
}

void t_dir_name(struct t_dir *d, char *name, uint8_t *len, unsigned want_len)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				  "._-+=,;:!@#$%^&*()[]{}<>~ '\"\\|?";
	unsigned n, i;

	do {
		n = want_len;
		if (!n)
			n = rnd(d) % 8 == 0 ? 1 + rnd(d) % 255 : 1 + rnd(d) % 24;
		for (i = 0; i < n; i++) {
			if (rnd(d) % 16 == 0)
				name[i] = (char)(0x80 + rnd(d) % 128);	/* signed vs unsigned hash */
			else
				name[i] = set[rnd(d) % (sizeof(set) - 1)];
		}
		*len = (uint8_t)n;
	} while ((n <= 2 && name[0] == '.' && name[n - 1] == '.') || find(d, name, n));
}

int t_dir_add(struct t_dir *d, ino_inode *dir, const char *name, uint8_t len)
{
	long dirtied = wf.t.dirtied;
	uint64_t blocks = dir->blocks512;
	unsigned k = (unsigned)(rnd(d) % d->npool);
	struct t_ent *e;
	int r, cost;

	r = ino_dir_add(wf.w.fs, &wf.t, dir, name, len, d->pool[k], d->pool_mode[k]);
	/* blocks dirtied, and a bitmap and a descriptor per new block */
	cost = (int)(wf.t.dirtied - dirtied) +
	       2 * (int)((dir->blocks512 - blocks) / (wf.bs / 512));
	if (cost > d->worst_credits)
		d->worst_credits = cost;
	if (r != 0) {
		d->failures++;
		return r;
	}
	e = calloc(1, sizeof(*e));
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 1024;
		d->v = realloc(d->v, d->cap * sizeof(*d->v));
	}
	if (!e || !d->v)
		abort();
	memcpy(e->name, name, len);
	e->len = len;
	e->ino = d->pool[k];
	e->idx = d->n;
	d->v[d->n++] = e;
	d->slots[slot_of(d, name, len)] = e;
	d->refs[k]++;
	return 0;
}

int t_dir_del(struct t_dir *d, ino_inode *dir, size_t i)
{
	struct t_ent *e = d->v[i];
	uint32_t ino = 0;
	int r = ino_dir_remove(wf.w.fs, &wf.t, dir, e->name, e->len, &ino);

	if (r != 0 || ino != e->ino) {
		d->failures++;
		return r ? r : -EIO;
	}
	unslot(d, e);
	d->refs[pool_index(d, e->ino)]--;
	d->v[i] = d->v[--d->n];
	d->v[i]->idx = i;
	free(e);
	return 0;
}

int t_dir_retarget(struct t_dir *d, ino_inode *dir, size_t i)
{
	struct t_ent *e = d->v[i];
	unsigned k = (unsigned)(rnd(d) % d->npool);
	int r = ino_dir_retarget(wf.w.fs, &wf.t, dir, e->name, e->len, d->pool[k],
				 d->pool_mode[k]);

	if (r != 0) {
		d->failures++;
		return r;
	}
	d->refs[pool_index(d, e->ino)]--;
	d->refs[k]++;
	e->ino = d->pool[k];
	return 0;
}

void t_dir_churn(struct t_dir *d, ino_inode *dir, long n, unsigned padd, unsigned want_len)
{
	char name[256];
	uint8_t len;

	for (long i = 0; i < n; i++) {
		unsigned p = (unsigned)(rnd(d) % 100);

		if (p < padd || d->n == 0) {
			t_dir_name(d, name, &len, want_len);
			t_dir_add(d, dir, name, len);
		} else if ((p - padd) % 2 == 0) {
			t_dir_del(d, dir, (size_t)(rnd(d) % d->n));
		} else {
			t_dir_retarget(d, dir, (size_t)(rnd(d) % d->n));
		}
	}
}

static bool has_filetype(void)
{
	const struct ext3_super_block *sb = (const void *)(wf.w.mem + 1024);

	return cm_le32(sb->s_feature_incompat) & EXT3_FEATURE_INCOMPAT_FILETYPE;
}

struct walk {
	struct t_dir *d;
	size_t seen, dots, bad, wrong_type, foreign;
	uint8_t *mark;
};

static int on_entry(void *ctx, uint32_t ino, uint8_t ft, const char *name, size_t len,
		    uint64_t next)
{
	static const uint8_t ftypes[16] = { [EXT3_S_IFREG >> 12] = EXT3_FT_REG_FILE,
					    [EXT3_S_IFIFO >> 12] = EXT3_FT_FIFO };
	struct walk *w = ctx;
	struct t_ent *e;

	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2))) {
		w->dots++;
		return 0;
	}
	e = find(w->d, name, len);
	if (!e && len > 2 && memcmp(name, "k-", 2) == 0) {
		w->foreign++;
		return 0;
	}
	if (!e || e->ino != ino || w->mark[e->idx]++) {
		w->bad++;
		return 0;
	}
	if (ft != (has_filetype() ? ftypes[mode_of(w->d, ino) >> 12] : EXT3_FT_UNKNOWN))
		w->wrong_type++;
	w->seen++;
	return 0;
}

bool t_dir_check(struct t_dir *d, const char *what)
{
	struct walk w = { .d = d, .mark = calloc(d->n + 1, 1) };
	size_t bad = 0, dxbad = 0, missing = 0, i;
	char name[256];
	ino_inode dir;
	uint32_t ino;
	uint8_t len;
	int r;

	if (!w.mark || !t_dir_inode(d, &dir))
		return t_ok(false, "%s: directory read", what);
	for (i = 0; i < d->n; i++) {
		struct t_ent *e = d->v[i];

		if (ino_dir_lookup(wf.w.fs, &dir, e->name, e->len, &ino) || ino != e->ino)
			bad++;
		r = ino_dx_lookup(wf.w.fs, &dir, e->name, e->len, &ino);
		if (r != -ENODATA && (r || ino != e->ino))
			dxbad++;
	}
	for (i = 0; i < 50; i++) {
		t_dir_name(d, name, &len, 0);
		missing += ino_dir_lookup(wf.w.fs, &dir, name, len, &ino) != -ENOENT;
	}
	r = ino_dir_iterate(wf.w.fs, &dir, 0, on_entry, &w);
	free(w.mark);
	return t_ok(bad == 0 && dxbad == 0 && missing == 0 && r == 0 && w.bad == 0 &&
			    w.seen == d->n && w.dots == 2 && w.wrong_type == 0 &&
			    w.foreign == d->foreign,
		    "%s: %zu names look up (%zu wrong, %zu wrong through the index, %zu absent "
		    "found), readdir lists %zu of them and %zu dots (%zu unknown, %zu mistyped)",
		    what, d->n, bad, dxbad, missing, w.seen, w.dots, w.bad, w.wrong_type);
}

bool t_dir_settle(struct t_dir *d)
{
	ino_inode in;
	int r = 0;

	for (unsigned k = 0; r == 0 && k < d->npool; k++) {
		r = ino_inode_read_any(wf.w.fs, d->pool[k], &in);
		in.links = (uint16_t)(1 + d->refs[k]);
		if (r == 0)
			r = ino_inode_write(wf.w.fs, &wf.t, &in);
	}
	return t_is_int(r, 0, "%s: targets' link counts set", d->label);
}

int t_dir_levels(const ino_inode *dir)
{
	const struct ext3_dx_root *root;
	uint64_t pblk = 0;

	if (!(dir->flags & EXT3_INDEX_FL) || ino_bmap(wf.w.fs, dir, 0, &pblk) || !pblk)
		return -1;
	root = (const struct ext3_dx_root *)(wf.w.mem + pblk * wf.bs);
	return root->info.indirect_levels;
}

bool t_dir_names(const struct t_dir *d, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	for (size_t i = 0; i < d->n; i++) {
		fwrite(d->v[i]->name, 1, d->v[i]->len, f);
		fputc('\n', f);
	}
	return fclose(f) == 0;
}
