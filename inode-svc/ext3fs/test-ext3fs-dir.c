/*
 * test-ext3fs-dir.c - libext3fs's directory writes (dir_w, htree_w) over
 * t_wtxn, on fresh `mke2fs -t ext3` images with 1, 4 and 64 KiB blocks,
 * with dir_index (half-MD4 signed, TEA unsigned, legacy) and without:
 * thousands of seeded random adds, removes and retargets in linear and
 * indexed directories, 255-byte names up to two-level trees, the kernel
 * changing what the library built and back, flipped bits, the conversion of a
 * full first block, removing everything and adding again, a directory
 * moved (".."), corrupt leaves and roots, and a tree filled until -ENOSPC.
 * Every name is read back through the read side (lookup, the index alone,
 * readdir), every image ends with `e2fsck -fn` clean, and as root the
 * kernel lists what the model holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t_image.h"
#include "t_wdir.h"
#include "t_wfile.h"
#include "tap.h"

static const struct cfg {
	uint32_t bs;
	bool dx;
	const char *tune[4];    /* debugfs commands after mke2fs */
	const char *size;       /* of the image */
	long nlong;             /* 255-byte names in "long" */
	int levels;             /* indirect_levels they make (-1: linear) */
	bool small_only;        /* 64 KiB blocks: no kernel, no fuzzing */
} cfgs[] = {
	{ 1024, true, { "ssv hash_seed 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0" }, "16M", 1500, 1,
	  false },
	{ 1024, false, { "feature -dir_index" }, "16M", 1500, -1, false },
	{ 4096, true, { "ssv hash_seed 12345678-9abc-def0-1234-56789abcdef0",
			"ssv def_hash_version tea", "ssv flags 2" }, "16M", 7000, 1, false },
	{ 4096, false, { "feature -dir_index" }, "16M", 7000, -1, false },
	{ 65536, true, { "ssv def_hash_version legacy" }, "128M", 1000, 0, true },
};
static const struct cfg *cfg;
static unsigned seed = 12;

/* Runs the configuration's debugfs commands on wf.img; the superblock
 * must then say what they set. */
static bool tune(void)
{
	bool ok = true;

	for (unsigned i = 0; i < 4 && cfg->tune[i]; i++)
		ok &= t_dbg(cfg->tune[i]) == 0;
	if (cfg->tune[2])
		ok &= t_sh("dumpe2fs -h '%s' 2>/dev/null | grep -q 'unsigned_directory_hash'",
			   wf.img) == 0 &&
		      t_sh("dumpe2fs -h '%s' 2>/dev/null | grep -q 'Default directory hash: *tea'",
			   wf.img) == 0;
	if (!cfg->dx)
		ok &= t_sh("dumpe2fs -h '%s' 2>/dev/null | grep -q 'features:.*dir_index'",
			   wf.img) != 0;
	return t_ok(ok, "debugfs tunes the image (%s)", cfg->tune[0]);
}

static ino_fs *fs(void)
{
	return wf.w.fs;
}

static bool indexed(const ino_inode *dir)
{
	return dir->flags & EXT3_INDEX_FL;
}

static void close_check(struct t_dir *d, const char *what)
{
	t_dir_settle(d);
	t_wclose(what);
	t_fsck_clean(what);
}

/* A directory made inside parent with the library. */
static int mkdir_in(ino_inode *parent, const char *name, ino_inode *dir)
{
	uint16_t mode = EXT3_S_IFDIR | 0755;
	uint32_t ino;
	int r = ino_txn_alloc_inode(&wf.t, parent->ino, mode, &ino);

	if (r == 0)
		r = ino_inode_new(fs(), &wf.t, ino, mode, 0, 0, dir);
	if (r == 0)
		r = ino_dir_init(fs(), &wf.t, dir, parent->ino);
	dir->links = 2;
	if (r == 0)
		r = ino_inode_write(fs(), &wf.t, dir);
	if (r == 0)
		r = ino_dir_add(fs(), &wf.t, parent, name, strlen(name), ino, mode);
	parent->links++;
	if (r == 0)
		r = ino_inode_write(fs(), &wf.t, parent);
	return r;
}

