/*
 * t_wfile.c - helpers of test-ext3fs-write (see t_wfile.h): images made
 * and checked with e2fsprogs, opened over t_wtxn, files read back through
 * the read side and debugfs, the kernel's loop mount.
 */
#define _GNU_SOURCE
#include "t_wfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t_image.h"
#include "tap.h"

struct t_wf wf;

int t_mkimg(const char *size)
{
	return t_sh("mke2fs -q -F -t ext3 -b %u -I %u '%s' %s >/dev/null 2>&1", wf.bs,
		    wf.isize, wf.img, size);
}

bool t_fsck_clean(const char *what)
{
	int r = t_sh("e2fsck -fn '%s' >'%s/fsck.log' 2>&1", wf.img, wf.dir);

	if (r)
		t_sh("sed 's/^/# /' '%s/fsck.log' >&2", wf.dir);
	return t_is_int(r, 0, "%s: e2fsck -fn finds nothing to fix", what);
}

int t_dbg(const char *cmd)
{
	return t_sh("debugfs -w -R '%s' '%s' >/dev/null 2>&1", cmd, wf.img);
}

uint64_t t_dbg_num(const char *cmd)
{
	char *out = t_sh_out("debugfs -R '%s' '%s' 2>/dev/null", cmd, wf.img);
	uint64_t n = out ? strtoull(out, NULL, 10) : 0;

	free(out);
	return n;
}

/* Mounts path at the test dir's mnt (opts: ro or rw), runs sh there, unmounts. */
int t_kernel_run(const char *path, const char *opts, const char *sh)
{
	return t_sh("mkdir -p '%s/mnt' && mount -t ext3 -o loop,%s '%s' '%s/mnt' 2>/dev/null && "
		    "{ (cd '%s/mnt' && %s); r=$?; umount '%s/mnt'; exit $r; }",
		    wf.dir, opts, path, wf.dir, wf.dir, sh, wf.dir);
}

bool t_wopen(void)
{
	char why[200] = "";
	int r = t_wimg_open(&wf.w, wf.img, why, sizeof(why));

	t_wtxn_init(&wf.t, &wf.w);
	return t_is_int(r, 0, "image opens (%s)", why);
}

void t_wclose(const char *what)
{
	t_is_int(wf.w.held, 0, "%s: every block put", what);
	t_is_int(t_wimg_save(&wf.w), 0, "%s: image saved", what);
	t_wimg_close(&wf.w);
}

uint32_t t_lookup(const char *name)
{
	ino_inode root;
	uint32_t ino = 0;

	if (ino_inode_read(wf.w.fs, EXT3_ROOT_INO, &root) == 0)
		ino_dir_lookup(wf.w.fs, &root, name, strlen(name), &ino);
	return ino;
}

void t_fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 9)) % 251 + 1);
}

/* Reads in whole through the read side and compares with want. */
bool t_cmp_read(const ino_inode *in, const uint8_t *want, uint64_t size, const char *what)
{
	uint8_t *got = malloc(size + 1);
	ssize_t n = got ? ino_file_read(wf.w.fs, in, got, size + 1, 0) : -ENOMEM;
	bool ok = n == (ssize_t)size && memcmp(got, want, size) == 0;

	free(got);
	return t_ok(ok, "%s: read back (%zd of %llu bytes)", what, n, (unsigned long long)size);
}

/* debugfs cat of /name gives want. */
bool t_cmp_debugfs(const char *name, const uint8_t *want, uint64_t size, const char *what)
{
	char exp[128];
	FILE *f;

	snprintf(exp, sizeof(exp), "%s/expect", wf.dir);
	f = fopen(exp, "w");
	if (f) {
		fwrite(want, 1, size, f);
		fclose(f);
	}
	return t_is_int(t_sh("debugfs -R 'cat /%s' '%s' 2>/dev/null | cmp -s - '%s'", name, wf.img,
			     exp), 0, "%s: debugfs cat matches", what);
}

/* A file made by debugfs, opened with its inode. */
bool t_new_named(const char *name, ino_inode *in)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "write /dev/null %s", name);
	return t_is_int(t_dbg(cmd), 0, "debugfs makes %s", name) && t_wopen() &&
	       t_is_int(ino_inode_read(wf.w.fs, t_lookup(name), in), 0, "%s read", name);
}

bool t_wr(ino_inode *in, uint8_t *model, const uint8_t *src, size_t len, uint64_t off)
{
	ssize_t n = ino_file_write(wf.w.fs, &wf.t, in, src, len, off);

	if (model)
		memcpy(model + off, src, len);
	return t_is_int(n, (int64_t)len, "write %zu bytes at %llu", len, (unsigned long long)off);
}

uint32_t t_last_orphan(void)
{
	return cm_le32(((struct ext3_super_block *)(wf.w.mem + 1024))->s_last_orphan);
}

uint32_t t_dtime_of(uint32_t ino)
{
	ino_inode in;

	return ino_inode_read_any(wf.w.fs, ino, &in) == 0 ? in.dtime : 0xdeadbeef;
}

bool t_new_inode(const char *name, uint16_t mode, uint32_t uid, ino_inode *in)
{
	uint32_t ino = 0;

	if (!t_wopen())
		return false;
	t_is_int(ino_txn_alloc_inode(&wf.t, EXT3_ROOT_INO, mode, &ino), 0, "%s: inode allocated",
		 name);
	return t_is_int(ino_inode_new(wf.w.fs, &wf.t, ino, mode, uid, uid + 1, in), 0, "%s: set up",
			name);
}

void t_link_as(const ino_inode *in, const char *name)
{
	char cmd[64];

	t_wclose(name);
	snprintf(cmd, sizeof(cmd), "ln <%u> /%s", in->ino, name);
	t_is_int(t_dbg(cmd), 0, "%s linked by debugfs", name);
}

ino_txn *t_orphan_start(void *ctx, int credits)
{
	(void)credits;
	t_wtxn_init(&wf.t, ctx);
	return &wf.t;
}

int t_orphan_stop(void *ctx, ino_txn *tx)
{
	(void)ctx;
	(void)tx;
	return 0;
}
