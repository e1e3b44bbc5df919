/*
 * test-ext3fs-corrupt.c - libext3fs on damaged images.  One 1 KiB-block
 * ext3 image (a two-block directory, a file with an indirect block, fast
 * and slow symlinks, a 6,000-entry htree directory with a dx_node level)
 * is copied per case, one structure is overwritten at an offset found with
 * debugfs (bmap, imap), and the call that meets it must return -EUCLEAN
 * (-EOPNOTSUPP for unsupported features) with one warning line naming the
 * inode and block, every get() put, and nothing crashing (ASan build).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t_image.h"
#include "tap.h"

#define H_ENTRIES 6000

static char dir[64];
static char base_img[128];
static unsigned ncase;

/* Where things are in the base image. */
static struct {
	uint64_t jblk;			/* journal block 0 */
	uint32_t d_ino, f_ino, h_ino, s_ino, j_ino;
	uint64_t d_blk0, d_iblk, f_iblk, h_iblk, h_root, h_node, s_iblk;
	uint64_t j_iblk;
	uint32_t d_ioff, f_ioff, h_ioff, s_ioff, j_ioff;
	uint32_t f_ind;			/* f's IND block */
} loc;

static uint64_t dbg_num(const char *cmd)
{
	char *out = t_sh_out("debugfs -R '%s' '%s' 2>/dev/null", cmd, base_img);
	uint64_t n = out ? strtoull(out, NULL, 10) : 0;

	free(out);
	return n;
}

/* Inode number, inode-table block and byte offset of a path. */
static int dbg_imap(const char *path, uint32_t *ino, uint64_t *blk,
		    uint32_t *off)
{
	char *out = t_sh_out("debugfs -R 'imap %s' '%s' 2>/dev/null", path,
			     base_img);
	unsigned long long b = 0;
	unsigned o = 0, i = 0;
	char *p = out ? strstr(out, "located at block") : NULL;
	int ok = out && sscanf(out, "Inode %u", &i) == 1 && p &&
		 sscanf(p, "located at block %llu, offset 0x%x", &b, &o) == 2;

	free(out);
	*ino = i;
	*blk = b;
	*off = (uint32_t)(b * 1024 + o - b * 1024);
	return ok ? 0 : -1;
}

/*
 * Tree -> mke2fs -d -> e2fsck -fyD indexes h (200 names), debugfs adds
 * the rest of h through the index and then d as a plain two-block
 * directory (created after the last -D, so it stays linear).
 */
static int make_base(void)
{
	char tree[128], cmd[128];
	FILE *f;
	int i, r = 0;

	snprintf(tree, sizeof(tree), "%s/tree", dir);
	snprintf(base_img, sizeof(base_img), "%s/base.img", dir);
	r |= t_sh("mkdir -p '%s/h' && head -c 20480 /dev/urandom > '%s/f'"
		  " && ln -s target '%s/l' && ln -s %0100d '%s/s' &&"
		  " for i in $(seq -w 0 00199); do : > '%s/h/name-'$i; done",
		  tree, tree, tree, 0, tree, tree);
	r |= t_sh("mke2fs -q -F -t ext3 -b 1024 -N 8192 -d '%s' '%s' 8M >/dev/null 2>&1",
		  tree, base_img);
	r |= t_sh("e2fsck -fyD '%s' >/dev/null 2>&1; [ $? -lt 4 ]", base_img);
	snprintf(cmd, sizeof(cmd), "%s/h.cmd", dir);
	f = fopen(cmd, "w");
	if (!f)
		return -1;
	fprintf(f, "cd /h\n");
	for (i = 200; i < H_ENTRIES; i++)
		fprintf(f, "mknod name-%05d p\n", i);
	fprintf(f, "cd /\nmkdir d\ncd /d\n");
	for (i = 0; i < 60; i++)
		fprintf(f, "mknod entry-%02d-with-a-longer-name p\n", i);
	fclose(f);
	r |= t_sh("debugfs -w -f '%s' '%s' >/dev/null 2>&1", cmd, base_img);
	r |= t_sh("e2fsck -fn '%s' >/dev/null 2>&1", base_img);
	return r;
}

