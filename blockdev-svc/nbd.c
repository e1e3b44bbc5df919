/* nbd.c - the device as an NBD export, spoken through libnbd.
 *
 * The first connection uses the URI (before the sandbox: it may resolve a
 * name); it records the server's socket address and the export's name, so
 * that a reconnection inside the sandbox needs only socket() and connect().
 * TLS URIs are refused: a reconnection could not redo the handshake.
 *
 * A request is split into pieces of BD_NBD_PIECE bytes, all in flight at
 * once. If the connection drops, the request waits for a new one, with
 * backoff, and sends its pieces again: reads are safe to repeat, and so are
 * writes, none of which was answered to the client yet. Writes the server
 * acknowledged since the last flush are kept (pending) and sent again
 * first, in order, because a server that restarted may have lost them
 * from its cache while the journal already counts on them reaching the
 * disk at the next flush. A request that is not done --device-timeout
 * after it started fails with EIO, and so does every request after it
 * until a connection is made again (tried at most every BD_NBD_RETRY_MAX
 * ms). An error the server reports on a live connection is EIO at once.
 */
#include <errno.h>
#include <libnbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "internal.h"
#include "log.h"
#include "futex.h"

#define BD_NBD_PIECE (256u * 1024)       /* bytes per NBD command */
#define BD_NBD_MAX_CMDS (CM_BD_MAX_IOV + 8) /* commands of one request */
#define BD_NBD_PENDING_MAX (64u << 20)   /* unflushed bytes kept before a flush of our own */
#define BD_NBD_RETRY_MIN 50              /* ms: first backoff */
#define BD_NBD_RETRY_MAX 1000            /* ms: longest backoff */
#define BD_NBD_POLL_MS 100

typedef struct bd_nbd_kept {
	uint64_t off;
	uint32_t len;
	void *data;
} bd_nbd_kept;

struct bd_nbd {
	struct nbd_handle *h;          /* NULL while disconnected */
	struct sockaddr_storage peer;  /* [immutable] the server */
	socklen_t peerlen;
	char *export_name;             /* [immutable] */
	uint64_t size;                 /* [immutable] bytes */
	bool read_only, can_fua, can_flush; /* [immutable] as the server said first */
	uint64_t timeout_ns;           /* [immutable] --device-timeout */
	uint64_t retry_at_ns;          /* CM_LINK_FAILED: no attempt before this */
	uint32_t backoff_ms;
	bd_nbd_kept *pending;         /* acknowledged since the last flush, in order */
	size_t npending, pending_cap;
	uint64_t pending_bytes;
	cm_device *stat;
};

/* One command of a request: a piece of a read or write, or a flush. */
typedef struct bd_nbd_cmd {
	int op;                        /* CM_BD_READ, CM_BD_WRITE, CM_BD_FLUSH */
	uint64_t off;
	uint32_t len;
	void *buf;
	uint32_t flags;                /* LIBNBD_CMD_FLAG_* */
	int64_t cookie;                /* 0: not sent or done */
} bd_nbd_cmd;

static void bd_nbd_error(bd_nbd *n, const char *what)
{
	snprintf(n->stat->last_error, sizeof(n->stat->last_error), "%s: %s", what,
		 nbd_get_error() ? nbd_get_error() : strerror(errno));
}

static bool bd_nbd_dead(bd_nbd *n)
{
	return nbd_aio_is_dead(n->h) || nbd_aio_is_closed(n->h);
}

static void bd_nbd_drop(bd_nbd *n)
{
	if (n->h)
		nbd_close(n->h);
	n->h = NULL;
	atomic_store(&n->stat->in_flight, 0);
}

static void bd_nbd_in_flight(bd_nbd *n, int delta)
{
	uint32_t now = atomic_load(&n->stat->in_flight) + (uint32_t)delta;

	atomic_store(&n->stat->in_flight, now);
	if (now > atomic_load(&n->stat->max_in_flight))
		atomic_store(&n->stat->max_in_flight, now);
}

static int64_t bd_nbd_send(bd_nbd *n, bd_nbd_cmd *c)
{
	switch (c->op) {
	case CM_BD_READ:
		return nbd_aio_pread(n->h, c->buf, c->len, c->off, NBD_NULL_COMPLETION, 0);
	case CM_BD_WRITE:
		return nbd_aio_pwrite(n->h, c->buf, c->len, c->off, NBD_NULL_COMPLETION, c->flags);
	default:
		return nbd_aio_flush(n->h, NBD_NULL_COMPLETION, 0);
	}
}

/* Sends every command and waits for all of them. 0; -EIO if the server
 * failed one; -ENOTCONN if the connection is lost; -ETIMEDOUT at the
 * deadline. Returns only once libnbd holds no pointer to a buffer. */
