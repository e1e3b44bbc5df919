/*
 * test-ext3fs-xattr.c - extended attributes and ACLs (xattr.c, xattr_w.c,
 * acl.c) over t_wtxn, on `mke2fs -t ext3` images with 128- and 256-byte
 * inodes: attributes debugfs ea_set wrote are read back; attributes the
 * library sets, replaces and removes (in the inode, in a block, moving
 * between them) are read back by debugfs ea_get and ea_list; a block
 * shared by two inodes is copied on write and its count drops; deleting
 * inodes, and the orphan list at start, give their blocks back; ACLs go both ways between the VFS
 * and the disk format. Every scenario ends with `e2fsck -fn` clean; as root, the kernel's
 * getfattr/getfacl read what the library wrote.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t_image.h"
#include "t_wfile.h"
#include "tap.h"
#include "xattr.h"

static const struct cfg {
	uint32_t bs, isize;
} cfgs[] = {{1024, 128}, {4096, 256}, {1024, 256}};

static ssize_t get(const ino_inode *in, const char *full, void *buf, size_t len)
{
	const char *sfx;
	size_t sl;
	int idx, r = ino_xattr_name(full, strlen(full), &idx, &sfx, &sl);

	return r < 0 ? r : ino_xattr_get(wf.w.fs, in, idx, sfx, sl, buf, len);
}

static int set(ino_inode *in, const char *full, const void *v, size_t len, int flags)
{
	const char *sfx;
	size_t sl;
	int idx, r = ino_xattr_name(full, strlen(full), &idx, &sfx, &sl);

	return r < 0 ? r : ino_xattr_set(wf.w.fs, &wf.t, in, idx, sfx, sl, v, len, flags);
}

/* debugfs ea_get of /name's attribute is want (a string). */
static bool dbg_ea_is(const char *name, const char *attr, const char *want)
{
	char *out = t_sh_out("debugfs -R 'ea_get -f %s/out /%s %s' '%s' >/dev/null 2>&1; "
			     "cat %s/out; rm -f %s/out",
			     wf.dir, name, attr, wf.img, wf.dir, wf.dir);
	bool ok = out && t_is_str(out, want, "debugfs ea_get /%s %s", name, attr);

	free(out);
	return ok;
}

static void t_names(void)
{
	const char *sfx;
	size_t sl;
	int idx;

	t_is_int(ino_xattr_name("user.x", 6, &idx, &sfx, &sl), 0, "user.x parses");
	t_ok(idx == INO_XATTR_INDEX_USER && sl == 1 && *sfx == 'x', "user.x: index 1, suffix x");
	t_is_int(ino_xattr_name("system.posix_acl_default", 24, &idx, &sfx, &sl), 0,
		 "posix_acl_default parses");
	t_ok(idx == INO_XATTR_INDEX_ACL_DEFAULT && sl == 0, "default ACL: index 3, no suffix");
	t_is_int(ino_xattr_name("user.", 5, &idx, &sfx, &sl), -EINVAL, "user. alone: EINVAL");
	t_is_int(ino_xattr_name("os2.x", 5, &idx, &sfx, &sl), -EOPNOTSUPP, "os2.: EOPNOTSUPP");
	t_is_int(ino_xattr_name("system.foo", 10, &idx, &sfx, &sl), -EOPNOTSUPP,
		 "system.foo: EOPNOTSUPP");
	t_is_int(ino_xattr_name("", 0, &idx, &sfx, &sl), -ERANGE, "empty: ERANGE");
}

