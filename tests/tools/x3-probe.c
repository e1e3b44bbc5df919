/* x3-probe - what a client, hostile or not, gets from inode-svc; the shell
 * tests run it as other uids (setpriv) and compare its lines.
 *
 *   x3-probe [--instance NAME] byino INO...   each by-inode call on INO:
 *       "INO getattr=R read=R readdir=R readlink=R access=R" (R: ok or ENAME)
 *   x3-probe [--instance NAME] walk PATH      lookups from the root, then the
 *       byino line of the inode found, a forget, and getattr again
 *   x3-probe [--instance NAME] children PATH  readdir_ino of the directory
 *       found by lookups: getattr of a child before and after a forget; is
 *       the directory granted by its "." entry too?
 *   x3-probe [--instance NAME] hold N         attach up to N sessions, print
 *       "held K" and the refusal that stopped it, then hold until stdin ends
 *   x3-probe [--instance NAME] attach-ms      one attach and getattr: "ms R"
 *   x3-probe [--instance NAME] silent N       N connections that never send,
 *       held until stdin ends
 *   x3-probe [--instance NAME] raw KIND       one attach as KIND: garbage,
 *       truncated, oversized, blank (a zero segment), unsealed, nofd; prints
 *       inode-svc's reply "status=ENAME detail" or "closed"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ext3d.h"
#include "fdmsg.h"
#include "rundir.h"
#include "segment.h"
#include "session.pb-c.h"

static const char *xp_instance;

static const char *xp_res(long r)
{
	const char *n = r < 0 ? strerrorname_np((int)-r) : "ok";
	return n ? n : "E?";
}

static void xp_byino(ext3d *fs, uint64_t ino)
{
	ext3d_attr a;
	ext3d_dirent *ents = malloc(8 * sizeof(*ents));
	uint64_t cookie = 0;
	char buf[256];

	if (!ents)
		exit(2);
	int g = ext3d_getattr(fs, ino, &a);
	ssize_t rd = ext3d_read_ino(fs, ino, buf, sizeof(buf), 0);
	int dir = ext3d_readdir_ino(fs, ino, &cookie, ents, 8);
	ssize_t ln = ext3d_readlink_ino(fs, ino, buf, sizeof(buf));
	int ac = ext3d_access_ino(fs, ino, R_OK);
	printf("%" PRIu64 " getattr=%s read=%s readdir=%s readlink=%s access=%s\n", ino, xp_res(g),
	       xp_res(rd), xp_res(dir), xp_res(ln), xp_res(ac));
	free(ents);
}

/* Lookups from the root, one per component; the attributes of the last. */
static int xp_lookup_path(ext3d *fs, const char *path, ext3d_attr *a)
{
	char buf[4096], *save = NULL;
	int r = ext3d_getattr(fs, EXT3D_ROOT_INO, a);

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *c = strtok_r(buf, "/", &save); c && r == 0; c = strtok_r(NULL, "/", &save))
		r = ext3d_lookup(fs, a->ino, c, a);
	return r;
}

static int xp_walk(ext3d *fs, const char *path)
{
	ext3d_attr a;
	int r = xp_lookup_path(fs, path, &a);

	printf("lookup=%s\n", xp_res(r));
	if (r < 0)
		return 1;
	xp_byino(fs, a.ino);
	printf("forget=%s\n", xp_res(ext3d_forget(fs, a.ino, 1)));
	printf("after-forget getattr=%s\n", xp_res(ext3d_getattr(fs, a.ino, &a)));
	return 0;
}

static int xp_children(ext3d *fs, const char *path)
{
	ext3d_dirent ents[64];
	uint64_t cookie = 0, child = 0;
	ext3d_attr a, dir;
	int n = xp_lookup_path(fs, path, &dir);

	if (n == 0)
		n = ext3d_readdir_ino(fs, dir.ino, &cookie, ents, 64);
	printf("readdir=%s\n", xp_res(n));
	for (int i = 0; i < n && !child; i++)
		if (strcmp(ents[i].name, ".") && strcmp(ents[i].name, ".."))
			child = ents[i].ino;
	if (!child)
		return 1;
	printf("child getattr=%s\n", xp_res(ext3d_getattr(fs, child, &a)));
	printf("child forget=%s\n", xp_res(ext3d_forget(fs, child, 1)));
	printf("child after-forget getattr=%s\n", xp_res(ext3d_getattr(fs, child, &a)));
	/* The lookup granted the directory once; its "." entry did not. */
	printf("dir forget=%s\n", xp_res(ext3d_forget(fs, dir.ino, 1)));
	printf("dir forget again=%s\n", xp_res(ext3d_forget(fs, dir.ino, 1)));
	return 0;
}

static void xp_wait_stdin(void)
{
	char c;

	while (read(0, &c, 1) > 0)
		;
}

static int xp_hold(int n)
{
	ext3d **fss = calloc((size_t)n, sizeof(*fss));
	int k = 0, r = 0;
	ext3d_attr a;

	if (!fss)
		return 2;
	while (k < n && (r = ext3d_attach(xp_instance, &fss[k])) == 0 &&
	       (r = ext3d_getattr(fss[k], EXT3D_ROOT_INO, &a)) == 0)
		k++;
	printf("held %d refused=%s %s\n", k, k < n ? xp_res(r) : "none",
	       k < n ? ext3d_attach_detail() : "");
	fflush(stdout);
	xp_wait_stdin();
	for (int i = 0; i < n; i++)
		ext3d_detach(fss[i]);
	free(fss);
	return 0;
}

