/* progress.h - a progress line for long work (the CLI's put, get, rm -r,
 * ext3d start; ext3d-recover's journal replay), as e2fsck -C 0 draws one.
 * One line on stderr, redrawn in place with \r, only when stderr is a
 * terminal: EXT3D_PROGRESS=0 turns it off, EXT3D_PROGRESS=1 on even
 * without one. A process has one stderr, so there is one line: the state
 * is the module's, and a caller erases the line before another message. */
#ifndef CM_PROGRESS_H
#define CM_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/* Starts a line "what: figures" (what kept, not copied, until
 * cm_progress_end). unit NULL counts bytes, drawn in binary units with a
 * rate ("12.3 MiB / 20.0 MiB  61%  45.6 MiB/s"); otherwise a count named
 * by unit ("304 removed", "12/40 blocks  30%"). total 0 when unknown. */
void cm_progress_begin(const char *what, const char *unit, uint64_t total);
/* A new stage of the same work on the same line, named before the figures
 * ("recovering: replay 12/40 blocks  30%"): the count back to 0 of total;
 * drawn at once. */
void cm_progress_stage(const char *stage, uint64_t total);
/* n more done; redrawn at most every CM_PROGRESS_MS. */
void cm_progress_add(uint64_t n);
/* done so far of total (0 when unknown), for work that reports absolute
 * counts; redrawn as by cm_progress_add. */
void cm_progress_set(uint64_t done, uint64_t total);
/* For work that reports its stage and counts as it goes (journal
 * recovery): begins the line at the first call, so that work with nothing
 * to report draws none; a new stage when stage differs from the last. */
void cm_progress_report(const char *what, const char *unit, const char *stage, uint64_t done,
			uint64_t total);
/* Clears the line so that another message starts at column 0; the next
 * cm_progress_add draws it again. */
void cm_progress_erase(void);
/* Draws the final count and ends the line with a newline. */
void cm_progress_end(void);

#endif
