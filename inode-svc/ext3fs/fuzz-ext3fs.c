/*
 * fuzz-ext3fs.c - libFuzzer target for libext3fs.  The input is a whole
 * image: mount it, walk the root recursively (bounded depth and entries),
 * read files, symlinks, device numbers, extended attributes and ACLs,
 * resume readdir at odd cookies,
 * look up the names found (htree and linear) and some that are not there,
 * read the reserved inodes' maps, statfs.  Each get() copies the block into
 * its own allocation so ASan sees any read past a block; after every input
 * all gets must have been put (abort otherwise).  Oracles that abort too:
 * a mount of an input shorter than the superblock's blocks, an inode served
 * with an i_size past ext3_max_size (computed here on its own).  The walk
 * skips entries pointing back at a directory on its path, as ls -R does,
 * so that a loop does not use up the budget of the rest.  Logging
 * is stubbed out here (cm_log is formatted and dropped), so libcommon is
 * not linked.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext3fs.h"
#include "log.h"
#include "xattr.h"

#define MAX_DEPTH	6
#define MAX_ENTRIES	2000	/* directory entries visited per input */
#define DIR_ENTRIES	48	/* entries followed per directory */
#define READ_MAX	(256u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

void cm_log(enum cm_log_level level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
}

int cm_log_errno(int r, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return r;
}

struct mem {
	const uint8_t *data;
	size_t size;
	uint32_t bs;
	long held;
};

static const void *mem_get(void *ctx, uint64_t blocknr, void **cookie,
			   int *err)
{
	struct mem *m = ctx;
	void *p;

	if (blocknr >= m->size / m->bs) {
		*err = -EIO;
		return NULL;
	}
	p = malloc(m->bs);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(p, m->data + blocknr * m->bs, m->bs);
	*cookie = p;
	m->held++;
	return p;
}

static void mem_put(void *ctx, void *cookie)
{
	struct mem *m = ctx;

	m->held--;
	free(cookie);
}

struct ent {
	uint32_t ino;
	uint8_t len;
	char name[255];
	uint64_t next;
};

struct list {
	struct ent v[DIR_ENTRIES];
	unsigned n;
	long *budget;
};

static int collect(void *ctx, uint32_t ino, uint8_t ft, const char *name,
		   size_t len, uint64_t next)
{
	struct list *l = ctx;

	(void)ft;
	if (--*l->budget <= 0 || l->n == DIR_ENTRIES)
		return 1;
	l->v[l->n].ino = ino;
	l->v[l->n].len = len;
	memcpy(l->v[l->n].name, name, len);
	l->v[l->n].next = next;
	l->n++;
	return 0;
}

static int count(void *ctx, uint32_t ino, uint8_t ft, const char *name,
		 size_t len, uint64_t next)
{
	(void)ino, (void)ft, (void)name, (void)len, (void)next;
	return --*(long *)ctx <= 0;
}

static uint8_t buf[READ_MAX];
/* The inode visit_xattrs is reading (one thread). */
static const ino_inode *xattr_in;

/* ext3_max_size() for fs blocks of 2^bits bytes (see fs.c). */
static uint64_t oracle_max_size(unsigned bits)
{
	uint64_t apb = 1ull << (bits - 2), tree, upper, meta;

	tree = 12 + apb + apb * apb + apb * apb * apb;
	upper = 0xffffffffull >> (bits - 9);
	meta = 3 + 2 * apb + apb * apb;
	if (upper > meta)
		upper -= meta;
	return (tree < upper ? tree : upper) << bits;
}

/* Reads inode ino as a client would and aborts on an impossible size. */
static int read_checked(ino_fs *fs, uint32_t ino, ino_inode *in)
{
	unsigned bits = 10;
	int r = ino_inode_read(fs, ino, in);

	while ((1u << bits) < ino_fs_geom(fs)->block_size)
		bits++;
	if (r == 0 && ((in->mode & EXT3_S_IFMT) == EXT3_S_IFREG ||
		       (in->mode & EXT3_S_IFMT) == EXT3_S_IFDIR ||
		       (in->mode & EXT3_S_IFMT) == EXT3_S_IFLNK) &&
	    in->size > oracle_max_size(bits))
		abort();	/* served a size no ext3 file can have */
	return r;
}

/* Reads every extended attribute of in, and its ACLs. */
static int xattr_one(void *ctx, int index, const char *name, size_t nlen, uint32_t vsize)
{
	(void)vsize;
	(void)ino_xattr_get(ctx, xattr_in, index, name, nlen, buf, READ_MAX);
	return 0;
}

static void visit_xattrs(ino_fs *fs, const ino_inode *in)
{
	ino_acl acl;

	xattr_in = in;
	(void)ino_xattr_iterate(fs, in, xattr_one, fs);
	(void)ino_xattr_list(fs, in, true, (char *)buf, READ_MAX);
	(void)ino_acl_get(fs, in, INO_XATTR_INDEX_ACL_ACCESS, &acl);
	(void)ino_acl_get(fs, in, INO_XATTR_INDEX_ACL_DEFAULT, &acl);
}