static void t_read_debugfs(void)
{
	char buf[1024], big[600];
	ino_inode in;
	ssize_t n;

	memset(big, 'x', sizeof(big));
	t_sh("head -c 600 /dev/zero | tr '\\0' x >'%s/big'", wf.dir);
	t_dbg("write /dev/null r");
	t_dbg("ea_set /r user.small hello");
	t_sh("debugfs -w -R 'ea_set -f %s/big /r user.big' '%s' >/dev/null 2>&1", wf.dir, wf.img);
	if (!t_wopen() || !t_is_int(ino_inode_read(wf.w.fs, t_lookup("r"), &in), 0, "r read"))
		return;
	n = get(&in, "user.small", buf, sizeof(buf));
	t_ok(n == 5 && memcmp(buf, "hello", 5) == 0, "debugfs's user.small reads back");
	t_is_int(get(&in, "user.small", NULL, 0), 5, "size query");
	t_is_int(get(&in, "user.small", buf, 3), -ERANGE, "short buffer: ERANGE");
	n = get(&in, "user.big", buf, sizeof(buf));
	t_ok(n == 600 && memcmp(buf, big, 600) == 0, "debugfs's user.big reads back");
	t_ok(in.file_acl != 0, "user.big is in a block");
	t_is_int(get(&in, "user.none", buf, sizeof(buf)), -ENODATA, "a missing one: ENODATA");
	n = ino_xattr_list(wf.w.fs, &in, false, buf, sizeof(buf));
	t_is_int(n, 20, "list: user.small and user.big");
	t_ok(n == 20 && memmem(buf, 20, "user.small", 11) && memmem(buf, 20, "user.big", 9),
	     "list names both");
	t_is_int(ino_xattr_list(wf.w.fs, &in, false, buf, 5), -ERANGE, "list: short buffer");
	t_wclose("read");
}

static void t_write(void)
{
	char v[2000], buf[2000];
	ino_inode in;
	uint32_t ino;

	t_fill((uint8_t *)v, sizeof(v), 9);
	for (size_t i = 0; i < sizeof(v); i++)
		v[i] = (char)('a' + (uint8_t)v[i] % 26);
	if (!t_new_named("w", &in))
		return;
	ino = in.ino;
	t_is_int(set(&in, "user.a", "1234", 4, 0), 0, "set user.a");
	t_is_int(in.file_acl != 0, wf.isize == 128, "user.a: in-inode on large inodes only");
	t_is_int(set(&in, "user.a", "x", 1, INO_XATTR_CREATE), -EEXIST, "CREATE of one: EEXIST");
	t_is_int(set(&in, "user.q", "x", 1, INO_XATTR_REPLACE), -ENODATA,
		 "REPLACE of none: ENODATA");
	t_is_int(set(&in, "user.b", v, 300, 0), 0, "set user.b (300 bytes)");
	t_ok(in.file_acl != 0, "user.b spills to a block");
	t_is_int(set(&in, "trusted.t", "tv", 2, 0), 0, "set trusted.t");
	t_is_int(set(&in, "security.s", "", 0, 0), 0, "set an empty security.s");
	t_is_int(set(&in, "user.a", v + 50, 500, INO_XATTR_REPLACE), 0, "replace user.a (500)");
	t_is_int(get(&in, "user.a", buf, sizeof(buf)), 500, "user.a is 500 bytes now");
	t_ok(memcmp(buf, v + 50, 500) == 0, "user.a's bytes");
	t_is_int(set(&in, "user.c", v, wf.bs, 0), -ENOSPC, "a block-sized value: ENOSPC");
	t_is_int(set(&in, "user.c", v, INO_XATTR_SIZE_MAX + 1, 0), -E2BIG, "past 64 KiB: E2BIG");
	t_is_int(set(&in, "user.zz", NULL, 0, 0), -ENODATA, "remove a missing one: ENODATA");
	t_is_int(set(&in, "user.b", NULL, 0, 0), 0, "remove user.b");
	t_is_int(get(&in, "user.b", buf, sizeof(buf)), -ENODATA, "user.b is gone");
	t_is_int(get(&in, "trusted.t", buf, sizeof(buf)), 2, "trusted.t still there");
	t_is_int(get(&in, "security.s", buf, sizeof(buf)), 0, "security.s empty");
	t_wclose("write");
	t_fsck_clean("write");
	v[500 + 50] = '\0';
	dbg_ea_is("w", "user.a", v + 50);
	dbg_ea_is("w", "trusted.t", "tv");
	if (!t_wopen() || ino_inode_read(wf.w.fs, ino, &in))
		return;
	t_is_int(set(&in, "user.a", "s", 1, 0), 0, "user.a shrinks");
	t_is_int(set(&in, "trusted.t", NULL, 0, 0), 0, "remove trusted.t");
	t_is_int(set(&in, "security.s", NULL, 0, 0), 0, "remove security.s");
	t_is_int(in.file_acl != 0, wf.isize == 128,
		 "the block goes once it empties (large inodes)");
	t_is_int(set(&in, "user.a", NULL, 0, 0), 0, "remove user.a");
	t_is_int(in.file_acl, 0, "no block left");
	t_is_int(in.blocks512, 0, "i_blocks back to 0");
	t_wclose("write 2");
	t_fsck_clean("emptied");
}

