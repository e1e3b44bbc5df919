/*
 * test-ext3fs-write.c - libext3fs's write side (inode_w, bmap_w, file_w,
 * truncate, orphan, symlink_w) over t_wtxn, on fresh `mke2fs -t ext3`
 * images with 1 KiB and 4 KiB blocks and 128- and 256-byte inodes.  Files
 * are made with debugfs (or with ino_inode_new and linked by debugfs ln),
 * written, truncated, deleted, put on and taken off the orphan list, and
 * each scenario is read back through the read side and debugfs and ends
 * with `e2fsck -fn`, which must find nothing to fix.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ext3fs.h"
#include "ext3fs_w.h"
#include "t_image.h"
#include "t_wtxn.h"
#include "tap.h"

static const struct cfg {
	uint32_t bs, isize;
} cfgs[] = { { 1024, 128 }, { 1024, 256 }, { 4096, 128 }, { 4096, 256 } };

static char dir[64], img[128];
static const struct cfg *cfg;
static uint64_t apb;
static t_wimg w;
static ino_txn t;

static int mkimg(const char *size)
{
	return t_sh("mke2fs -q -F -t ext3 -b %u -I %u '%s' %s >/dev/null 2>&1", cfg->bs,
		    cfg->isize, img, size);
}

static bool fsck_clean(const char *what)
{
	int r = t_sh("e2fsck -fn '%s' >'%s/fsck.log' 2>&1", img, dir);

	if (r)
		t_sh("sed 's/^/# /' '%s/fsck.log' >&2", dir);
	return t_is_int(r, 0, "%s: e2fsck -fn finds nothing to fix", what);
}

static int dbg(const char *cmd)
{
	return t_sh("debugfs -w -R '%s' '%s' >/dev/null 2>&1", cmd, img);
}

static uint64_t dbg_num(const char *cmd)
{
	char *out = t_sh_out("debugfs -R '%s' '%s' 2>/dev/null", cmd, img);
	uint64_t n = out ? strtoull(out, NULL, 10) : 0;

	free(out);
	return n;
}

static bool wopen(void)
{
	char why[200] = "";
	int r = t_wimg_open(&w, img, why, sizeof(why));

	t_wtxn_init(&t, &w);
	return t_is_int(r, 0, "image opens (%s)", why);
}

static void wclose(const char *what)
{
	t_is_int(w.held, 0, "%s: every block put", what);
	t_is_int(t_wimg_save(&w), 0, "%s: image saved", what);
	t_wimg_close(&w);
}

static uint32_t lookup(const char *name)
{
	ino_inode root;
	uint32_t ino = 0;

	if (ino_inode_read(w.fs, EXT3_ROOT_INO, &root) == 0)
		ino_dir_lookup(w.fs, &root, name, strlen(name), &ino);
	return ino;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 9)) % 251 + 1);
}

/* Reads in whole through the read side and compares with want. */
static bool cmp_read(const ino_inode *in, const uint8_t *want, uint64_t size, const char *what)
{
	uint8_t *got = malloc(size + 1);
	ssize_t n = got ? ino_file_read(w.fs, in, got, size + 1, 0) : -ENOMEM;
	bool ok = n == (ssize_t)size && memcmp(got, want, size) == 0;

	free(got);
	return t_ok(ok, "%s: read back (%zd of %llu bytes)", what, n, (unsigned long long)size);
}

/* debugfs cat of /name gives want. */
static bool cmp_debugfs(const char *name, const uint8_t *want, uint64_t size, const char *what)
{
	char exp[128];
	FILE *f;

	snprintf(exp, sizeof(exp), "%s/expect", dir);
	f = fopen(exp, "w");
	if (f) {
		fwrite(want, 1, size, f);
		fclose(f);
	}
	return t_is_int(t_sh("debugfs -R 'cat /%s' '%s' 2>/dev/null | cmp -s - '%s'", name, img,
			     exp), 0, "%s: debugfs cat matches", what);
}

/* A file made by debugfs, opened with its inode. */
static bool new_file(const char *name, ino_inode *in)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "write /dev/null %s", name);
	return t_is_int(dbg(cmd), 0, "debugfs makes %s", name) && wopen() &&
	       t_is_int(ino_inode_read(w.fs, lookup(name), in), 0, "%s read", name);
}