static int bd_nbd_exec(bd_nbd *n, bd_nbd_cmd *cmds, int ncmds, uint64_t deadline_ns)
{
	bool lost = false;
	int r = 0, left = 0;

	for (int i = 0; i < ncmds; i++) {
		cmds[i].cookie = bd_nbd_send(n, &cmds[i]);
		if (cmds[i].cookie == -1) {
			bd_nbd_error(n, "send");
			r = -EIO;
			lost = bd_nbd_dead(n);
			cmds[i].cookie = 0;
			break;
		}
		left++;
	}
	bd_nbd_in_flight(n, left);
	while (left > 0) {
		uint64_t now = cm_now_ns();
		int wait_ms;

		for (int i = 0; i < ncmds; i++) {
			int done;

			if (cmds[i].cookie <= 0)
				continue;
			done = nbd_aio_command_completed(n->h, (uint64_t)cmds[i].cookie);
			if (done == 0)
				continue;
			cmds[i].cookie = 0;
			left--;
			bd_nbd_in_flight(n, -1);
			if (done < 0) {
				int e = nbd_get_errno();

				bd_nbd_error(n, "request");
				if (e == ENOTCONN || e == ECONNRESET || e == EPIPE || e == ESHUTDOWN)
					lost = true;
				r = -EIO;
			}
		}
		if (left == 0)
			break;
		if (bd_nbd_dead(n) || now >= deadline_ns) {
			/* Closing the handle retires what is still in flight. */
			r = now >= deadline_ns && !bd_nbd_dead(n) ? -ETIMEDOUT : -ENOTCONN;
			bd_nbd_drop(n);
			return r;
		}
		wait_ms = (int)((deadline_ns - now) / 1000000) + 1;
		if (nbd_poll(n->h, wait_ms < BD_NBD_POLL_MS ? wait_ms : BD_NBD_POLL_MS) < 0 &&
		    !bd_nbd_dead(n))
			bd_nbd_error(n, "poll");
	}
	if (r < 0 && (lost || bd_nbd_dead(n))) {
		r = -ENOTCONN;
		bd_nbd_drop(n);
	}
	return r;
}

/* Sends the writes acknowledged since the last flush again, in order. */
static int bd_nbd_replay(bd_nbd *n, uint64_t deadline_ns)
{
	bd_nbd_cmd cmd = {.op = CM_BD_WRITE};
	int r;

	for (size_t i = 0; i < n->npending; i++) {
		cmd.off = n->pending[i].off;
		cmd.len = n->pending[i].len;
		cmd.buf = n->pending[i].data;
		r = bd_nbd_exec(n, &cmd, 1, deadline_ns);
		if (r < 0)
			return r;
	}
	atomic_fetch_add(&n->stat->replayed, n->npending);
	return 0;
}

/* A socket connected to the recorded server, or -errno. Blocking, but
 * bounded: connect(2) gives up at SO_SNDTIMEO. */