static void t_many(void)
{
	char name[32], val[64], buf[64];
	ino_inode in;
	int ok = 0, n = wf.bs == 1024 ? 20 : 60;

	if (!t_new_named("many", &in))
		return;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "user.k%03d", (i * 37) % n);
		snprintf(val, sizeof(val), "value-%d", (i * 37) % n);
		ok += set(&in, name, val, strlen(val), INO_XATTR_CREATE) == 0;
	}
	t_is_int(ok, n, "%d attributes set in scrambled order", n);
	ok = 0;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "user.k%03d", i);
		snprintf(val, sizeof(val), "value-%d", i);
		ok += get(&in, name, buf, sizeof(buf)) == (ssize_t)strlen(val) &&
		      memcmp(buf, val, strlen(val)) == 0;
	}
	t_is_int(ok, n, "each reads back");
	for (int i = 0; i < n; i += 3) {
		snprintf(name, sizeof(name), "user.k%03d", i);
		(void)set(&in, name, NULL, 0, 0);
	}
	t_wclose("many");
	t_fsck_clean("many (sorted block, hashes)");
	dbg_ea_is("many", "user.k001", "value-1");
}

static void t_shared(void)
{
	uint32_t blk, f1, f2, refs;
	char cmd[160], v[100], want[401];
	ino_inode a, b;
	uint8_t hdr[8];

	t_sh("head -c 400 /dev/zero | tr '\\0' y >'%s/v400'", wf.dir);
	t_dbg("write /dev/null s1");
	t_dbg("write /dev/null s2");
	t_sh("debugfs -w -R 'ea_set -f %s/v400 /s1 user.shared' '%s' >/dev/null 2>&1", wf.dir,
	     wf.img);
	if (!t_wopen())
		return;
	f1 = t_lookup("s1");
	f2 = t_lookup("s2");
	if (ino_inode_read(wf.w.fs, f1, &a) || ino_inode_read(wf.w.fs, f2, &b) || !a.file_acl) {
		t_ok(false, "s1 has a block");
		t_wclose("shared");
		return;
	}
	blk = a.file_acl;
	t_wclose("shared setup");
	/* s2 takes a reference to s1's block, as mke2fs -d or the kernel
	 * would share it. */
	snprintf(cmd, sizeof(cmd), "sif /s2 file_acl %u", blk);
	t_dbg(cmd);
	snprintf(cmd, sizeof(cmd), "sif /s2 blocks %u", wf.bs / 512);
	t_dbg(cmd);
	memcpy(hdr, "\x00\x00\x02\xea\x02\x00\x00\x00", 8);
	t_patch(wf.img, (uint64_t)blk * wf.bs, hdr, 8);
	t_fsck_clean("a block shared by two inodes");
	if (!t_wopen() || ino_inode_read(wf.w.fs, f2, &b))
		return;
	memset(v, 'z', sizeof(v));
	t_is_int(set(&b, "user.more", v, sizeof(v), 0), 0, "a 100-byte value on s2");
	t_ok(b.file_acl != blk && b.file_acl != 0, "s2 got a copy (%u, was %u)", b.file_acl, blk);
	refs = cm_le32(((cm_le32_t *)(wf.w.mem + (uint64_t)blk * wf.bs))[1]);
	t_is_int(refs, 1, "the shared block's count dropped to 1");
	t_wclose("shared cow");
	t_fsck_clean("copied on write");
	memset(want, 'y', 400);
	want[400] = '\0';
	dbg_ea_is("s2", "user.shared", want);
	if (!t_wopen() || ino_inode_read(wf.w.fs, f1, &a))
		return;
	a.links = 0;
	t_is_int(ino_inode_delete(wf.w.fs, &wf.t, &a), 0, "delete s1");
	t_wclose("s1 deleted");
	t_dbg("unlink /s1");
	t_fsck_clean("s1's block freed with it");
}

