/* session.c - client sessions: the listening socket RUNDIR/session.sock
 * (mode 0666, or 0660 and the --clients group), the attach handshake (peer
 * credentials from the kernel, the segment memfd by SCM_RIGHTS, sealed and
 * checked), admission (see internal.h), one worker per lane, and teardown
 * when the client detaches or dies (its socket hangs up). A connection
 * waits in `pending` until its attach message arrives, so a client that
 * stalls delays nobody, and is dropped after INO_ATTACH_TIMEOUT_MS; one
 * that misbehaves or is not admitted gets an error reply saying why and is
 * dropped. Only the session manager thread runs this file's code. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fdmsg.h"
#include "ops.h"
#include "log.h"
#include "session.pb-c.h"

int ino_sessions_listen(ino_svc *s)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, n;

	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/session.sock", s->rundir);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	(void)unlink(sa.sun_path);
	mode_t mask = umask(0177); /* nobody connects before the mode is set */
	n = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	(void)umask(mask);
	if (n < 0 || listen(fd, 128) < 0 ||
	    (s->clients_gid >= 0 && chown(sa.sun_path, (uid_t)-1, (gid_t)s->clients_gid) < 0) ||
	    chmod(sa.sun_path, s->clients_gid >= 0 ? 0660 : 0666) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	s->listen_fd = fd;
	return 0;
}

static int ino_peer_creds(int sock, ino_session *ss)
{
	gid_t groups[CM_FS_MAX_GROUPS];
	socklen_t len = sizeof(struct ucred);
	struct ucred cred;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	ss->peer.uid = cred.uid;
	ss->peer.gid = cred.gid;
	ss->peer_pid = cred.pid;
	ss->privileged = cred.uid == 0;
	len = sizeof(groups);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
		ss->peer.ngroups = len / sizeof(gid_t);
		for (uint32_t i = 0; i < ss->peer.ngroups; i++)
			ss->peer.groups[i] = groups[i];
	}
	return 0;
}

/* ss: the session attached (status 0), else NULL. */
static void ino_attach_reply(int sock, int status, const char *detail, ino_svc *s,
			     const ino_session *ss)
{
	Ext3d__SessionAttachReply reply = EXT3D__SESSION_ATTACH_REPLY__INIT;

	reply.status = status;
	reply.detail = (char *)detail;
	if (status == 0) {
		reply.root_ino = EXT3_ROOT_INO;
		reply.block_size = ino_fs_geom(s->fs)->block_size;
		reply.session_id = ss->id;
		/* Root names any inode, but its lookups hold inodes open too. */
		reply.grants = true;
	}
	(void)fdmsg_send(sock, &reply.base, -1);
}

/* Reads and checks the attach message; maps the segment it carries. */
static int ino_attach_handshake(int sock, ino_session *ss, const char **why)
{
	uint8_t buf[FDMSG_MAX];
	Ext3d__SessionAttach *at;
	int fd, n, r;

	n = fdmsg_recv(sock, buf, &fd, 0); /* the poll loop saw it arrive */
	if (n == -EPROTO)
		return *why = "oversized attach message, or more than one descriptor", n;
	if (n < 0)
		return *why = "no attach message", n;
	at = ext3d__session_attach__unpack(NULL, (size_t)n, buf);
	r = 0;
	if (!at)
		r = -EPROTO, *why = "malformed attach message";
	else if (!at->header || at->header->version != EXT3D__VERSION__VERSION_CURRENT)
		r = -EPROTONOSUPPORT, *why = "unsupported protocol version";
	else if (fd < 0)
		r = -EPROTO, *why = "attach carries no segment";
	if (at)
		ext3d__session_attach__free_unpacked(at, NULL);
	if (r == 0)
		r = cm_seg_map(fd, &ss->seg, why);
	if (r < 0 && fd >= 0 && !ss->seg)
		close(fd);
	return r;
}

static int ino_session_start_workers(ino_session *ss)
{
	for (unsigned i = 0; i < CM_SEG_LANES; i++) {
		struct ino_lane_arg *arg = malloc(sizeof(*arg));
		int r;
		if (!arg)
			return -ENOMEM;
		arg->ss = ss;
		arg->lane = i;
		r = pthread_create(&ss->workers[i], NULL, ino_lane_main, arg);
		if (r) {
			free(arg);
			return -r;
		}
	}
	return 0;
}

