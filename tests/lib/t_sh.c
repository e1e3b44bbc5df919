/* t_sh.c - t_sh (t_sh.h): a command of any length, run by /bin/sh. */
#define _GNU_SOURCE
#include "t_sh.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

int t_sh(const char *fmt, ...)
{
	char *cmd = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	if (r < 0) {
		t_diag("t_sh: cannot build the command \"%s\"", fmt);
		return -1;
	}
	r = system(cmd);
	free(cmd);
	return r;
}
