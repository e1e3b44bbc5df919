/* cli.h - the ext3d command line: shared context of the subcommands. */
#ifndef CLI_H
#define CLI_H

#include "rundir.h"
#include "supervisor.pb-c.h"

#define CLI_TIMEOUT_MS 10000

typedef struct cli_ctx {
	char instance[72];
	char url[CM_PATH_MAX + 16]; /* the supervisor's control socket */
} cli_ctx;

/* Each returns the process exit status. */
int cli_status(cli_ctx *c, int argc, char **argv);
int cli_kill(cli_ctx *c, int argc, char **argv);
int cli_shutdown(cli_ctx *c, int argc, char **argv);
int cli_ls(cli_ctx *c, int argc, char **argv);
int cli_stat(cli_ctx *c, int argc, char **argv);
int cli_cat(cli_ctx *c, int argc, char **argv);
int cli_get(cli_ctx *c, int argc, char **argv);

int cli_put(cli_ctx *c, int argc, char **argv);
int cli_mkdir(cli_ctx *c, int argc, char **argv);
int cli_rm(cli_ctx *c, int argc, char **argv);
int cli_mv(cli_ctx *c, int argc, char **argv);
int cli_ln(cli_ctx *c, int argc, char **argv);
int cli_chmod(cli_ctx *c, int argc, char **argv);
int cli_chown(cli_ctx *c, int argc, char **argv);
int cli_truncate(cli_ctx *c, int argc, char **argv);
int cli_sync(cli_ctx *c, int argc, char **argv);
int cli_getfattr(cli_ctx *c, int argc, char **argv);
/* cmd_inode.c: fiemap and flags, told apart by argv[0] */
int cli_inode(cli_ctx *c, int argc, char **argv);
int cli_setfattr(cli_ctx *c, int argc, char **argv);
int cli_rmfattr(cli_ctx *c, int argc, char **argv);

struct ext3d;
/* Attaches to c's instance; 0, or 1 after printing why not. */
int cli_attach(cli_ctx *c, struct ext3d **fs);

int cli_mount(cli_ctx *c, int argc, char **argv);
/* cmd_start.c: runs an instance from the installed supervisor. */
int cli_start(cli_ctx *c, int argc, char **argv);
int cli_umount(cli_ctx *c, int argc, char **argv);
/* A stale mount at the mount point RUNDIR/mount names (its daemon died
 * with the supervisor) is unmounted, and the file removed. */
void cli_clean_mount(const char *rundir);
/* A control request; 0, or 1 after printing why it failed (the
 * supervisor's reason when it gave one). */
int cli_call(cli_ctx *c, Ext3d__Request *req, Ext3d__Reply **ret, int timeout_ms);

/* Prints "ext3d: what: strerror" (a progress line erased first) and
 * returns 1. */
int cli_fail(const char *what, int err);

#endif
