/* session.c - attaching to inode-svc and running calls on the session's
 * lanes. The segment's memfd goes to inode-svc over RUNDIR/session.sock
 * (SCM_RIGHTS); the socket then only tells us when the service went away.
 * A refused attach leaves inode-svc's reason for ext3d_attach_detail().
 * Nothing is sent before the run directory (/tmp/ext3d-UID must be ours)
 * and the server (root or our own uid, by SO_PEERCRED) are trusted.
 * A call in flight on a session that dies fails with -EIO at once; a call
 * that reaches its deadline fails with -ETIMEDOUT and leaves the session
 * dead too (its lane still holds the request). A session whose socket hung
 * up while idle is dead before the next call is sent. The next call attaches
 * anew, retrying while the supervisor runs (a group restart) until its own
 * deadline; each new session bumps the handle's generation. A call takes
 * mtx once, to borrow its lane; giving the lane back is an atomic clear,
 * with mtx only when a thread waits for a lane or the session died. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fdmsg.h"
#include "futex.h"
#include "internal.h"
#include "rundir.h"
#include "session.pb-c.h"

#define X3_CALL_POLL_MS 100
#define X3_RETRY_MS 20 /* between attach attempts during a restart */

static _Thread_local char x3_detail[256];

void x3_detail_set(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x3_detail, sizeof(x3_detail), fmt, ap);
	va_end(ap);
}

const char *ext3d_attach_detail(void)
{
	return x3_detail;
}

/* The server at the other end of sock runs as root or as us: anyone else
 * may have bound the socket to pose as the instance, and gets nothing of
 * ours (the segment, the requests). 0 or -EPERM (reason in x3_detail). */
static int x3_peer_check(int sock, const char *path)
{
	struct ucred peer;
	socklen_t len = sizeof(peer);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0)
		return -errno;
	if (peer.uid == 0 || peer.uid == geteuid())
		return 0;
	x3_detail_set("%s is served by uid %u, neither root nor you (uid %u): "
		      "refusing to attach to it", path, (unsigned)peer.uid, (unsigned)geteuid());
	return -EPERM;
}

static int x3_connect(const char *instance)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char rundir[CM_PATH_MAX];
	int fd, r, n;

	r = cm_rundir(instance, rundir, sizeof(rundir));
	if (r < 0)
		return r;
	r = cm_rundir_check(rundir, false, x3_detail, sizeof(x3_detail));
	if (r < 0)
		return r == -ENOENT ? -ECONNREFUSED : r;
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/session.sock", rundir);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = errno == ENOENT ? -ECONNREFUSED : -errno;
		if (r == -EACCES)
			x3_detail_set("%s: only the instance's client group may attach", sa.sun_path);
		close(fd);
		return r;
	}
	r = x3_peer_check(fd, sa.sun_path);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* Sends the attach message; 0, or inode-svc's refusal (its reason in
 * x3_detail). *ret_grants: the session names only granted inodes. */
static int x3_handshake(int sock, cm_seg *seg, int timeout_ms, bool *ret_grants)
{
	Ext3d__SessionAttach at = EXT3D__SESSION_ATTACH__INIT;
	Ext3d__Header header = EXT3D__HEADER__INIT;
	Ext3d__SessionAttachReply *reply;
	uint8_t buf[FDMSG_MAX];
	int fd, n, r, sent;

	header.version = EXT3D__VERSION__VERSION_CURRENT;
	at.header = &header;
	sent = fdmsg_send(sock, &at.base, seg->fd);
	/* Refused before it read our message, inode-svc still said why. */
	n = fdmsg_recv(sock, buf, &fd, sent < 0 ? 0 : timeout_ms);
	if (n < 0)
		return sent < 0 ? sent : n;
	if (fd >= 0)
		close(fd);
	reply = ext3d__session_attach_reply__unpack(NULL, (size_t)n, buf);
	if (!reply)
		return -EPROTO;
	r = reply->status;
	*ret_grants = reply->grants;
	if (r < 0 && reply->detail && reply->detail[0])
		x3_detail_set("%s", reply->detail);
	ext3d__session_attach_reply__free_unpacked(reply, NULL);
	return r;
}

