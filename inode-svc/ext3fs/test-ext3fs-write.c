/*
 * test-ext3fs-write.c - libext3fs's write side (inode_w, bmap_w, file_w,
 * truncate, orphan, symlink_w) over t_wtxn, on fresh `mke2fs -t ext3`
 * images with 1 KiB and 4 KiB blocks and 128- and 256-byte inodes.  Files
 * are made with debugfs (or with ino_inode_new and linked by debugfs ln),
 * written, truncated, deleted (and refused a truncate and a delete of a
 * map whose indirect block points at itself, before any change), put on
 * and taken off the orphan list; each
 * scenario is read back through the read side and debugfs and ends with
 * `e2fsck -fn`, which must find nothing to fix; as root, the kernel mounts
 * the results (and an orphan list the library left) and agrees.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t_image.h"
#include "t_wfile.h"
#include "tap.h"

static const struct cfg {
	uint32_t bs, isize;
} cfgs[] = { { 1024, 128 }, { 1024, 256 }, { 4096, 128 }, { 4096, 256 } };

static void t_small(void)
{
	uint8_t model[16384] = { 0 }, src[8192];
	ino_inode in;

	if (!t_new_named("small", &in))
		return;
	t_fill(src, sizeof(src), 1);
	t_wr(&in, model, src, 100, 0);
	t_wr(&in, model, src + 100, 5000, 100);
	t_wr(&in, model, src + 7, 300, 50);
	t_is_int(in.size, 5100, "small: size");
	t_is_int(in.blocks512, (5100 + wf.bs - 1) / wf.bs * (wf.bs / 512), "small: i_blocks");
	t_is_int(ino_file_write(wf.w.fs, &wf.t, &in, src, 0, 9), 0,
		 "an empty write writes nothing");
	t_cmp_read(&in, model, in.size, "small");
	t_wclose("small");
	t_fsck_clean("small");
	t_cmp_debugfs("small", model, 5100, "small");
}

static void t_sparse(void)
{
	uint64_t off = 3 * wf.bs + 7, size = off + 10;
	uint8_t *model = calloc(1, size), src[64];
	ino_inode in;

	t_fill(src, sizeof(src), 2);
	if (model && t_new_named("sparse", &in)) {
		t_wr(&in, model, src, 10, off);
		t_wr(&in, model, src + 10, 20, 0);
		t_is_int(in.size, size, "sparse: size");
		t_is_int(in.blocks512, 2 * (wf.bs / 512), "sparse: two blocks, holes between");
		t_cmp_read(&in, model, size, "sparse");
		t_wclose("sparse");
		t_fsck_clean("sparse");
		t_cmp_debugfs("sparse", model, size, "sparse");
	}
	free(model);
}

static void t_ind(void)
{
	uint64_t size = 20 * wf.bs + 100, p11 = 0, p12 = 0;
	uint8_t *model = malloc(size);
	ino_inode in;

	if (model && t_new_named("ind", &in)) {
		t_fill(model, size, 3);
		t_wr(&in, NULL, model, size, 0);
		t_ok(wf.t.dirtied <= ino_cred_write(wf.w.fs, 0, size),
		     "ind: %ld blocks changed, within the %d credits", wf.t.dirtied,
		     ino_cred_write(wf.w.fs, 0, size));
		t_is_int(in.blocks512, 22 * (wf.bs / 512), "ind: 21 data blocks and the IND");
		ino_bmap(wf.w.fs, &in, 11, &p11);
		ino_bmap(wf.w.fs, &in, 12, &p12);
		t_is_int(p12, p11 + 2, "ind: the IND sits between blocks 11 and 12 (goal)");
		t_is_int(in.block[EXT3_IND_BLOCK], p11 + 1, "ind: IND right after block 11");
		t_cmp_read(&in, model, size, "ind");
		t_wclose("ind");
		t_fsck_clean("ind");
		t_cmp_debugfs("ind", model, size, "ind");
	}
	free(model);
}

/* /ind's IND block pointing at itself in every slot: truncate and delete
 * refuse with EUCLEAN before they change anything (nothing freed, size and
 * blocks kept, the orphan list empty); with the block put back, e2fsck
 * finds the image as it was. */
