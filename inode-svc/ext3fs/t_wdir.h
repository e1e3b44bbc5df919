/*
 * t_wdir.h - what test-ext3fs-dir's scenarios share: a model of one
 * directory (its names, each naming an inode of a pool of targets linked
 * once from the root so none ever reaches 0 links), seeded random names,
 * the directory operations checked as they go, and the comparison of a
 * directory with its model through the read side.
 */
#ifndef T_WDIR_H
#define T_WDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ext3fs.h"
#include "ext3fs_w.h"

#define T_POOL_MAX 64

struct t_ent {
	char name[256];
	uint8_t len;
	uint32_t ino;
	size_t idx;             /* in t_dir.v */
};

struct t_dir {
	const char *label;
	uint32_t ino;                   /* the directory */
	struct t_ent **v;               /* the live entries */
	size_t n, cap;
	struct t_ent **slots;           /* open addressing by name */
	size_t nslots;
	uint32_t pool[T_POOL_MAX];      /* target inodes */
	uint16_t pool_mode[T_POOL_MAX];
	uint32_t refs[T_POOL_MAX];      /* entries naming each */
	unsigned npool;
	uint64_t rng;
	int worst_credits;              /* most blocks one add changed */
	long failures;                  /* operations that did not return 0 */
	size_t foreign;                 /* entries named "k-<n>" the kernel made */
};

/* Makes the directory label in the root of the open image (wf.w), with
 * npool targets linked from the root; seeds its names with seed. */
bool t_dir_new(struct t_dir *d, const char *label, unsigned npool, uint64_t seed);
void t_dir_free(struct t_dir *d);
/* Reads the directory's inode from the open image. */
bool t_dir_inode(const struct t_dir *d, ino_inode *in);
/* A random name not in d (len 0: random length, up to 255). */
void t_dir_name(struct t_dir *d, char *name, uint8_t *len, unsigned want_len);
/* The operations, on the model too; the result of the library call. */
int t_dir_add(struct t_dir *d, ino_inode *dir, const char *name, uint8_t len);
int t_dir_del(struct t_dir *d, ino_inode *dir, size_t i);
int t_dir_retarget(struct t_dir *d, ino_inode *dir, size_t i);
/* n random operations: adds with probability padd/100, then removes and
 * retargets evenly; names of want_len (0: random). */
void t_dir_churn(struct t_dir *d, ino_inode *dir, long n, unsigned padd, unsigned want_len);
/* Every name looks up (and through the index when there is one), readdir
 * lists exactly the model with the right file types, and foreign names. */
bool t_dir_check(struct t_dir *d, const char *what);
/* Writes the targets' link counts (1 + refs) into the open image. */
bool t_dir_settle(struct t_dir *d);
/* The dx_root's indirect_levels (-1 if not indexed). */
int t_dir_levels(const ino_inode *dir);
/* Writes the model's names, one a line, to path. */
bool t_dir_names(const struct t_dir *d, const char *path);

#endif