/* Milliseconds left until deadline (ns), at least 1 while any is left. */
static int x3_left_ms(uint64_t deadline)
{
	uint64_t now = cm_now_ns();

	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

static int x3_session_open(ext3d *fs, uint64_t deadline)
{
	bool grants = true;
	cm_seg *seg;
	int sock, r;

	x3_detail[0] = '\0';
	sock = x3_connect(fs->instance);
	if (sock < 0)
		return sock;
	r = cm_seg_create(&seg);
	if (r < 0) {
		close(sock);
		return r;
	}
	r = x3_handshake(sock, seg, x3_left_ms(deadline), &grants);
	if (r < 0) {
		cm_seg_free(seg);
		close(sock);
		return r;
	}
	fs->sock = sock;
	fs->seg = seg;
	__atomic_store_n(&fs->grants, grants, __ATOMIC_RELAXED);
	__atomic_add_fetch(&fs->gen, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&fs->dead, false, __ATOMIC_RELAXED);
	return 0;
}

void x3_session_close(ext3d *fs)
{
	if (fs->sock >= 0)
		close(fs->sock);
	fs->sock = -1;
	fs->seg = cm_seg_free(fs->seg);
}

/* An attach that failed because inode-svc is not taking sessions yet, while
 * the instance's supervisor runs (a group restart): worth another try. */
static bool x3_attach_retryable(ext3d *fs, int r)
{
	char rundir[CM_PATH_MAX];
	int pid;

	if (r != -ECONNREFUSED && r != -ECONNRESET && r != -EPIPE && r != -EAGAIN)
		return false;
	if (cm_rundir(fs->instance, rundir, sizeof(rundir)) < 0)
		return false;
	r = cm_rundir_supervisor(rundir, &pid);
	return r == 1 || r == -EACCES;
}

/* Waits on lane_free (with mtx held) for at most X3_RETRY_MS, not past
 * the deadline: -ETIMEDOUT once it has passed. */
static int x3_lane_wait(ext3d *fs, uint64_t deadline)
{
	int left = x3_left_ms(deadline);
	struct timespec ts;

	if (left == 0)
		return -ETIMEDOUT;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)(left < X3_RETRY_MS ? left : X3_RETRY_MS) * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	(void)pthread_cond_timedwait(&fs->lane_free, &fs->mtx, &ts);
	return 0;
}

static bool x3_hung_up(int sock)
{
	struct pollfd pfd = {.fd = sock, .events = POLLIN};

	return poll(&pfd, 1, 0) > 0;
}

/* Borrows a free lane; replaces a dead session first once nobody uses it.
 * A session whose inode-svc went away while no call was on it (a group
 * restart between two calls) is found dead here, before a request is
 * pushed where nobody serves it, so that only calls in flight at the
 * restart fail.
 * Only threads holding mtx set busy bits, so a bit seen clear here stays
 * clear until set; x3_lane_give clears bits without mtx. */
static int x3_lane_take(ext3d *fs, unsigned *ret, uint64_t deadline)
{
	const unsigned all = (1u << CM_SEG_LANES) - 1;
	int r = 0;

	pthread_mutex_lock(&fs->mtx);
	for (;;) {
		unsigned busy = __atomic_load_n(&fs->busy, __ATOMIC_SEQ_CST);
		bool retry = false; /* the new session's attach may work later */
		if (!fs->dead && fs->seg && x3_hung_up(fs->sock))
			__atomic_store_n(&fs->dead, true, __ATOMIC_RELAXED);
		if (!fs->dead && fs->seg && busy != all) {
			unsigned lane = (unsigned)__builtin_ctz(~busy);
			__atomic_fetch_or(&fs->busy, 1u << lane, __ATOMIC_ACQUIRE);
			*ret = lane;
			r = 0;
			break;
		}
		if (fs->dead && busy == 0) {
			x3_session_close(fs);
			r = x3_session_open(fs, deadline);
			if (r == 0)
				continue;
			if (!x3_attach_retryable(fs, r))
				break;
			retry = true;
		}
		/* A giver that clears its bit after our load sees waiters > 0
		 * and signals under mtx, which the wait releases. */
		__atomic_add_fetch(&fs->waiters, 1, __ATOMIC_SEQ_CST);
		busy = __atomic_load_n(&fs->busy, __ATOMIC_SEQ_CST);
		bool moved = fs->dead ? busy == 0 && !retry : busy != all;
		r = moved ? 0 : x3_lane_wait(fs, deadline);
		__atomic_sub_fetch(&fs->waiters, 1, __ATOMIC_SEQ_CST);
		if (r < 0)
			break;
	}
	pthread_mutex_unlock(&fs->mtx);
	return r;
}

uint64_t x3_gen(ext3d *fs)
{
	return __atomic_load_n(&fs->gen, __ATOMIC_ACQUIRE);
}

