/*
 * t_ext3fs.h - what test-ext3fs.c and its check files share: one image
 * made from the host tree, mounted through the pread source.
 */
#ifndef T_EXT3FS_H
#define T_EXT3FS_H

#include <stdbool.h>
#include <stdint.h>

#include "ext3fs.h"
#include "t_image.h"

/* One image variant: block size, inode size, htree hash. */
typedef struct t_cfg {
	uint32_t bs;
	unsigned isize;
	const char *hash;	/* tune2fs hash_alg */
	bool unsig;		/* mark the fs unsigned-hash */
} t_cfg;

typedef struct t_ctx {
	const t_cfg *cfg;
	const char *tree;	/* host tree */
	char img_path[512];
	t_img img;
	ino_fs *fs;
	unsigned big_host;	/* big-dir names that came from the tree */
	bool root;		/* devices and owners were made */
} t_ctx;

/* t_bigdir.c: the 20,000-entry htree directory and the hashes. */
void t_check_bigdir(t_ctx *c);
void t_check_dirhash(t_ctx *c);

/* t_misc.c: hard links and the root, block maps, errors, statfs. */
void t_check_links(t_ctx *c);
void t_check_maps(t_ctx *c);
void t_check_requests(t_ctx *c);
void t_check_statfs(t_ctx *c);

/* test-ext3fs.c: inode of `name` in directory dino, 0 if not found. */
uint32_t t_lookup(t_ctx *c, uint32_t dino, const char *name);
/* t_misc.c: inode of a /-separated path from the root, 0 if not found. */
uint32_t t_path(t_ctx *c, const char *path);

#endif
