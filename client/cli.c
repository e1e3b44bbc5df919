/* cli.c - ext3d: global flags, then one subcommand from the table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "progress.h"

static const struct cli_cmd {
	const char *name;
	int (*run)(cli_ctx *c, int argc, char **argv);
	const char *usage;
} cli_cmds[] = {
	{"start", cli_start, "start [OPTIONS] IMAGE  run an instance on IMAGE (ext3d start --help)"},
	{"status", cli_status, "status [--json]   the supervisor, services, locks"},
	{"kill", cli_kill, "kill SERVICE      SIGKILL a service (for tests)"},
	{"shutdown", cli_shutdown, "shutdown          stop the instance (compose/down)"},
	{"mount", cli_mount, "mount [-o OPTS] DIR  mount the instance at DIR (ext3d-fuse -o OPTS)"},
	{"umount", cli_umount, "umount            unmount it (lazily if busy)"},
	{"ls", cli_ls, "ls [-a] [-l] [-R] PATH  list a directory"},
	{"stat", cli_stat, "stat PATH         a file's attributes"},
	{"cat", cli_cat, "cat PATH...       print files"},
	{"get", cli_get, "get PATH LOCAL    copy a file out of the image"},
	{"put", cli_put, "put LOCAL PATH    copy a file into the image"},
	{"mkdir", cli_mkdir, "mkdir [-p] PATH...  make directories"},
	{"rm", cli_rm, "rm [-r] PATH...   remove files (-r: and directories)"},
	{"mv", cli_mv, "mv SRC DST        rename (into DST if it is a directory)"},
	{"ln", cli_ln, "ln [-s] TARGET LINK  make a hard (or symbolic) link"},
	{"chmod", cli_chmod, "chmod MODE PATH...  set permission bits (octal)"},
	{"chown", cli_chown, "chown USER[:GROUP] PATH...  set owner and group"},
	{"truncate", cli_truncate, "truncate -s SIZE PATH...  set file sizes"},
	{"sync", cli_sync, "sync              make everything written durable"},
	{"getfattr", cli_getfattr, "getfattr PATH [NAME]  list extended attributes, or print one"},
	{"setfattr", cli_setfattr, "setfattr PATH NAME VALUE  set an extended attribute"},
	{"rmfattr", cli_rmfattr, "rmfattr PATH NAME  remove an extended attribute"},
	{"fiemap", cli_inode, "fiemap PATH       a file's extents (FIEMAP, as filefrag -v)"},
	{"flags", cli_inode, "flags PATH [HEX]  a file's inode flags (lsattr), or set them"},
};

int cli_fail(const char *what, int err)
{
	cm_progress_erase();
	fprintf(stderr, "ext3d: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

static int cli_usage(void)
{
	fprintf(stderr, "usage: ext3d [--instance NAME] COMMAND [ARGS]\n");
	for (size_t i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		fprintf(stderr, "  %s\n", cli_cmds[i].usage);
	return 2;
}

int main(int argc, char **argv)
{
	const char *instance = NULL;
	char rundir[CM_PATH_MAX], why[CM_PATH_MAX + 128];
	cli_ctx c;
	int i = 1;

	if (i + 1 < argc && strcmp(argv[i], "--instance") == 0) {
		instance = argv[i + 1];
		i += 2;
	} else if (i < argc && strncmp(argv[i], "--instance=", 11) == 0) {
		instance = argv[i++] + 11;
	}
	if (i >= argc)
		return cli_usage();
	if (cm_instance_name(instance, c.instance, sizeof(c.instance)) < 0)
		return cli_fail("instance name", -EINVAL);
	if (cm_rundir(c.instance, rundir, sizeof(rundir)) < 0 ||
	    cm_control_url(rundir, c.url, sizeof(c.url)) < 0)
		return cli_fail("run directory", -ENAMETOOLONG);
	/* Control messages too go only to a run directory of our own. */
	if (cm_rundir_check(rundir, false, why, sizeof(why)) == -EPERM)
		return fprintf(stderr, "ext3d: %s\n", why), 1;
	for (size_t k = 0; k < sizeof(cli_cmds) / sizeof(cli_cmds[0]); k++)
		if (strcmp(argv[i], cli_cmds[k].name) == 0)
			return cli_cmds[k].run(&c, argc - i, argv + i);
	return cli_usage();
}
