#!/bin/sh
# posixdiff.t - POSIX behaviour through the ext3d FUSE mount against the
# kernel's ext3: tests/tools/x3-posixseq runs the same seeded sequences of
# system calls (creates, writes, truncates, renames, links, symlinks,
# mknod, chmod/chown/utimensat, xattrs and ACLs, as root and as uids 1000
# and 1001, errors on purpose) in a directory of a kernel loop mount and
# of an ext3d-fuse mount of an identical image (1 KiB and 4 KiB blocks,
# 256-byte inodes), and the two outputs must be equal line for line. Then
# e2fsck -fn is clean on both images, and the kernel mounts the image
# ext3d wrote and dumps the same trees. First the tool is checked against
# itself on two kernel mounts. Default: 3 seeds of 250 calls per block
# size; EXT3D_LONG=1: 8 seeds of 1500. EXT3D_SEED=N sets the base seed;
# EXT3D_PDIFF_KEEP=DIR keeps every output there (K = kernel, X = ext3d);
# EXT3D_PDIFF_ARGS passes options to x3-posixseq (--no-xattr: no xattr or
# ACL calls, to look at the rest alone).
set -u
. "$(dirname "$0")/../lib/tap.sh"
t_reachable
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/fusemnt.sh"

t_need_root "kernel loop mounts, other uids"
t_need_kmount
chmod 755 "$T_TMP" # uids 1000 and 1001 reach the mounts through it
ps=$EXT3D_BUILD/tests/tools/x3-posixseq
psargs=${EXT3D_PDIFF_ARGS:-}
nseeds=3 steps=250
[ -n "${EXT3D_LONG:-}" ] && nseeds=8 steps=1500
base=${EXT3D_SEED:-$(date +%s)}
why=$(t_fuse_missing)
t_diag "base seed $base, $nseeds seeds of $steps calls per block size"

# same OUT1 OUT2 MESSAGE: the two outputs are equal; the first differences
# go to the diagnostics.
same() {
	diff "$1" "$2" >"$T_TMP/diff" 2>&1
	t_ok $? "$3"
	head -40 "$T_TMP/diff" | sed 's/^/#   /'
}

t_mkimg "$T_TMP/k1.img" 1024 && cp "$T_TMP/k1.img" "$T_TMP/k2.img" &&
	t_kmount "$T_TMP/k1.img" "$T_TMP/k1" && t_kmount "$T_TMP/k2.img" "$T_TMP/k2"
t_ok $? "two kernel mounts of identical images"
"$ps" $psargs "$T_TMP/k1" "$base" "$steps" >"$T_TMP/k1.out" 2>&1
"$ps" $psargs "$T_TMP/k2" "$base" "$steps" >"$T_TMP/k2.out" 2>&1
same "$T_TMP/k1.out" "$T_TMP/k2.out" "x3-posixseq prints the same on two kernel mounts ($(grep -c '' "$T_TMP/k1.out") lines)"
t_umount "$T_TMP/k1"
t_umount "$T_TMP/k2"

k=0
for bs in 1024 4096; do
	k=$((k + 1))
	a=$T_TMP/x$bs.img b=$T_TMP/k$bs.img n=t-pdiff-$k mk=$T_TMP/mk mx=$T_TMP/mx
	t_mkimg "$a" $bs && cp "$a" "$b" && t_kmount "$b" "$mk"
	t_ok $? "two identical images ($bs-byte blocks), the kernel's mounted"
	if [ -n "$why" ]; then
		t_skip "$why" "ext3d-fuse side at $bs-byte blocks"
		t_umount "$mk"
		continue
	fi
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$a" \
		--set BLOCKDEV_ARGS= >/dev/null && t_fuse_mount $n "$mx"
	t_ok $? "ext3d instance up and mounted with ext3d-fuse ($bs-byte blocks)"
	for i in $(seq $nseeds); do
		seed=$((base + 100 * k + i))
		mkdir "$mk/s$i" "$mx/s$i"
		"$ps" $psargs "$mk/s$i" $seed $steps >"$T_TMP/k$bs-$i.out" 2>&1
		timeout 120 "$ps" $psargs "$mx/s$i" $seed $steps >"$T_TMP/x$bs-$i.out" 2>&1
		[ -z "${EXT3D_PDIFF_KEEP:-}" ] || cp "$T_TMP/k$bs-$i.out" "$T_TMP/x$bs-$i.out" "$EXT3D_PDIFF_KEEP"
		same "$T_TMP/k$bs-$i.out" "$T_TMP/x$bs-$i.out" \
			"every result, errno, stat field, time move and the tree alike (seed $seed, $bs-byte blocks)"
	done
	t_umount "$mx"
	t_instance_stop $n
	t_umount "$mk"
	e2fsck -fn "$a" >"$T_TMP/fsck.out" 2>&1
	rc=$?
	t_ok $rc "e2fsck -fn clean on the image ext3d wrote ($bs-byte blocks)"
	[ $rc -eq 0 ] || sed 's/^/#   /' "$T_TMP/fsck.out" | head -20
	e2fsck -fn "$b" >/dev/null 2>&1
	t_ok $? "e2fsck -fn clean on the kernel's twin ($bs-byte blocks)"
	if t_kmount "$a" "$T_TMP/ma"; then
		for i in $(seq $nseeds); do
			"$ps" $psargs --dump "$T_TMP/ma/s$i" >"$T_TMP/a.tree" 2>&1
			grep '^T ' "$T_TMP/x$bs-$i.out" >"$T_TMP/x.tree"
			same "$T_TMP/x.tree" "$T_TMP/a.tree" \
				"the kernel mounts ext3d's image and dumps the tree ext3d showed (seed $((base + 100 * k + i)))"
		done
		t_umount "$T_TMP/ma"
	else
		t_ok 1 "the kernel mounts the image ext3d wrote ($bs-byte blocks)"
	fi
done
t_done
