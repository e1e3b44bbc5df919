/*
 * test-ext3fs.c - libext3fs against mke2fs: a host tree (t_tree.c) becomes
 * ext3 images with 1, 2 and 4 KiB blocks, 256- and 128-byte inodes and the
 * half_md4, tea (unsigned) and legacy hashes; everything read back is
 * compared with the tree: readdir sets, lookups, modes, owners, times,
 * link counts, sizes, contents byte for byte (sparse ones extent by
 * extent), symlink targets, device numbers; then statfs against dumpe2fs,
 * the bad-request errors, and (t_bigdir.c) the htree directory.
 * EXT3D_LONG=1 lets mke2fs -d build the whole big directory (about 10 s
 * per image); T_KEEP=1 keeps the temporary directory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "t_ext3fs.h"
#include "t_tree.h"
#include "tap.h"

static const t_cfg cfgs[] = {
	{ 1024, 256, "half_md4", false },
	{ 4096, 128, "tea", true },
	{ 2048, 256, "legacy", false },
};

uint32_t t_lookup(t_ctx *c, uint32_t dino, const char *name)
{
	ino_inode dir;
	uint32_t ino;

	if (ino_inode_read(c->fs, dino, &dir) < 0 ||
	    ino_dir_lookup(c->fs, &dir, name, strlen(name), &ino) < 0)
		return 0;
	return ino;
}

/* Directory listing: names with their inode numbers and types. */
struct ent {
	char name[256];
	uint32_t ino;
	uint8_t ft;
};

struct ents {
	struct ent *v;
	size_t n, cap;
};

static int collect(void *ctx, uint32_t ino, uint8_t ft, const char *name,
		   size_t len, uint64_t next)
{
	struct ents *e = ctx;

	(void)next;
	if (e->n == e->cap) {
		e->cap = e->cap ? 2 * e->cap : 64;
		e->v = realloc(e->v, e->cap * sizeof(*e->v));
		if (!e->v)
			return -ENOMEM;
	}
	memcpy(e->v[e->n].name, name, len);
	e->v[e->n].name[len] = '\0';
	e->v[e->n].ino = ino;
	e->v[e->n].ft = ft;
	e->n++;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name,
		      ((const struct ent *)b)->name);
}

static const struct ent *ent_find(const struct ents *e, const char *name)
{
	struct ent key;

	if (!e->n)
		return NULL;
	snprintf(key.name, sizeof(key.name), "%s", name);
	return bsearch(&key, e->v, e->n, sizeof(*e->v), ent_cmp);
}

static uint8_t mode_ft(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return EXT3_FT_REG_FILE;
	case S_IFDIR: return EXT3_FT_DIR;
	case S_IFCHR: return EXT3_FT_CHRDEV;
	case S_IFBLK: return EXT3_FT_BLKDEV;
	case S_IFIFO: return EXT3_FT_FIFO;
	case S_IFSOCK: return EXT3_FT_SOCK;
	case S_IFLNK: return EXT3_FT_SYMLINK;
	}
	return EXT3_FT_UNKNOWN;
}

/* Compares [off, off + len) of the image file with the host fd. */
static bool cmp_range(t_ctx *c, const ino_inode *in, int fd, uint64_t off,
		      uint64_t len, char *why, size_t whylen)
{
	static uint8_t a[1 << 20], b[1 << 20];
	size_t step = 7777 + (off % 5000), n;
	ssize_t got;

	while (len) {
		n = len < step ? len : step;
		got = ino_file_read(c->fs, in, a, n, off);
		if (got != (ssize_t)n || pread(fd, b, n, off) != (ssize_t)n) {
			snprintf(why, whylen, "read at %llu: %zd",
				 (unsigned long long)off, got);
			return false;
		}
		if (memcmp(a, b, n)) {
			snprintf(why, whylen, "bytes differ in [%llu, %llu)",
				 (unsigned long long)off,
				 (unsigned long long)(off + n));
			return false;
		}
		off += n;
		len -= n;
		step = sizeof(a);
	}
	return true;
}

