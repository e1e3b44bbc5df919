#!/usr/bin/env python3
"""notify-listen.py SOCKET OUT SECONDS - the service manager's end of
sd_notify, for install.t: binds a datagram socket at SOCKET and writes each
message it receives to OUT (one per line, newlines inside as '|') until
SECONDS pass or a STOPPING=1 message came."""
import os
import socket
import sys
import time

path, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o777)
end = time.monotonic() + seconds
with open(out, "w", buffering=1) as f:
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            msg = s.recv(4096).decode()
        except socket.timeout:
            break
        f.write(msg.strip().replace("\n", "|") + "\n")
        if "STOPPING=1" in msg.split("\n"):
            break
