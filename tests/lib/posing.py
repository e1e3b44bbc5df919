#!/usr/bin/python3
"""posing.py PATH UID LOG - a server posing as an instance's session.sock,
for rundir.t: binds the SOCK_SEQPACKET socket PATH (mode 0777), becomes
UID (when root), listens, and logs one line per connection to LOG:
"bytes=N fds=M", what the client sent before it closed, until a
connection sends b"end" (logged as "end"); then it exits. Connections are
taken in the order they were made, so a client that connected before the
"end" is in the log once "end" is."""
import os
import socket
import sys

path, uid, log = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], "a", buffering=1)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
srv.bind(path)
os.chmod(path, 0o777)
if os.getuid() == 0:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
srv.listen(8)
log.write("listening\n")
while True:
    conn, _ = srv.accept()
    conn.settimeout(30)
    try:
        data, anc, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(64))
    except OSError:
        data, anc = b"", []
    fds = 0
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += len(payload) // 4
    conn.close()
    if data == b"end":
        log.write("end\n")
        break
    log.write("bytes=%d fds=%d\n" % (len(data), fds))