/* Whole files up to 16 MiB; larger (sparse) ones extent by extent. */
static bool cmp_content(t_ctx *c, const ino_inode *in, const char *path,
			uint64_t size, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY);
	off_t data, hole = 0;
	bool ok = fd >= 0;
	uint8_t tail[16];

	if (ok && size <= (16u << 20)) {
		ok = cmp_range(c, in, fd, 0, size, why, whylen);
	} else {
		while (ok && (data = lseek(fd, hole, SEEK_DATA)) >= 0) {
			hole = lseek(fd, data, SEEK_HOLE);
			data = data > 8192 ? data - 8192 : 0;
			if ((uint64_t)hole + 8192 < size)
				hole += 8192;
			else
				hole = size;
			ok = cmp_range(c, in, fd, data, hole - data, why,
				       whylen);
		}
		if (ok)
			ok = cmp_range(c, in, fd, size / 2, 4096, why, whylen);
	}
	if (ok && ino_file_read(c->fs, in, tail, sizeof(tail), size) != 0) {
		snprintf(why, whylen, "read at EOF returned data");
		ok = false;
	}
	if (ok && size && ino_file_read(c->fs, in, tail, sizeof(tail),
					size - 1) != 1) {
		snprintf(why, whylen, "read of the last byte");
		ok = false;
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Compares one entry's inode with the host's lstat; why says what not. */
static bool cmp_entry(t_ctx *c, const char *path, const struct stat *st,
		      const struct ent *e, bool is_root, char *why,
		      size_t whylen)
{
	char target[4096], img_target[4096];
	ino_inode in;
	ssize_t n;
	int r;

	r = ino_inode_read(c->fs, e->ino, &in);
	if (r < 0)
		return snprintf(why, whylen, "inode_read: %d", r), false;
	if (in.mode != (uint16_t)st->st_mode)
		return snprintf(why, whylen, "mode 0%o, want 0%o", in.mode,
				(unsigned)st->st_mode), false;
	if (e->ft != mode_ft(st->st_mode))
		return snprintf(why, whylen, "dirent type %u", e->ft), false;
	if (in.uid != st->st_uid || in.gid != st->st_gid)
		return snprintf(why, whylen, "owner %u:%u, want %u:%u", in.uid,
				in.gid, st->st_uid, st->st_gid), false;
	if (!is_root && in.links != st->st_nlink)
		return snprintf(why, whylen, "links %u, want %ju", in.links,
				(uintmax_t)st->st_nlink), false;
	if (in.mtime != (int64_t)st->st_mtime)
		return snprintf(why, whylen, "mtime %" PRId64, in.mtime), false;
	if (S_ISREG(st->st_mode)) {
		if (in.size != (uint64_t)st->st_size)
			return snprintf(why, whylen, "size %llu",
					(unsigned long long)in.size), false;
		return cmp_content(c, &in, path, in.size, why, whylen);
	}
	if (S_ISLNK(st->st_mode)) {
		n = readlink(path, target, sizeof(target));
		if (n < 0 || in.size != (uint64_t)n ||
		    ino_readlink(c->fs, &in, img_target, sizeof(img_target)) != n ||
		    memcmp(target, img_target, n))
			return snprintf(why, whylen, "symlink target"), false;
	}
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		if (major(ino_rdev(&in)) != major(st->st_rdev) ||
		    minor(ino_rdev(&in)) != minor(st->st_rdev))
			return snprintf(why, whylen, "rdev %u:%u",
					major(ino_rdev(&in)),
					minor(ino_rdev(&in))), false;
	}
	return true;
}

/* The host's names; for the big directory, all the names it must hold. */
static void host_list(const char *path, struct ents *e, bool big)
{
	struct dirent *d;
	char name[256];
	DIR *dir;
	unsigned i;

	if (big) {
		for (i = 0; i < T_BIG_ENTRIES; i++) {
			t_big_name(i, name, sizeof(name));
			collect(e, 0, 0, name, strlen(name), 0);
		}
	} else if ((dir = opendir(path))) {
		while ((d = readdir(dir)))
			if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
				collect(e, 0, 0, d->d_name, strlen(d->d_name),
					0);
		closedir(dir);
	}
	if (e->n)
		qsort(e->v, e->n, sizeof(*e->v), ent_cmp);
}