static int locate(void)
{
	uint8_t raw[4];
	int r = 0;

	loc.jblk = dbg_num("bmap <8> 0");
	loc.d_blk0 = dbg_num("bmap /d 0");
	loc.h_root = dbg_num("bmap /h 0");
	r |= dbg_imap("/d", &loc.d_ino, &loc.d_iblk, &loc.d_ioff);
	r |= dbg_imap("/f", &loc.f_ino, &loc.f_iblk, &loc.f_ioff);
	r |= dbg_imap("/h", &loc.h_ino, &loc.h_iblk, &loc.h_ioff);
	r |= dbg_imap("/s", &loc.s_ino, &loc.s_iblk, &loc.s_ioff);
	r |= dbg_imap("<8>", &loc.j_ino, &loc.j_iblk, &loc.j_ioff);
	/* f's i_block[12]; the root's first index entry names the node */
	r |= t_peek(base_img, loc.f_iblk * 1024 + loc.f_ioff + 0x28 + 48, raw, 4);
	loc.f_ind = raw[0] | raw[1] << 8 | raw[2] << 16 | (uint32_t)raw[3] << 24;
	r |= t_peek(base_img, loc.h_root * 1024 + 0x24, raw, 4);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "bmap /h %u", raw[0] | raw[1] << 8 | raw[2] << 16);
	loc.h_node = dbg_num(cmd);
	return r || !loc.jblk || !loc.d_blk0 || !loc.h_root || !loc.f_ind ||
	       !loc.h_node ? -1 : 0;
}

/* A fresh copy of the base image for one case. */
static const char *fresh(void)
{
	static char path[160];

	snprintf(path, sizeof(path), "%s/case%u.img", dir, ++ncase);
	if (t_sh("cp '%s' '%s'", base_img, path))
		return NULL;
	return path;
}

static int patch32(const char *img, uint64_t off, uint32_t v)
{
	uint8_t b[4] = { v, v >> 8, v >> 16, v >> 24 };

	return t_patch(img, off, b, 4);
}

static int patch16(const char *img, uint64_t off, uint16_t v)
{
	uint8_t b[2] = { v, v >> 8 };

	return t_patch(img, off, b, 2);
}

static int patch8(const char *img, uint64_t off, uint8_t v)
{
	return t_patch(img, off, &v, 1);
}

/* Mount-time cases: the mount itself must fail with `want`. */
static void expect_mount(const char *img, uint64_t dev, int want,
			 const char *text, const char *what)
{
	char why[256] = "";
	ino_fs *fs = NULL;
	t_img t;
	int r;

	r = t_img_open(&t, img);
	if (r == 0) {
		if (dev)
			t.size = dev;
		r = t_img_mount(&t, &fs, why, sizeof(why));
	}
	t_ok(r == want && strstr(why, text) && t.held == 0,
	     "%s: mount %d (%s)", what, r, why);
	fs = ino_fs_unmount(fs);
	t_img_close(&t);
}

/* An open image for call-level cases. */
typedef struct {
	t_img t;
	ino_fs *fs;
	char err[4096];
} c_img;

static int c_open(c_img *c, const char *img)
{
	char why[256];
	int r = t_img_open(&c->t, img);

	if (r == 0)
		r = t_img_mount(&c->t, &c->fs, why, sizeof(why));
	if (r < 0)
		t_diag("mount: %d %s", r, why);
	return r;
}

/* Checks the outcome of one damaged call and the warning it logged. */
static void expect(c_img *c, int got, int want, int lines, uint32_t ino,
		   uint64_t blk, const char *what)
{
	char key[64];
	bool logged;

	snprintf(key, sizeof(key), "ino=%u blk=%llu", ino,
		 (unsigned long long)blk);
	logged = lines == 1 && strstr(c->err, key);
	t_ok(got == want && logged && c->t.held == 0,
	     "%s: %d, one warning with %s", what, got, key);
	if (!logged)
		t_diag("%d lines: %s", lines, c->err);
}

static void c_close(c_img *c)
{
	c->fs = ino_fs_unmount(c->fs);
	t_img_close(&c->t);
}

