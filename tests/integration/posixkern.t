#!/bin/sh
# posixkern.t - what a kernel user meets beyond the common calls, against
# the kernel's ext3: the same snippet runs on a kernel loop mount and on
# an ext3d-fuse mount of identical images and prints the same, with
# 256-byte inodes (times to 2446 with nanoseconds) and 128-byte ones
# (times clamped to 1901-2038). Times before 1970 and past 2038 set by
# utimensat; then each side reads the other's image: ext3d what the
# kernel wrote, the kernel what ext3d wrote. The inode flags through
# FS_IOC_GETFLAGS and FS_IOC_SETFLAGS (chattr's rules for root, an
# owner and others) and what immutable and append-only files and
# directories refuse, through the mount and through libext3d (xops).
# renameat2's RENAME_WHITEOUT, and overlayfs with its upper layer on
# each mount. FIEMAP through libext3d (ext3d fiemap) against the kernel's
# FS_IOC_FIEMAP on the same image. e2fsck -fn is clean on both.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/fusemnt.sh"

t_need_root "kernel loop mounts"
t_need_kmount
why=$(t_fuse_missing)
[ -z "$why" ] || t_skip_all "$why"
chmod 755 "$T_TMP"
mk=$T_TMP/mk mx=$T_TMP/mx

# up KIMAGE XIMAGE NAME: the kernel mounts KIMAGE, ext3d-fuse XIMAGE.
up() {
	t_kmount "$1" "$mk" && t_instance_start "$3" "$T_TOP/compose/ext3d.compose" \
		--set "IMAGE=$2" --set BLOCKDEV_ARGS= >/dev/null && t_fuse_mount "$3" "$mx"
}

down() {
	t_umount "$mx"
	t_instance_stop "$1"
	t_umount "$mk"
}

times_set='
import os
for i, t in enumerate([-315619200, 2**31 - 1, 2**31, 2**32, 4354819200, 2**34, 2**40,
                       -2**31, -2**31 - 1, -2**40, 0, -1]):
    f = "t%d" % i
    open(f, "w").close()
    os.utime(f, ns=(t * 10**9 + 5, t * 10**9 + 123456789))
    s = os.stat(f)
    print(f, t, s.st_atime_ns, s.st_mtime_ns)
os.mkdir("d")
os.utime("d", (-86400, 2**33))
print("d", os.stat("d").st_atime_ns, os.stat("d").st_mtime_ns)
'
times_get='
import os
for f in sorted(os.listdir(".")):
    if f == "d" or f.startswith("t"):
        s = os.stat(f)
        print(f, s.st_atime_ns, s.st_mtime_ns)
'

flags='
import errno, fcntl, os, struct
GET, SET = 0x80086601, 0x40086602
I, A, D, NOATIME, DIRSYNC, TOPDIR, JDATA = 0x10, 0x20, 0x40, 0x80, 0x10000, 0x20000, 0x4000
def err(f):
    try:
        f(); return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
def getf(p):
    fd = os.open(p, os.O_RDONLY)
    try: return struct.unpack("i", fcntl.ioctl(fd, GET, b"\0" * 4))[0]
    finally: os.close(fd)
def setf(p, v):
    fd = os.open(p, os.O_RDONLY)
    try: fcntl.ioctl(fd, SET, struct.pack("i", v))
    finally: os.close(fd)
def as_uid(uid, f):
    pid = os.fork()
    if pid == 0:
        os.setgroups([]); os.setgid(uid); os.setuid(uid)
        r = err(f)
        os.write(1, (r + "\n").encode()); os._exit(0)
    os.waitpid(pid, 0)
def wr(p, fl):
    def f():
        fd = os.open(p, fl)
        try: os.write(fd, b"more")
        finally: os.close(fd)
    return f
def show(what, f):
    print(what, err(f), flush=True)
os.mkdir("fl"); os.chmod("fl", 0o777); os.chdir("fl")
for n in ("i", "a", "u", "x"):
    open(n, "w").write("data")
