/*
 * t_wtxn.h - for the write side's unit tests: an image file loaded into
 * memory, mounted through a block source over that memory, and an ino_txn
 * that changes the memory in place (no journal: the tests check the
 * library's on-disk results, which `e2fsck -fn` judges once the image is
 * saved). Its allocator is deliberately plain (first usable bit from the
 * goal, inodes from the directory's group on), keeping the bitmaps, the
 * group descriptors and the superblock counts exact; inode-svc's real
 * transaction (inode-svc/txn.c) goes to alloc-svc instead.
 *
 * One thread at a time. Blocks written through the txn are counted in
 * dirtied; ino_txn_ensure grants everything (restarts counts calls that
 * asked for more than credits_left, set by the test, -1 for no limit).
 */
#ifndef T_WTXN_H
#define T_WTXN_H

#include <stdint.h>

#include "ext3fs.h"
#include "ext3fs_w.h"

typedef struct t_wimg {
	char path[512];
	uint8_t *mem;           /* the whole image */
	uint64_t size;
	uint32_t bs;
	ino_blksrc src;         /* over mem; ctx = this */
	ino_fs *fs;
	long held;              /* block gets not yet put (reads and txn) */
} t_wimg;

struct ino_txn {
	t_wimg *w;
	long dirtied;           /* ino_txn_dirty calls */
	long restarts;          /* ino_txn_ensure calls past credits_left */
	int credits_left;       /* -1: unlimited */
	long forgets;
};

/* Loads and mounts the image at path. 0 or -errno (why says which). */
int t_wimg_open(t_wimg *w, const char *path, char *why, size_t whylen);
/* Writes the memory back to the file. 0 or -errno. */
int t_wimg_save(t_wimg *w);
/* Unmounts and frees (does not save). */
void t_wimg_close(t_wimg *w);
/* A transaction over w. */
void t_wtxn_init(ino_txn *t, t_wimg *w);

#endif
