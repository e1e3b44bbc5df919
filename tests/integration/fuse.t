#!/bin/sh
# fuse.t - ext3d-fuse end to end: an instance mounted under $T_TMP, every
# FUSE operation through ordinary tools and small python snippets (create,
# write and read back, truncate, rename with RENAME_NOREPLACE and
# RENAME_EXCHANGE, hard links, symlinks, a fifo, chmod / chown, times with
# UTIME_OMIT, stat fields, statfs, punch hole and the fallocate modes ext3
# refuses, copy_file_range, a file unlinked while open, a big directory),
# as uid 1000 too (owner and group of new files, umask, a set-group-ID
# directory, a sticky one, set-uid taken away by a write), the mount's
# errors (missing, not a directory, busy mount point, no instance), a
# restart of inode-svc under the mount; lseek's SEEK_DATA / SEEK_HOLE on a
# sparse file reaching every level of the block map; then unmount,
# shutdown, e2fsck -fn clean and a kernel loop mount showing the same tree
# and giving the same SEEK_DATA / SEEK_HOLE answers.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

t_need_root "FUSE mounts with allow_other"
[ -c /dev/fuse ] || t_skip_all "no /dev/fuse"
command -v fusermount3 >/dev/null || t_skip_all "no fusermount3"
command -v setpriv >/dev/null || t_skip_all "no setpriv"
FUSE=$EXT3D_BUILD/client/fuse/ext3d-fuse
[ -x "$FUSE" ] || t_skip_all "ext3d-fuse not built"

chmod 755 "$T_TMP" # uid 1000 reaches the mount through it
n=t-fuse img=$T_TMP/img m=$T_TMP/mnt
mkdir "$m"
mke2fs -q -F -t ext3 -b 1024 -I 256 "$img" 64M >/dev/null 2>&1
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
	--set DATA=ordered
t_ok $? "instance ready"

# The mount's errors, before mounting.
err() { "$FUSE" --instance "$@" 2>&1 >/dev/null; }
t_is "$(err $n "$T_TMP/nothere")" \
	"ext3d-fuse: mount point $T_TMP/nothere does not exist" "missing mount point"
: >"$T_TMP/file"
t_is "$(err $n "$T_TMP/file")" \
	"ext3d-fuse: mount point $T_TMP/file is not a directory" "mount point not a directory"
t_is "$(err t-fuse-none "$m")" "ext3d-fuse: instance t-fuse-none is not running" \
	"instance not running"

"$FUSE" --instance $n "$m"
t_ok $? "ext3d-fuse mounts"
t_at_exit "fusermount3 -u -z $m 2>/dev/null"
t_is "$(findmnt -n -o FSTYPE,SOURCE "$m")" "fuse.ext3d ext3d:$n" "findmnt sees the mount"
t_is "$(err $n "$m")" \
	"ext3d-fuse: mount point $m is busy: a file system is already mounted there" \
	"busy mount point"
t_is "$(stat -c %i "$m")" 2 "the root is inode 2"

# Files: create, write, read back, truncate.
echo hello >"$m/a"
t_is "$(cat "$m/a")" hello "write and read back"
head -c 3000000 /dev/urandom >"$T_TMP/big"
cp "$T_TMP/big" "$m/big"
t_run "3 MB copied in and read back" cmp "$T_TMP/big" "$m/big"
truncate -s 1000 "$m/big" && truncate -s 5000 "$m/big"
t_is "$(stat -c %s "$m/big")" 5000 "truncate shrink then grow"
t_is "$( (head -c 1000 "$T_TMP/big"; head -c 4000 /dev/zero) | cmp - "$m/big" && echo same)" \
	same "the grown part reads zeros"
printf 'xyz' >>"$m/a"
t_is "$(cat "$m/a")" "hello
xyz" "O_APPEND"

# Names: links, symlinks, a fifo, rename and its flags.
mkdir "$m/d" "$m/e"
ln "$m/a" "$m/d/a2"
t_is "$(stat -c %h "$m/a")" 2 "hard link: two links"
ln -s ../a "$m/d/s"
t_is "$(readlink "$m/d/s"):$(cat "$m/d/s")" "../a:hello
xyz" "symlink and readlink"
mkfifo "$m/d/p"
t_is "$(stat -c %F "$m/d/p")" fifo "mknod fifo"
mknod "$m/d/c" c 1 3 && mknod "$m/d/b" b 259 70000
t_is "$(stat -c '%F %t %T' "$m/d/c"):$(stat -c '%t %T' "$m/d/b")" \
	"character special file 1 3:103 11170" "mknod devices: type, major and minor"