static bool wr(ino_inode *in, uint8_t *model, const uint8_t *src, size_t len, uint64_t off)
{
	ssize_t n = ino_file_write(w.fs, &t, in, src, len, off);

	if (model)
		memcpy(model + off, src, len);
	return t_is_int(n, (int64_t)len, "write %zu bytes at %llu", len, (unsigned long long)off);
}

static void t_small(void)
{
	uint8_t model[16384] = { 0 }, src[8192];
	ino_inode in;

	if (!new_file("small", &in))
		return;
	fill(src, sizeof(src), 1);
	wr(&in, model, src, 100, 0);
	wr(&in, model, src + 100, 5000, 100);
	wr(&in, model, src + 7, 300, 50);
	t_is_int(in.size, 5100, "small: size");
	t_is_int(in.blocks512, (5100 + cfg->bs - 1) / cfg->bs * (cfg->bs / 512), "small: i_blocks");
	t_is_int(ino_file_write(w.fs, &t, &in, src, 0, 9), 0, "an empty write writes nothing");
	cmp_read(&in, model, in.size, "small");
	wclose("small");
	fsck_clean("small");
	cmp_debugfs("small", model, 5100, "small");
}

static void t_sparse(void)
{
	uint64_t off = 3 * cfg->bs + 7, size = off + 10;
	uint8_t *model = calloc(1, size), src[64];
	ino_inode in;

	fill(src, sizeof(src), 2);
	if (model && new_file("sparse", &in)) {
		wr(&in, model, src, 10, off);
		wr(&in, model, src + 10, 20, 0);
		t_is_int(in.size, size, "sparse: size");
		t_is_int(in.blocks512, 2 * (cfg->bs / 512), "sparse: two blocks, holes between");
		cmp_read(&in, model, size, "sparse");
		wclose("sparse");
		fsck_clean("sparse");
		cmp_debugfs("sparse", model, size, "sparse");
	}
	free(model);
}

static void t_ind(void)
{
	uint64_t size = 20 * cfg->bs + 100, p11 = 0, p12 = 0;
	uint8_t *model = malloc(size);
	ino_inode in;

	if (model && new_file("ind", &in)) {
		fill(model, size, 3);
		wr(&in, NULL, model, size, 0);
		t_is_int(in.blocks512, 22 * (cfg->bs / 512), "ind: 21 data blocks and the IND");
		ino_bmap(w.fs, &in, 11, &p11);
		ino_bmap(w.fs, &in, 12, &p12);
		t_is_int(p12, p11 + 2, "ind: the IND sits between blocks 11 and 12 (goal)");
		t_is_int(in.block[EXT3_IND_BLOCK], p11 + 1, "ind: IND right after block 11");
		cmp_read(&in, model, size, "ind");
		wclose("ind");
		fsck_clean("ind");
		cmp_debugfs("ind", model, size, "ind");
	}
	free(model);
}

/* A byte run in the DIND and one in the TIND range: sparse, read back at
 * those offsets, mapped as debugfs maps them. */