static void cmp_dir(t_ctx *c, const char *path, uint32_t dino,
		    uint32_t parent, const char *rel);

/* The image listing equals the host's (".", ".." and lost+found aside). */
static void cmp_listing(t_ctx *c, const char *rel, uint32_t dino,
			uint32_t parent, struct ents *img, struct ents *host)
{
	size_t i, j = 0, extra = 0, dots = 0;
	bool same;

	for (i = 0; i < img->n; i++) {
		if (!strcmp(img->v[i].name, "."))
			dots += img->v[i].ino == dino;
		else if (!strcmp(img->v[i].name, ".."))
			dots += img->v[i].ino == parent;
		else if (dino == EXT3_ROOT_INO &&
			 !strcmp(img->v[i].name, "lost+found"))
			extra++;
		else
			img->v[j++] = img->v[i];
	}
	img->n = j;
	if (img->n)
		qsort(img->v, img->n, sizeof(*img->v), ent_cmp);
	same = img->n == host->n;
	for (i = 0; same && i < img->n; i++)
		same = !strcmp(img->v[i].name, host->v[i].name);
	t_ok(same && dots == 2, "%u KiB: readdir /%s: %zu entries, . and ..",
	     c->cfg->bs / 1024, rel, img->n);
	if (!same)
		t_diag("image has %zu names, tree %zu", img->n, host->n);
}

static void cmp_children(t_ctx *c, const char *path, uint32_t dino,
			 const char *rel, const struct ents *img,
			 const struct ents *host, bool big)
{
	char child[4096], crel[4096], why[256] = "", pr[600];
	size_t i, bad = 0, checked = 0;
	const struct ent *e;
	struct stat st;

	for (i = 0; i < host->n; i++) {
		snprintf(child, sizeof(child), "%s/%s", path, host->v[i].name);
		snprintf(crel, sizeof(crel), "%s%s%s", rel, *rel ? "/" : "",
			 host->v[i].name);
		if (lstat(child, &st) < 0)
			continue;	/* only in the image (big directory) */
		e = ent_find(img, host->v[i].name);
		checked++;
		bool ok = e && t_lookup(c, dino, host->v[i].name) == e->ino &&
			  cmp_entry(c, child, &st, e, false, why, sizeof(why));
		if (!big)
			t_ok(ok, "%u KiB: /%s %s", c->cfg->bs / 1024,
			     t_printable(crel, pr, sizeof(pr)), ok ? "" : why);
		else if (!ok && !bad)
			t_diag("first mismatch: /%s (%s)",
			       t_printable(crel, pr, sizeof(pr)), why);
		bad += !ok;
		if (ok && S_ISDIR(st.st_mode))
			cmp_dir(c, child, e->ino, dino, crel);
	}
	if (big)
		t_ok(bad == 0, "%u KiB: /%s: %zu tree entries match",
		     c->cfg->bs / 1024, rel, checked);
}

static void cmp_dir(t_ctx *c, const char *path, uint32_t dino,
		    uint32_t parent, const char *rel)
{
	struct ents img = { 0 }, host = { 0 };
	bool big = !strcmp(rel, T_BIG_DIR);
	ino_inode dir;
	int r;

	r = ino_inode_read(c->fs, dino, &dir);
	if (r == 0)
		r = ino_dir_iterate(c->fs, &dir, 0, collect, &img);
	if (!t_is_int(r, 0, "%u KiB: iterate /%s", c->cfg->bs / 1024, rel))
		goto out;
	host_list(path, &host, big);
	cmp_listing(c, rel, dino, parent, &img, &host);
	cmp_children(c, path, dino, rel, &img, &host, big);
out:
	free(img.v);
	free(host.v);
}

