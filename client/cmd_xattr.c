/* cmd_xattr.c - ext3d getfattr, setfattr and rmfattr: extended attributes
 * by path through libext3d. getfattr without a name lists the names, one a
 * line; with one it writes the value's bytes as they are (an ACL in the
 * VFS's binary format). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ext3d.h"

#define CLI_XATTR_MAX 65536

int cli_getfattr(cli_ctx *c, int argc, char **argv)
{
	char *buf;
	ssize_t n;
	ext3d *fs;

	if (argc != 2 && argc != 3)
		return cli_fail("usage: getfattr PATH [NAME]", -EINVAL);
	buf = malloc(CLI_XATTR_MAX);
	if (!buf)
		return cli_fail("getfattr", -ENOMEM);
	if (cli_attach(c, &fs)) {
		free(buf);
		return 1;
	}
	if (argc == 3)
		n = ext3d_getxattr(fs, argv[1], argv[2], buf, CLI_XATTR_MAX);
	else
		n = ext3d_listxattr(fs, argv[1], buf, CLI_XATTR_MAX);
	ext3d_detach(fs);
	if (n >= 0 && argc == 3)
		fwrite(buf, 1, (size_t)n, stdout);
	for (ssize_t i = 0; n > 0 && argc == 2 && i < n; i += (ssize_t)strlen(buf + i) + 1)
		printf("%s\n", buf + i);
	free(buf);
	return n < 0 ? cli_fail(argc == 3 ? argv[2] : argv[1], (int)n) : 0;
}

int cli_setfattr(cli_ctx *c, int argc, char **argv)
{
	ext3d *fs;
	int r;

	if (argc != 4)
		return cli_fail("usage: setfattr PATH NAME VALUE", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	r = ext3d_setxattr(fs, argv[1], argv[2], argv[3], strlen(argv[3]), 0);
	ext3d_detach(fs);
	return r < 0 ? cli_fail(argv[2], r) : 0;
}

int cli_rmfattr(cli_ctx *c, int argc, char **argv)
{
	ext3d *fs;
	int r;

	if (argc != 3)
		return cli_fail("usage: rmfattr PATH NAME", -EINVAL);
	if (cli_attach(c, &fs))
		return 1;
	r = ext3d_removexattr(fs, argv[1], argv[2]);
	ext3d_detach(fs);
	return r < 0 ? cli_fail(argv[2], r) : 0;
}