static void ino_session_free(ino_session *ss)
{
	atomic_store(&ss->closing, true);
	for (unsigned i = 0; i < CM_SEG_LANES; i++) {
		if (!ss->workers[i])
			continue;
		cm_event_signal(&cm_seg_req(ss->seg, i)->own_not_empty);
		pthread_join(ss->workers[i], NULL);
	}
	cm_seg_free(ss->seg);
	ino_grants_release(ss);
	ino_grants_fini(&ss->grants);
	close(ss->sock);
	free(ss);
}

/* May uid have one more session? 0, or -ENFILE (no session left for it)
 * or -EUSERS (its quota is used up), saying why. */
static int ino_admit(ino_svc *s, uint32_t uid, char *why, size_t len)
{
	unsigned total = 0, mine = 0;

	pthread_mutex_lock(&s->sessions_mtx);
	for (ino_session *ss = s->sessions; ss; ss = ss->next) {
		total++;
		mine += ss->peer.uid == uid;
	}
	pthread_mutex_unlock(&s->sessions_mtx);
	if (total >= INO_MAX_SESSIONS) {
		snprintf(why, len, "all %d sessions are in use", INO_MAX_SESSIONS);
		return -ENFILE;
	}
	if (uid == 0)
		return 0;
	if (total >= INO_MAX_SESSIONS - INO_ROOT_RESERVE) {
		snprintf(why, len, "the %d sessions open to users other than root are in use",
			 INO_MAX_SESSIONS - INO_ROOT_RESERVE);
		return -ENFILE;
	}
	if (mine >= s->sessions_per_uid) {
		snprintf(why, len, "uid %u holds %u sessions, the most one uid may (sessions-per-uid)",
			 uid, mine);
		return -EUSERS;
	}
	return 0;
}

/* Drops pending[i]; status < 0: tells the peer why first (after taking a
 * message it may have sent, so that the close does not reset the reply). */
static void ino_pending_drop(ino_svc *s, int i, int status, const char *why)
{
	uint8_t buf[FDMSG_MAX];
	int fd;

	if (status < 0) {
		if (fdmsg_recv(s->pending[i].sock, buf, &fd, 0) >= 0 && fd >= 0)
			close(fd);
		ino_attach_reply(s->pending[i].sock, status, why, s, NULL);
	}
	close(s->pending[i].sock);
	s->pending[i] = s->pending[--s->npending];
}

/* The pending connection to drop for a new one of uid, or -1 for none: the
 * oldest of uid's own when it has INO_PENDING_PER_UID waiting, else the
 * oldest of all when every slot is taken. */
static int ino_pending_victim(ino_svc *s, uint32_t uid)
{
	int mine = 0, oldest_mine = -1, oldest = -1;

	for (int i = 0; i < s->npending; i++) {
		uint64_t since = s->pending[i].since;
		if (oldest < 0 || since < s->pending[oldest].since)
			oldest = i;
		if (s->pending[i].uid != uid)
			continue;
		mine++;
		if (oldest_mine < 0 || since < s->pending[oldest_mine].since)
			oldest_mine = i;
	}
	if (mine >= INO_PENDING_PER_UID)
		return oldest_mine;
	return s->npending == INO_MAX_PENDING ? oldest : -1;
}

/* Accepts the connections waiting (a bounded number per round, so that a
 * flood cannot starve the sessions) and parks each until its attach
 * message arrives. */
static void ino_sessions_accept(ino_svc *s)
{
	for (int k = 0; k < INO_MAX_PENDING; k++) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		int sock = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), victim;
		uint64_t now = cm_now_ns();

		if (sock < 0)
			return;
		if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			close(sock);
			continue;
		}
		victim = ino_pending_victim(s, cred.uid);
		if (victim >= 0) {
			cm_warn("too many connections waiting to attach (uid %u): dropping the oldest",
				s->pending[victim].uid);
			ino_pending_drop(s, victim, -EAGAIN, "too many connections waiting to attach");
		}
		s->pending[s->npending++] = (struct ino_pending){
			.sock = sock, .uid = cred.uid, .since = now,
			.until = now + INO_ATTACH_TIMEOUT_MS * 1000000ULL,
		};
	}
}