static void t_basic(void)
{
	char big[300];
	struct t_dir d;
	ino_inode dir, file;
	uint32_t ino = 0;

	memset(big, 'b', sizeof(big));
	if (!t_wopen() || !t_dir_new(&d, "basic", 4, seed++) || !t_dir_inode(&d, &dir))
		return;
	t_is_int(dir.size, wf.bs, "a new directory has one block");
	t_is_int(ino_dir_is_empty(fs(), &dir), 1, "a new directory is empty");
	t_ok(ino_dir_parent(fs(), &dir, &ino) == 0 && ino == EXT3_ROOT_INO, "its .. is the root");
	t_is_int(t_dir_add(&d, &dir, "x", 1), 0, "add x");
	t_is_int(ino_dir_add(fs(), &wf.t, &dir, "x", 1, d.pool[0], d.pool_mode[0]), -EEXIST,
		 "adding x again is -EEXIST");
	t_is_int(ino_dir_is_empty(fs(), &dir), 0, "not empty with x");
	t_is_int(ino_dir_remove(fs(), &wf.t, &dir, "nope", 4, &ino), -ENOENT,
		 "removing a missing name is -ENOENT");
	t_is_int(ino_dir_retarget(fs(), &wf.t, &dir, "nope", 4, d.pool[0], d.pool_mode[0]),
		 -ENOENT, "retargeting a missing name is -ENOENT");
	t_is_int(ino_dir_add(fs(), &wf.t, &dir, "..", 2, d.pool[0], d.pool_mode[0]), -EINVAL,
		 "adding .. is -EINVAL");
	t_is_int(ino_dir_add(fs(), &wf.t, &dir, big, 256, d.pool[0], d.pool_mode[0]),
		 -ENAMETOOLONG, "a 256-byte name is -ENAMETOOLONG");
	t_is_int(ino_dir_add(fs(), &wf.t, &dir, big, 255, d.pool[0], d.pool_mode[0]), 0,
		 "a 255-byte name is fine");
	t_is_int(ino_dir_remove(fs(), &wf.t, &dir, big, 255, &ino), 0, "and removed");
	t_ok(ino_inode_read(fs(), d.pool[0], &file) == 0 &&
		     ino_dir_add(fs(), &wf.t, &file, "y", 1, d.pool[0], d.pool_mode[0]) == -ENOTDIR,
	     "adding to a file is -ENOTDIR");
	t_is_int(t_dir_del(&d, &dir, 0), 0, "remove x");
	t_is_int(ino_dir_is_empty(fs(), &dir), 1, "empty again");
	t_dir_check(&d, "basic");
	close_check(&d, "basic");
	t_dir_free(&d);
}

/* Thousands of random operations, then a phase that mostly removes. */
static void t_random(struct t_dir *d)
{
	ino_inode dir;

	if (!t_wopen() || !t_dir_new(d, "rand", 16, seed++) || !t_dir_inode(d, &dir))
		return;
	t_dir_churn(d, &dir, 6000, 60, 0);
	t_is_int(d->failures, 0, "rand: 6000 adds, removes and retargets succeed (%zu names)",
		 d->n);
	t_is_int(indexed(&dir), cfg->dx, "rand: indexed exactly when the fs has dir_index");
	t_ok(d->worst_credits <= INO_CRED_DIR_ADD, "rand: an add changes at most %d blocks (%d)",
	     INO_CRED_DIR_ADD, d->worst_credits);
	t_dir_check(d, "rand");
	close_check(d, "rand");
	if (!t_wopen() || !t_dir_inode(d, &dir))
		return;
	t_dir_churn(d, &dir, 4000, 25, 0);
	t_is_int(d->failures, 0, "rand: 4000 more, mostly removes (%zu names left)", d->n);
	t_dir_check(d, "rand after removes");
	close_check(d, "rand after removes");
}

/* 255-byte names: the first block converts, leaves split, the root
 * fills and a second level appears; then everything goes and comes back. */