static int make_image(t_ctx *c, unsigned idx)
{
	const t_cfg *g = c->cfg;
	char cmd[600];
	FILE *f;
	unsigned i;

	snprintf(c->img_path, sizeof(c->img_path), "%s/../img%u", c->tree, idx);
	if (t_sh("mke2fs -q -F -t ext3 -b %u -I %u -N 32768 -d '%s' '%s' 64M >/dev/null 2>&1",
		 g->bs, g->isize, c->tree, c->img_path) ||
	    t_sh("tune2fs -E hash_alg=%s '%s' >/dev/null", g->hash,
		 c->img_path) ||
	    (g->unsig && t_sh("debugfs -w -R 'ssv flags 2' '%s' 2>/dev/null",
			      c->img_path)) ||
	    t_sh("e2fsck -fyD '%s' >/dev/null 2>&1; [ $? -lt 4 ]", c->img_path))
		return -1;
	if (c->big_host < T_BIG_ENTRIES) {
		snprintf(cmd, sizeof(cmd), "%s.cmd", c->img_path);
		f = fopen(cmd, "w");
		if (!f)
			return -1;
		fprintf(f, "cd /%s\n", T_BIG_DIR);
		for (i = c->big_host; i < T_BIG_ENTRIES; i++) {
			char name[256];

			t_big_name(i, name, sizeof(name));
			fprintf(f, "mknod %s p\n", name);
		}
		fclose(f);
		if (t_sh("debugfs -w -f '%s' '%s' >/dev/null 2>&1", cmd,
			 c->img_path) ||
		    t_sh("e2fsck -fyD '%s' >/dev/null 2>&1; [ $? -lt 4 ]",
			 c->img_path))
			return -1;
	}
	return t_sh("e2fsck -fn '%s' >/dev/null 2>&1", c->img_path);
}

static void run_cfg(t_ctx *c, unsigned idx)
{
	char why[256];
	int r;

	t_diag("image %u: %u-byte blocks, %u-byte inodes, %s%s", idx,
	       c->cfg->bs, c->cfg->isize, c->cfg->hash,
	       c->cfg->unsig ? " unsigned" : "");
	if (!t_ok(make_image(c, idx) == 0, "image %u made and checked clean",
		  idx))
		return;
	r = t_img_open(&c->img, c->img_path);
	if (r == 0)
		r = t_img_mount(&c->img, &c->fs, why, sizeof(why));
	if (!t_is_int(r, 0, "image %u mounts (%s)", idx, r ? why : "ok"))
		return;
	t_is_int(c->img.src.block_size, c->cfg->bs, "block size probed");
	cmp_dir(c, c->tree, EXT3_ROOT_INO, EXT3_ROOT_INO, "");
	t_check_links(c);
	t_check_maps(c);
	t_check_requests(c);
	t_check_statfs(c);
	t_check_bigdir(c);
	if (idx == 0)
		t_check_dirhash(c);
	t_is_int(c->img.held, 0, "image %u: every get() was put (%ld gets)",
		 idx, c->img.gets);
	c->fs = ino_fs_unmount(c->fs);
	t_img_close(&c->img);
}

int main(void)
{
	char base[] = "/tmp/t-ext3fs.XXXXXX", tree[64];
	bool root = false;
	unsigned i, big_host;
	t_ctx c;

	if (!t_have_e2fsprogs())
		t_skip_all("mke2fs, e2fsck or debugfs not found");
	if (!mkdtemp(base))
		t_skip_all("mkdtemp: %s", strerror(errno));
	snprintf(tree, sizeof(tree), "%s/tree", base);
	big_host = getenv("EXT3D_LONG") ? T_BIG_ENTRIES : 200;
	if (!t_ok(t_tree_build(tree, big_host, &root) == 0, "host tree built in %s",
		  tree))
		return t_done();
	if (!root)
		t_diag("not root: no devices, no foreign owners");
	for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		memset(&c, 0, sizeof(c));
		c.cfg = &cfgs[i];
		c.tree = tree;
		c.big_host = big_host;
		c.root = root;
		run_cfg(&c, i);
	}
	if (!getenv("T_KEEP"))
		t_sh("rm -rf '%s'", base);
	else
		t_diag("kept %s", base);
	return t_done();
}
