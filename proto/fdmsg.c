/* fdmsg.c - one protobuf message per SOCK_SEQPACKET packet, with an optional
 * SCM_RIGHTS descriptor; see fdmsg.h. */
#include "fdmsg.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int fdmsg_send(int sock, const ProtobufCMessage *m, int passfd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	uint8_t data[FDMSG_MAX];
	size_t len = protobuf_c_message_get_packed_size(m);
	struct iovec iov = {.iov_base = data, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (len > sizeof(data))
		return -EMSGSIZE;
	protobuf_c_message_pack(m, data);
	if (passfd >= 0) {
		struct cmsghdr *c;
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &passfd, sizeof(int));
	}
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

/* Takes the descriptors a packet carried: exactly one is accepted. */
static int fdmsg_take_fds(struct msghdr *msg, int *ret_fd)
{
	int nfds = 0, r = 0;

	*ret_fd = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (nfds++ == 0)
				*ret_fd = fd;
			else
				close(fd);
		}
	}
	if (nfds > 1 || (msg->msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*ret_fd >= 0)
			close(*ret_fd);
		*ret_fd = -1;
		r = -EPROTO;
	}
	return r;
}

int fdmsg_recv(int sock, void *buf, int *ret_fd, int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = FDMSG_MAX};
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct pollfd pfd = {.fd = sock, .events = POLLIN};
	ssize_t n;
	int r;

	*ret_fd = -1;
	r = poll(&pfd, 1, timeout_ms);
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return -errno;
	n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	r = fdmsg_take_fds(&msg, ret_fd);
	return r < 0 ? r : (int)n;
}