/* A file unlinked while open, with an attribute block, left on the orphan
 * list as a crash leaves it: processing at start frees the block too. */
static void t_orphan(void)
{
	char v[300];
	uint64_t free0;
	ino_inode in;
	uint32_t ino;

	memset(v, 'o', sizeof(v));
	if (!t_new_named("orph", &in))
		return;
	ino = in.ino;
	free0 = cm_le32(((struct ext3_super_block *)(wf.w.mem + 1024))->s_free_blocks_count);
	t_is_int(set(&in, "user.o", v, sizeof(v), 0), 0, "orph: an attribute block");
	in.links = 0;
	t_is_int(ino_orphan_add(wf.w.fs, &wf.t, &in), 0, "orph: on the orphan list");
	t_wclose("orph left");
	t_dbg("unlink /orph");
	if (!t_wopen())
		return;
	t_is_int(ino_orphans_process(wf.w.fs, t_orphan_start, t_orphan_stop, &wf.w), 1,
		 "orph: processed");
	t_is_int(cm_le32(((struct ext3_super_block *)(wf.w.mem + 1024))->s_free_blocks_count),
		 free0, "orph: its attribute block is free again");
	t_is_int(ino_inode_read(wf.w.fs, ino, &in), -ESTALE, "orph: the inode is gone");
	t_wclose("orph");
	t_fsck_clean("orphan with an attribute block");
}

