#!/bin/sh
# fusekern.t - ext3d-fuse against the kernel's ext3 on what x3-posixseq
# does not reach: the same snippet runs on a kernel loop mount and on an
# ext3d-fuse mount of identical images, and prints the same.
# chown(f, -1, -1) on set-id files, by the owner (the bits it kills go)
# and by others (EPERM where a bit would go: a mode change, the owner's
# right; but see sgid-write). A write and a truncate by a caller outside
# a set-group-ID file's group take the bit. Access times as relatime keeps them (a read, a readdir, a
# readlink move an old atime, not ctime; a second read does not). The
# reserved blocks: uid 1000 fills the space that is not
# reserved and gets ENOSPC with the reserved blocks still free, root then
# writes into them until ENOSPC. e2fsck -fn is clean on both images.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/fusemnt.sh"

t_need_root "kernel loop mounts, other uids"
t_need_kmount
why=$(t_fuse_missing)
[ -z "$why" ] || t_skip_all "$why"
chmod 755 "$T_TMP"
mk=$T_TMP/mk mx=$T_TMP/mx n=t-fusekern

# 8 MiB, 1 KiB blocks, 5% reserved (about 400 blocks)
mke2fs -q -F -t ext3 -I 256 -b 1024 -N 512 -m 5 "$T_TMP/x.img" 8M >/dev/null 2>&1 &&
	cp "$T_TMP/x.img" "$T_TMP/k.img" && t_kmount "$T_TMP/k.img" "$mk"
t_ok $? "two identical images, the kernel's mounted"
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$T_TMP/x.img" \
	--set BLOCKDEV_ARGS= >/dev/null && t_fuse_mount $n "$mx"
t_ok $? "ext3d instance up and mounted with ext3d-fuse"

t_both chown-none '
import os
os.chmod(".", 0o777)
def chown_as(uid, path):
    pid = os.fork()
    if pid == 0:
        os.setgroups([]); os.setgid(uid); os.setuid(uid)
        try:
            os.chown(path, -1, -1); r = 0
        except OSError as e:
            r = e.errno
        os._exit(r)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
for i, (mode, uid, gid, who) in enumerate([(0o2755, 0, 0, 1000),
        (0o4755, 0, 0, 1000), (0o2645, 0, 1000, 1000),
        (0o644, 0, 0, 1000), (0o6755, 1000, 0, 1000), (0o2745, 1000, 0, 1000),
        (0o6777, 0, 0, 0)]):
    f = "f%d" % i
    open(f, "w").close(); os.chown(f, uid, gid); os.chmod(f, mode)
    r = chown_as(who, f)
    print(f, oct(mode), "owner", uid, "by", who, "->", r, oct(os.stat(f).st_mode))
os.mkdir("d"); os.chmod("d", 0o2775)
print("dir by 1000 ->", chown_as(1000, "d"), oct(os.stat("d").st_mode))
'

# Set-group-ID without group execute, a caller outside the group: its
# write takes the bit (setattr_should_drop_sgid), on both. Through FUSE
# the kill reaches ext3d-fuse as a SETATTR of no field, the request
# chown(f, -1, -1) sends too, so that chown succeeds through the mount
# where the kernel's ext3 says EPERM (docs/fuse.md): both answers pinned.
t_both sgid-write '
import os
os.chmod(".", 0o777)
def as_1000(fn):
    pid = os.fork()
    if pid == 0:
        os.setgroups([]); os.setgid(1000); os.setuid(1000)
        try:
            fn(); r = 0
        except OSError as e:
            r = e.errno
        os._exit(r)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
def append(path):
    with open(path, "a") as f:
        f.write("x")
def truncate(path):
    os.truncate(path, 0)
for name, fn in (("append", append), ("truncate", truncate)):
    open(name, "w").close(); os.chmod(name, 0o2646)
    print(name, "by 1000 ->", as_1000(lambda: fn(name)), oct(os.stat(name).st_mode))
'
for m in k x; do
	(cd "$T_TMP/m$m" && python3 -c '
import os
for mode in (0o2745, 0o2645):
    f = "sg%o" % mode
    open(f, "w").close(); os.chmod(f, mode)
    pid = os.fork()
    if pid == 0:
        os.setgroups([]); os.setgid(1000); os.setuid(1000)
        try:
            os.chown(f, -1, -1); r = 0
        except OSError as e:
            r = e.errno
        os._exit(r)
    r = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    print(r, oct(os.stat(f).st_mode & 0o7777), end=" ")
print()')
done >"$T_TMP/sgchown" 2>&1
t_is "$(tr '\n' '/' <"$T_TMP/sgchown")" "1 0o2745 1 0o2645 /0 0o2745 0 0o2645 /" \
	"chown(f, -1, -1) by a caller outside a set-group-ID file's group: EPERM on the kernel, 0 and no change through ext3d-fuse (docs/fuse.md)"

t_both relatime '
import os, time
open("rf", "w").write("data" * 100); os.mkdir("rd"); os.symlink("rf", "rl")
old = 1000000000
for p in ("rf", "rd"):
    os.utime(p, (old, old + 10))
os.utime("rl", (old, old + 10), follow_symlinks=False)
time.sleep(1.1)
def st(p):
    s = os.lstat(p); return (s.st_atime_ns, s.st_ctime_ns)
def moved(p, f):
    a, c = st(p); f(); a2, c2 = st(p)
    return "%s atime %s ctime %s" % (p, "moved" if a2 != a else "kept", "moved" if c2 != c else "kept")
def rd(p):
    with open(p) as f: f.read(10)
print(moved("rf", lambda: rd("rf")))
print(moved("rf", lambda: rd("rf")))
print(moved("rd", lambda: os.listdir("rd")))
print(moved("rl", lambda: os.readlink("rl")))
print(moved("rl", lambda: os.stat("rl")))
'

t_both reserved '
import os, errno
os.mkdir("u"); os.chown("u", 1000, 1000)
def fill(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"x" * 65536)
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)
pid = os.fork()
if pid == 0:
    os.setgid(1000); os.setuid(1000)
    r = fill("u/a")
    print("uid 1000 fills:", errno.errorcode.get(r, r))
    os._exit(0)
os.waitpid(pid, 0)
sv = os.statvfs(".")
print("uid 1000 left less than 64 KiB available:", sv.f_bavail * sv.f_bsize < 65536,
      "and the reserved blocks free:", sv.f_bfree * sv.f_bsize > 65536)
with open("r", "wb") as f:
    f.write(b"z" * 65536)
print("root writes 64 KiB: ok")
print("root fills:", errno.errorcode.get(fill("r2"), 0))
'

t_umount "$mx"
t_instance_stop $n
t_umount "$mk"
e2fsck -fn "$T_TMP/x.img" >"$T_TMP/fsck.out" 2>&1
t_ok $? "e2fsck -fn clean on the image ext3d wrote"
e2fsck -fn "$T_TMP/k.img" >/dev/null 2>&1
t_ok $? "e2fsck -fn clean on the kernel's twin"
t_done
