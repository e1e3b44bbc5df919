/* main.c - ext3d-fuse: mounts an ext3d instance with FUSE.
 *   ext3d-fuse [--instance NAME] [-o opt,...] [-f] [-d] MOUNTPOINT
 * Parses the command line (opts.c), then runs the daemon (mount.c) until
 * the file system is unmounted or the daemon is signalled. */
#include <stdlib.h>

#include "xfuse.h"

int main(int argc, char **argv)
{
	xf_config cfg;
	int r = xf_opts_parse(argc, argv, &cfg);

	if (r != 0)
		return r > 0 ? EXIT_SUCCESS : 2;
	r = xf_run(&cfg);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