static void mount_cases(void)
{
	uint8_t be[4] = { 0, 0, 0, 0x10 };
	char junk[4096];
	const char *img;

	if ((img = fresh()) && !patch16(img, 1024 + 0x38, 0))
		expect_mount(img, 0, -EUCLEAN, "magic", "superblock magic");
	if ((img = fresh()) && !patch32(img, 1024 + 0x4C, 5))
		expect_mount(img, 0, -EOPNOTSUPP, "revision", "revision 5");
	if ((img = fresh()) && !patch32(img, 2048 + 8, 0xffffff))
		expect_mount(img, 0, -EUCLEAN, "inode table",
			     "group 0 inode table outside the fs");
	if ((img = fresh()))
		expect_mount(img, 4 << 20, -EUCLEAN,
			     "image too small: 4194304 bytes, the superblock says",
			     "device shorter than the fs");
	if ((img = fresh()) && !t_patch(img, loc.jblk * 1024 + 0x28, be, 4))
		expect_mount(img, 0, -EOPNOTSUPP, "journal_checksum_v3",
			     "journal csum v3");
	be[0] = 0x80, be[3] = 0;
	if ((img = fresh()) && !t_patch(img, loc.jblk * 1024 + 0x28, be, 4))
		expect_mount(img, 0, -EOPNOTSUPP, "FEATURE_I31",
			     "unknown journal feature");
	if ((img = fresh()) && !patch32(img, loc.jblk * 1024, 0))
		expect_mount(img, 0, -EUCLEAN, "journal magic",
			     "journal superblock magic");
	if ((img = fresh()) &&
	    !patch16(img, loc.j_iblk * 1024 + loc.j_ioff, 040755))
		expect_mount(img, 0, -EUCLEAN, "journal inode",
			     "journal inode is a directory");
	if ((img = fresh()) &&
	    !patch32(img, loc.j_iblk * 1024 + loc.j_ioff + 0x28, 0xffffff)) {
		t_stderr_begin();
		expect_mount(img, 0, -EUCLEAN, "journal inode",
			     "journal block pointer out of range");
		t_stderr_end(junk, sizeof(junk));
	}
	img = fresh();
	if (img && !t_sh("mke2fs -q -F -t ext4 '%s' 8M >/dev/null 2>&1", img))
		expect_mount(img, 0, -EOPNOTSUPP, "extent", "ext4 image");
	img = fresh();
	if (img && !t_sh("mke2fs -q -F -t ext3 -O meta_bg,^resize_inode '%s' 8M >/dev/null 2>&1",
			 img))
		expect_mount(img, 0, -EOPNOTSUPP, "meta_bg", "meta_bg image");
}

static int count_entries(void *ctx, uint32_t ino, uint8_t ft,
			 const char *name, size_t len, uint64_t next)
{
	(void)ino, (void)ft, (void)name, (void)len, (void)next;
	(*(unsigned *)ctx)++;
	return 0;
}

/* Iterates directory d and looks up its last name on a damaged image. */
static void check_dir_d(const char *img, uint64_t blk, const char *what)
{
	const char *name = "entry-59-with-a-longer-name";
	c_img c = { 0 };
	unsigned n = 0;
	uint32_t ino;
	ino_inode d;
	int r, lines;

	if (!img || c_open(&c, img) < 0 ||
	    ino_inode_read(c.fs, loc.d_ino, &d) < 0) {
		t_ok(false, "%s: image opens", what);
		c_close(&c);
		return;
	}
	t_stderr_begin();
	r = ino_dir_iterate(c.fs, &d, 0, count_entries, &n);
	lines = t_stderr_end(c.err, sizeof(c.err));
	expect(&c, r, -EUCLEAN, lines, loc.d_ino, blk, what);
	t_stderr_begin();
	r = ino_dir_lookup(c.fs, &d, name, strlen(name), &ino);
	lines = t_stderr_end(c.err, sizeof(c.err));
	expect(&c, r, -EUCLEAN, lines, loc.d_ino, blk, "  ... and lookup");
	c_close(&c);
}

static void dirent_cases(void)
{
	uint64_t b0 = loc.d_blk0 * 1024, ioff = loc.d_iblk * 1024 + loc.d_ioff;
	const char *img;
	uint8_t raw[4];

	img = fresh();
	check_dir_d(img && !patch16(img, b0 + 4, 5) ? img : NULL, loc.d_blk0,
		    "rec_len 5");
	img = fresh();
	check_dir_d(img && !patch16(img, b0 + 16, 2000) ? img : NULL,
		    loc.d_blk0, "rec_len crossing the block end");
	img = fresh();
	check_dir_d(img && !patch8(img, b0 + 6, 200) ? img : NULL, loc.d_blk0,
		    "name_len 200 in a 12-byte entry");
	img = fresh();
	check_dir_d(img && !patch16(img, b0 + 24 + 4, 0) ? img : NULL,
		    loc.d_blk0, "rec_len 0");
	img = fresh();
	check_dir_d(img && !patch32(img, b0 + 24, 0x7fffffff) ? img : NULL,
		    loc.d_blk0, "inode number out of range");
	img = fresh();
	check_dir_d(img && !patch32(img, b0 + 24, 8) ? img : NULL, loc.d_blk0,
		    "entry naming the journal inode");
	img = fresh();
	check_dir_d(img && !patch32(img, ioff + 0x28 + 4, 0) ? img : NULL,
		    loc.d_iblk, "hole in a directory");
	img = fresh();
	if (img && !t_peek(img, ioff + 4, raw, 4))
		check_dir_d(!patch32(img, ioff + 4, (raw[0] | raw[1] << 8 |
						     raw[2] << 16) + 100) ?
			    img : NULL, loc.d_iblk,
			    "directory size not a multiple of the block");
}