rm "$m/d/c" "$m/d/b"
long=$(printf 'n%.0s' $(seq 256))
touch "$m/d/$long" 2>/dev/null
t_is "$?:$(python3 -c '
import errno, os, sys
try:
    os.stat(sys.argv[1]); print("found")
except OSError as e:
    print(errno.errorcode[e.errno])' "$m/d/$long")" 1:ENAMETOOLONG "a name over 255 bytes: ENAMETOOLONG"
mv "$m/d/a2" "$m/e/moved"
t_is "$(ls "$m/d" | tr '\n' ' ')" "p s " "rename across directories"
rn() { # rn OLD NEW FLAGS: renameat2's errno name, or ok
	python3 - "$@" <<'EOF'
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), int(sys.argv[3]))
print("ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
EOF
}
echo one >"$m/x1"; echo two >"$m/x2"
t_is "$(rn "$m/x1" "$m/x2" 1)" EEXIST "RENAME_NOREPLACE onto a name: EEXIST"
t_is "$(rn "$m/x1" "$m/x3" 1)" ok "RENAME_NOREPLACE onto a free name"
t_is "$(rn "$m/x3" "$m/x2" 2):$(cat "$m/x3"):$(cat "$m/x2")" "ok:two:one" \
	"RENAME_EXCHANGE swaps two files"
t_is "$(rn "$m/x3" "$m/nothere" 2)" ENOENT "RENAME_EXCHANGE needs both names"
mkdir "$m/d/sub"; echo in >"$m/d/sub/f"
t_is "$(rn "$m/d/sub" "$m/e/moved" 2)" ok "RENAME_EXCHANGE of a directory and a file"
t_is "$(cat "$m/e/moved/f"):$(cat "$m/d/sub"):$(stat -c %h "$m/d"):$(stat -c %h "$m/e")" \
	"in:hello
xyz:2:3" "the directory moved, link counts follow"
t_is "$(cd "$m/e/moved/.." && pwd -P)" "$m/e" "its .. is its new parent"
t_is "$(rn "$m/e" "$m/e/moved/f" 2)" EINVAL "RENAME_EXCHANGE into its own subtree: EINVAL"
t_is "$(rn "$m/x2" "$m/x3" 6)" EINVAL "RENAME_WHITEOUT with RENAME_EXCHANGE: EINVAL (posixkern.t has the whiteouts)"

# Attributes: chmod, chown, times, stat fields, statfs.
chmod 4751 "$m/x2" && chown 7:8 "$m/x2"
t_is "$(stat -c '%a %u %g' "$m/x2")" "751 7 8" "chmod then chown (chown takes set-uid)"
touch -d '2001-02-03 04:05:06.123456789 UTC' "$m/x2"
t_is "$(TZ=UTC stat -c '%x|%y' "$m/x2")" \
	"2001-02-03 04:05:06.123456789 +0000|2001-02-03 04:05:06.123456789 +0000" \
	"utimensat with nanoseconds"
touch -a -d '2002-01-01 00:00:00 UTC' "$m/x2"
t_is "$(TZ=UTC stat -c '%x|%y' "$m/x2")" \
	"2002-01-01 00:00:00.000000000 +0000|2001-02-03 04:05:06.123456789 +0000" \
	"atime only: mtime left alone (UTIME_OMIT)"
c0=$(stat -c %Z "$m/x2"); touch -m "$m/x2"
t_is "$(($(stat -c %Y "$m/x2") >= c0))" 1 "UTIME_NOW"
t_is "$(stat -c '%s %b %B' "$m/x3")" "4 2 512" "size and blocks"
t_is "$(stat -f -c '%S %l' "$m")" "1024 255" "statfs: block size and name length"
t_is "$(df -B1K --output=size "$m" | tail -1 | tr -d ' ')" \
	"$(($(stat -f -c %b "$m")))" "df"

# fallocate: punch hole as ext3 does it; other modes refused.
head -c 20000 "$T_TMP/big" >"$m/h"
fallocate -p -o 1000 -l 5000 "$m/h"
t_ok $? "fallocate -p"
t_is "$(stat -c '%s %b' "$m/h")" "20000 34" "punch: size kept, 4 blocks freed"
t_is "$(python3 -c '
import sys
d = bytearray(open(sys.argv[1], "rb").read(20000)); d[1000:6000] = bytes(5000)
print("same" if open(sys.argv[2], "rb").read() == bytes(d) else "differs")' "$T_TMP/big" "$m/h")" \
	same "punch: the hole reads zeros, the rest is kept"
