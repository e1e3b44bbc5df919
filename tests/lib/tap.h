/* tap.h - a small TAP producer for C tests (prove reads what it prints).
 *
 * Plan last ("1..N" at exit) so a test need not count ahead; a failed
 * check never stops the test; the exit status is 1 if any check failed.
 */
#ifndef T_TAP_H
#define T_TAP_H

#include <stdbool.h>
#include <stdint.h>

/* Each returns the truth of its check and prints "ok N - ..." or "not ok". */
bool t_ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool t_is_int(int64_t got, int64_t want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool t_is_str(const char *got, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void t_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void t_skip(const char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Skips the whole file: prints "1..0 # SKIP reason" and exits 0. */
_Noreturn void t_skip_all(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the plan and returns the exit status for main(). */
int t_done(void);

#endif