os.mkdir("di"); os.mkdir("da"); open("di/f", "w").close(); open("da/f", "w").close()
os.chown("u", 1000, 1000); os.setxattr("i", "user.k", b"v")
os.utime("i", (1000000000, 1000000000))
show("set i", lambda: setf("i", I)); show("set a", lambda: setf("a", A))
show("set di", lambda: setf("di", I)); show("set da", lambda: setf("da", A))
print("get", getf("i"), getf("a"), getf("di"), getf("da"), getf("x"))
for p in ("i", "a"):
    show(p + " open w", wr(p, os.O_WRONLY)); show(p + " open rw", wr(p, os.O_RDWR))
    show(p + " open append", wr(p, os.O_WRONLY | os.O_APPEND))
    show(p + " open trunc", wr(p, os.O_WRONLY | os.O_APPEND | os.O_TRUNC))
    show(p + " read", lambda: open(p).read())
    show(p + " truncate", lambda: os.truncate(p, 1))
    show(p + " chmod", lambda: os.chmod(p, 0o600)); show(p + " chown", lambda: os.chown(p, 1, 1))
    show(p + " chown none", lambda: os.chown(p, -1, -1))
    show(p + " utime set", lambda: os.utime(p, (1, 1))); show(p + " utime now", lambda: os.utime(p))
    show(p + " link", lambda: os.link(p, p + "2")); show(p + " rename", lambda: os.rename(p, p + "3"))
    show(p + " unlink", lambda: os.unlink(p))
    show(p + " setxattr", lambda: os.setxattr(p, "user.k", b"w"))
    show(p + " removexattr", lambda: os.removexattr(p, "user.k"))
    print(p, os.stat(p).st_size, open(p).read())
print("i atime after a read", "moved" if os.stat("i").st_atime > 1000000000 else "kept")
for d in ("di", "da"):
    show(d + " create", lambda: open(d + "/new", "w").close())
    show(d + " mkdir", lambda: os.mkdir(d + "/sub"))
    show(d + " unlink", lambda: os.unlink(d + "/f"))
    show(d + " rename out", lambda: os.rename(d + "/f", "out" + d))
    show(d + " rename in", lambda: os.rename("x", d + "/x"))
show("i set d", lambda: setf("i", I | D)); show("i set i again", lambda: setf("i", I))
show("a set d", lambda: setf("a", A | D))
as_uid(1000, lambda: setf("u", D)); as_uid(1000, lambda: setf("u", D | I))
open("y", "w").close()
as_uid(1000, lambda: setf("u", D | A)); as_uid(1000, lambda: setf("y", D))
as_uid(1000, lambda: setf("u", D | JDATA))
show("file dirsync", lambda: setf("y", DIRSYNC)); show("file topdir", lambda: setf("y", TOPDIR))
show("file unknown", lambda: setf("y", 0x1000000)); show("file noatime", lambda: setf("y", NOATIME))
show("dir dirsync", lambda: setf("da", A | DIRSYNC))
os.symlink("y", "sl"); show("symlink", lambda: getf("sl"))
print("get", getf("u"), getf("y"), getf("da"))
os.mkdir("inh"); setf("inh", 0x8 | NOATIME | D | DIRSYNC)
open("inh/f", "w").write("data"); os.mkdir("inh/d")
print("inherited", getf("inh/f"), getf("inh/d"))
os.utime("inh/f", (1000000000, 1000000000)); open("inh/f").read()
print("noatime read", os.stat("inh/f").st_atime)
for p in ("i", "a", "di", "da"):
    setf(p, 0)
print("cleared", getf("i"), getf("a"), getf("di"), getf("da"))
'

whiteout='
import ctypes, errno, os, stat
libc = ctypes.CDLL(None, use_errno=True)
NOREPLACE, EXCHANGE, WHITEOUT = 1, 2, 4
def rn(a, b, fl):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), fl) == 0:
        return "ok"
    return errno.errorcode[ctypes.get_errno()]
def st(p):
    s = os.lstat(p)
    return "%s mode %o rdev %d:%d uid %d gid %d links %d size %d" % (p, s.st_mode,
        os.major(s.st_rdev), os.minor(s.st_rdev), s.st_uid, s.st_gid, s.st_nlink, s.st_size)
os.mkdir("wh"); os.chdir("wh")
open("a", "w").write("aaa"); open("b", "w").write("bbb"); os.mkdir("d"); os.mkdir("sg")
os.chown("sg", 0, 1000); os.chmod("sg", 0o2777); open("sg/f", "w").close()
print("whiteout", rn("a", "a2", WHITEOUT), st("a"), st("a2"), open("a2").read())
print("noreplace", rn("b", "a2", NOREPLACE | WHITEOUT), st("b"))
print("replace", rn("b", "a2", WHITEOUT), st("b"), open("a2").read())
print("exchange", rn("a2", "b", EXCHANGE | WHITEOUT))
print("dir", rn("d", "d2", WHITEOUT), st("d"), st("d2"), st("."))
print("setgid", rn("sg/f", "sg/g", WHITEOUT), st("sg/f"))
pid = os.fork()
if pid == 0:
    os.setgroups([]); os.setgid(1000); os.setuid(1000)
    print("user", rn("sg/g", "sg/h", WHITEOUT), flush=True); os._exit(0)