static void t_long(struct t_dir *d)
{
	long n = cfg->nlong;
	bool converted = false;
	uint64_t size;
	char name[256];
	ino_inode dir;
	uint8_t len;
	long i;

	if (!t_wopen() || !t_dir_new(d, "long", 16, seed++) || !t_dir_inode(d, &dir))
		return;
	for (i = 0; i < n; i++) {
		t_dir_name(d, name, &len, 255);
		t_dir_add(d, &dir, name, len);
		if (!converted && indexed(&dir)) {
			converted = true;
			t_ok(i == (long)(cfg->bs / 264) && dir.size == 3 * wf.bs,
			     "long: the first block converts to an index and two leaves when it "
			     "is full (name %ld, %llu bytes)", i, (unsigned long long)dir.size);
		}
	}
	if (!cfg->dx)
		t_ok(!converted, "long: no index without dir_index");
	t_is_int(d->failures, 0, "long: %ld names of 255 bytes added", n);
	t_is_int(t_dir_levels(&dir), cfg->levels, "long: %s",
		 cfg->levels < 0 ? "linear" : cfg->levels ? "the tree has two levels" :
		 "the tree has one level");
	t_ok(d->worst_credits <= INO_CRED_DIR_ADD, "long: an add changes at most %d blocks (%d)",
	     INO_CRED_DIR_ADD, d->worst_credits);
	t_dir_check(d, "long");
	close_check(d, "long");
	if (!t_wopen() || !t_dir_inode(d, &dir))
		return;
	size = dir.size;
	while (d->n && t_dir_del(d, &dir, d->n - 1) == 0)
		;
	t_is_int(d->n, 0, "long: every name removed");
	t_is_int(ino_dir_is_empty(fs(), &dir), 1, "long: empty");
	t_is_int(dir.size, size, "long: the directory keeps its blocks");
	t_dir_check(d, "long emptied");
	t_dir_churn(d, &dir, 600, 100, 0);
	t_is_int(d->failures, 0, "long: 600 names added again");
	t_dir_check(d, "long refilled");
	close_check(d, "long refilled");
}

/* A directory moved from ra to rb: its entry and its "..". */
static void t_move_dir(void)
{
	struct t_dir a, b;
	ino_inode da, db, sub;
	uint32_t ino = 0;

	if (!t_wopen() || !t_dir_new(&a, "ra", 1, seed++) || !t_dir_new(&b, "rb", 1, seed++) ||
	    !t_dir_inode(&a, &da) || !t_dir_inode(&b, &db))
		return;
	t_is_int(mkdir_in(&da, "sub", &sub), 0, "ra/sub made");
	t_ok(ino_dir_parent(fs(), &sub, &ino) == 0 && ino == da.ino, "sub's .. is ra");
	t_is_int(ino_dir_is_empty(fs(), &da), 0, "ra is not empty");
	t_is_int(ino_dir_add(fs(), &wf.t, &db, "moved", 5, sub.ino, sub.mode), 0,
		 "rb/moved names sub");
	t_ok(ino_dir_remove(fs(), &wf.t, &da, "sub", 3, &ino) == 0 && ino == sub.ino,
	     "ra/sub removed");
	t_is_int(ino_dir_set_parent(fs(), &wf.t, &sub, db.ino), 0, "sub's .. set to rb");
	t_ok(ino_dir_parent(fs(), &sub, &ino) == 0 && ino == db.ino, "sub's .. is rb");
	da.links--;
	db.links++;
	t_ok(ino_inode_write(fs(), &wf.t, &da) == 0 && ino_inode_write(fs(), &wf.t, &db) == 0,
	     "link counts of ra and rb");
	t_dir_settle(&a);
	close_check(&b, "move");
	t_dir_free(&a);
	t_dir_free(&b);
}

/* The block of the directory where e is a live entry, in memory. */
static uint8_t *block_with(const ino_inode *dir, const struct t_ent *e)
{
	uint64_t pblk;

	for (uint64_t l = 0; l < dir->size / wf.bs; l++) {
		uint32_t off, rec;
		uint8_t *b;

		if (ino_bmap(fs(), dir, l, &pblk) || !pblk)
			continue;
		b = wf.w.mem + pblk * wf.bs;
		for (off = 0; off + 8 <= wf.bs; off += rec) {
			rec = b[off + 4] | b[off + 5] << 8;
			if ((b[off] | b[off + 1] | b[off + 2] | b[off + 3]) && b[off + 6] == e->len &&
			    memcmp(b + off + 8, e->name, e->len) == 0)
				return b;
			if (rec < 8)
				break;
		}
	}
	return NULL;
}

