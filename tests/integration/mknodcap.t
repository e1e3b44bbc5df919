#!/bin/sh
# mknodcap.t - a device node needs CAP_MKNOD, as the kernel's vfs_mknod
# asks: uid 65534 gets EPERM for a block or character device in its own
# directory by path (ext3d_mknod), by inode (ext3d_mknod_ino), through a
# root session acting for it (ext3d_act_as, what ext3d-fuse sends) and
# through a FUSE mount (where the kernel refuses first); it may still make
# a whiteout (char 0:0), a FIFO, a socket and a file, and root may make
# devices. The kernel's answers on a loop mount of a twin
# image are the reference. Afterwards e2fsck -fn is clean and a kernel
# mount of the image ext3d wrote holds no device of uid 65534.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/twin.sh"
. "$T_TOP/tests/lib/fusemnt.sh"

t_twin_need
wops=$EXT3D_BUILD/tests/tools/wops

mkdir -p "$T_TMP/tree/mine"
chown 65534:65534 "$T_TMP/tree/mine"
img=$T_TMP/img
n=t-mknodcap
t_twin_start $n "with /mine owned by uid 65534"

# The calls of uid 65534: "CALL PATH MODE [RDEV]", rdev as makedev's.
cat >"$T_TMP/ops" <<'EOF'
pmknod /mine/pblk 060666 0x700
pmknod /mine/pchr 020666 0x103
mknod /mine/iblk 060666 0x700
mknod /mine/ichr 020666 0x103
pmknod /mine/whiteout 020000 0
mknod /mine/fifo 010644
mknod /mine/sock 0140644
pmknod /mine/file 0100644
EOF
as_nobody "$wops" --instance $n <"$T_TMP/ops" 2>&1 | cut -d' ' -f1 >"$T_TMP/got"
t_is "$(paste -sd' ' "$T_TMP/got")" "EPERM EPERM EPERM EPERM ok ok ok ok" \
	"uid 65534: devices EPERM by path and by inode; whiteout, FIFO, socket, file made"
cut -d' ' -f2- "$T_TMP/ops" | t_twin_kernel mknod >"$T_TMP/kgot"
if [ -s "$T_TMP/kgot" ]; then
	diff "$T_TMP/kgot" "$T_TMP/got" >"$T_TMP/diff"
	t_ok $? "the kernel gives uid 65534 the same answers"
	sed 's/^/# /' "$T_TMP/diff"
else
	t_skip "no kernel ext3 loop mount here" "the kernel gives uid 65534 the same answers"
fi

# ext3d-fuse acts for its caller through a root session.
t_is "$(printf '%s\n' 'actas 65534 65534' 'mknod /mine/ablk 060666 0x700' \
	'mknod /mine/achr 020666 0x103' 'actas off' 'mknod /mine/rblk 060600 0x700' \
	'pmknod /mine/rchr 020600 0x103' |
	"$wops" --instance $n 2>&1 | cut -d' ' -f1 | paste -sd' ')" "ok EPERM EPERM ok ok ok" \
	"acting for uid 65534 devices are EPERM; root makes them"

# Through a FUSE mount: the kernel asks CAP_MKNOD first, ext3d-fuse passes
# its caller on.
why=$(t_fuse_missing)
if [ -z "$why" ] && t_fuse_mount $n "$T_TMP/f"; then
	mknod_py='import errno, os, sys
try:
    os.mknod(sys.argv[1], int(sys.argv[2], 8), int(sys.argv[3], 0))
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])'
	t_is "$(as_nobody /usr/bin/python3 -c "$mknod_py" "$T_TMP/f/mine/fblk" 060666 0x700) $(
		as_nobody /usr/bin/python3 -c "$mknod_py" "$T_TMP/f/mine/ffifo" 010644 0) $(
		/usr/bin/python3 -c "$mknod_py" "$T_TMP/f/mine/froot" 060600 0x700)" "EPERM ok ok" \
		"FUSE: uid 65534's block device EPERM, its FIFO made; root's device made"
	t_umount "$T_TMP/f"
else
	t_skip "${why:-ext3d-fuse did not mount}" "FUSE: uid 65534's block device EPERM"
	# The same names, so that what follows holds either way.
	printf '%s\n' 'mknod /mine/ffifo 010644' 'mknod /mine/froot 060600 0x700' |
		"$wops" --instance $n >/dev/null 2>&1
fi

t_is "$(as_nobody "$T_EXT3D" --instance $n ls /mine 2>&1 | sort | paste -sd' ')" \
	"ffifo fifo file froot rblk rchr sock whiteout" "/mine holds what was allowed, nothing else"
t_instance_stop $n
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
t_ok $? "e2fsck -fn clean"
[ -n "$(tail -c 1 "$T_TMP/fsck")" ] && sed 's/^/# /' "$T_TMP/fsck" | head -20

if mkdir -p "$T_TMP/k" && mount -o loop,ro -t ext3 "$img" "$T_TMP/k" 2>/dev/null; then
	t_is "$(find "$T_TMP/k" \( -type b -o -type c \) -user 65534 -exec stat -c '%n %Hr,%Lr' {} + |
		grep -v ' 0,0$')" "" "a kernel mount of ext3d's image: no device of uid 65534 (but whiteouts)"
	t_is "$(cd "$T_TMP/k/mine" && find . \( -type b -o -type c \) -exec stat -c '%n:%U:%Hr,%Lr' {} + |
		sed 's,^\./,,' | sort | paste -sd' ')" "froot:root:7,0 rblk:root:7,0 rchr:root:1,3 whiteout:nobody:0,0" \
		"there: root's devices and the whiteout, as made"
	umount "$T_TMP/k"
else
	t_skip "no kernel ext3 loop mount here" "a kernel mount of ext3d's image"
	t_skip "no kernel ext3 loop mount here" "root's devices"
fi
t_done