static void t_selfptr(void)
{
	struct ext3_super_block *sb;
	uint32_t ino, ind = 0, free0;
	uint8_t save[4096];
	cm_le32_t *p;
	ino_inode in, del;

	if (!t_wopen())
		return;
	sb = (struct ext3_super_block *)(wf.w.mem + 1024);
	ino = t_lookup("ind");
	if (ino && ino_inode_read(wf.w.fs, ino, &in) == 0)
		ind = in.block[EXT3_IND_BLOCK];
	if (!t_ok(ind != 0, "selfptr: /ind has an IND block")) {
		t_wclose("selfptr");
		return;
	}
	p = (cm_le32_t *)(wf.w.mem + (uint64_t)ind * wf.bs);
	memcpy(save, p, wf.bs);
	for (uint32_t i = 0; i < wf.bs / 4; i++)
		cm_set_le32(&p[i], ind);
	free0 = cm_le32(sb->s_free_blocks_count);
	t_is_int(ino_truncate(wf.w.fs, &wf.t, &in, 0), -EUCLEAN, "selfptr: truncate refuses");
	del = in;
	del.links = 0;
	t_is_int(ino_inode_delete(wf.w.fs, &wf.t, &del), -EUCLEAN, "selfptr: delete refuses");
	t_ok(ino_inode_read(wf.w.fs, ino, &in) == 0 && in.size == 20 * wf.bs + 100 &&
		     in.blocks512 == 22 * (wf.bs / 512), "selfptr: size and blocks kept");
	t_is_int(cm_le32(sb->s_free_blocks_count), free0, "selfptr: nothing freed");
	t_is_int(cm_le32(sb->s_last_orphan), 0, "selfptr: the orphan list is empty");
	memcpy(p, save, wf.bs);
	t_wclose("selfptr");
	t_fsck_clean("selfptr: the IND put back, the image is as it was");
}

/* A byte run in the DIND and one in the TIND range: sparse, read back at
 * those offsets, mapped as debugfs maps them. */
static void t_deep(void)
{
	uint64_t lb[2] = { 12 + wf.apb + 3, 12 + wf.apb + wf.apb * wf.apb + 5 }, p[2] = { 0, 0 };
	uint8_t src[100], got[100];
	char cmd[64];
	ino_inode in;
	int i;

	t_fill(src, sizeof(src), 4);
	if (!t_new_named("deep", &in))
		return;
	for (i = 0; i < 2; i++) {
		wf.t.dirtied = 0;
		t_wr(&in, NULL, src, sizeof(src), lb[i] * wf.bs + 11);
		t_ok(wf.t.dirtied + 2 <= ino_cred_write(wf.w.fs, lb[i] * wf.bs + 11, sizeof(src)),
		     "deep: %ld blocks changed and a bitmap and descriptor, within the credits",
		     wf.t.dirtied);
	}
	t_is_int(in.size, lb[1] * wf.bs + 111, "deep: size past the TIND start");
	t_is_int(in.blocks512, 7 * (wf.bs / 512), "deep: 2 data, DIND+IND, TIND+DIND+IND");
	t_is_int(ino_file_write(wf.w.fs, &wf.t, &in, src, 1, 1ull << 44), -EFBIG,
		 "a write past the largest file is -EFBIG");
	for (i = 0; i < 2; i++) {
		memset(got, 0, sizeof(got));
		t_ok(ino_file_read(wf.w.fs, &in, got, 100, lb[i] * wf.bs + 11) == 100 &&
			     memcmp(got, src, 100) == 0, "deep: run %d reads back", i);
		ino_bmap(wf.w.fs, &in, lb[i], &p[i]);
	}
	t_wclose("deep");
	t_fsck_clean("deep");
	for (i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "bmap /deep %llu", (unsigned long long)lb[i]);
		t_is_int(t_dbg_num(cmd), (int64_t)p[i], "deep: debugfs maps block %llu alike",
			 (unsigned long long)lb[i]);
	}
	if (!t_wopen() || ino_inode_read(wf.w.fs, t_lookup("deep"), &in))
		return;
	t_is_int(ino_truncate(wf.w.fs, &wf.t, &in, (lb[1] - 2) * wf.bs), 0,
		 "deep: truncate inside the TIND range, before its block");
	t_is_int(in.blocks512, 3 * (wf.bs / 512), "deep: the emptied TIND branch freed");
	t_is_int(in.block[EXT3_TIND_BLOCK], 0, "deep: no TIND left");
	t_is_int(ino_truncate(wf.w.fs, &wf.t, &in, lb[0] * wf.bs + 50), 0,
		 "deep: truncate inside the DIND data block");
	t_is_int(in.blocks512, 3 * (wf.bs / 512), "deep: the DIND branch kept");
	t_is_int(ino_truncate(wf.w.fs, &wf.t, &in, lb[0] * wf.bs), 0, "deep: truncate before it");
	t_ok(in.blocks512 == 0 && in.block[EXT3_DIND_BLOCK] == 0, "deep: all freed");
	t_wclose("deep truncated");
	t_fsck_clean("deep truncated");
}

