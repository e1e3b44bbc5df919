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

/* Prints "ext3d: what: strerror" and returns 1. */
int cli_fail(const char *what, int err);

#endif
