/* fdmsg.h - protobuf messages over an AF_UNIX SOCK_SEQPACKET socket, one per
 * packet, optionally carrying one file descriptor (SCM_RIGHTS). Used where
 * nng cannot go: handing a session segment's memfd to inode-svc. */
#ifndef FDMSG_H
#define FDMSG_H

#include <protobuf-c/protobuf-c.h>

#define FDMSG_MAX 4096

/* passfd < 0: no descriptor. 0 or -errno. */
int fdmsg_send(int sock, const ProtobufCMessage *m, int passfd);
/* Receives one packet into buf (FDMSG_MAX bytes); its length, or -errno;
 * *ret_fd is the descriptor it carried or -1. A packet with more than one
 * descriptor is refused (-EPROTO) and its descriptors closed. */
int fdmsg_recv(int sock, void *buf, int *ret_fd, int timeout_ms);

#endif
