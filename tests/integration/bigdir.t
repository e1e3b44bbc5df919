#!/bin/sh
# bigdir.t - large directories through a running instance (wops scripts):
# thousands of files with 200-byte names made in one directory (a
# one-block directory converts to an htree, leaves split, with 1 KiB
# blocks the root fills and a second level appears), a third unlinked, a
# third renamed into another directory, a directory moved between
# directories and removed, then everything in the first directory added
# back. Each operation is one transaction with the credits the handlers
# ask for. Then e2fsck -fn must be clean (it checks the htree), debugfs
# must see the index, and the kernel (as root) must see the tree ext3d
# showed and find every name.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

wops=$EXT3D_BUILD/tests/tools/wops
xt=$EXT3D_BUILD/tests/tools/x3-tree
nfiles=1500
[ -n "${EXT3D_LONG:-}" ] && nfiles=6000
img=$T_TMP/img n=t-bigdir

# name I: 200 bytes, the number first
name() { printf '%06d%0194d' "$1" 0; }

# run: the script in $T_TMP/ops through wops; every answer must be "ok".
run() {
	"$wops" --instance "$n" <"$T_TMP/ops" >"$T_TMP/got" 2>&1
	bad=$(grep -vc '^ok' "$T_TMP/got")
	[ "$bad" -ne 0 ] && paste -d'|' "$T_TMP/ops" "$T_TMP/got" | grep -v '|ok' | head -5 |
		cut -c1-60,200- | sed 's/^/#   /'
	[ "$(grep -c '' "$T_TMP/got")" -eq "$(grep -c '' "$T_TMP/ops")" ] && [ "$bad" -eq 0 ]
}

for bs in 1024 4096; do
	mke2fs -q -F -t ext3 -b $bs "$img" 64M >/dev/null 2>&1
	t_ok $? "mke2fs -t ext3 -b $bs"
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= >/dev/null
	t_ok $? "instance ready ($bs)"

	{
		echo "mkdir /big 0755"
		echo "mkdir /other 0755"
		for i in $(seq $nfiles); do echo "mknod /big/$(name $i) 0100644"; done
	} >"$T_TMP/ops"
	run
	t_ok $? "$nfiles files made in /big ($bs)"
	{
		for i in $(seq 3 3 $nfiles); do echo "unlink /big/$(name $i)"; done
		for i in $(seq 1 3 $nfiles); do echo "rename /big/$(name $i) /other/$(name $i)"; done
		echo "mkdir /big/sub 0755"
		echo "mknod /big/sub/f 0100644"
		echo "rename /big/sub /other/sub"
		echo "unlink /other/sub/f"
		echo "rmdir /other/sub"
	} >"$T_TMP/ops"
	run
	t_ok $? "a third unlinked, a third renamed to /other, a directory moved and removed ($bs)"
	for i in $(seq 3 3 $nfiles); do echo "mknod /big/$(name $i) 0100644"; done >"$T_TMP/ops"
	run
	t_ok $? "the unlinked names made again ($bs)"

	"$xt" --instance $n ext3d / 2>&1 | grep -v '^/lost+found' >"$T_TMP/x.tree"
	t_instance_stop $n
	e2fsck -fn "$img" >"$T_TMP/fsck.out" 2>&1
	t_ok $? "e2fsck -fn clean ($bs)"
	[ -n "$(tail -c 1 "$T_TMP/fsck.out")" ] && sed 's/^/#   /' "$T_TMP/fsck.out" | head -20
	debugfs -R "htree /big" "$img" 2>/dev/null >"$T_TMP/htree"
	levels=$(sed -n 's/.*Indirect levels: //p' "$T_TMP/htree" | head -1)
	want=0
	[ $bs -eq 1024 ] && want=1
	t_is "$levels" $want "debugfs sees /big's index with $((want + 1)) level(s) ($bs)"
	mkdir -p "$T_TMP/mnt"
	if [ "$(id -u)" -eq 0 ] && mount -o ro,loop -t ext3 "$img" "$T_TMP/mnt" 2>/dev/null; then
		"$xt" host "$T_TMP/mnt" 2>&1 | grep -v '^/lost+found' >"$T_TMP/k.tree"
		miss=0
		for i in $(seq $nfiles); do
			d=big
			[ $((i % 3)) -eq 1 ] && d=other
			[ -e "$T_TMP/mnt/$d/$(name $i)" ] || miss=$((miss + 1))
		done
		umount "$T_TMP/mnt"
		diff "$T_TMP/x.tree" "$T_TMP/k.tree" >"$T_TMP/diff"
		t_ok $? "the kernel sees the tree ext3d showed ($bs, $(grep -c '' "$T_TMP/x.tree") entries)"
		head -10 "$T_TMP/diff" | cut -c1-120 | sed 's/^/#   /'
		t_is $miss 0 "the kernel finds every name ($bs)"
	else
		t_skip "not root or no loop ext3 mount" "the kernel sees the tree ext3d showed ($bs)"
		t_skip "not root or no loop ext3 mount" "the kernel finds every name ($bs)"
	fi
done
t_done