/* blocks512 of a contiguous file of n blocks: data and indirect blocks. */
static uint64_t blocks_for(uint64_t n)
{
	uint64_t meta = 0;

	if (n > 12)
		meta++;
	if (n > 12 + wf.apb)
		meta += 1 + (n - 12 - wf.apb + wf.apb - 1) / wf.apb;
	return (n + meta) * (wf.bs / 512);
}

static void t_truncate(void)
{
	uint64_t n = 12 + wf.apb + 40, size = n * wf.bs, cut;
	uint8_t *model = malloc(size + 4 * wf.bs);
	ino_inode in;

	if (!model || !t_new_named("trunc", &in)) {
		free(model);
		return;
	}
	t_fill(model, size, 5);
	t_wr(&in, NULL, model, size, 0);
	t_is_int(in.blocks512, blocks_for(n), "trunc: into the DIND");
	cut = (12 + wf.apb / 2) * wf.bs + 17;
	wf.t.dirtied = 0;
	wf.t.credits_left = 1 << 20;
	t_is_int(ino_truncate(wf.w.fs, &wf.t, &in, cut), 0, "truncate to mid-block inside the IND");
	t_ok(wf.t.dirtied <= INO_CRED_TRUNCATE + (1 << 20) - wf.t.credits_left,
	     "trunc: %ld blocks changed, within the credits asked for (%d)", wf.t.dirtied,
	     INO_CRED_TRUNCATE + (1 << 20) - wf.t.credits_left);
	wf.t.credits_left = -1;
	t_is_int(in.blocks512, blocks_for(12 + wf.apb / 2 + 1), "trunc: DIND freed, IND cut");
	memset(model + cut, 0, size + 4 * wf.bs - cut);
	t_is_int(ino_truncate(wf.w.fs, &wf.t, &in, cut + 3 * wf.bs), 0, "grow by three blocks");
	t_is_int(in.blocks512, blocks_for(12 + wf.apb / 2 + 1), "trunc: growing allocates nothing");
	t_cmp_read(&in, model, in.size, "trunc: the old tail reads as zeros");
	t_wclose("trunc grown");
	t_fsck_clean("trunc grown");
	t_cmp_debugfs("trunc", model, cut + 3 * wf.bs, "trunc grown");
	if (!t_wopen() || ino_inode_read(wf.w.fs, t_lookup("trunc"), &in))
		goto out;
	t_is_int(ino_truncate(wf.w.fs, &wf.t, &in, 5 * wf.bs + 3), 0,
		 "truncate into the direct blocks");
	t_is_int(in.blocks512, 6 * (wf.bs / 512), "trunc: six blocks left");
	t_cmp_read(&in, model, in.size, "trunc: direct");
	t_is_int(ino_truncate(wf.w.fs, &wf.t, &in, 0), 0, "truncate to 0");
	t_ok(in.size == 0 && in.blocks512 == 0, "trunc: empty");
	t_wclose("trunc to 0");
	t_fsck_clean("trunc to 0");
	if (!t_wopen() || ino_inode_read(wf.w.fs, t_lookup("trunc"), &in))
		goto out;
	t_wr(&in, NULL, model, size, 0);
	wf.t.credits_left = 0;
	t_is_int(ino_truncate(wf.w.fs, &wf.t, &in, 7), 0, "truncate restarting at every step");
	t_ok(wf.t.restarts > 1, "trunc: %ld restarts", wf.t.restarts);
	t_ok(in.size == 7 && in.blocks512 == wf.bs / 512, "trunc: one block left");
	t_is_int(cm_le32(((struct ext3_super_block *)(wf.w.mem + 1024))->s_last_orphan), 0,
		 "trunc: off the orphan list again");
	t_wclose("trunc restarting");
	t_fsck_clean("trunc restarting");
out:
	free(model);
}