os.waitpid(pid, 0)
print("unlink", os.unlink("a") or "ok", sorted(os.listdir(".")))
'

# ovl M: overlayfs with its upper layer in mount M (k or x) removes and
# renames files of its lower layer; prints what it sees and the whiteouts
# the upper layer holds afterwards.
ovl() {
	o=$T_TMP/ovl-$1 lo=$T_TMP/lower-$1 up=$T_TMP/m$1/ovl
	mkdir -p "$o" "$lo" "$up/up" "$up/work" && echo x >"$lo/gone" && echo y >"$lo/moved" &&
		mount -t overlay overlay -o "lowerdir=$lo,upperdir=$up/up,workdir=$up/work" "$o" ||
		return 1
	rm "$o/gone" && mv "$o/moved" "$o/here" && ls "$o" && cat "$o/here"
	umount "$o"
	stat -c '%n %F %t:%T %a' "$up/up/gone" "$up/up/moved" 2>&1 | sed "s|$up/||"
}

# Files whose extents ext3d reports (fiemap_x, through the CLI) and the
# kernel then reports from the same image (fiemap_k, FS_IOC_FIEMAP).
fm_files="small sparse big dir"
fm_make='
import os
os.mkdir("fm"); os.chdir("fm")
open("small", "w").write("s" * 100)
with open("sparse", "wb") as f:
    for off in (0, 5000, 70000, 300000, 2000000):
        f.seek(off); f.write(b"x" * 3000)
with open("big", "wb") as f:
    for i in range(400):
        f.write(os.urandom(1024))
        if i % 50 == 0:
            open("pad%d" % i, "w").write("p" * 2000)
os.mkdir("dir")
for i in range(80):
    open("dir/entry-with-a-longer-name-%03d" % i, "w").close()
'
fiemap_x() {
	for f in $fm_files; do
		echo "$f"; "$T_EXT3D" --instance "$1" fiemap "/fm/$f" 2>&1
	done
}
fiemap_k() {
	for f in $fm_files; do echo "$f"; python3 -c '
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
n = 2000
buf = bytearray(struct.pack("QQIIII", 0, 2**64 - 1, 0, 0, n, 0) + bytes(56 * n))
fcntl.ioctl(fd, 0xC020660B, buf)
for i in range(struct.unpack_from("I", buf, 20)[0]):
    lo, ph, ln, _, _, fl = struct.unpack_from("QQQQQI", buf, 32 + 56 * i)
    print(lo, ph, ln, "%x" % fl)
' "$mk/fm/$f" 2>&1; done
}

# lib [setpriv ARGS]: the "OP => ANSWER" lines on stdin through xops
# (libext3d's calls) on instance $n; every answer must be the one given
# (the kernel's, as the flags snippet shows it through the mount).
lib() {
	cat >"$T_TMP/xs"
	sed 's/ *=> .*//' "$T_TMP/xs" >"$T_TMP/xops"
	"$@" "$EXT3D_BUILD/tests/tools/xops" --instance "$n" <"$T_TMP/xops" >"$T_TMP/xgot" 2>&1
	paste "$T_TMP/xops" "$T_TMP/xgot" | sed 's/\t/ => /' >"$T_TMP/xhave"
	diff "$T_TMP/xs" "$T_TMP/xhave" >"$T_TMP/diff"
}