# Holes across the indirect trees of a 700000-byte file; st_blocks as the
# kernel's ext3 leaves them for the same calls on a 1 KiB-block image.
head -c 700000 /dev/urandom >"$T_TMP/r7"
for i in 1 2 3 4; do cp "$T_TMP/r7" "$m/p$i"; done
fallocate -p -o 5000 -l 400000 "$m/p1"
fallocate -p -o 0 -l 700000 "$m/p2"
fallocate -p -o 300000 -l 10 "$m/p3"
fallocate -p -o 12288 -l 262144 "$m/p4" && fallocate -p -o 500000 -l 100000 "$m/p4"
t_is "$(stat -c %b "$m/p1" "$m/p2" "$m/p3" "$m/p4" | tr '\n' ' ')" "594 6 1376 670 " \
	"punch through direct, indirect and double-indirect blocks: the kernel's st_blocks"
t_is "$(python3 -c '
import sys
r = open(sys.argv[1], "rb").read()
def hole(d, off, n): d[off:off + n] = bytes(len(d[off:off + n]))
want = []
for holes in ([(5000, 400000)], [(0, 700000)], [(300000, 10)], [(12288, 262144), (500000, 100000)]):
    d = bytearray(r)
    for off, n in holes: hole(d, off, n)
    want.append(bytes(d))
got = [open(f, "rb").read() for f in sys.argv[2:]]
print(" ".join("same" if a == b else "differs" for a, b in zip(want, got)))' "$T_TMP/r7" \
	"$m/p1" "$m/p2" "$m/p3" "$m/p4")" "same same same same" "punched files read as the model"
rm "$m/p1" "$m/p2" "$m/p3" "$m/p4"
fallocate -l 4096 "$m/h" 2>/dev/null
t_is $? 1 "fallocate (allocate): refused"
t_is "$(python3 -c '
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDWR)
for mode in (0, 1, 0x10):  # allocate, KEEP_SIZE, ZERO_RANGE
    r = libc.fallocate(fd, mode, ctypes.c_long(0), ctypes.c_long(4096))
    print("ok" if r == 0 else errno.errorcode[ctypes.get_errno()], end=" ")' "$m/h")" \
	"ENOTSUP ENOTSUP ENOTSUP " "fallocate modes but punch hole: EOPNOTSUPP (ENOTSUP), as ext3"

# copy_file_range, cp.
t_is "$(python3 -c '
import os, sys
a = os.open(sys.argv[1], os.O_RDONLY); b = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT, 0o644)
n = 0
while True:
    k = os.copy_file_range(a, b, 1 << 20)
    if k == 0: break
    n += k
print(n)' "$m/big" "$m/copy")" 5000 "copy_file_range"
t_run "copy_file_range copied the bytes" cmp "$m/big" "$m/copy"
cp "$m/big" "$m/copy2"
t_run "cp (copy_file_range through the mount)" cmp "$m/big" "$m/copy2"

# A file unlinked while open, fsync.
t_is "$(python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
os.unlink(sys.argv[1])
os.write(fd, b"still here"); os.fsync(fd); os.fdatasync(fd)
print(os.pread(fd, 100, 0).decode(), os.fstat(fd).st_nlink)' "$m/gone")" "still here 0" \
	"unlinked while open: still readable and writable"

# A big directory: readdirplus over several requests.
mkdir "$m/big-dir"
(cd "$m/big-dir" && seq 1 400 | sed 's/^/file-with-a-long-name-/' | xargs touch)
t_is "$(ls "$m/big-dir" | wc -l)" 400 "readdir of 400 entries"
t_is "$(ls -l "$m/big-dir" | grep -c file-with)" 400 "readdirplus with attributes"
rm -r "$m/big-dir"
t_is "$(ls "$m" | tr '\n' ' ')" "a big copy copy2 d e h lost+found x2 x3 " "rm -r"

# lseek's SEEK_DATA and SEEK_HOLE, from the block map; the kernel answers
# on the same file at the end.
seekpy='
import errno, os, sys
# argv: PATH make|query. make: a sparse file with data in the direct, the
# single-, double- and triple-indirect parts of the map (1 KiB blocks),
# holes between, and a hole at the end. query: SEEK_DATA and SEEK_HOLE
# from offsets around each edge.
p, what = sys.argv[1], sys.argv[2]
K, M = 1024, 1024 * 1024
if what == "make":
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for off, n in ((0, 100), (20000, 1000), (300 * K + 10, 3000), (70 * M + 5, 10)):
        os.pwrite(fd, b"d" * n, off)
    os.ftruncate(fd, 80 * M)
    os.fsync(fd)
    os.close(fd)
    sys.exit(0)