static void t_delete(void)
{
	uint64_t size = (12 + wf.apb + 5) * wf.bs;
	uint8_t *src = malloc(size);
	uint32_t free0, ino;
	ino_inode in;
	char cmd[128];

	if (!src || !t_new_named("del", &in)) {
		free(src);
		return;
	}
	free0 = cm_le32(((struct ext3_super_block *)(wf.w.mem + 1024))->s_free_blocks_count);
	t_fill(src, size, 6);
	t_wr(&in, NULL, src, size, 0);
	ino = in.ino;
	t_wclose("del written");
	free(src);
	t_sh("head -c 600 /dev/zero | tr '\\0' x >'%s/eav'", wf.dir);
	snprintf(cmd, sizeof(cmd), "ea_set -f %s/eav /del user.big", wf.dir);
	t_is_int(t_dbg(cmd), 0, "del: debugfs gives it an xattr block");
	t_dbg("unlink /del");
	if (!t_wopen() || ino_inode_read(wf.w.fs, ino, &in))
		return;
	t_ok(in.file_acl != 0, "del: it has one (%u)", in.file_acl);
	in.links = 0;
	t_is_int(ino_inode_delete(wf.w.fs, &wf.t, &in), 0, "delete a file into the DIND");
	t_is_int(cm_le32(((struct ext3_super_block *)(wf.w.mem + 1024))->s_free_blocks_count),
		 free0, "del: every block back, the xattr block too");
	t_is_int(ino_inode_read(wf.w.fs, ino, &in), -ESTALE, "del: the inode is gone");
	t_wclose("del");
	t_fsck_clean("del");
}

