/* t_sh.h - a shell command for a test (mke2fs, e2fsck, cp), built
 * printf-style. */
#ifndef T_SH_H
#define T_SH_H

/* Runs the command through /bin/sh: system()'s status, or -1 (with a
 * diagnostic) when the command cannot be built. */
int t_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
