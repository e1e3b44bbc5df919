/* progress.c - the progress line; see progress.h.
 * Each drawing is formatted into one buffer and written with one write(2),
 * as log.c writes its lines, so a terminal never shows half a line. The
 * line is shortened to the terminal's width: a line that wrapped could not
 * be redrawn in place by \r. */
#include "progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define CM_PROGRESS_MS 150
#define CM_PROGRESS_LINE 512
#define CM_PROGRESS_STAGE 32

static struct {
	bool on, due;
	const char *what;  /* NULL: not begun, or ended */
	const char *unit;  /* NULL: bytes */
	char stage[CM_PROGRESS_STAGE]; /* empty: none */
	uint64_t done, total;
	int64_t start_ns, drawn_ns;
	size_t cols;  /* the terminal's width */
	size_t width; /* of the line on screen; 0 when there is none */
} cm_pg;

static int64_t cm_progress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* EXT3D_PROGRESS=0 or 1 decides; otherwise whether stderr is a terminal. */
static bool cm_progress_wanted(void)
{
	const char *e = getenv("EXT3D_PROGRESS");

	if (e && strcmp(e, "0") == 0)
		return false;
	if (e && strcmp(e, "1") == 0)
		return true;
	return isatty(STDERR_FILENO);
}

/* 80 when stderr is no terminal or does not say (a pseudo-terminal nobody
 * sized). */
static size_t cm_progress_cols(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/* v bytes in binary units: "512 B", "12.3 MiB". */
static void cm_progress_human(double v, char *out, size_t cap)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	size_t u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, cap, "%.0f B", v);
	else
		snprintf(out, cap, "%.1f %s", v, units[u]);
}

static uint64_t cm_progress_pct(void)
{
	return cm_pg.done >= cm_pg.total ? 100 : cm_pg.done * 100 / cm_pg.total;
}

/* A count: "304 removed", "12/40 blocks  30%". */
static void cm_progress_count(char *out, size_t cap)
{
	if (cm_pg.total)
		snprintf(out, cap, "%" PRIu64 "/%" PRIu64 " %s  %3" PRIu64 "%%", cm_pg.done,
			 cm_pg.total, cm_pg.unit, cm_progress_pct());
	else
		snprintf(out, cap, "%" PRIu64 " %s", cm_pg.done, cm_pg.unit);
}

/* Bytes: "12.3 MiB / 20.0 MiB  61%  45.6 MiB/s". */
static void cm_progress_bytes(int64_t now, char *out, size_t cap)
{
	char done[32], total[32], rate[32];
	double secs = (double)(now - cm_pg.start_ns) / 1e9;
	int n;

	cm_progress_human((double)cm_pg.done, done, sizeof(done));
	n = snprintf(out, cap, "%s", done);
	if (cm_pg.total) {
		cm_progress_human((double)cm_pg.total, total, sizeof(total));
		n += snprintf(out + n, cap - (size_t)n, " / %s  %3" PRIu64 "%%", total,
			      cm_progress_pct());
	}
	if (cm_pg.done && secs > 0) {
		cm_progress_human((double)cm_pg.done / secs, rate, sizeof(rate));
		snprintf(out + n, cap - (size_t)n, "  %s/s", rate);
	}
}

/* The figures after the name, the stage first. */
static void cm_progress_figures(int64_t now, char *out, size_t cap)
{
	int n = cm_pg.stage[0] ? snprintf(out, cap, "%s ", cm_pg.stage) : 0;

	if (cm_pg.unit)
		cm_progress_count(out + n, cap - (size_t)n);
	else
		cm_progress_bytes(now, out + n, cap - (size_t)n);
}

/* Writes the line over the one on screen, padded with blanks to cover a
 * longer one; a newline after it when final. */
static void cm_progress_draw(bool final)
{
	char figures[160], line[CM_PROGRESS_LINE + 2];
	int64_t now = cm_progress_now();
	size_t len, name = strlen(cm_pg.what);
	const char *what = cm_pg.what, *dots = "";
	int n;

	cm_progress_figures(now, figures, sizeof(figures));
	/* Room for "\r", the name, ": ", the figures, and the cursor. */
	size_t room = cm_pg.cols > strlen(figures) + 6 ? cm_pg.cols - strlen(figures) - 6 : 3;
	if (room > CM_PROGRESS_LINE / 2)
		room = CM_PROGRESS_LINE / 2;
	if (name > room) {
		what += name - room + 3;
		dots = "...";
	}
	n = snprintf(line, CM_PROGRESS_LINE, "\r%s%s: %s", dots, what, figures);
	len = (size_t)n - 1;
	for (size_t w = len; w < cm_pg.width && (size_t)n < CM_PROGRESS_LINE; w++)
		line[n++] = ' ';
	if (final)
		line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, (size_t)n);
	cm_pg.width = final ? 0 : len;
	cm_pg.drawn_ns = now;
	cm_pg.due = false;
}

void cm_progress_begin(const char *what, const char *unit, uint64_t total)
{
	cm_pg.what = what;
	cm_pg.on = cm_progress_wanted();
	if (!cm_pg.on)
		return;
	cm_pg.unit = unit;
	cm_pg.stage[0] = '\0';
	cm_pg.total = total;
	cm_pg.done = 0;
	cm_pg.width = 0;
	cm_pg.cols = cm_progress_cols();
	cm_pg.start_ns = cm_progress_now();
	cm_progress_draw(false);
}

void cm_progress_stage(const char *stage, uint64_t total)
{
	if (!cm_pg.on)
		return;
	snprintf(cm_pg.stage, sizeof(cm_pg.stage), "%s", stage);
	cm_pg.total = total;
	cm_pg.done = 0;
	cm_progress_draw(false);
}

void cm_progress_set(uint64_t done, uint64_t total)
{
	if (!cm_pg.on)
		return;
	cm_pg.done = done;
	cm_pg.total = total;
	if (cm_pg.due || cm_progress_now() - cm_pg.drawn_ns >= CM_PROGRESS_MS * 1000000ll)
		cm_progress_draw(false);
}

void cm_progress_add(uint64_t n)
{
	cm_progress_set(cm_pg.done + n, cm_pg.total);
}

void cm_progress_report(const char *what, const char *unit, const char *stage, uint64_t done,
			uint64_t total)
{
	if (!cm_pg.what)
		cm_progress_begin(what, unit, 0);
	if (cm_pg.on && strncmp(cm_pg.stage, stage, sizeof(cm_pg.stage) - 1) != 0)
		cm_progress_stage(stage, total);
	cm_progress_set(done, total);
}

void cm_progress_erase(void)
{
	char blank[CM_PROGRESS_LINE + 2];
	size_t n = 0;

	if (!cm_pg.on || !cm_pg.width)
		return;
	blank[n++] = '\r';
	while (n <= cm_pg.width && n < CM_PROGRESS_LINE)
		blank[n++] = ' ';
	blank[n++] = '\r';
	(void)!write(STDERR_FILENO, blank, n);
	cm_pg.width = 0;
	cm_pg.due = true;
}

void cm_progress_end(void)
{
	if (cm_pg.on)
		cm_progress_draw(true);
	cm_pg.on = false;
	cm_pg.what = NULL;
}
