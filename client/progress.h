/* progress.h - the CLI's progress line for long work (put, get, rm -r).
 * One line on stderr, redrawn in place with \r, only when stderr is a
 * terminal: EXT3D_PROGRESS=0 turns it off, EXT3D_PROGRESS=1 on even
 * without one. A process has one stderr, so there is one line: the state
 * is the module's, and cli_fail erases the line before its message. */
#ifndef CLI_PROGRESS_H
#define CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/* Starts a line naming what (kept, not copied, until cli_progress_end):
 * bytes of total (0 when unknown) when bytes is true, else a count of
 * entries removed. */
void cli_progress_begin(const char *what, bool bytes, uint64_t total);
/* n more bytes or entries done; redrawn at most every CLI_PROGRESS_MS. */
void cli_progress_add(uint64_t n);
/* Clears the line so that another message starts at column 0; the next
 * cli_progress_add draws it again. */
void cli_progress_erase(void);
/* Draws the final count and ends the line with a newline. */
void cli_progress_end(void);

#endif