static void visit_file(ino_fs *fs, const ino_inode *in)
{
	uint64_t pblk, off;
	char target[4096];

	visit_xattrs(fs, in);

	switch (in->mode & EXT3_S_IFMT) {
	case EXT3_S_IFREG:
		for (off = 0; off < in->size && off < 4 * READ_MAX;
		     off += READ_MAX / 3)
			if (ino_file_read(fs, in, buf, READ_MAX / 4, off) < 0)
				break;
		(void)ino_file_read(fs, in, buf, 64, in->size - 1);
		(void)ino_bmap(fs, in, 1ull << 20, &pblk);
		(void)ino_bmap(fs, in, 1ull << 30, &pblk);
		break;
	case EXT3_S_IFLNK:
		(void)ino_readlink(fs, in, target, sizeof(target));
		(void)ino_readlink(fs, in, target, 7);
		break;
	case EXT3_S_IFCHR:
	case EXT3_S_IFBLK:
		(void)ino_rdev(in);
		break;
	}
}

/* The directories from the root to the one being walked. */
struct path {
	uint32_t ino[MAX_DEPTH + 2];
	int depth;
};

static void walk(ino_fs *fs, uint32_t dino, struct path *p, long *budget);

static bool on_path(const struct path *p, uint32_t ino)
{
	for (int i = 0; i <= p->depth; i++)
		if (p->ino[i] == ino)
			return true;
	return false;
}

static void visit_entries(ino_fs *fs, const ino_inode *dir,
			  const struct list *l, struct path *p, long *budget)
{
	char other[256];
	uint32_t ino;
	ino_inode in;
	unsigned i;

	for (i = 0; i < l->n; i++) {
		const struct ent *e = &l->v[i];

		(void)ino_dir_lookup(fs, dir, e->name, e->len, &ino);
		(void)ino_dx_lookup(fs, dir, e->name, e->len, &ino);
		memcpy(other, e->name, e->len);
		other[e->len] = 'x';
		(void)ino_dir_lookup(fs, dir, other, e->len + 1u, &ino);
		if ((e->len == 1 && e->name[0] == '.') ||
		    (e->len == 2 && !memcmp(e->name, "..", 2)))
			continue;
		if (read_checked(fs, e->ino, &in) < 0)
			continue;
		if ((in.mode & EXT3_S_IFMT) != EXT3_S_IFDIR)
			visit_file(fs, &in);
		else if (!on_path(p, e->ino))	/* a loop to an ancestor */
			walk(fs, e->ino, p, budget);
	}
}

static void walk(ino_fs *fs, uint32_t dino, struct path *p, long *budget)
{
	struct list *l;
	ino_inode dir;
	long n;

	if (p->depth >= MAX_DEPTH || *budget <= 0 ||
	    read_checked(fs, dino, &dir) < 0)
		return;
	l = calloc(1, sizeof(*l));
	if (!l)
		return;
	l->budget = budget;
	(void)ino_dir_iterate(fs, &dir, 0, collect, l);
	if (l->n > 1) {
		n = 64;
		(void)ino_dir_iterate(fs, &dir, l->v[0].next, count, &n);
		n = 64;
		(void)ino_dir_iterate(fs, &dir, l->v[1].next - 1, count, &n);
	}
	(void)ino_dir_lookup(fs, &dir, "lost+found", 10, &dino);
	p->ino[++p->depth] = dir.ino;
	visit_entries(fs, &dir, l, p, budget);
	p->depth--;
	free(l);
}

/* The reserved inodes (journal, resize...) and a few others by number. */
static void reserved_inodes(ino_fs *fs)
{
	uint32_t i, n = ino_fs_geom(fs)->inodes_count;
	uint64_t pblk;
	ino_inode in;

	for (i = 1; i <= n && i <= 16; i++) {
		if (ino_inode_read_any(fs, i, &in) < 0)
			continue;
		(void)ino_bmap(fs, &in, 0, &pblk);
		(void)ino_bmap(fs, &in, 12, &pblk);
		(void)ino_bmap(fs, &in, 12 + 256 + 5, &pblk);
		(void)ino_bmap(fs, &in, 12 + 256 + 65536 + 7, &pblk);
		if (read_checked(fs, i, &in) == 0)
			(void)ino_file_read(fs, &in, buf, 4096, 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = { .data = data, .size = size, .bs = 1024 };
	ino_blksrc src = { .get = mem_get, .put = mem_put, .ctx = &m };
	struct ino_statfs st;
	struct path p = { .depth = -1 };
	long budget = MAX_ENTRIES;
	char why[256];
	ino_fs *fs;

	if (size >= 2048 && ino_probe_block_size(data + 1024, &m.bs) < 0)
		m.bs = 1024;
	src.block_size = m.bs;
	if (ino_fs_mount(&src, size, &fs, why, sizeof(why)) == 0) {
		if ((uint64_t)ino_fs_geom(fs)->blocks_count * m.bs > size)
			abort();	/* mounted an image shorter than its fs */
		(void)ino_statfs(fs, &st);
		reserved_inodes(fs);
		walk(fs, EXT3_ROOT_INO, &p, &budget);
		ino_fs_unmount(fs);
	}
	if (m.held != 0)
		abort();	/* a get() without its put() */
	return 0;
}