/* A corrupt leaf entry is -EUCLEAN; a corrupt root clears the index on
 * the next add, which then goes in linearly. */
static void t_corrupt(struct t_dir *d)
{
	uint8_t *b, save[2], lim[2];
	char name[256], out[4096];
	ino_inode dir;
	uint32_t ino;
	uint8_t len;
	uint64_t pblk = 0;

	if (!t_wopen() || !t_dir_inode(d, &dir) || d->n == 0)
		return;
	b = block_with(&dir, d->v[0]);
	if (!t_ok(b != NULL, "corrupt: the block of a name found"))
		return;
	memcpy(save, b + 4, 2);
	b[4] = 5;
	b[5] = 0;
	t_stderr_begin();
	t_is_int(ino_dir_remove(fs(), &wf.t, &dir, d->v[0]->name, d->v[0]->len, &ino), -EUCLEAN,
		 "corrupt: removing from a leaf with a bad rec_len is -EUCLEAN");
	t_is_int(ino_dir_retarget(fs(), &wf.t, &dir, d->v[0]->name, d->v[0]->len, d->pool[0],
				  d->pool_mode[0]), -EUCLEAN, "corrupt: so is retargeting there");
	memcpy(b + 4, save, 2);
	ino_bmap(fs(), &dir, 0, &pblk);
	b = wf.w.mem + pblk * wf.bs + 0x20;
	memcpy(lim, b, 2);
	b[0] ^= 1;
	t_dir_name(d, name, &len, 0);
	t_is_int(t_dir_add(d, &dir, name, len), 0, "corrupt: an add into a bad index succeeds");
	t_stderr_end(out, sizeof(out));
	t_ok(strstr(out, "corrupt htree") != NULL, "corrupt: the bad index is logged");
	t_ok(!indexed(&dir), "corrupt: the index flag is cleared");
	t_dir_churn(d, &dir, 300, 60, 0);
	t_is_int(d->failures, 0, "corrupt: the directory works linearly");
	t_dir_check(d, "corrupt");
	close_check(d, "corrupt");
}

static bool expected(int r)
{
	return r == 0 || r == 1 || r == -EUCLEAN || r == -ENOENT || r == -EEXIST ||
	       r == -ENOSPC;
}

/* One operation of each kind on a copy of d's directory with one random
 * byte of one of its blocks changed, n times: each returns a result the
 * API allows, and puts every block it got (the image is not checked). */
static void t_fuzz(struct t_dir *d, int n)
{
	uint8_t *copy = malloc(wf.w.size), *b;
	long odd = 0, held = 0, changed = 0;
	char name[256], out[256];
	uint64_t pblk = 0, nb;
	ino_inode dir, keep;
	uint32_t ino;
	uint8_t len;

	if (!copy || !t_wopen() || !t_dir_inode(d, &keep) || d->n == 0) {
		free(copy);
		return;
	}
	memcpy(copy, wf.w.mem, wf.w.size);
	nb = keep.size / wf.bs;
	t_stderr_begin();
	for (int i = 0; i < n; i++) {
		struct t_ent *e = d->v[(size_t)i % d->n];
		int r[6];

		memcpy(wf.w.mem, copy, wf.w.size);
		dir = keep;
		/* the root, the leaf the removal reads, any block */
		if (i % 3 == 1)
			b = block_with(&dir, e);
		else if (ino_bmap(fs(), &dir, i % 3 ? (uint64_t)i % nb : 0, &pblk) == 0 && pblk)
			b = wf.w.mem + pblk * wf.bs;
		else
			b = NULL;
		if (!b)
			continue;
		/* the headers and the index are where the checks matter */
		b[i % 3 ? (size_t)((i * 7919u) % 64) : (size_t)((i * 7919u) % wf.bs)] ^=
			(uint8_t)(1u << (i % 8));
		t_dir_name(d, name, &len, 0);
		r[0] = ino_dir_add(fs(), &wf.t, &dir, name, len, d->pool[0], d->pool_mode[0]);
		r[1] = ino_dir_remove(fs(), &wf.t, &dir, e->name, e->len, &ino);
		r[2] = ino_dir_retarget(fs(), &wf.t, &dir, d->v[0]->name, d->v[0]->len,
					d->pool[1], d->pool_mode[1]);
		r[3] = ino_dir_is_empty(fs(), &dir);
		r[4] = ino_dir_parent(fs(), &dir, &ino);
		r[5] = ino_dir_set_parent(fs(), &wf.t, &dir, EXT3_ROOT_INO);
		for (int k = 0; k < 6; k++)
			odd += !expected(r[k]);
		changed += r[0] != 0 || r[1] != 0;
		held += wf.w.held != 0;
		wf.w.held = 0;
	}
	t_stderr_end(out, sizeof(out));
	t_is_int(odd, 0, "fuzz: %d directories with a flipped bit give only results the API "
		 "allows (%ld with an error)", n, changed);
	t_is_int(held, 0, "fuzz: and put every block");
	memcpy(wf.w.mem, copy, wf.w.size);
	free(copy);
	t_wimg_close(&wf.w);
}