static void t_deep(void)
{
	uint64_t lb[2] = { 12 + apb + 3, 12 + apb + apb * apb + 5 }, p[2] = { 0, 0 };
	uint8_t src[100], got[100];
	char cmd[64];
	ino_inode in;
	int i;

	fill(src, sizeof(src), 4);
	if (!new_file("deep", &in))
		return;
	for (i = 0; i < 2; i++)
		wr(&in, NULL, src, sizeof(src), lb[i] * cfg->bs + 11);
	t_is_int(in.size, lb[1] * cfg->bs + 111, "deep: size past the TIND start");
	t_is_int(in.blocks512, 7 * (cfg->bs / 512), "deep: 2 data, DIND+IND, TIND+DIND+IND");
	t_is_int(ino_file_write(w.fs, &t, &in, src, 1, 1ull << 44), -EFBIG,
		 "a write past the largest file is -EFBIG");
	for (i = 0; i < 2; i++) {
		memset(got, 0, sizeof(got));
		t_ok(ino_file_read(w.fs, &in, got, 100, lb[i] * cfg->bs + 11) == 100 &&
			     memcmp(got, src, 100) == 0, "deep: run %d reads back", i);
		ino_bmap(w.fs, &in, lb[i], &p[i]);
	}
	wclose("deep");
	fsck_clean("deep");
	for (i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "bmap /deep %llu", (unsigned long long)lb[i]);
		t_is_int(dbg_num(cmd), (int64_t)p[i], "deep: debugfs maps block %llu alike",
			 (unsigned long long)lb[i]);
	}
	if (!wopen() || ino_inode_read(w.fs, lookup("deep"), &in))
		return;
	t_is_int(ino_truncate(w.fs, &t, &in, (lb[1] - 2) * cfg->bs), 0,
		 "deep: truncate inside the TIND range, before its block");
	t_is_int(in.blocks512, 3 * (cfg->bs / 512), "deep: the emptied TIND branch freed");
	t_is_int(in.block[EXT3_TIND_BLOCK], 0, "deep: no TIND left");
	t_is_int(ino_truncate(w.fs, &t, &in, lb[0] * cfg->bs + 50), 0,
		 "deep: truncate inside the DIND data block");
	t_is_int(in.blocks512, 3 * (cfg->bs / 512), "deep: the DIND branch kept");
	t_is_int(ino_truncate(w.fs, &t, &in, lb[0] * cfg->bs), 0, "deep: truncate before it");
	t_ok(in.blocks512 == 0 && in.block[EXT3_DIND_BLOCK] == 0, "deep: all freed");
	wclose("deep truncated");
	fsck_clean("deep truncated");
}

/* blocks512 of a contiguous file of n blocks: data and indirect blocks. */
static uint64_t blocks_for(uint64_t n)
{
	uint64_t meta = 0;

	if (n > 12)
		meta++;
	if (n > 12 + apb)
		meta += 1 + (n - 12 - apb + apb - 1) / apb;
	return (n + meta) * (cfg->bs / 512);
}

static void t_truncate(void)
{
	uint64_t n = 12 + apb + 40, size = n * cfg->bs, cut;
	uint8_t *model = malloc(size + 4 * cfg->bs);
	ino_inode in;

	if (!model || !new_file("trunc", &in)) {
		free(model);
		return;
	}
	fill(model, size, 5);
	wr(&in, NULL, model, size, 0);
	t_is_int(in.blocks512, blocks_for(n), "trunc: into the DIND");
	cut = (12 + apb / 2) * cfg->bs + 17;
	t_is_int(ino_truncate(w.fs, &t, &in, cut), 0, "truncate to mid-block inside the IND");
	t_is_int(in.blocks512, blocks_for(12 + apb / 2 + 1), "trunc: DIND freed, IND cut");
	memset(model + cut, 0, size + 4 * cfg->bs - cut);
	t_is_int(ino_truncate(w.fs, &t, &in, cut + 3 * cfg->bs), 0, "grow by three blocks");
	t_is_int(in.blocks512, blocks_for(12 + apb / 2 + 1), "trunc: growing allocates nothing");
	cmp_read(&in, model, in.size, "trunc: the old tail reads as zeros");
	wclose("trunc grown");
	fsck_clean("trunc grown");
	cmp_debugfs("trunc", model, cut + 3 * cfg->bs, "trunc grown");
	if (!wopen() || ino_inode_read(w.fs, lookup("trunc"), &in))
		goto out;
	t_is_int(ino_truncate(w.fs, &t, &in, 5 * cfg->bs + 3), 0, "truncate into the direct blocks");
	t_is_int(in.blocks512, 6 * (cfg->bs / 512), "trunc: six blocks left");
	cmp_read(&in, model, in.size, "trunc: direct");
	t_is_int(ino_truncate(w.fs, &t, &in, 0), 0, "truncate to 0");
	t_ok(in.size == 0 && in.blocks512 == 0, "trunc: empty");
	wclose("trunc to 0");
	fsck_clean("trunc to 0");
	if (!wopen() || ino_inode_read(w.fs, lookup("trunc"), &in))
		goto out;
	wr(&in, NULL, model, size, 0);
	t.credits_left = 0;
	t_is_int(ino_truncate(w.fs, &t, &in, 7), 0, "truncate restarting at every step");
	t_ok(t.restarts > 1, "trunc: %ld restarts", t.restarts);
	t_ok(in.size == 7 && in.blocks512 == cfg->bs / 512, "trunc: one block left");
	t_is_int(cm_le32(((struct ext3_super_block *)(w.mem + 1024))->s_last_orphan), 0,
		 "trunc: off the orphan list again");
	wclose("trunc restarting");
	fsck_clean("trunc restarting");
out:
	free(model);
}