static int bd_nbd_socket(bd_nbd *n, uint64_t deadline_ns)
{
	uint64_t left_us = (deadline_ns - cm_now_ns()) / 1000 + 1;
	struct timeval tv = {.tv_sec = (time_t)(left_us / 1000000),
			     .tv_usec = (suseconds_t)(left_us % 1000000)};
	int fd, r;

	fd = socket(n->peer.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&n->peer, n->peerlen) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* One attempt to connect again, the handshake and the replay included. */
static int bd_nbd_reconnect(bd_nbd *n, uint64_t deadline_ns)
{
	int fd, r = -ENOTCONN;

	if (cm_now_ns() >= deadline_ns)
		return -ETIMEDOUT;
	n->h = nbd_create();
	if (!n->h)
		return -ENOMEM;
	fd = bd_nbd_socket(n, deadline_ns);
	if (fd < 0) {
		snprintf(n->stat->last_error, sizeof(n->stat->last_error), "connect: %s",
			 strerror(-fd));
		bd_nbd_drop(n);
		return fd;
	}
	if (nbd_set_export_name(n->h, n->export_name) < 0 ||
	    nbd_aio_connect_socket(n->h, fd) < 0) {
		bd_nbd_error(n, "connect");
		bd_nbd_drop(n);
		return -ENOTCONN;
	}
	while (!nbd_aio_is_ready(n->h) && !bd_nbd_dead(n) && cm_now_ns() < deadline_ns)
		(void)nbd_poll(n->h, BD_NBD_POLL_MS);
	if (!nbd_aio_is_ready(n->h)) {
		bd_nbd_error(n, "handshake");
	} else if ((uint64_t)nbd_get_size(n->h) != n->size ||
		   (nbd_is_read_only(n->h) == 1) != n->read_only) {
		snprintf(n->stat->last_error, sizeof(n->stat->last_error),
			 "the export changed size or became read-only; not using it");
		r = -EMEDIUMTYPE;
	} else if ((r = bd_nbd_replay(n, deadline_ns)) == 0) {
		atomic_fetch_add(&n->stat->reconnects, 1);
		atomic_store(&n->stat->link, CM_LINK_UP);
		n->backoff_ms = BD_NBD_RETRY_MIN;
		cm_info("reconnected to the NBD server (%zu unflushed writes sent again)",
			n->npending);
		return 0;
	}
	bd_nbd_drop(n);
	return r;
}

static void bd_nbd_sleep_ms(uint32_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Runs one request to the end, through lost connections, within the
 * deadline. */
static int bd_nbd_run(bd_nbd *n, bd_nbd_cmd *cmds, int ncmds)
{
	uint64_t now = cm_now_ns(), deadline = now + n->timeout_ns;
	int r;

	if (!n->h && atomic_load(&n->stat->link) == CM_LINK_FAILED) {
		if (now < n->retry_at_ns)
			return -EIO;
		/* One short attempt: the server may be back. */
		deadline = now + (uint64_t)BD_NBD_RETRY_MAX * 1000000;
		n->retry_at_ns = deadline + (uint64_t)BD_NBD_RETRY_MAX * 1000000;
		if (bd_nbd_reconnect(n, deadline) < 0)
			return -EIO;
		deadline = cm_now_ns() + n->timeout_ns;
	}
	for (;;) {
		if (cm_now_ns() >= deadline)
			break;
		if (!n->h) {
			atomic_store(&n->stat->link, CM_LINK_RECONNECTING);
			r = bd_nbd_reconnect(n, deadline);
			if (r < 0) {
				uint64_t left = cm_now_ns() < deadline ? deadline - cm_now_ns() : 0;
				uint64_t wait = (uint64_t)n->backoff_ms * 1000000;

				if (left == 0)
					break;
				bd_nbd_sleep_ms((uint32_t)((wait < left ? wait : left) / 1000000));
				if (n->backoff_ms < BD_NBD_RETRY_MAX)
					n->backoff_ms *= 2;
				continue;
			}
		}
		r = bd_nbd_exec(n, cmds, ncmds, deadline);
		if (r != -ENOTCONN && r != -ETIMEDOUT)
			return r;
		if (r == -ETIMEDOUT)
			break;
		cm_warn("NBD connection lost (%s); connecting again", n->stat->last_error);
	}
	atomic_store(&n->stat->link, CM_LINK_FAILED);
	n->retry_at_ns = cm_now_ns() + (uint64_t)BD_NBD_RETRY_MAX * 1000000;
	cm_warn("NBD server unreachable for %llu ms: requests fail with EIO (%s)",
		(unsigned long long)(n->timeout_ns / 1000000), n->stat->last_error);
	return -EIO;
}

/* Splits [off, off + len) of buf into commands; returns how many. */
static int bd_nbd_pieces(bd_nbd_cmd *cmds, int at, int op, uint64_t off, void *buf,
			 size_t len, uint32_t flags)
{
	for (size_t done = 0; done < len; done += BD_NBD_PIECE) {
		size_t piece = len - done < BD_NBD_PIECE ? len - done : BD_NBD_PIECE;

		cmds[at++] = (bd_nbd_cmd){.op = op, .off = off + done, .len = (uint32_t)piece,
					  .buf = (char *)buf + done, .flags = flags};
	}
	return at;
}

int bd_nbd_readv(bd_nbd *n, uint64_t off, const struct iovec *iov, int iovcnt)
{
	bd_nbd_cmd cmds[BD_NBD_MAX_CMDS];
	int ncmds = 0;

	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > BD_NBD_PIECE * 4 || ncmds + 5 > BD_NBD_MAX_CMDS)
			return -EINVAL;
		ncmds = bd_nbd_pieces(cmds, ncmds, CM_BD_READ, off, iov[i].iov_base,
				      iov[i].iov_len, 0);
		off += iov[i].iov_len;
	}
	return bd_nbd_run(n, cmds, ncmds);
}

static void bd_nbd_forget_pending(bd_nbd *n)
{
	for (size_t i = 0; i < n->npending; i++)
		free(n->pending[i].data);
	n->npending = 0;
	n->pending_bytes = 0;
}

int bd_nbd_flush(bd_nbd *n)
{
	bd_nbd_cmd cmd = {.op = CM_BD_FLUSH};
	int r;

	if (n->read_only || !n->can_flush)
		return 0;
	r = bd_nbd_run(n, &cmd, 1);
	if (r == 0)
		bd_nbd_forget_pending(n);
	return r;
}