for isize in 256 128; do
	n=t-posixkern-$isize
	mke2fs -q -F -t ext3 -I $isize -b 1024 "$T_TMP/x.img" 8M >/dev/null 2>&1 &&
		cp "$T_TMP/x.img" "$T_TMP/k.img" && up "$T_TMP/k.img" "$T_TMP/x.img" $n
	t_ok $? "$isize-byte inodes: two identical images, the kernel's and ext3d-fuse's mounted"
	t_both times-$isize "$times_set"
	[ $isize = 256 ] && t_both flags "$flags"
	t_both whiteout-$isize "$whiteout"
	( cd "$mx" && python3 -c "$fm_make" ) && sync && fiemap_x $n >"$T_TMP/fiemap.x"
	ovl k >"$T_TMP/ovl.k" 2>&1
	ovl x >"$T_TMP/ovl.x" 2>&1
	diff "$T_TMP/ovl.k" "$T_TMP/ovl.x" >"$T_TMP/diff" 2>&1
	t_ok $? "$isize-byte inodes: overlayfs over ext3d-fuse leaves the whiteouts it leaves on the kernel's ($(tr '\n' ' ' <"$T_TMP/ovl.k"))"
	sed 's/^/#   /' "$T_TMP/diff" | head -20
	lib <<-'EOF'
	mkdir /lib 777 => ok
	create /lib/i 644 => ok
	create /lib/a 644 => ok
	create /lib/u 644 => ok
	mkdir /lib/d 755 => ok
	create /lib/d/f 644 => ok
	chown /lib/u 1000 => ok
	setx /lib/i user.k v => ok
	setflags /lib/i 10 => ok
	setflags /lib/a 20 => ok
	setflags /lib/d 10 => ok
	getflags /lib/i => ok 10
	open /lib/i r => ok
	open /lib/i w => EPERM
	open /lib/i a => EPERM
	truncate /lib/i 0 => EPERM
	chmod /lib/i 600 => EPERM
	chown /lib/i 1 => EPERM
	utime /lib/i => EPERM
	mtime /lib/i 5 => EPERM
	link /lib/i /lib/i2 => EPERM
	rename /lib/i /lib/i3 => EPERM
	unlink /lib/i => EPERM
	setx /lib/i user.k w => EPERM
	rmx /lib/i user.k => EPERM
	setflags /lib/i 50 => EPERM
	open /lib/a w => EPERM
	open /lib/a t => EPERM
	open /lib/a a => ok
	append /lib/a xyz => ok
	truncate /lib/a 0 => EPERM
	utime /lib/a => ok
	mtime /lib/a 5 => EPERM
	unlink /lib/a => EPERM
	create /lib/d/g 644 => EPERM
	unlink /lib/d/f => EPERM
	setflags /lib/u 10000 => EOPNOTSUPP
	setflags /lib/u 1000000 => EOPNOTSUPP
	EOF
	t_ok $? "$isize-byte inodes: libext3d: immutable and append-only refuse what the kernel refuses"
	sed 's/^/#   /' "$T_TMP/diff" | head -20
	lib setpriv --reuid=1000 --regid=1000 --clear-groups <<-'EOF'
	setflags /lib/u 40 => ok
	getflags /lib/u => ok 40
	setflags /lib/u 50 => EPERM
	setflags /lib/u 4040 => EPERM
	setflags /lib/a 20 => EPERM
	EOF
	t_ok $? "$isize-byte inodes: libext3d: an owner sets flags, not immutable or append-only; others none"
	sed 's/^/#   /' "$T_TMP/diff" | head -20
	lib <<-'EOF'
	setflags /lib/i 0 => ok
	setflags /lib/a 0 => ok
	setflags /lib/d 0 => ok
	unlink /lib/i => ok
	getflags /lib/a => ok 0
	EOF
	t_ok $? "$isize-byte inodes: libext3d: root clears them"
	sed 's/^/#   /' "$T_TMP/diff" | head -20
	down $n
	up "$T_TMP/x.img" "$T_TMP/k.img" $n-swap
	t_ok $? "$isize-byte inodes: the images swapped"
	t_both times-$isize-swapped "$times_get"
	fiemap_k >"$T_TMP/fiemap.k"
	diff "$T_TMP/fiemap.k" "$T_TMP/fiemap.x" >"$T_TMP/diff"
	t_ok $? "$isize-byte inodes: ext3d's FIEMAP is the kernel's on the same image ($(wc -l <"$T_TMP/fiemap.k") lines)"
	sed 's/^/#   /' "$T_TMP/diff" | head -20
	down $n-swap
	e2fsck -fn "$T_TMP/x.img" >"$T_TMP/fsck.out" 2>&1
	t_ok $? "$isize-byte inodes: e2fsck -fn clean on the image ext3d wrote"
	e2fsck -fn "$T_TMP/k.img" >/dev/null 2>&1
	t_ok $? "$isize-byte inodes: e2fsck -fn clean on the image the kernel wrote"
done
t_done