static void t_delete(void)
{
	uint64_t size = (12 + apb + 5) * cfg->bs;
	uint8_t *src = malloc(size);
	uint32_t free0, ino;
	ino_inode in;

	if (!src || !new_file("del", &in)) {
		free(src);
		return;
	}
	free0 = cm_le32(((struct ext3_super_block *)(w.mem + 1024))->s_free_blocks_count);
	fill(src, size, 6);
	wr(&in, NULL, src, size, 0);
	ino = in.ino;
	wclose("del written");
	free(src);
	dbg("unlink /del");
	if (!wopen() || ino_inode_read(w.fs, ino, &in))
		return;
	in.links = 0;
	t_is_int(ino_inode_delete(w.fs, &t, &in), 0, "delete a file into the DIND");
	t_is_int(cm_le32(((struct ext3_super_block *)(w.mem + 1024))->s_free_blocks_count), free0,
		 "del: every block back");
	t_is_int(ino_inode_read(w.fs, ino, &in), -ESTALE, "del: the inode is gone");
	wclose("del");
	fsck_clean("del");
}

static uint32_t last_orphan(void)
{
	return cm_le32(((struct ext3_super_block *)(w.mem + 1024))->s_last_orphan);
}

static uint32_t dtime_of(uint32_t ino)
{
	ino_inode in;

	return ino_inode_read_any(w.fs, ino, &in) == 0 ? in.dtime : 0xdeadbeef;
}

static ino_txn *o_start(void *ctx, int credits)
{
	(void)credits;
	t_wtxn_init(&t, ctx);
	return &t;
}

static int o_stop(void *ctx, ino_txn *tx)
{
	(void)ctx;
	(void)tx;
	return 0;
}