int x3_session_attach(ext3d *fs)
{
	const char *env = getenv("EXT3D_CALL_TIMEOUT_MS");
	uint64_t deadline;
	int r;

	fs->call_timeout_ms = X3_CALL_TIMEOUT_MS;
	if (env && *env) {
		char *end;
		long v = strtol(env, &end, 10);
		if (*end || v <= 0 || v > 3600000)
			return -EINVAL;
		fs->call_timeout_ms = (int)v;
	}
	deadline = cm_now_ns() + (uint64_t)fs->call_timeout_ms * 1000000ULL;
	for (;;) {
		r = x3_session_open(fs, deadline);
		if (r == 0 || !x3_attach_retryable(fs, r))
			return r;
		if (x3_left_ms(deadline) == 0)
			return -ETIMEDOUT;
		usleep(X3_RETRY_MS * 1000);
	}
}

static void x3_lane_give(ext3d *fs, unsigned lane, bool dead)
{
	if (dead) {
		pthread_mutex_lock(&fs->mtx);
		__atomic_store_n(&fs->dead, true, __ATOMIC_RELAXED);
		__atomic_fetch_and(&fs->busy, ~(1u << lane), __ATOMIC_SEQ_CST);
		pthread_cond_broadcast(&fs->lane_free);
		pthread_mutex_unlock(&fs->mtx);
		return;
	}
	__atomic_fetch_and(&fs->busy, ~(1u << lane), __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&fs->waiters, __ATOMIC_SEQ_CST) == 0)
		return;
	pthread_mutex_lock(&fs->mtx);
	pthread_cond_signal(&fs->lane_free);
	pthread_mutex_unlock(&fs->mtx);
}

int x3_call_io(ext3d *fs, cm_fs_req *req, cm_fs_resp *resp, x3_io *io)
{
	uint64_t deadline = cm_now_ns() + (uint64_t)fs->call_timeout_ms * 1000000ULL;
	unsigned lane = 0;
	int r = x3_lane_take(fs, &lane, deadline);
	bool dead = false;

	if (r < 0)
		return r;
	_Alignas(8) uint8_t rec[CM_FS_REC_SIZE] = {0};

	/* The session cannot be swapped while we hold a lane. */
	io->gen = __atomic_load_n(&fs->gen, __ATOMIC_RELAXED);
	r = x3_dirty_before(fs, req, io->gen);
	if (r < 0) {
		x3_lane_give(fs, lane, false);
		return r;
	}
	if (io->inlen)
		memcpy(cm_seg_data(fs->seg, lane), io->in,
		       io->inlen < CM_SEG_DATA ? io->inlen : CM_SEG_DATA);

	req->hdr.version = CM_FS_VERSION;
	x3_act_apply(fs, req);
	req->hdr.seq = __atomic_add_fetch(&fs->next_seq, 1, __ATOMIC_RELAXED);
	memcpy(rec, req, sizeof(*req));
	r = cm_ring_push(cm_seg_req(fs->seg, lane), rec, x3_left_ms(deadline));
	while (r == 0) {
		int left = x3_left_ms(deadline);
		r = cm_ring_pop(cm_seg_resp(fs->seg, lane), rec,
				left < X3_CALL_POLL_MS ? left : X3_CALL_POLL_MS);
		if (r == 0)
			memcpy(resp, rec, sizeof(*resp));
		if (r == 0 && resp->hdr.seq != req->hdr.seq)
			r = -EPROTO;
		if (r != -ETIMEDOUT)
			break;
		if (x3_hung_up(fs->sock)) {
			dead = true;
			r = -EIO;
			break;
		}
		if (x3_left_ms(deadline) == 0) {
			/* The request stays on the lane: this session is done. */
			dead = true;
			break;
		}
		r = 0;
	}
	if (r == 0) {
		r = resp->hdr.status;
		size_t n = resp->length < io->outlen ? resp->length : io->outlen;
		if (r == 0 && io->out && n)
			memcpy(io->out, cm_seg_data(fs->seg, lane), n < CM_SEG_DATA ? n : CM_SEG_DATA);
	}
	x3_lane_give(fs, lane, dead);
	return r;
}

int x3_call(ext3d *fs, cm_fs_req *req, cm_fs_resp *resp, void *out, size_t outlen)
{
	x3_io io = {.out = out, .outlen = outlen};

	return x3_call_io(fs, req, resp, &io);
}