fd = os.open(p, os.O_RDONLY)
out = []
for off in (0, 50, 100, 1023, 1024, 5000, 19455, 19456, 20500, 21500, 21504,
            300 * K, 300 * K + 10, 304 * K, M, 70 * M, 70 * M + 5, 70 * M + 1024,
            80 * M - 1, 80 * M, 80 * M + 10):
    for w, name in ((os.SEEK_DATA, "D"), (os.SEEK_HOLE, "H")):
        try:
            out.append("%s%d=%d" % (name, off, os.lseek(fd, off, w)))
        except OSError as e:
            out.append("%s%d=%s" % (name, off, errno.errorcode[e.errno]))
print(" ".join(out))
'
python3 -c "$seekpy" "$m/sparse" make
seek_fuse=$(python3 -c "$seekpy" "$m/sparse" query)
t_is "$(echo "$seek_fuse" | cut -d' ' -f1-4)" "D0=0 H0=1024 D50=50 H50=1024" \
	"SEEK_DATA and SEEK_HOLE come from the block map"
t_diag "seek answers: $seek_fuse"

# As uid 1000: owner, group, umask, set-gid and sticky directories, set-uid.
as() { setpriv --reuid=1000 --regid=1000 --clear-groups "$@"; }
mkdir -m 777 "$m/pub"
as sh -c "umask 027; echo x >$m/pub/mine; mkdir $m/pub/dir"
t_is "$(stat -c '%u %g %a' "$m/pub/mine") $(stat -c %a "$m/pub/dir")" "1000 1000 640 750" \
	"uid 1000: owner, group and umask"
as sh -c "echo x >>$m/a" 2>/dev/null
t_is "$?:$(cat "$m/a")" "2:hello
xyz" "uid 1000 may not write root's 0644 file"
mkdir -m 2777 "$m/sg" && chgrp 50 "$m/sg"
as sh -c "touch $m/sg/f; mkdir $m/sg/d"
t_is "$(stat -c %g "$m/sg/f") $(stat -c '%g %a' "$m/sg/d")" "50 50 2755" \
	"set-gid directory: its group, and the bit on subdirectories"
mkdir -m 1777 "$m/tmp" && echo r >"$m/tmp/rootfile" && chmod 666 "$m/tmp/rootfile"
as rm -f "$m/tmp/rootfile" 2>/dev/null
t_is "$? $(cat "$m/tmp/rootfile")" "1 r" "sticky directory: uid 1000 may not remove root's file"
echo s >"$m/pub/suid" && chmod 4777 "$m/pub/suid"
as sh -c "echo more >>$m/pub/suid"
t_is "$(stat -c %a "$m/pub/suid")" 777 "a write by a non-owner takes set-uid"
as /usr/bin/python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o444)
os.write(fd, b"ok")' "$m/pub/ro"
t_is "$(cat "$m/pub/ro")" ok "O_CREAT with mode 0444: the descriptor still writes"

# Four writers at once (create, write, rename, link, unlink, truncate,
# mkdir / rmdir) while ls -lR walks the tree.
work() {
	d=$m/w$1; mkdir "$d"
	for i in $(seq 60); do
		head -c $((i * 97)) /dev/urandom >"$d/f$i"
		mv "$d/f$i" "$d/g$i" && ln "$d/g$i" "$d/h$i"
		[ $((i % 3)) -eq 0 ] && rm "$d/g$i"
		[ $((i % 5)) -eq 0 ] && truncate -s 10 "$d/h$i"
		[ $((i % 7)) -eq 0 ] && mkdir "$d/dir$i" && rmdir "$d/dir$i"
	done
	return 0
}
pids=
for w in 1 2 3 4; do work $w & pids="$pids $!"; done
for _ in 1 2 3; do ls -lR "$m" >/dev/null 2>&1; done
fails=0
for p in $pids; do wait "$p" || fails=$((fails + 1)); done
t_is "$fails:$(find "$m"/w? -type f | wc -l):$(stat -c %s "$m/w4/h10")" "0:400:10" \
	"four writers at once"
rm -r "$m"/w?