/* The kernel adds to and removes from a directory the library built, the
 * library then finds the kernel's names and goes on changing it. */
static void t_kernel_rw(struct t_dir *d)
{
	uint32_t ino;
	ino_inode dir;
	int bad = 0, dxbad = 0;
	char name[32], sh[128];

	if (!wf.kernel_ok) {
		t_skip("not root or no loop ext3 mount", "the kernel changes the directory");
		return;
	}
	t_is_int(t_kernel_run(wf.img, "rw", "for i in $(seq 1 600); do : >rand/k-$i || exit 1; "
			      "done; for i in $(seq 1 2 200); do rm rand/k-$i || exit 1; done"),
		 0, "the kernel adds 600 files to rand and removes 100");
	d->foreign = 500;
	t_fsck_clean("kernel changes");
	if (!t_wopen() || !t_dir_inode(d, &dir))
		return;
	for (int i = 1; i <= 600; i++) {
		int want = i <= 200 && i % 2 ? -ENOENT : 0;
		int r;

		snprintf(name, sizeof(name), "k-%d", i);
		bad += ino_dir_lookup(fs(), &dir, name, strlen(name), &ino) != want;
		r = ino_dx_lookup(fs(), &dir, name, strlen(name), &ino);
		dxbad += r != want && r != -ENODATA;
	}
	t_ok(bad == 0 && dxbad == 0, "the library finds the kernel's names (%d wrong, %d through "
	     "the index)", bad, dxbad);
	t_is_int(indexed(&dir), cfg->dx, "rand is still %s", cfg->dx ? "indexed" : "linear");
	t_dir_churn(d, &dir, 2000, 50, 0);
	t_is_int(d->failures, 0, "2000 more changes by the library");
	t_dir_check(d, "after the kernel");
	close_check(d, "after the kernel");
	snprintf(sh, sizeof(sh), "[ $(ls -f rand | wc -l) -eq %zu ]", 2 + d->foreign + d->n);
	t_is_int(t_kernel_run(wf.img, "ro", sh), 0, "the kernel lists %zu entries in rand",
		 2 + d->foreign + d->n);
}

/* Adds 255-byte names to a 1 KiB-block directory until the two-level
 * index is full. */
static void t_full(void)
{
	char name[256], out[512];
	struct t_dir d;
	ino_inode dir;
	uint8_t len;
	long i;
	int r = 0;

	snprintf(wf.img, sizeof(wf.img), "%s/img-full", wf.dir);
	if (!t_is_int(t_mkimg("64M"), 0, "mke2fs 64M") || !tune() || !t_wopen() ||
	    !t_dir_new(&d, "full", 64, seed++) || !t_dir_inode(&d, &dir))
		return;
	t_stderr_begin();
	for (i = 0; i < 100000 && r == 0; i++) {
		t_dir_name(&d, name, &len, 255);
		r = t_dir_add(&d, &dir, name, len);
	}
	t_stderr_end(out, sizeof(out));
	t_ok(strstr(out, "directory index full") != NULL, "full: \"directory index full\" logged");
	t_is_int(r, -ENOSPC, "full: -ENOSPC once the index is full (after %zu names, %llu "
		 "blocks)", d.n, (unsigned long long)(dir.size / wf.bs));
	t_is_int(t_dir_levels(&dir), 1, "full: two levels");
	t_ok(d.worst_credits <= INO_CRED_DIR_ADD, "full: an add changes at most %d blocks (%d)",
	     INO_CRED_DIR_ADD, d.worst_credits);
	d.failures = 0;
	t_dir_churn(&d, &dir, 200, 0, 0);
	t_is_int(d.failures, 0, "full: removes and retargets still work");
	t_dir_check(&d, "full");
	close_check(&d, "full");
	t_dir_free(&d);
}

