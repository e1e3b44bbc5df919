/*
 * t_tree.h - the host directory tree test-ext3fs turns into images with
 * mke2fs -d and compares with what libext3fs reads back.
 */
#ifndef T_TREE_H
#define T_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define T_BIG_DIR	"bigdir"
#define T_BIG_ENTRIES	20000
#define T_HOLE_TIND	(70ull << 20)			/* TIND with 1 KiB */
#define T_HUGE_OFF	((4ull << 30) + (8ull << 20))	/* TIND with 4 KiB */

/* Name i of the big directory (some UTF-8, some long). */
void t_big_name(unsigned i, char *buf, size_t len);

/*
 * Builds the tree under `dir` (which must not exist).  The big directory
 * gets names 0 .. big_host-1 as empty files; the caller adds the rest to
 * the image.  Devices and owners need root: skipped (with *ret_root
 * false) otherwise.  Returns 0 or -errno.
 */
int t_tree_build(const char *dir, unsigned big_host, bool *ret_root);

/* Fills buf with deterministic bytes derived from seed. */
void t_fill(uint8_t *buf, size_t len, uint64_t seed);

#endif