static void t_orphans(void)
{
	size_t len = 8 * cfg->bs;
	uint8_t *src = malloc(len);
	const char *names[3] = { "oa", "ob", "oc" };
	uint32_t ino[3];
	ino_inode in[3];
	char cmd[64], why[256];
	int i;

	if (!src)
		return;
	fill(src, len, 7);
	for (i = 0; i < 3; i++) {
		if (!new_file(names[i], &in[i]))
			goto out;
		wr(&in[i], NULL, src, len, 0);
		ino[i] = in[i].ino;
		wclose(names[i]);
	}
	if (!wopen())
		goto out;
	for (i = 0; i < 3; i++)
		ino_inode_read(w.fs, ino[i], &in[i]);
	for (i = 0; i < 3; i++)
		t_is_int(ino_orphan_add(w.fs, &t, &in[i]), 0, "orphan add %s", names[i]);
	t_is_int(ino_orphan_add(w.fs, &t, &in[1]), 0, "adding again is a no-op");
	t_ok(last_orphan() == ino[2] && dtime_of(ino[2]) == ino[1] && dtime_of(ino[1]) == ino[0] &&
		     dtime_of(ino[0]) == 0, "orphans: chained c -> b -> a through i_dtime");
	in[1].dtime = 0;
	ino_inode_write(w.fs, &t, &in[1]);
	t_is_int(dtime_of(ino[1]), ino[0], "orphans: a stale copy keeps the link");
	t_is_int(ino_orphan_del(w.fs, &t, &in[1]), 0, "orphan del from the middle");
	t_ok(last_orphan() == ino[2] && dtime_of(ino[2]) == ino[0], "orphans: c -> a");
	t_is_int(ino_orphan_del(w.fs, &t, &in[1]), 0, "deleting again is a no-op");
	t_is_int(ino_orphan_del(w.fs, &t, &in[2]), 0, "orphan del of the head");
	t_ok(last_orphan() == ino[0] && dtime_of(ino[2]) == 0, "orphans: a alone");
	t_is_int(ino_orphan_del(w.fs, &t, &in[0]), 0, "orphan del of the last");
	t_ok(last_orphan() == 0 && dtime_of(ino[0]) == 0, "orphans: empty");
	wclose("orphans");
	fsck_clean("orphans");

	/* A truncate cut short (a) and a file unlinked while open (c), as a
	 * crash leaves them; processing at start finishes both. */
	snprintf(cmd, sizeof(cmd), "unlink /%s", names[2]);
	dbg(cmd);
	if (!wopen())
		goto out;
	ino_inode_read(w.fs, ino[0], &in[0]);
	in[0].size = 3 * cfg->bs;
	ino_orphan_add(w.fs, &t, &in[0]);
	ino_inode_read(w.fs, ino[2], &in[2]);
	in[2].links = 0;
	ino_orphan_add(w.fs, &t, &in[2]);
	wclose("orphans left");
	if (!wopen())
		goto out;
	t_is_int(ino_orphans_process(w.fs, o_start, o_stop, &w), 2, "two orphans processed");
	t_is_int(last_orphan(), 0, "orphans: list empty");
	ino_inode_read(w.fs, ino[0], &in[0]);
	t_is_int(in[0].blocks512, 3 * (cfg->bs / 512), "orphans: the truncate finished");
	t_is_int(ino_inode_read(w.fs, ino[2], &in[2]), -ESTALE, "orphans: the unlinked file freed");
	wclose("orphans processed");
	fsck_clean("orphans processed");
	cmp_debugfs(names[0], src, 3 * cfg->bs, "orphans: a's first blocks kept");
	if (!wopen())
		goto out;
	cm_set_le32(&((struct ext3_super_block *)(w.mem + 1024))->s_last_orphan, 5);
	t_stderr_begin();
	t_is_int(ino_orphans_process(w.fs, o_start, o_stop, &w), -EUCLEAN,
		 "a reserved inode on the list is -EUCLEAN");
	t_is_int(t_stderr_end(why, sizeof(why)), 1, "one warning: %s", why);
	cm_set_le32(&((struct ext3_super_block *)(w.mem + 1024))->s_last_orphan, 0);
	wclose("orphans bad");
out:
	free(src);
}

/* A new inode of mode made by the library and linked by debugfs as name. */
static bool new_inode(const char *name, uint16_t mode, uint32_t uid, ino_inode *in)
{
	uint32_t ino = 0;

	if (!wopen())
		return false;
	t_is_int(ino_txn_alloc_inode(&t, EXT3_ROOT_INO, mode, &ino), 0, "%s: inode allocated", name);
	return t_is_int(ino_inode_new(w.fs, &t, ino, mode, uid, uid + 1, in), 0, "%s: set up", name);
}

static void link_as(const ino_inode *in, const char *name)
{
	char cmd[64];

	wclose(name);
	snprintf(cmd, sizeof(cmd), "ln <%u> /%s", in->ino, name);
	t_is_int(dbg(cmd), 0, "%s linked by debugfs", name);
}

static void t_symlinks(void)
{
	size_t lens[4] = { 10, 59, 60, cfg->bs - 1 }, i;
	char target[4096], name[16], got[4096];
	ino_inode in;

	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "sl%zu", lens[i]);
		memset(target, 'a' + (int)i, lens[i]);
		if (!new_inode(name, EXT3_S_IFLNK | 0777, 0, &in))
			return;
		t_is_int(ino_symlink_store(w.fs, &t, &in, target, lens[i]), 0, "%s stored", name);
		t_is_int(in.blocks512, lens[i] < 60 ? 0 : cfg->bs / 512, "%s: %s", name,
			 lens[i] < 60 ? "fast" : "slow");
		in.links = 1;
		t_is_int(ino_inode_write(w.fs, &t, &in), 0, "%s written", name);
		link_as(&in, name);
		if (!wopen())
			return;
		ino_inode_read(w.fs, lookup(name), &in);
		t_ok(ino_readlink(w.fs, &in, got, sizeof(got)) == (ssize_t)lens[i] &&
			     memcmp(got, target, lens[i]) == 0, "%s reads back", name);
		wclose(name);
	}
	if (!wopen())
		return;
	t_is_int(ino_symlink_store(w.fs, &t, &in, target, cfg->bs), -ENAMETOOLONG,
		 "a target of a block is too long");
	wclose("symlinks");
	fsck_clean("symlinks");
}

