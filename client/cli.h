/* cli.h - the ext3d command line: shared context of the subcommands. */
#ifndef CLI_H
#define CLI_H

#include "rundir.h"

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
int cli_setfattr(cli_ctx *c, int argc, char **argv);
int cli_rmfattr(cli_ctx *c, int argc, char **argv);

struct ext3d;
/* Attaches to c's instance; 0, or 1 after printing why not. */
int cli_attach(cli_ctx *c, struct ext3d **fs);

/* Prints "ext3d: what: strerror" and returns 1. */
int cli_fail(const char *what, int err);

#endif
