/*
 * t_misc.c - test-ext3fs checks beyond the tree comparison: hard links and
 * the root's link count, which indirect levels the files use, holes, the
 * errors for bad requests, and statfs against dumpe2fs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t_ext3fs.h"
#include "t_tree.h"
#include "tap.h"

uint32_t t_path(t_ctx *c, const char *path)
{
	char buf[4096], *save = NULL, *part;
	uint32_t ino = EXT3_ROOT_INO;

	snprintf(buf, sizeof(buf), "%s", path);
	for (part = strtok_r(buf, "/", &save); part && ino;
	     part = strtok_r(NULL, "/", &save))
		ino = t_lookup(c, ino, part);
	return ino;
}

static int count_dirs(void *ctx, uint32_t ino, uint8_t ft, const char *name,
		      size_t len, uint64_t next)
{
	unsigned *n = ctx;

	(void)ino, (void)next;
	if (ft == EXT3_FT_DIR && !(len == 1 && name[0] == '.') &&
	    !(len == 2 && name[0] == '.' && name[1] == '.'))
		(*n)++;
	return 0;
}

void t_check_links(t_ctx *c)
{
	uint32_t a = t_path(c, "link1"), b = t_path(c, "a/link2");
	uint32_t d = t_path(c, "a/b/link3");
	unsigned subdirs = 0;
	ino_inode in;

	t_ok(a && a == b && b == d, "hard links share inode %u", a);
	t_ok(ino_inode_read(c->fs, a, &in) == 0 && in.links == 3,
	     "hard-linked inode has 3 links");
	t_ok(ino_inode_read(c->fs, EXT3_ROOT_INO, &in) == 0 &&
	     ino_dir_iterate(c->fs, &in, 0, count_dirs, &subdirs) == 0 &&
	     in.links == 2 + subdirs, "root: %u links, %u subdirectories",
	     in.links, subdirs);
	t_is_int(t_path(c, "lost+found"), 11, "lost+found is inode 11");
	t_is_int(t_path(c, "a/b/c/../../b/c/deep.txt"), t_path(c, "a/b/c/deep.txt"),
		 "lookups of . and .. walk back up");
}

static bool read_path(t_ctx *c, const char *path, ino_inode *in)
{
	uint32_t ino = t_path(c, path);

	return ino && ino_inode_read(c->fs, ino, in) == 0;
}

void t_check_maps(t_ctx *c)
{
	uint64_t apb = c->cfg->bs / 4, pblk = 1, lblk;
	uint8_t buf[1000], zero[1000] = { 0 };
	ino_inode in;
	char tgt[8];

	t_ok(read_path(c, "big.bin", &in) && in.block[EXT3_DIND_BLOCK],
	     "big.bin uses the double indirect map");
	t_ok(read_path(c, "huge.bin", &in) && in.block[EXT3_TIND_BLOCK] &&
	     in.size == T_HUGE_OFF + 4196, "huge.bin uses the triple indirect map");
	t_ok(read_path(c, "holes.bin", &in) &&
	     ino_bmap(c->fs, &in, (10u << 20) / c->cfg->bs, &pblk) == 0 &&
	     pblk == 0, "holes.bin: a hole maps to 0");
	if (c->cfg->bs == 1024)
		t_ok(in.block[EXT3_TIND_BLOCK] != 0,
		     "holes.bin uses the triple indirect map at 70 MiB");
	lblk = EXT3_NDIR_BLOCKS + apb + apb * apb + apb * apb * apb;
	t_is_int(ino_bmap(c->fs, &in, lblk, &pblk), -EFBIG,
		 "bmap beyond the triple indirect map");
	t_ok(read_path(c, "tail_hole.bin", &in) &&
	     ino_file_read(c->fs, &in, buf, sizeof(buf), 199000) == 1000 &&
	     !memcmp(buf, zero, sizeof(buf)), "a hole at the end reads as zeros");
	t_ok(read_path(c, "fast_link", &in) && in.blocks512 == 0 &&
	     ino_bmap(c->fs, &in, 0, &pblk) == -EINVAL &&
	     ino_file_read(c->fs, &in, buf, 10, 0) == -EINVAL,
	     "fast symlink: no block map, not readable as a file");
	t_ok(ino_readlink(c->fs, &in, tgt, 3) == 3 && !memcmp(tgt, "sma", 3),
	     "readlink truncates to the buffer");
	t_ok(read_path(c, "max_fast", &in) && in.size == 59 &&
	     ino_bmap(c->fs, &in, 0, &pblk) == -EINVAL,
	     "59-byte symlink is fast");
	t_ok(read_path(c, "slow_link", &in) && in.blocks512 > 0 &&
	     ino_bmap(c->fs, &in, 0, &pblk) == 0 && pblk,
	     "100-byte symlink is slow");
	t_ok(read_path(c, "fifo", &in) && ino_rdev(&in) == 0 &&
	     ino_bmap(c->fs, &in, 0, &pblk) == -EINVAL, "fifo: no map, no rdev");
	if (!c->root)
		t_skip("not root", "device numbers");
	else
		t_ok(read_path(c, "chr_big", &in) && in.block[0] == 0 &&
		     in.block[1] != 0, "300:70000 uses the new encoding");
}

void t_check_requests(t_ctx *c)
{
	const cm_ext3_geom *g = ino_fs_geom(c->fs);
	char name[300], buf[64], why[128];
	ino_inode in, file;
	ino_blksrc src;
	t_img other;
	uint32_t ino, h;
	ino_fs *fs2;

	t_is_int(ino_inode_read(c->fs, 0, &in), -EINVAL, "inode 0: EINVAL");
	t_is_int(ino_inode_read(c->fs, g->inodes_count + 1, &in), -EINVAL,
		 "inode past the count: EINVAL");
	t_is_int(ino_inode_read(c->fs, 1, &in), -ESTALE,
		 "inode 1 (no links): ESTALE");
	t_is_int(ino_inode_read(c->fs, g->inodes_count, &in), -ESTALE,
		 "unused last inode: ESTALE");
	t_ok(ino_inode_read_any(c->fs, g->inodes_count, &in) == 0 &&
	     in.links == 0, "read_any returns the unused inode");
	t_ok(ino_inode_read(c->fs, EXT3_ROOT_INO, &in) == 0, "root inode");
	t_is_int(ino_dir_lookup(c->fs, &in, "", 0, &ino), -ENOENT, "empty name");
	memset(name, 'q', 256);
	t_is_int(ino_dir_lookup(c->fs, &in, name, 256, &ino), -ENAMETOOLONG,
		 "256-byte name");
	t_is_int(ino_dir_lookup(c->fs, &in, "nonexistent", 11, &ino), -ENOENT,
		 "missing name");
	t_ok(read_path(c, "small.txt", &file), "small.txt");
	t_is_int(ino_dir_lookup(c->fs, &file, "x", 1, &ino), -ENOTDIR,
		 "lookup in a file");
	t_is_int(ino_dir_iterate(c->fs, &file, 0, count_dirs, &h), -ENOTDIR,
		 "iterate a file");
	t_is_int(ino_readlink(c->fs, &file, buf, sizeof(buf)), -EINVAL,
		 "readlink of a file");
	t_is_int(ino_file_read(c->fs, &in, buf, sizeof(buf), 0), sizeof(buf),
		 "a directory reads as bytes");
	t_ok(read_path(c, "a/b/c", &in) &&
	     ino_dx_lookup(c->fs, &in, "deep.txt", 8, &ino) == -ENODATA,
	     "dx lookup in an unindexed directory: ENODATA");
	t_is_int(ino_dirhash(c->fs, 6, "x", 1, &h, NULL), -EINVAL,
		 "hash version 6");
	src = c->img.src;
	src.block_size = 3000;
	t_is_int(ino_fs_mount(&src, 0, &fs2, why, sizeof(why)), -EINVAL,
		 "block source with 3000-byte blocks");
	if (t_img_open(&other, c->img_path) == 0) {
		other.bs = c->cfg->bs == 1024 ? 2048 : 1024;
		other.src.block_size = other.bs;
		t_is_int(t_img_mount(&other, &fs2, why, sizeof(why)), -EUCLEAN,
			 "block source serving %u-byte blocks (%s)", other.bs,
			 why);
		t_img_close(&other);
	}
}

static unsigned long long dumpe2fs_field(const char *out, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\n%s:", name);
	p = out ? strstr(out, key) : NULL;
	return p ? strtoull(p + strlen(key), NULL, 10) : ~0ull;
}

void t_check_statfs(t_ctx *c)
{
	char *out = t_sh_out("dumpe2fs -h '%s' 2>/dev/null", c->img_path);
	struct ino_statfs st;

	if (!t_is_int(ino_statfs(c->fs, &st), 0, "statfs")) {
		free(out);
		return;
	}
	t_ok(st.blocks == dumpe2fs_field(out, "Block count") &&
	     st.bfree == dumpe2fs_field(out, "Free blocks") &&
	     st.reserved == dumpe2fs_field(out, "Reserved block count"),
	     "statfs blocks %llu, free %llu match dumpe2fs",
	     (unsigned long long)st.blocks, (unsigned long long)st.bfree);
	t_ok(st.files == dumpe2fs_field(out, "Inode count") &&
	     st.ffree == dumpe2fs_field(out, "Free inodes"),
	     "statfs inodes %llu, free %llu match dumpe2fs",
	     (unsigned long long)st.files, (unsigned long long)st.ffree);
	t_ok(st.bsize == c->cfg->bs && st.namemax == 255 &&
	     st.bavail == st.bfree - st.reserved && st.overhead > 0 &&
	     st.overhead < st.blocks, "statfs sizes, overhead %llu",
	     (unsigned long long)st.overhead);
	free(out);
}