static void t_new_file(void)
{
	uint8_t src[3000];
	uint32_t uid = 70000;
	ino_inode in, back;
	char *out;

	fill(src, sizeof(src), 8);
	if (!new_inode("nf", EXT3_S_IFREG | 0640, uid, &in))
		return;
	in.links = 1;
	wr(&in, NULL, src, sizeof(src), 0);
	t_is_int(in.extra_isize, cfg->isize > 128 ? 32 : 0, "nf: i_extra_isize");
	link_as(&in, "nf");
	if (!wopen())
		return;
	t_is_int(ino_inode_read(w.fs, in.ino, &back), 0, "nf read");
	t_ok(back.uid == uid && back.gid == uid + 1 && back.mode == in.mode &&
		     back.generation == in.generation, "nf: owner, mode, generation");
	t_ok(back.ctime == in.ctime && back.ctime_ns == in.ctime_ns &&
		     back.mtime_ns == in.mtime_ns && back.atime_ns == in.atime_ns,
	     "nf: times (ns %u)", back.ctime_ns);
	if (cfg->isize == 128)
		t_ok(back.ctime_ns == 0 && back.extra_isize == 0, "nf: no nanoseconds");
	wclose("nf read");
	cmp_debugfs("nf", src, sizeof(src), "nf");
	out = t_sh_out("debugfs -R 'stat /nf' '%s' 2>/dev/null | grep -c 'User: *70000 *Group: *70001'", img);
	t_ok(out && atoi(out) == 1, "nf: debugfs sees the 32-bit owner");
	free(out);
	fsck_clean("nf");
}

static void t_enospc(void)
{
	size_t len = 12 << 20;
	uint8_t *src = malloc(len);
	ssize_t n;
	ino_inode in;

	if (!src || mkimg("8M") || !new_file("big", &in)) {
		free(src);
		return;
	}
	fill(src, len, 9);
	n = ino_file_write(w.fs, &t, &in, src, len, 0);
	t_ok(n > 0 && n < (ssize_t)len && in.size == (uint64_t)n, "a write past the free space is "
	     "short (%zd bytes)", n);
	t_is_int(ino_file_write(w.fs, &t, &in, src, 4096, n), -ENOSPC, "then -ENOSPC");
	wclose("enospc");
	fsck_clean("enospc");
	cmp_debugfs("big", src, n, "enospc");
	if (wopen() && ino_inode_read(w.fs, lookup("big"), &in) == 0) {
		t_is_int(ino_truncate(w.fs, &t, &in, 0), 0, "truncate the full file");
		wr(&in, NULL, src, 1 << 20, 0);
		wclose("enospc again");
		fsck_clean("after enospc");
	}
	free(src);
}

static void run_cfg(const struct cfg *c)
{
	cfg = c;
	apb = c->bs / 4;
	snprintf(img, sizeof(img), "%s/img-%u-%u", dir, c->bs, c->isize);
	t_diag("blocks of %u, inodes of %u bytes", c->bs, c->isize);
	if (!t_is_int(mkimg("64M"), 0, "mke2fs"))
		return;
	t_small();
	t_sparse();
	t_ind();
	t_deep();
	t_truncate();
	t_delete();
	t_orphans();
	t_symlinks();
	t_new_file();
	if (c->bs == 1024)
		t_enospc();
}

int main(void)
{
	char tmpl[] = "/tmp/t-ext3fs-write.XXXXXX";
	size_t i;

	if (!t_have_e2fsprogs())
		t_skip_all("mke2fs, e2fsck or debugfs not found");
	if (!mkdtemp(tmpl))
		t_skip_all("mkdtemp: %s", strerror(errno));
	snprintf(dir, sizeof(dir), "%s", tmpl);
	for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++)
		run_cfg(&cfgs[i]);
	if (!getenv("T_KEEP"))
		t_sh("rm -rf '%s'", dir);
	else
		t_diag("kept %s", dir);
	return t_done();
}
