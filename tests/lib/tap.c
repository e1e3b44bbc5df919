/* tap.c - TAP output for the C tests; see tap.h. Not thread-safe: call the
 * checks from one thread (or after joining the others). */
#include "tap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_count;
static int t_failed;

__attribute__((format(printf, 2, 0)))
static bool t_report(bool cond, const char *fmt, va_list ap)
{
	t_count++;
	printf("%sok %d - ", cond ? "" : "not ", t_count);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		t_failed++;
	return cond;
}

bool t_ok(bool cond, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cond = t_report(cond, fmt, ap);
	va_end(ap);
	return cond;
}

bool t_is_int(int64_t got, int64_t want, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	bool cond = t_report(got == want, fmt, ap);
	va_end(ap);
	if (!cond)
		t_diag("got %lld, want %lld", (long long)got, (long long)want);
	return cond;
}

bool t_is_str(const char *got, const char *want, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	bool cond = t_report(got && want && strcmp(got, want) == 0, fmt, ap);
	va_end(ap);
	if (!cond)
		t_diag("got '%s', want '%s'", got ? got : "(null)", want ? want : "(null)");
	return cond;
}

void t_diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

void t_skip(const char *reason, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	t_count++;
	printf("ok %d - ", t_count);
	vprintf(fmt, ap);
	printf(" # SKIP %s\n", reason);
	fflush(stdout);
	va_end(ap);
}

void t_skip_all(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("1..0 # SKIP ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	exit(0);
}

int t_done(void)
{
	printf("1..%d\n", t_count);
	if (t_failed)
		printf("# %d of %d checks failed\n", t_failed, t_count);
	fflush(stdout);
	return t_failed ? 1 : 0;
}
