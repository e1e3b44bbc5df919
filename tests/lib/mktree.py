#!/usr/bin/env python3
"""mktree.py DIR [--big-dir N] [--big-file MiB] - make a test tree for
mke2fs -d: nested directories, a directory of N entries (default 20000),
empty files, files with holes, a file large enough for double indirect
blocks, fast and slow symlinks, hard links, unusual names, modes, and, as
root, device nodes, a fifo, a socket and other owners. Deterministic."""
import argparse
import os
import random
import socket
import stat

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--big-dir", type=int, default=20000)
ap.add_argument("--big-file", type=int, default=5, help="MiB")
a = ap.parse_args()
rnd = random.Random(3)
root = a.dir
os.makedirs(root)
root_user = os.geteuid() == 0


def write(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def blob(n):
    return bytes(rnd.getrandbits(8) for _ in range(n)) if n < 4096 else os.urandom(n)


# nested directories, files of many sizes
d = root
for depth in range(8):
    d = os.path.join(d, "level%d" % depth)
    os.mkdir(d)
    for k in range(3):
        write(os.path.join(d, "f%d" % k), blob(rnd.choice([1, 100, 1023, 1024, 1025, 4096, 5000, 70000])))
os.mkdir(os.path.join(root, "empty-dir"))
write(os.path.join(root, "empty"), b"")
write(os.path.join(root, "one-byte"), b"x")

# holes: data, a hole, data; a hole at the start; a file that is all hole
with open(os.path.join(root, "holes"), "wb") as f:
    f.write(blob(5000))
    f.seek(3 * 1024 * 1024)
    f.write(blob(7000))
    f.seek(20 * 1024 * 1024)
    f.write(b"end")
with open(os.path.join(root, "hole-first"), "wb") as f:
    f.seek(300 * 1024)
    f.write(blob(100))
with open(os.path.join(root, "all-hole"), "wb") as f:
    f.truncate(2 * 1024 * 1024)

# past 12 + 256 blocks of 1 KiB and 12 + 1024 of 4 KiB: double indirect
with open(os.path.join(root, "big"), "wb") as f:
    for _ in range(a.big_file):
        f.write(os.urandom(1024 * 1024))

# symlinks: fast (< 60 bytes) and slow, absolute, relative, dangling
os.symlink("big", os.path.join(root, "fast-link"))
os.symlink("level0/level1/" + "x" * 200, os.path.join(root, "slow-link"))
os.symlink("/level0/level1/f0", os.path.join(root, "abs-link"))
os.symlink("no-such-target", os.path.join(root, "dangling"))
os.symlink("level0", os.path.join(root, "dir-link"))

# hard links
write(os.path.join(root, "linked"), blob(3000))
os.link(os.path.join(root, "linked"), os.path.join(root, "level0", "linked-too"))
os.link(os.path.join(root, "linked"), os.path.join(root, "linked-3"))

# unusual names
for name in ["with space", "tab\there", "ünïcödé-名前", "-dash", ".hidden", "a" * 255,
             "semi;colon", "q'uote\"s", "star*?"]:
    write(os.path.join(root, "names-" + name if len(name) < 200 else name), name.encode())

# modes
for m in [0o000, 0o400, 0o600, 0o755, 0o4755, 0o2755, 0o1777, 0o777]:
    write(os.path.join(root, "mode-%04o" % m), b"m", m)
os.mkdir(os.path.join(root, "sticky-dir"))
os.chmod(os.path.join(root, "sticky-dir"), 0o1777)

# the big directory
big = os.path.join(root, "bigdir")
os.mkdir(big)
for i in range(a.big_dir):
    write(os.path.join(big, "entry-%06d-%s" % (i, "y" * (i % 40))), b"%d" % i)

if root_user:
    os.mknod(os.path.join(root, "chardev"), 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(os.path.join(root, "blockdev"), 0o600 | stat.S_IFBLK, os.makedev(8, 1))
    os.mkfifo(os.path.join(root, "fifo"))
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(root, "sock"))
    s.close()
    for uid, gid, name in [(1000, 1000, "user-file"), (65534, 65534, "nobody-file"),
                           (0, 100, "group-file"), (123456, 654321, "big-ids")]:
        write(os.path.join(root, name), name.encode())
        os.chown(os.path.join(root, name), uid, gid)
    # for the permission checks
    os.mkdir(os.path.join(root, "private"), 0o700)
    write(os.path.join(root, "private", "secret"), b"secret")
    write(os.path.join(root, "root-only"), b"root only", 0o600)
    write(os.path.join(root, "world-readable"), b"everyone", 0o644)
    os.mkdir(os.path.join(root, "no-exec"), 0o644)
    os.chmod(os.path.join(root, "no-exec"), 0o644)
    write(os.path.join(root, "group-readable"), b"group 100", 0o640)
    os.chown(os.path.join(root, "group-readable"), 0, 100)
