/*
 * t_wfile.h - what test-ext3fs-write's scenarios share: the image being
 * worked on (one per block and inode size), its in-memory copy and
 * transaction, and the helpers that make, open, check and read it.
 */
#ifndef T_WFILE_H
#define T_WFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ext3fs.h"
#include "ext3fs_w.h"
#include "t_wtxn.h"

struct t_wf {
	char dir[64];           /* the test's temporary directory */
	char img[128];          /* the image of this configuration */
	uint32_t bs, isize;     /* block and inode size */
	uint64_t apb;           /* block pointers per block */
	bool kernel_ok;         /* root, and the kernel loop-mounts ext3 */
	t_wimg w;               /* the image in memory while open */
	ino_txn t;              /* a transaction over w */
};
extern struct t_wf wf;

/* mke2fs -t ext3 of wf.img with wf's sizes; size as mke2fs takes it. */
int t_mkimg(const char *size);
/* e2fsck -fn of wf.img exits 0 (its output as diagnostics if not). */
bool t_fsck_clean(const char *what);
/* debugfs -w -R cmd on wf.img: its exit status. */
int t_dbg(const char *cmd);
/* The number debugfs -R cmd prints first. */
uint64_t t_dbg_num(const char *cmd);
/* Mounts path at dir/mnt (opts: ro or rw), runs sh there, unmounts;
 * sh's exit status, or non-zero if the mount failed. */
int t_kernel_run(const char *path, const char *opts, const char *sh);
/* Opens wf.img into wf.w with a fresh wf.t; closes it, saving. */
bool t_wopen(void);
void t_wclose(const char *what);
/* The inode number of a name in the root directory, 0 if none. */
uint32_t t_lookup(const char *name);
/* n bytes of a pattern that differs by seed and has no zeros. */
void t_fill(uint8_t *p, size_t n, unsigned seed);
/* in, read whole through ino_file_read, is want. */
bool t_cmp_read(const ino_inode *in, const uint8_t *want, uint64_t size, const char *what);
/* debugfs cat of /name (wf.img saved) is want. */
bool t_cmp_debugfs(const char *name, const uint8_t *want, uint64_t size, const char *what);
/* A file /name made by debugfs; opens the image and reads its inode. */
bool t_new_named(const char *name, ino_inode *in);
/* ino_file_write of len bytes at off writes them all; model follows. */
bool t_wr(ino_inode *in, uint8_t *model, const uint8_t *src, size_t len, uint64_t off);
/* s_last_orphan and an inode's i_dtime in the open image. */
uint32_t t_last_orphan(void);
uint32_t t_dtime_of(uint32_t ino);
/* Opens the image and makes a new inode of mode with ino_inode_new. */
bool t_new_inode(const char *name, uint16_t mode, uint32_t uid, ino_inode *in);
/* Closes the image and links in as /name with debugfs ln. */
void t_link_as(const ino_inode *in, const char *name);

/* ino_orphans_process's start and stop over wf.t (ctx: the t_wimg). */
ino_txn *t_orphan_start(void *ctx, int credits);
int t_orphan_stop(void *ctx, ino_txn *tx);

#endif
