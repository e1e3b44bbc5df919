/* log.c - stderr logging for every ext3d process; see log.h.
 * Debug lines are printed only when EXT3D_DEBUG is set in the environment.
 * Each message is formatted into one buffer and written with one write(2),
 * so lines from several processes sharing stderr do not interleave. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char cm_log_name[32] = "ext3d";
static int cm_log_debug_on = -1;

static const char *const cm_log_level_names[] = {
	[CM_LOG_DEBUG] = "debug", [CM_LOG_INFO] = "info",
	[CM_LOG_WARN] = "warning", [CM_LOG_ERR] = "error",
};

void cm_log_init(const char *name)
{
	snprintf(cm_log_name, sizeof(cm_log_name), "%s", name);
	cm_log_debug_on = getenv("EXT3D_DEBUG") != NULL;
}

__attribute__((format(printf, 2, 0)))
static void cm_log_va(enum cm_log_level level, const char *fmt, va_list ap)
{
	char line[1024];
	int n;

	if (cm_log_debug_on < 0)
		cm_log_debug_on = getenv("EXT3D_DEBUG") != NULL;
	if (level == CM_LOG_DEBUG && !cm_log_debug_on)
		return;
	n = snprintf(line, sizeof(line), "%s[%d] %s: ", cm_log_name, (int)getpid(),
		     cm_log_level_names[level]);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, (size_t)n);
}

void cm_log(enum cm_log_level level, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	cm_log_va(level, fmt, ap);
	va_end(ap);
	errno = saved;
}

int cm_log_errno(int r, const char *fmt, ...)
{
	va_list ap;

	errno = r < 0 ? -r : r;
	va_start(ap, fmt);
	cm_log_va(CM_LOG_ERR, fmt, ap);
	va_end(ap);
	return r;
}