static void t_acl(void)
{
	static const uint8_t vfs[] = {
	    2, 0,    0,	   0,	 1,    0,    6,	   0, 0xff, 0xff, 0xff, 0xff, 2,    0,	  4,
	    0, 0xe8, 3,	   0,	 0,    4,    0,	   4, 0,    0xff, 0xff, 0xff, 0xff, 0x10, 0,
	    6, 0,    0xff, 0xff, 0xff, 0xff, 0x20, 0, 0,    0,	  0xff, 0xff, 0xff, 0xff,
	};
	uint8_t disk[64], out[64];
	ino_acl a, b;
	ino_inode in;
	uint16_t mode = 0100777;

	t_is_int(ino_acl_from_xattr(vfs, sizeof(vfs), &a), 0, "VFS ACL parses");
	t_is_int(a.count, 5, "five entries");
	t_is_int(ino_acl_valid(&a), 0, "valid");
	t_is_int(ino_acl_to_disk(&a, disk), 4 + 4 + 8 + 4 + 4 + 4, "disk form: short entries");
	t_is_int(ino_acl_from_disk(disk, 28, &b), 0, "disk form parses");
	t_is_int(ino_acl_to_xattr(&b, out, sizeof(out)), sizeof(vfs), "back to VFS form");
	t_ok(memcmp(out, vfs, sizeof(vfs)) == 0, "round trip");
	t_is_int(ino_acl_equiv_mode(&a, &mode), 1, "a named user: not equivalent");
	t_is_int(mode, 0100660, "mode from the ACL: group bits from the mask");
	a.count = 4;
	a.e[1] = a.e[2];
	a.e[2] = a.e[3];
	a.e[3] = a.e[4];
	t_is_int(ino_acl_valid(&a), 0, "without the user, a mask is still valid");
	a.e[2] = a.e[3];
	a.count = 3;
	mode = 0100777;
	t_is_int(ino_acl_equiv_mode(&a, &mode), 0, "three entries: equivalent");
	t_is_int(mode, 0100640, "mode 640");
	a.e[0].perm = 9;
	t_is_int(ino_acl_valid(&a), -EINVAL, "a bad perm: EINVAL");
	t_is_int(ino_acl_from_xattr(vfs, 7, &a), -EINVAL, "a bad size: EINVAL");
	out[0] = 3;
	t_is_int(ino_acl_from_xattr(out, sizeof(vfs), &a), -EOPNOTSUPP, "version 3: EOPNOTSUPP");
	(void)ino_acl_from_xattr(vfs, sizeof(vfs), &a);
	mode = 0100666;
	t_is_int(ino_acl_create_masq(&a, &mode), 1, "create masq: needs the ACL");
	t_is_int(mode, 0100660, "create mode: 666 masked by user rw, mask rw, other 0");
	ino_acl_chmod(&a, 0750);
	t_ok(a.e[0].perm == 7 && a.e[3].perm == 5 && a.e[4].perm == 0, "chmod: owner, mask, other");
	if (!t_new_named("acl", &in))
		return;
	(void)ino_acl_from_xattr(vfs, sizeof(vfs), &a);
	t_is_int(ino_acl_set(wf.w.fs, &wf.t, &in, INO_XATTR_INDEX_ACL_ACCESS, &a), 0, "store it");
	t_is_int(ino_acl_get(wf.w.fs, &in, INO_XATTR_INDEX_ACL_ACCESS, &b), 0, "read it");
	t_is_int(b.count, 5, "five entries back");
	t_is_int(ino_acl_get(wf.w.fs, &in, INO_XATTR_INDEX_ACL_DEFAULT, &b), 0, "no default ACL");
	t_is_int(b.count, 0, "count 0");
	in.mode = 0100660;
	t_is_int(ino_inode_write(wf.w.fs, &wf.t, &in), 0, "mode 660");
	t_wclose("acl");
	t_fsck_clean("acl");
	if (wf.kernel_ok)
		t_is_int(t_kernel_run(wf.img, "ro",
				      "getfacl -n acl 2>/dev/null | grep -q '^user:1000:r--'"),
			 0, "the kernel's getfacl sees user:1000:r--");
}

static void run_cfg(const struct cfg *c)
{
	wf.bs = c->bs;
	wf.isize = c->isize;
	wf.apb = c->bs / 4;
	snprintf(wf.img, sizeof(wf.img), "%s/img-%u-%u", wf.dir, c->bs, c->isize);
	t_diag("blocks of %u, inodes of %u bytes", c->bs, c->isize);
	if (!t_is_int(t_mkimg("8M"), 0, "mke2fs"))
		return;
	t_read_debugfs();
	t_write();
	t_many();
	t_shared();
	t_orphan();
	t_acl();
	if (wf.kernel_ok)
		t_is_int(
		    t_kernel_run(wf.img, "ro",
				 "getfattr -n user.k001 --only-values many | grep -qx value-1"),
		    0, "the kernel's getfattr reads user.k001");
}

int main(void)
{
	char tmpl[] = "/tmp/t-ext3fs-xattr.XXXXXX";

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
	t_names();
	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++)
		run_cfg(&cfgs[i]);
	if (!getenv("T_KEEP"))
		t_sh("rm -rf '%s'", wf.dir);
	else
		t_diag("kept %s", wf.dir);
	return t_done();
}