/* The attach message of a pending connection arrived: make the session. */
static void ino_session_attach(ino_svc *s, int sock)
{
	const char *what = "";
	char why[160] = "";
	ino_session *ss;
	int r;

	ss = calloc(1, sizeof(*ss));
	if (!ss) {
		close(sock);
		return;
	}
	ss->svc = s;
	ss->sock = sock;
	ss->id = ++s->next_session_id;
	ino_grants_init(&ss->grants);
	r = ino_peer_creds(sock, ss);
	if (r < 0)
		snprintf(why, sizeof(why), "no peer credentials");
	/* The message is read first: closing on an unread one would reset the
	 * connection before the client reads why it was refused. */
	if (r == 0 && (r = ino_attach_handshake(sock, ss, &what)) < 0)
		snprintf(why, sizeof(why), "%s", what);
	if (r == 0)
		r = ino_admit(s, ss->peer.uid, why, sizeof(why));
	if (r == 0 && (r = ino_session_start_workers(ss)) < 0)
		snprintf(why, sizeof(why), "cannot start workers");
	ino_attach_reply(sock, r, why, s, r == 0 ? ss : NULL);
	if (r < 0) {
		cm_warn("attach from pid %d uid %u refused: %s", (int)ss->peer_pid, ss->peer.uid, why);
		ino_session_free(ss);
		return;
	}
	cm_info("session %llu: pid %d uid %u attached", (unsigned long long)ss->id,
		(int)ss->peer_pid, ss->peer.uid);
	pthread_mutex_lock(&s->sessions_mtx);
	ss->next = s->sessions;
	s->sessions = ss;
	pthread_mutex_unlock(&s->sessions_mtx);
}

/* Removes and frees the sessions whose client hung up. */
static void ino_sessions_reap(ino_svc *s, struct pollfd *pfds, int n)
{
	for (int i = 0; i < n; i++) {
		ino_session **pp, *ss;
		if (!(pfds[i].revents & (POLLHUP | POLLERR | POLLIN)))
			continue;
		pthread_mutex_lock(&s->sessions_mtx);
		for (pp = &s->sessions; *pp && (*pp)->sock != pfds[i].fd; pp = &(*pp)->next)
			;
		ss = *pp;
		if (ss)
			*pp = ss->next;
		pthread_mutex_unlock(&s->sessions_mtx);
		if (ss) {
			cm_info("session %llu: detached", (unsigned long long)ss->id);
			ino_session_free(ss);
		}
	}
}

/* Attaches the pending connections whose message arrived (or that hung
 * up: their attach fails) and gives up on those past their time. */
static void ino_pending_serve(ino_svc *s, const struct pollfd *pfds)
{
	uint64_t now = cm_now_ns();

	for (int i = s->npending - 1; i >= 0; i--) {
		int sock = s->pending[i].sock;
		if (pfds[i].fd == sock && pfds[i].revents) {
			s->pending[i] = s->pending[--s->npending];
			ino_session_attach(s, sock);
		} else if (now > s->pending[i].until) {
			cm_warn("a connection of uid %u sent no attach message in %d ms: dropped",
				s->pending[i].uid, INO_ATTACH_TIMEOUT_MS);
			ino_pending_drop(s, i, -ETIMEDOUT, "no attach message in time");
		}
	}
}

void ino_sessions_run(ino_svc *s)
{
	struct pollfd pfds[1 + INO_MAX_PENDING + INO_MAX_SESSIONS];

	while (!cm_service_stopping()) {
		int n = 1 + s->npending, r;
		pfds[0] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
		for (int i = 0; i < s->npending; i++)
			pfds[1 + i] = (struct pollfd){.fd = s->pending[i].sock, .events = POLLIN};
		pthread_mutex_lock(&s->sessions_mtx);
		for (ino_session *ss = s->sessions; ss && n < (int)(sizeof(pfds) / sizeof(pfds[0]));
		     ss = ss->next)
			pfds[n++] = (struct pollfd){.fd = ss->sock, .events = POLLIN};
		pthread_mutex_unlock(&s->sessions_mtx);
		r = poll(pfds, (nfds_t)n, 200);
		if (r > 0)
			ino_sessions_reap(s, pfds + 1 + s->npending, n - 1 - s->npending);
		ino_pending_serve(s, pfds + 1);
		if (r > 0 && (pfds[0].revents & POLLIN))
			ino_sessions_accept(s);
	}
}

void ino_sessions_stop(ino_svc *s)
{
	ino_session *ss;

	while ((ss = s->sessions)) {
		s->sessions = ss->next;
		ino_session_free(ss);
	}
	while (s->npending)
		ino_pending_drop(s, s->npending - 1, 0, NULL);
	close(s->listen_fd);
}