static void t_orphans(void)
{
	size_t len = 8 * wf.bs;
	uint8_t *src = malloc(len);
	const char *names[3] = { "oa", "ob", "oc" };
	uint32_t ino[3];
	ino_inode in[3];
	char cmd[64], why[256];
	int i;

	if (!src)
		return;
	t_fill(src, len, 7);
	for (i = 0; i < 3; i++) {
		if (!t_new_named(names[i], &in[i]))
			goto out;
		t_wr(&in[i], NULL, src, len, 0);
		ino[i] = in[i].ino;
		t_wclose(names[i]);
	}
	if (!t_wopen())
		goto out;
	for (i = 0; i < 3; i++)
		ino_inode_read(wf.w.fs, ino[i], &in[i]);
	for (i = 0; i < 3; i++)
		t_is_int(ino_orphan_add(wf.w.fs, &wf.t, &in[i]), 0, "orphan add %s", names[i]);
	t_is_int(ino_orphan_add(wf.w.fs, &wf.t, &in[1]), 0, "adding again is a no-op");
	t_ok(t_last_orphan() == ino[2] && t_dtime_of(ino[2]) == ino[1] &&
		     t_dtime_of(ino[1]) == ino[0] &&
		     t_dtime_of(ino[0]) == 0, "orphans: chained c -> b -> a through i_dtime");
	in[1].dtime = 0;
	ino_inode_write(wf.w.fs, &wf.t, &in[1]);
	t_is_int(t_dtime_of(ino[1]), ino[0], "orphans: a stale copy keeps the link");
	t_is_int(ino_orphan_del(wf.w.fs, &wf.t, &in[1]), 0, "orphan del from the middle");
	t_ok(t_last_orphan() == ino[2] && t_dtime_of(ino[2]) == ino[0], "orphans: c -> a");
	t_is_int(ino_orphan_del(wf.w.fs, &wf.t, &in[1]), 0, "deleting again is a no-op");
	t_is_int(ino_orphan_del(wf.w.fs, &wf.t, &in[2]), 0, "orphan del of the head");
	t_ok(t_last_orphan() == ino[0] && t_dtime_of(ino[2]) == 0, "orphans: a alone");
	t_is_int(ino_orphan_del(wf.w.fs, &wf.t, &in[0]), 0, "orphan del of the last");
	t_ok(t_last_orphan() == 0 && t_dtime_of(ino[0]) == 0, "orphans: empty");
	t_wclose("orphans");
	t_fsck_clean("orphans");

	/* A truncate cut short (a) and a file unlinked while open (c), as a
	 * crash leaves them; processing at start finishes both. */
	snprintf(cmd, sizeof(cmd), "unlink /%s", names[2]);
	t_dbg(cmd);
	if (!t_wopen())
		goto out;
	ino_inode_read(wf.w.fs, ino[0], &in[0]);
	in[0].size = 3 * wf.bs;
	ino_orphan_add(wf.w.fs, &wf.t, &in[0]);
	ino_inode_read(wf.w.fs, ino[2], &in[2]);
	in[2].links = 0;
	ino_orphan_add(wf.w.fs, &wf.t, &in[2]);
	t_wclose("orphans left");
	if (wf.kernel_ok) {
		t_sh("cp '%s' '%s.k'", wf.img, wf.img);
		t_is_int(t_kernel_run(wf.img, "rw", "true"), 0,
			 "the kernel mounts the orphan list");
		t_is_int(t_sh("e2fsck -fn '%s' >/dev/null 2>&1", wf.img), 0,
			 "orphans: the kernel's cleanup leaves it clean");
		snprintf(cmd, sizeof(cmd), "stat /%s", names[0]);
		t_is_int(t_sh("debugfs -R '%s' '%s' 2>/dev/null | grep -q 'Blockcount: %u$'", cmd,
			      wf.img, 3 * (wf.bs / 512)), 0, "orphans: the kernel truncated a too");
		t_sh("mv '%s.k' '%s'", wf.img, wf.img);
	} else {
		t_skip("not root or no loop ext3 mount", "the kernel processes the orphan list");
	}
	if (!t_wopen())
		goto out;
	t_is_int(ino_orphans_process(wf.w.fs, t_orphan_start, t_orphan_stop, &wf.w), 2,
		 "two orphans processed");
	t_is_int(t_last_orphan(), 0, "orphans: list empty");
	ino_inode_read(wf.w.fs, ino[0], &in[0]);
	t_is_int(in[0].blocks512, 3 * (wf.bs / 512), "orphans: the truncate finished");
	t_is_int(ino_inode_read(wf.w.fs, ino[2], &in[2]), -ESTALE,
		 "orphans: the unlinked file freed");
	t_wclose("orphans processed");
	t_fsck_clean("orphans processed");
	t_cmp_debugfs(names[0], src, 3 * wf.bs, "orphans: a's first blocks kept");
	if (!t_wopen())
		goto out;
	cm_set_le32(&((struct ext3_super_block *)(wf.w.mem + 1024))->s_last_orphan, 5);
	t_stderr_begin();
	t_is_int(ino_orphans_process(wf.w.fs, t_orphan_start, t_orphan_stop, &wf.w), -EUCLEAN,
		 "a reserved inode on the list is -EUCLEAN");
	t_is_int(t_stderr_end(why, sizeof(why)), 1, "one warning: %s", why);
	cm_set_le32(&((struct ext3_super_block *)(wf.w.mem + 1024))->s_last_orphan, 0);
	t_wclose("orphans bad");
out:
	free(src);
}

/* A new inode of mode made by the library and linked by debugfs as name. */
static void t_symlinks(void)
{
	size_t lens[4] = { 10, 59, 60, wf.bs - 1 }, i;
	char target[4096], name[16], got[4096];
	ino_inode in;

	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "sl%zu", lens[i]);
		memset(target, 'a' + (int)i, lens[i]);
		if (!t_new_inode(name, EXT3_S_IFLNK | 0777, 0, &in))
			return;
		t_is_int(ino_symlink_store(wf.w.fs, &wf.t, &in, target, lens[i]), 0,
			 "%s stored", name);
		t_is_int(in.blocks512, lens[i] < 60 ? 0 : wf.bs / 512, "%s: %s", name,
			 lens[i] < 60 ? "fast" : "slow");
		in.links = 1;
		t_is_int(ino_inode_write(wf.w.fs, &wf.t, &in), 0, "%s written", name);
		t_link_as(&in, name);
		if (!t_wopen())
			return;
		ino_inode_read(wf.w.fs, t_lookup(name), &in);
		t_ok(ino_readlink(wf.w.fs, &in, got, sizeof(got)) == (ssize_t)lens[i] &&
			     memcmp(got, target, lens[i]) == 0, "%s reads back", name);
		t_wclose(name);
	}
	if (!t_wopen())
		return;
	t_is_int(ino_symlink_store(wf.w.fs, &wf.t, &in, target, wf.bs), -ENAMETOOLONG,
		 "a target of a block is too long");
	t_wclose("symlinks");
	t_fsck_clean("symlinks");
}