/* Runs one damaged call on a fresh image and checks its warning. */
enum icall { I_BMAP0, I_BMAP12, I_READ, I_INODE, I_LINK };

static void check_inode_call(const char *img, enum icall call, uint32_t ino,
			     uint64_t blk, const char *what)
{
	c_img c = { 0 };
	uint64_t pblk;
	ino_inode in;
	char buf[64];
	int r = 0, lines;

	if (!img || c_open(&c, img) < 0 ||
	    (call != I_INODE && ino_inode_read(c.fs, ino, &in) < 0)) {
		t_ok(false, "%s: image opens", what);
		c_close(&c);
		return;
	}
	t_stderr_begin();
	switch (call) {
	case I_BMAP0: r = ino_bmap(c.fs, &in, 0, &pblk); break;
	case I_BMAP12: r = ino_bmap(c.fs, &in, 12, &pblk); break;
	case I_READ: r = ino_file_read(c.fs, &in, buf, sizeof(buf), 0); break;
	case I_INODE: r = ino_inode_read(c.fs, ino, &in); break;
	case I_LINK: r = ino_readlink(c.fs, &in, buf, sizeof(buf)); break;
	}
	lines = t_stderr_end(c.err, sizeof(c.err));
	expect(&c, r, -EUCLEAN, lines, ino, blk, what);
	c_close(&c);
}

/* f with i_size at ext3_max_size(): served, its last bytes a hole. */
static void check_max_size(const char *img)
{
	uint8_t buf[64], zero[64] = { 0 };
	c_img c = { 0 };
	ino_inode in;
	ssize_t n = -1;

	if (c_open(&c, img) == 0 && ino_inode_read(c.fs, loc.f_ino, &in) == 0)
		n = ino_file_read(c.fs, &in, buf, sizeof(buf), in.size - 64);
	t_ok(n == 64 && !memcmp(buf, zero, 64) && c.t.held == 0,
	     "i_size at ext3_max_size: served, the last 64 bytes read as a hole (%zd)", n);
	c_close(&c);
}

static void inode_cases(void)
{
	uint64_t f = loc.f_iblk * 1024 + loc.f_ioff;
	uint64_t s = loc.s_iblk * 1024 + loc.s_ioff;
	const char *img;

	img = fresh();
	if (img && !patch32(img, f + 0x28, 0xffffff)) {
		check_inode_call(img, I_BMAP0, loc.f_ino, loc.f_iblk,
				 "i_block[0] out of range: bmap");
		check_inode_call(img, I_READ, loc.f_ino, loc.f_iblk,
				 "i_block[0] out of range: read");
	}
	img = fresh();
	if (img && !patch32(img, (uint64_t)loc.f_ind * 1024, 0xffffffff))
		check_inode_call(img, I_BMAP12, loc.f_ino, loc.f_ind,
				 "pointer in the IND block out of range");
	img = fresh();
	if (img && !patch16(img, f, 0xf1a4))
		check_inode_call(img, I_INODE, loc.f_ino, loc.f_iblk,
				 "inode with file type 0xF");
	img = fresh();
	if (img && !patch32(img, f + 0x6C, 0xffffffff))
		check_inode_call(img, I_INODE, loc.f_ino, loc.f_iblk,
				 "i_size beyond the block map");
	/* 1 KiB blocks: ext3_max_size() is 16843020 blocks, 0x4_0404_3000 bytes */
	img = fresh();
	if (img && !patch32(img, f + 0x6C, 4) && !patch32(img, f + 4, 0x04043001))
		check_inode_call(img, I_INODE, loc.f_ino, loc.f_iblk,
				 "i_size one byte beyond ext3_max_size");
	img = fresh();
	if (img && !patch32(img, f + 0x6C, 4) && !patch32(img, f + 4, 0x04043000))
		check_max_size(img);
	img = fresh();
	if (img && !patch32(img, s + 4, 2000))
		check_inode_call(img, I_LINK, loc.s_ino, loc.s_iblk,
				 "slow symlink longer than a block");
}

