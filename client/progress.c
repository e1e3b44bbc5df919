/* progress.c - the CLI's progress line; see progress.h.
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

#define CLI_PROGRESS_MS 150
#define CLI_PROGRESS_LINE 512

static struct {
	bool on, bytes, due;
	const char *what;
	uint64_t done, total;
	int64_t start_ns, drawn_ns;
	size_t cols;  /* the terminal's width */
	size_t width; /* of the line on screen; 0 when there is none */
} cli_pg;

static int64_t cli_progress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* EXT3D_PROGRESS=0 or 1 decides; otherwise whether stderr is a terminal. */
static bool cli_progress_wanted(void)
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
static size_t cli_progress_cols(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/* v bytes in binary units: "512 B", "12.3 MiB". */
static void cli_progress_human(double v, char *out, size_t cap)
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

/* The figures after the name: "12.3 MiB / 20.0 MiB  61%  45.6 MiB/s", or
 * "304 removed". */
static void cli_progress_figures(int64_t now, char *out, size_t cap)
{
	char done[32], total[32], rate[32];
	double secs = (double)(now - cli_pg.start_ns) / 1e9;
	int n;

	if (!cli_pg.bytes) {
		snprintf(out, cap, "%" PRIu64 " removed", cli_pg.done);
		return;
	}
	cli_progress_human((double)cli_pg.done, done, sizeof(done));
	n = snprintf(out, cap, "%s", done);
	if (cli_pg.total) {
		uint64_t pct = cli_pg.done >= cli_pg.total ? 100 : cli_pg.done * 100 / cli_pg.total;
		cli_progress_human((double)cli_pg.total, total, sizeof(total));
		n += snprintf(out + n, cap - (size_t)n, " / %s  %3" PRIu64 "%%", total, pct);
	}
	if (cli_pg.done && secs > 0) {
		cli_progress_human((double)cli_pg.done / secs, rate, sizeof(rate));
		snprintf(out + n, cap - (size_t)n, "  %s/s", rate);
	}
}

/* Writes the line over the one on screen, padded with blanks to cover a
 * longer one; a newline after it when final. */
static void cli_progress_draw(bool final)
{
	char figures[128], line[CLI_PROGRESS_LINE + 2];
	int64_t now = cli_progress_now();
	size_t len, name = strlen(cli_pg.what);
	const char *what = cli_pg.what, *dots = "";
	int n;

	cli_progress_figures(now, figures, sizeof(figures));
	/* Room for "\r", the name, ": ", the figures, and the cursor. */
	size_t room = cli_pg.cols > strlen(figures) + 6 ? cli_pg.cols - strlen(figures) - 6 : 3;
	if (room > CLI_PROGRESS_LINE / 2)
		room = CLI_PROGRESS_LINE / 2;
	if (name > room) {
		what += name - room + 3;
		dots = "...";
	}
	n = snprintf(line, CLI_PROGRESS_LINE, "\r%s%s: %s", dots, what, figures);
	len = (size_t)n - 1;
	for (size_t w = len; w < cli_pg.width && (size_t)n < CLI_PROGRESS_LINE; w++)
		line[n++] = ' ';
	if (final)
		line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, (size_t)n);
	cli_pg.width = final ? 0 : len;
	cli_pg.drawn_ns = now;
	cli_pg.due = false;
}

void cli_progress_begin(const char *what, bool bytes, uint64_t total)
{
	cli_pg.on = cli_progress_wanted();
	if (!cli_pg.on)
		return;
	cli_pg.what = what;
	cli_pg.bytes = bytes;
	cli_pg.total = total;
	cli_pg.done = 0;
	cli_pg.width = 0;
	cli_pg.cols = cli_progress_cols();
	cli_pg.start_ns = cli_progress_now();
	cli_progress_draw(false);
}

void cli_progress_add(uint64_t n)
{
	if (!cli_pg.on)
		return;
	cli_pg.done += n;
	if (cli_pg.due || cli_progress_now() - cli_pg.drawn_ns >= CLI_PROGRESS_MS * 1000000ll)
		cli_progress_draw(false);
}

void cli_progress_erase(void)
{
	char blank[CLI_PROGRESS_LINE + 2];
	size_t n = 0;

	if (!cli_pg.on || !cli_pg.width)
		return;
	blank[n++] = '\r';
	while (n <= cli_pg.width && n < CLI_PROGRESS_LINE)
		blank[n++] = ' ';
	blank[n++] = '\r';
	(void)!write(STDERR_FILENO, blank, n);
	cli_pg.width = 0;
	cli_pg.due = true;
}

void cli_progress_end(void)
{
	if (!cli_pg.on)
		return;
	cli_progress_draw(true);
	cli_pg.on = false;
}