static void t_new_file(void)
{
	uint8_t src[3000];
	uint32_t uid = 70000;
	ino_inode in, back;
	char *out;

	t_fill(src, sizeof(src), 8);
	if (!t_new_inode("nf", EXT3_S_IFREG | 0640, uid, &in))
		return;
	in.links = 1;
	t_wr(&in, NULL, src, sizeof(src), 0);
	t_is_int(in.extra_isize, wf.isize > 128 ? 32 : 0, "nf: i_extra_isize");
	t_link_as(&in, "nf");
	if (!t_wopen())
		return;
	t_is_int(ino_inode_read(wf.w.fs, in.ino, &back), 0, "nf read");
	t_ok(back.uid == uid && back.gid == uid + 1 && back.mode == in.mode &&
		     back.generation == in.generation, "nf: owner, mode, generation");
	t_ok(back.ctime == in.ctime && back.ctime_ns == in.ctime_ns &&
		     back.mtime_ns == in.mtime_ns && back.atime_ns == in.atime_ns,
	     "nf: times (ns %u)", back.ctime_ns);
	if (wf.isize == 128)
		t_ok(back.ctime_ns == 0 && back.extra_isize == 0, "nf: no nanoseconds");
	t_wclose("nf read");
	t_cmp_debugfs("nf", src, sizeof(src), "nf");
	out = t_sh_out("debugfs -R 'stat /nf' '%s' 2>/dev/null |"
		       " grep -c 'User: *70000 *Group: *70001'", wf.img);
	t_ok(out && atoi(out) == 1, "nf: debugfs sees the 32-bit owner");
	free(out);
	t_fsck_clean("nf");
}

static void t_enospc(void)
{
	size_t len = 12 << 20;
	uint8_t *src = malloc(len);
	ssize_t n;
	ino_inode in;

	if (!src || t_mkimg("8M") || !t_new_named("big", &in)) {
		free(src);
		return;
	}
	t_fill(src, len, 9);
	n = ino_file_write(wf.w.fs, &wf.t, &in, src, len, 0);
	t_ok(n > 0 && n < (ssize_t)len && in.size == (uint64_t)n, "a write past the free space is "
	     "short (%zd bytes)", n);
	t_is_int(ino_file_write(wf.w.fs, &wf.t, &in, src, 4096, n), -ENOSPC, "then -ENOSPC");
	t_wclose("enospc");
	t_fsck_clean("enospc");
	t_cmp_debugfs("big", src, n, "enospc");
	if (t_wopen() && ino_inode_read(wf.w.fs, t_lookup("big"), &in) == 0) {
		t_is_int(ino_truncate(wf.w.fs, &wf.t, &in, 0), 0, "truncate the full file");
		t_wr(&in, NULL, src, 1 << 20, 0);
		t_wclose("enospc again");
		t_fsck_clean("after enospc");
	}
	free(src);
}

/* The first file over 2 GiB on a fs without large_file sets it. */
static void t_large_file(void)
{
	uint8_t src[10] = "0123456789";
	ino_inode in;

	if (t_mkimg("16M") || t_dbg("feature ^large_file") || !t_new_named("lf", &in))
		return;
	t_wr(&in, NULL, src, sizeof(src), 3ull << 30);
	t_wclose("large file");
	t_is_int(t_sh("dumpe2fs -h '%s' 2>/dev/null | grep -q 'features:.*large_file'", wf.img), 0,
		 "a file past 2 GiB sets large_file");
	t_fsck_clean("large file");
}

/* Times before 1970 and past 2038 in the kernel's encoding: signed
 * seconds, epochs and nanoseconds in the *_extra fields of large inodes,
 * the signed 32-bit range on 128-byte ones; the kernel reads them back. */
