/* cmd_inode.c - ext3d fiemap and flags: a file's extents as FIEMAP
 * reports them (one "LOGICAL PHYSICAL LENGTH FLAGS" line each, bytes and
 * FIEMAP_EXTENT_* in hex, as filefrag -v lists them), and its inode
 * flags (FS_IOC_GETFLAGS's in hex; given HEX, set to that, as chattr).
 * The file is opened for reading, as those tools open it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ext3d.h"

/* Prints the extents of ino from 0 on, a call's worth at a time. */
static int cli_fiemap_print(ext3d *fs, uint64_t ino)
{
	ext3d_extent *ext = malloc(EXT3D_FIEMAP_MAX * sizeof(*ext));
	uint64_t start = 0;
	int n = 0;

	if (!ext)
		return -ENOMEM;
	do {
		n = ext3d_fiemap_ino(fs, ino, start, UINT64_MAX - start, 0, ext, EXT3D_FIEMAP_MAX);
		for (int i = 0; i < n; i++)
			printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %x\n", ext[i].logical,
			       ext[i].physical, ext[i].length, ext[i].flags);
		if (n > 0)
			start = ext[n - 1].logical + ext[n - 1].length;
	} while (n == EXT3D_FIEMAP_MAX && !(ext[n - 1].flags & FIEMAP_EXTENT_LAST));
	free(ext);
	return n < 0 ? n : 0;
}

int cli_inode(cli_ctx *c, int argc, char **argv)
{
	bool fiemap = strcmp(argv[0], "fiemap") == 0;
	ext3d_file *f = NULL;
	ext3d_attr a;
	ext3d *fs;
	int r;

	if (argc != 2 && (fiemap || argc != 3))
		return cli_fail(fiemap ? "usage: fiemap PATH" : "usage: flags PATH [HEX]", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	r = ext3d_open(fs, argv[1], O_RDONLY, &f);
	if (r == 0)
		r = ext3d_fstat(f, &a);
	if (r == 0 && fiemap)
		r = cli_fiemap_print(fs, a.ino);
	else if (r == 0 && argc == 3)
		r = ext3d_setflags_ino(fs, a.ino, (uint32_t)strtoul(argv[2], NULL, 16), NULL);
	else if (r == 0)
		printf("%x\n", a.flags);
	if (f)
		(void)ext3d_close(f);
	ext3d_detach(fs);
	return r < 0 ? cli_fail(argv[1], r) : 0;
}