# Which times each operation moves, as the kernel's ext3 moves them.
mkdir "$m/times"
python3 "$T_TOP/tests/lib/fuse_times.py" "$m/times" >"$T_TMP/times" 2>&1
cat >"$T_TMP/times.kernel" <<'EOF'
chmod-same file -c dir --
chown-same file -c dir --
chown-none file -c dir --
truncate-same file mc dir --
ftruncate-same file mc dir --
truncate-grow file mc dir --
o_trunc-empty file mc dir --
o_trunc file mc dir --
write-0 file -- dir --
write file mc dir --
utime-now file mc dir --
utime-set file mc dir --
rename file -c dir mc
link file -c dir mc
unlink-one-of-two file -c dir mc
symlink file -- dir mc
read file -- dir --
punch file mc dir --
punch-past-eof file mc dir --
EOF
diff "$T_TMP/times.kernel" "$T_TMP/times" >"$T_TMP/times.diff"
t_ok $? "mtime and ctime move as on the kernel's ext3"
sed 's/^/# /' "$T_TMP/times.diff"
rm -r "$m/times"

# The page cache: kept across opens of an unchanged file, dropped when
# another client changed it.
head -c 1048576 /dev/urandom >"$T_TMP/c1"; head -c 1048576 /dev/urandom >"$T_TMP/c2"
cp "$T_TMP/c1" "$m/cached"
cat "$m/cached" >/dev/null
cat "$m/cached" >/dev/null
t_is "$(fincore -b -n -o RES "$m/cached" | tr -d ' ')" 1048576 \
	"an unchanged file stays in the page cache across opens"
"$T_EXT3D" --instance $n put "$T_TMP/c2" /cached
t_run "a file changed by another client is read anew" cmp "$T_TMP/c2" "$m/cached"

# inode-svc restarts under the mount: the mount keeps working.
before=$(t_field $n generation)
kill -9 "$(t_svc_pid $n inode-svc)"
for _ in $(seq 100); do
	[ "$(t_field $n generation 2>/dev/null)" != "$before" ] &&
		[ "$(t_field $n supervisor.state 2>/dev/null)" = ready ] && break
	sleep 0.1
done
got=
for _ in 1 2 3; do got=$(cat "$m/a" 2>/dev/null) && break; sleep 0.2; done
t_is "$got" "hello
xyz" "after an inode-svc restart, reads work"
echo after >"$m/after-restart" 2>/dev/null || echo after >"$m/after-restart"
t_is "$(cat "$m/after-restart")" after "and writes"

# The tree as the mount shows it; then unmount, shut down, check.
tree() { (cd "$1" && find . -path ./lost+found -prune -o -printf '%p %y %s %m %U %G %n\n' | sort); }
tree "$m" >"$T_TMP/tree.fuse"
fusermount3 -u "$m"
t_ok $? "unmount"
"$FUSE" --instance $n -f "$m" &
fpid=$!
for _ in $(seq 50); do findmnt "$m" >/dev/null && break; sleep 0.1; done
t_is "$(cat "$m/x3")" two "mounted again (-f)"
kill -TERM $fpid && wait $fpid
t_is "$?:$(findmnt -n "$m" | wc -l)" "0:0" "SIGTERM: the daemon unmounts and exits"
"$FUSE" --instance $n -f "$m" &
fpid=$!
for _ in $(seq 50); do findmnt "$m" >/dev/null && break; sleep 0.1; done
kill -KILL $fpid; wait $fpid 2>/dev/null
t_is "$(err $n "$m")" "ext3d-fuse: $m: a stale FUSE mount is there (its daemon died); unmount \
it first (fusermount3 -u $m) or use --clean-stale" "a killed daemon's stale mount: said so"
"$FUSE" --instance $n --clean-stale "$m" 2>/dev/null
t_is "$?:$(cat "$m/x3")" "0:two" "--clean-stale: mounted again at the same place"
fusermount3 -u "$m"
t_instance_stop $n
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
t_ok $? "e2fsck -fn clean"
[ $? -eq 0 ] || sed 's/^/# /' "$T_TMP/fsck" | head -20
mkdir "$T_TMP/kmnt"
if mount -o loop,ro "$img" "$T_TMP/kmnt" 2>/dev/null; then
	tree "$T_TMP/kmnt" >"$T_TMP/tree.kernel"
	seek_kernel=$(python3 -c "$seekpy" "$T_TMP/kmnt/sparse" query)
	umount "$T_TMP/kmnt"
	diff "$T_TMP/tree.fuse" "$T_TMP/tree.kernel" >"$T_TMP/tree.diff"
	t_ok $? "the kernel sees the same tree"
	sed 's/^/# /' "$T_TMP/tree.diff" | head -20
	t_is "$seek_kernel" "$seek_fuse" "the kernel's SEEK_DATA and SEEK_HOLE on the same file agree"
else
	t_skip "no loop device" "the kernel sees the same tree"
	t_skip "no loop device" "the kernel's SEEK_DATA and SEEK_HOLE agree"
fi
t_done