static const int64_t t_times_set[] = {
	-315619200,                     /* 1960-01-01 */
	INT64_C(2147483648),            /* 2038-01-19, 2^31 */
	INT64_C(4294967296),            /* 2106-02-07, 2^32 */
	INT64_C(15032385535),           /* 2446, the last second epochs reach */
	INT64_C(-2147483648),           /* 1901, the first */
};

static int64_t t_times_want(int64_t v)
{
	if (wf.isize > 128)
		return v;
	return v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v;
}

static void t_times(void)
{
	char name[16], sh[512];
	size_t n = sizeof(t_times_set) / sizeof(t_times_set[0]), i;
	size_t len = 0;
	ino_inode in;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "tm%zu", i);
		if (!t_new_named(name, &in))
			return;
		in.mtime = t_times_set[i];
		in.mtime_ns = wf.isize > 128 ? 123456789 : 0;
		in.atime = in.ctime = in.mtime;
		t_is_int(ino_inode_write(wf.w.fs, &wf.t, &in), 0, "%s written", name);
		t_wclose(name);
		if (!t_wopen())
			return;
		t_is_int(ino_inode_read(wf.w.fs, in.ino, &in), 0, "%s read", name);
		t_ok(in.mtime == t_times_want(t_times_set[i]) &&
			     in.atime == in.mtime && in.ctime == in.mtime &&
			     in.mtime_ns == (wf.isize > 128 ? 123456789u : 0),
		     "%s: %" PRId64 " reads back as %" PRId64 ".%09u", name, t_times_set[i],
		     (int64_t)in.mtime, in.mtime_ns);
		t_wclose(name);
		len += (size_t)snprintf(sh + len, sizeof(sh) - len,
					"[ \"$(stat -c %%X.%%Y.%%Z tm%zu)\" = "
					"%" PRId64 ".%" PRId64 ".%" PRId64 " ] && ",
					i, t_times_want(t_times_set[i]),
					t_times_want(t_times_set[i]), t_times_want(t_times_set[i]));
	}
	t_fsck_clean("times");
	if (!wf.kernel_ok) {
		t_skip("not root or no loop ext3 mount", "the kernel reads the same times");
		return;
	}
	snprintf(sh + len, sizeof(sh) - len, "true");
	t_is_int(t_kernel_run(wf.img, "ro", sh), 0, "the kernel reads the same times");
}

/* The kernel mounts the image read-only and reads what debugfs reads. */
static void t_kernel_reads(void)
{
	char sh[1024];

	if (!wf.kernel_ok) {
		t_skip("not root or no loop ext3 mount", "the kernel reads the image");
		return;
	}
	snprintf(sh, sizeof(sh),
		 "for f in small sparse ind trunc nf oa; do debugfs -R \"cat /$f\" '%s' "
		 "2>/dev/null | cmp -s - $f || exit 1; done; "
		 "[ \"$(readlink sl59)\" = \"$(printf %%059d 0 | tr 0 b)\" ] && "
		 "[ \"$(readlink sl%u)\" = \"$(printf %%0%ud 0 | tr 0 d)\" ]",
		 wf.img, wf.bs - 1, wf.bs - 1);
	t_is_int(t_kernel_run(wf.img, "ro", sh), 0,
		 "the kernel mounts what the library wrote and reads the same bytes");
}

static void run_cfg(const struct cfg *c)
{
	wf.bs = c->bs;
	wf.isize = c->isize;
	wf.apb = c->bs / 4;
	snprintf(wf.img, sizeof(wf.img), "%s/img-%u-%u", wf.dir, c->bs, c->isize);
	t_diag("blocks of %u, inodes of %u bytes", c->bs, c->isize);
	if (!t_is_int(t_mkimg("16M"), 0, "mke2fs"))
		return;
	t_small();
	t_sparse();
	t_ind();
	t_deep();
	t_truncate();
	t_delete();
	t_selfptr();
	t_orphans();
	t_symlinks();
	t_new_file();
	t_times();
	t_kernel_reads();
	if (c->bs == 1024)
		t_enospc();
	else
		t_large_file();
}

int main(void)
{
	char tmpl[] = "/tmp/t-ext3fs-write.XXXXXX";
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