/* The kernel lists the directories as their models say. */
static void t_kernel(const struct t_dir *dirs, unsigned n)
{
	char path[160], sh[2048];
	size_t o = 0;

	if (!wf.kernel_ok) {
		t_skip("not root or no loop ext3 mount", "the kernel lists the directories");
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/exp-%s", wf.dir, dirs[i].label);
		t_dir_names(&dirs[i], path);
		o += snprintf(sh + o, sizeof(sh) - o,
			      "find %s -mindepth 1 -maxdepth 1 -printf '%%f\\n' | LC_ALL=C sort "
			      ">'%s.got' && LC_ALL=C sort '%s' | cmp -s - '%s.got' && "
			      "while IFS= read -r n; do [ -e \"%s/$n\" ] || exit 1; done <'%s' && ",
			      dirs[i].label, path, path, path, dirs[i].label, path);
	}
	snprintf(sh + o, sizeof(sh) - o, "true");
	t_is_int(t_kernel_run(wf.img, "ro", sh), 0,
		 "the kernel mounts the image, lists every directory as its model and "
		 "finds each name");
}

static void run_cfg(const struct cfg *c)
{
	struct t_dir dirs[2];

	cfg = c;
	wf.bs = c->bs;
	wf.isize = 256;
	wf.apb = c->bs / 4;
	snprintf(wf.img, sizeof(wf.img), "%s/img-%u-%s", wf.dir, c->bs, c->dx ? "dx" : "linear");
	t_diag("blocks of %u, %s", c->bs, c->dx ? "dir_index" : "no dir_index");
	if (!t_is_int(t_mkimg(c->size), 0, "mke2fs") || !tune())
		return;
	memset(dirs, 0, sizeof(dirs));
	t_basic();
	t_random(&dirs[0]);
	t_long(&dirs[1]);
	t_move_dir();
	if (c->small_only) {
		t_dir_free(&dirs[0]);
		t_dir_free(&dirs[1]);
		return;
	}
	t_kernel(dirs, 2);
	t_kernel_rw(&dirs[0]);
	if (c->dx) {
		t_fuzz(&dirs[0], 900);
		t_corrupt(&dirs[1]);
	}
	t_dir_free(&dirs[0]);
	t_dir_free(&dirs[1]);
	if (c->bs == 1024 && c->dx)
		t_full();
}

int main(void)
{
	char tmpl[] = "/tmp/t-ext3fs-dir.XXXXXX";
	size_t i;

	if (!t_have_e2fsprogs())
		t_skip_all("mke2fs, e2fsck or debugfs not found");
	if (!mkdtemp(tmpl))
		t_skip_all("mkdtemp: %s", strerror(errno));
	snprintf(wf.dir, sizeof(wf.dir), "%s", tmpl);
	snprintf(wf.img, sizeof(wf.img), "%s/probe", wf.dir);
	wf.kernel_ok = geteuid() == 0 &&
		       t_sh("mke2fs -q -F -t ext3 '%s' 8M >/dev/null 2>&1", wf.img) == 0 &&
		       t_kernel_run(wf.img, "ro", "true") == 0;
	if (!wf.kernel_ok)
		t_diag("the kernel checks are skipped: not root, or no loop ext3 mount");
	for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++)
		run_cfg(&cfgs[i]);
	if (!getenv("T_KEEP"))
		t_sh("rm -rf '%s'", wf.dir);
	else
		t_diag("kept %s", wf.dir);
	return t_done();
}