/* Keeps a copy of an acknowledged write until a flush covers it. */
static int bd_nbd_keep(bd_nbd *n, uint64_t off, const void *buf, size_t len)
{
	bd_nbd_kept *w;

	if (n->npending == n->pending_cap) {
		size_t cap = n->pending_cap ? n->pending_cap * 2 : 64;

		w = realloc(n->pending, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		n->pending = w;
		n->pending_cap = cap;
	}
	w = &n->pending[n->npending];
	w->data = malloc(len);
	if (!w->data)
		return -ENOMEM;
	memcpy(w->data, buf, len);
	w->off = off;
	w->len = (uint32_t)len;
	n->npending++;
	n->pending_bytes += len;
	return 0;
}

int bd_nbd_write(bd_nbd *n, uint64_t off, const void *buf, size_t len, bool fua)
{
	bd_nbd_cmd cmds[BD_NBD_MAX_CMDS];
	uint32_t flags = fua && n->can_fua ? LIBNBD_CMD_FLAG_FUA : 0;
	int ncmds, r;

	if (len > BD_NBD_PIECE * 4)
		return -EINVAL;
	ncmds = bd_nbd_pieces(cmds, 0, CM_BD_WRITE, off, (void *)buf, len, flags);
	r = bd_nbd_run(n, cmds, ncmds);
	if (r < 0 || !n->can_flush)
		return r;
	if (fua && !n->can_fua)
		return bd_nbd_flush(n);
	if (!fua) {
		/* Without a copy, a write the server loses could not be sent
		 * again: make it durable now instead. */
		if (n->pending_bytes + len > BD_NBD_PENDING_MAX || bd_nbd_keep(n, off, buf, len) < 0)
			return bd_nbd_flush(n);
	}
	return 0;
}

uint64_t bd_nbd_size(const bd_nbd *n)
{
	return n->size;
}

bool bd_nbd_read_only(const bd_nbd *n)
{
	return n->read_only;
}

/* The first connection, through the URI; retried for a while so that a
 * server starting alongside the instance is waited for, but well within
 * the supervisor's readiness deadline. */
#define BD_NBD_FIRST_MS 5000

static int bd_nbd_first(bd_nbd *n, const char *uri, char *why, size_t whylen)
{
	uint64_t wait = n->timeout_ns < BD_NBD_FIRST_MS * 1000000ull ? n->timeout_ns
								    : BD_NBD_FIRST_MS * 1000000ull;
	uint64_t deadline = cm_now_ns() + wait;

	for (;;) {
		n->h = nbd_create();
		if (!n->h)
			return -ENOMEM;
		if (nbd_connect_uri(n->h, uri) == 0)
			return 0;
		snprintf(why, whylen, "cannot connect to %s: %s", uri, nbd_get_error());
		bd_nbd_drop(n);
		if (cm_now_ns() >= deadline)
			return -ECONNREFUSED;
		bd_nbd_sleep_ms(n->backoff_ms);
		if (n->backoff_ms < BD_NBD_RETRY_MAX)
			n->backoff_ms *= 2;
	}
}

int bd_nbd_open(bd_nbd **ret, const char *uri, uint32_t timeout_ms, cm_device *stat,
		char *why, size_t whylen)
{
	bd_nbd *n = calloc(1, sizeof(*n));
	int64_t size;
	int r;

	if (!n)
		return -ENOMEM;
	*ret = n;
	n->stat = stat;
	n->timeout_ns = (uint64_t)timeout_ms * 1000000;
	n->backoff_ms = BD_NBD_RETRY_MIN;
	if (strncmp(uri, "nbds", 4) == 0) {
		snprintf(why, whylen, "%s: TLS (nbds) is not supported", uri);
		return -EPROTONOSUPPORT;
	}
	r = bd_nbd_first(n, uri, why, whylen);
	if (r < 0)
		return r;
	size = nbd_get_size(n->h);
	n->read_only = nbd_is_read_only(n->h) == 1;
	n->can_fua = nbd_can_fua(n->h) == 1;
	n->can_flush = nbd_can_flush(n->h) == 1;
	n->export_name = nbd_get_export_name(n->h);
	n->peerlen = sizeof(n->peer);
	if (size < 0 || !n->export_name ||
	    getpeername(nbd_aio_get_fd(n->h), (struct sockaddr *)&n->peer, &n->peerlen) < 0) {
		snprintf(why, whylen, "%s: %s", uri, nbd_get_error() ? nbd_get_error() : strerror(errno));
		return -EIO;
	}
	n->size = (uint64_t)size;
	atomic_store(&stat->transport, n->peer.ss_family == AF_UNIX ? CM_TRANSPORT_NBD_UNIX
								     : CM_TRANSPORT_NBD_TCP);
	return 0;
}

void bd_nbd_close(bd_nbd *n)
{
	if (!n)
		return;
	if (n->h) {
		(void)bd_nbd_flush(n);
		if (n->h)
			nbd_shutdown(n->h, 0);
	}
	bd_nbd_drop(n);
	bd_nbd_forget_pending(n);
	free(n->pending);
	free(n->export_name);
	free(n);
}