static int xp_attach_ms(void)
{
	struct timespec t0, t1;
	ext3d *fs = NULL;
	ext3d_attr a;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = ext3d_attach(xp_instance, &fs);
	if (r == 0)
		r = ext3d_getattr(fs, EXT3D_ROOT_INO, &a);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ext3d_detach(fs);
	printf("%ld %s\n", (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000),
	       xp_res(r));
	return r < 0;
}

static int xp_connect(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char rundir[4096];
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0 || cm_rundir(xp_instance, rundir, sizeof(rundir)) < 0)
		return -1;
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/session.sock", rundir) >=
		    (int)sizeof(sa.sun_path) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int xp_silent(int n)
{
	int opened = 0;

	for (int i = 0; i < n; i++)
		opened += xp_connect() >= 0;
	printf("open %d\n", opened);
	fflush(stdout);
	xp_wait_stdin();
	return 0;
}

/* A sealed memfd of a session segment's size: zeros, or a real segment. */
static int xp_memfd(bool seal)
{
	int fd = memfd_create("x3-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)cm_seg_size()) < 0)
		exit(2);
	if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		exit(2);
	return fd;
}

static int xp_send_raw(int sock, const void *buf, size_t len, int fd)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl = {0};
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		msg.msg_control = ctl.b;
		msg.msg_controllen = sizeof(ctl.b);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int xp_raw(const char *kind)
{
	Ext3d__SessionAttach at = EXT3D__SESSION_ATTACH__INIT;
	Ext3d__Header header = EXT3D__HEADER__INIT;
	static uint8_t big[65536];
	uint8_t msg[FDMSG_MAX];
	size_t len;
	int sock = xp_connect(), fd = -1, n, r;

	if (sock < 0)
		return printf("connect failed\n"), 1;
	header.version = EXT3D__VERSION__VERSION_CURRENT;
	at.header = &header;
	len = ext3d__session_attach__pack(&at, msg);
	if (!strcmp(kind, "garbage")) {
		for (size_t i = 0; i < 200; i++)
			big[i] = (uint8_t)(i * 37 + 11);
		r = xp_send_raw(sock, big, 200, -1);
	} else if (!strcmp(kind, "truncated")) {
		r = xp_send_raw(sock, msg, len - 1, fd = xp_memfd(true));
	} else if (!strcmp(kind, "oversized")) {
		memcpy(big, msg, len);
		r = xp_send_raw(sock, big, sizeof(big), fd = xp_memfd(true));
	} else if (!strcmp(kind, "blank")) {
		r = xp_send_raw(sock, msg, len, fd = xp_memfd(true));
	} else if (!strcmp(kind, "unsealed")) {
		r = xp_send_raw(sock, msg, len, fd = xp_memfd(false));
	} else if (!strcmp(kind, "nofd")) {
		r = xp_send_raw(sock, msg, len, -1);
	} else {
		return fprintf(stderr, "x3-probe: unknown kind %s\n", kind), 2;
	}
	if (r < 0)
		return printf("send=%s\n", xp_res(r)), 1;
	n = fdmsg_recv(sock, msg, &fd, 5000);
	if (n <= 0)
		return printf("closed %s\n", xp_res(n)), 0;
	Ext3d__SessionAttachReply *rep = ext3d__session_attach_reply__unpack(NULL, (size_t)n, msg);
	if (!rep)
		return printf("bad reply\n"), 1;
	printf("status=%s %s\n", xp_res(rep->status), rep->detail ? rep->detail : "");
	ext3d__session_attach_reply__free_unpacked(rep, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	ext3d *fs;
	int i = 1, r;

	if (i + 1 < argc && !strcmp(argv[i], "--instance")) {
		xp_instance = argv[i + 1];
		i += 2;
	}
	if (i + 1 == argc && !strcmp(argv[i], "attach-ms"))
		return xp_attach_ms();
	if (i + 2 > argc)
		return fprintf(stderr, "usage: see the head of x3-probe.c\n"), 2;
	if (!strcmp(argv[i], "hold"))
		return xp_hold(atoi(argv[i + 1]));
	if (!strcmp(argv[i], "silent"))
		return xp_silent(atoi(argv[i + 1]));
	if (!strcmp(argv[i], "raw"))
		return xp_raw(argv[i + 1]);
	r = ext3d_attach(xp_instance, &fs);
	if (r < 0)
		return fprintf(stderr, "x3-probe: attach: %s %s\n", xp_res(r), ext3d_attach_detail()), 1;
	if (!strcmp(argv[i], "byino"))
		for (int k = i + 1; k < argc; k++)
			xp_byino(fs, strtoull(argv[k], NULL, 10));
	else if (!strcmp(argv[i], "walk"))
		r = xp_walk(fs, argv[i + 1]);
	else if (!strcmp(argv[i], "children"))
		r = xp_children(fs, argv[i + 1]);
	else
		r = 2;
	ext3d_detach(fs);
	return r;
}
