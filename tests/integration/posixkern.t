#!/bin/sh
# posixkern.t - what a kernel user meets beyond the common calls, against
# the kernel's ext3: the same snippet runs on a kernel loop mount and on
# an ext3d-fuse mount of identical images and prints the same, with
# 256-byte inodes (times to 2446 with nanoseconds) and 128-byte ones
# (times clamped to 1901-2038). Times before 1970 and past 2038 set by
# utimensat; then each side reads the other's image: ext3d what the
# kernel wrote, the kernel what ext3d wrote. e2fsck -fn is clean on both.
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
    if f != "lost+found":
        s = os.stat(f)
        print(f, s.st_atime_ns, s.st_mtime_ns)
'

for isize in 256 128; do
	n=t-posixkern-$isize
	mke2fs -q -F -t ext3 -I $isize -b 1024 "$T_TMP/x.img" 8M >/dev/null 2>&1 &&
		cp "$T_TMP/x.img" "$T_TMP/k.img" && up "$T_TMP/k.img" "$T_TMP/x.img" $n
	t_ok $? "$isize-byte inodes: two identical images, the kernel's and ext3d-fuse's mounted"
	t_both times-$isize "$times_set"
	down $n
	up "$T_TMP/x.img" "$T_TMP/k.img" $n-swap
	t_ok $? "$isize-byte inodes: the images swapped"
	t_both times-$isize-swapped "$times_get"
	down $n-swap
	e2fsck -fn "$T_TMP/x.img" >"$T_TMP/fsck.out" 2>&1
	t_ok $? "$isize-byte inodes: e2fsck -fn clean on the image ext3d wrote"
	e2fsck -fn "$T_TMP/k.img" >/dev/null 2>&1
	t_ok $? "$isize-byte inodes: e2fsck -fn clean on the image the kernel wrote"
done
t_done