/* The first name whose index lookup meets the damage, or NULL. */
static const char *damaged_name(c_img *c, const ino_inode *h)
{
	static char name[32];
	char junk[4096];
	uint32_t ino;
	int i, r = 0;

	for (i = 0; i < H_ENTRIES && r != -EUCLEAN; i++) {
		snprintf(name, sizeof(name), "name-%05d", i);
		t_stderr_begin();
		r = ino_dx_lookup(c->fs, h, name, strlen(name), &ino);
		t_stderr_end(junk, sizeof(junk));
	}
	return r == -EUCLEAN ? name : NULL;
}

static int patch_n(const char *img, uint64_t off, unsigned len, uint32_t v)
{
	if (len == 1)
		return patch8(img, off, v);
	return len == 2 ? patch16(img, off, v) : patch32(img, off, v);
}

/* Damages the htree of h at `off` and checks both lookup paths. */
static void check_htree(uint64_t off, unsigned len, uint32_t v,
			uint64_t blk, const char *what)
{
	const char *img = fresh(), *name = NULL;
	c_img base = { 0 }, c = { 0 };
	uint32_t ino = 0, want = 0;
	ino_inode h;
	int r, lines;

	if (img && !patch_n(img, off, len, v) && c_open(&c, img) == 0 &&
	    c_open(&base, base_img) == 0 &&
	    ino_inode_read(c.fs, loc.h_ino, &h) == 0)
		name = damaged_name(&c, &h);
	if (!name || ino_dx_lookup(base.fs, &h, name, strlen(name), &want)) {
		t_ok(false, "%s: a lookup meets the damage", what);
		goto out;
	}
	t_stderr_begin();
	r = ino_dx_lookup(c.fs, &h, name, strlen(name), &ino);
	lines = t_stderr_end(c.err, sizeof(c.err));
	expect(&c, r, -EUCLEAN, lines, loc.h_ino, blk, what);
	t_stderr_begin();
	r = ino_dir_lookup(c.fs, &h, name, strlen(name), &ino);
	lines = t_stderr_end(c.err, sizeof(c.err));
	expect(&c, r == 0 && ino == want && strstr(c.err, "linearly") ? 0 : -1,
	       0, lines, loc.h_ino, blk, "  ... lookup falls back to linear");
out:
	c_close(&base);
	c_close(&c);
}

static void htree_cases(void)
{
	uint64_t root = loc.h_root * 1024, node = loc.h_node * 1024;

	check_htree(root + 0x1e, 1, 3, loc.h_root, "dx_root indirect_levels 3");
	check_htree(root + 0x1d, 1, 7, loc.h_root, "dx_root info_length 7");
	check_htree(root + 0x1c, 1, 9, loc.h_root, "dx_root hash version 9");
	check_htree(root + 0x22, 2, 200, loc.h_root, "dx_root count > limit");
	check_htree(root + 0x20, 2, 5, loc.h_root, "dx_root limit 5");
	check_htree(node + 0x08, 2, 5, loc.h_node, "dx_node limit 5");
	check_htree(node + 0x0a, 2, 0, loc.h_node, "dx_node count 0");
}

int main(void)
{
	char tmpl[] = "/tmp/t-ext3fs-corrupt.XXXXXX";

	if (!t_have_e2fsprogs())
		t_skip_all("mke2fs, e2fsck or debugfs not found");
	if (!mkdtemp(tmpl))
		t_skip_all("mkdtemp failed");
	snprintf(dir, sizeof(dir), "%s", tmpl);
	if (!t_ok(make_base() == 0, "base image made") ||
	    !t_ok(locate() == 0, "structures located with debugfs"))
		return t_done();
	t_diag("journal blk %llu; d ino %u blk0 %llu; f ino %u ind %u; h ino %u root %llu node %llu",
	       (unsigned long long)loc.jblk, loc.d_ino,
	       (unsigned long long)loc.d_blk0, loc.f_ino, loc.f_ind,
	       loc.h_ino, (unsigned long long)loc.h_root,
	       (unsigned long long)loc.h_node);
	mount_cases();
	dirent_cases();
	inode_cases();
	htree_cases();
	if (!getenv("T_KEEP"))
		t_sh("rm -rf '%s'", dir);
	return t_done();
}
