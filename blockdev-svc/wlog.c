/* wlog.c - the optional write log: every write and flush, in the order
 * they were performed, appended to one file (format in internal.h). The
 * log is written before the device so that it never lacks a write the device
 * has; a failure to log fails the request. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "io.h"

int bd_wlog_open(bd_wlog *w, const char *path)
{
	struct stat st;

	w->fd = -1;
	if (!path)
		return 0;
	w->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (w->fd < 0)
		return -errno;
	if (fstat(w->fd, &st) < 0)
		return -errno;
	if (st.st_size == 0)
		return cm_write_full(w->fd, BD_WLOG_FILE_MAGIC, 8);
	return 0;
}

static int bd_wlog_append(bd_wlog *w, const struct bd_wlog_rec *rec, const void *data)
{
	size_t len = data ? (size_t)rec->nsect * CM_BD_SECTOR : 0;
	int r;

	r = cm_write_full(w->fd, rec, sizeof(*rec));
	if (r == 0 && len)
		r = cm_write_full(w->fd, data, len);
	return r;
}

int bd_wlog_write(bd_wlog *w, uint64_t sector, uint32_t nsect, uint32_t flags, const void *data)
{
	struct bd_wlog_rec rec = {
		.magic = BD_WLOG_REC_MAGIC, .op = BD_WLOG_WRITE,
		.sector = sector, .nsect = nsect, .flags = flags,
	};

	return w->fd < 0 ? 0 : bd_wlog_append(w, &rec, data);
}

int bd_wlog_flush(bd_wlog *w)
{
	struct bd_wlog_rec rec = {.magic = BD_WLOG_REC_MAGIC, .op = BD_WLOG_FLUSH};

	return w->fd < 0 ? 0 : bd_wlog_append(w, &rec, NULL);
}

void bd_wlog_close(bd_wlog *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}
