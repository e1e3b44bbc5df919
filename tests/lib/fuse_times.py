#!/usr/bin/env python3
# fuse_times.py DIR - which of a file's and its directory's mtime and ctime
# each operation moves, one line per operation ("m" mtime, "c" ctime, "-"
# unchanged), for fuse.t to compare with what the kernel's ext3 moves.
import os
import sys
import time

root = sys.argv[1]


def st(p):
    s = os.lstat(p)
    return (s.st_mtime_ns, s.st_ctime_ns)


def moved(x, y):
    return ("m" if x[0] != y[0] else "-") + ("c" if x[1] != y[1] else "-")


def case(name, setup, op, before="f", after=None):
    d = os.path.join(root, name)
    os.mkdir(d)
    setup(d)
    b, bd = st(os.path.join(d, before)), st(d)
    time.sleep(0.02)
    op(d)
    a, ad = st(os.path.join(d, after or before)), st(d)
    print(f"{name} file {moved(b, a)} dir {moved(bd, ad)}")


def mk(d, data=b"hello"):
    with open(os.path.join(d, "f"), "wb") as f:
        f.write(data)


def opened(d, flags, fn=None):
    fd = os.open(d + "/f", flags)
    if fn:
        fn(fd)
    os.close(fd)


case("chmod-same", mk, lambda d: os.chmod(d + "/f", 0o644))
case("chown-same", mk, lambda d: os.chown(d + "/f", 0, 0))
case("chown-none", mk, lambda d: os.chown(d + "/f", -1, -1))
case("truncate-same", mk, lambda d: os.truncate(d + "/f", 5))
case("ftruncate-same", mk, lambda d: opened(d, os.O_WRONLY, lambda fd: os.ftruncate(fd, 5)))
case("truncate-grow", mk, lambda d: os.truncate(d + "/f", 50))
case("o_trunc-empty", lambda d: mk(d, b""), lambda d: opened(d, os.O_WRONLY | os.O_TRUNC))
case("o_trunc", mk, lambda d: opened(d, os.O_WRONLY | os.O_TRUNC))
case("write-0", mk, lambda d: opened(d, os.O_WRONLY, lambda fd: os.write(fd, b"")))
case("write", mk, lambda d: opened(d, os.O_WRONLY, lambda fd: os.write(fd, b"x")))
case("utime-now", mk, lambda d: os.utime(d + "/f"))
case("utime-set", mk, lambda d: os.utime(d + "/f", (1, 2)))
case("rename", mk, lambda d: os.rename(d + "/f", d + "/g"), "f", "g")
case("link", mk, lambda d: os.link(d + "/f", d + "/g"))
case("unlink-one-of-two", lambda d: (mk(d), os.link(d + "/f", d + "/g")),
     lambda d: os.unlink(d + "/g"))
case("symlink", mk, lambda d: os.symlink("f", d + "/s"))
case("read", mk, lambda d: opened(d, os.O_RDONLY, lambda fd: os.read(fd, 10)))
case("punch", lambda d: mk(d, b"x" * 5000),
     lambda d: os.system(f"fallocate -p -o 0 -l 4096 {d}/f"))
case("punch-past-eof", lambda d: mk(d, b"x" * 5000),
     lambda d: os.system(f"fallocate -p -o 9000 -l 4096 {d}/f"))
