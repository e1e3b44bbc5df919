#!/bin/sh
# pwriters.t - several clients writing at once (tests/tools/x3-pwriters):
# four processes, each with its own session, first in four directories of
# their own, then all in one shared directory (creates, chunked and
# appending writes, sparse files, fsyncs, renames and unlinks side by
# side); each reads back its own files, then another client checks all of
# them; then all make short names by the thousand in one directory (leaf
# splits of the htree, each client's unlinks among the others' creates).
# Then the instance is shut down and e2fsck -fn must find the image
# clean, and the kernel (as root) mounts it and sees the tree ext3d showed.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

pw=$EXT3D_BUILD/tests/tools/x3-pwriters
xt=$EXT3D_BUILD/tests/tools/x3-tree
# Files average 150 KiB and those of both rounds stay (less the unlinked
# seventh), some 620 MB in the long form: the image holds them with room
# to spare, as this tests concurrency, not a full disk (enospc.t does that).
nclients=4 nfiles=60 nnames=1000 size=160M
[ -n "${EXT3D_LONG:-}" ] && nclients=8 nfiles=300 nnames=5000 size=1G
img=$T_TMP/img n=t-pw
# Client ID's part, for t_clients; in /shared its files are numbered from
# 101, apart from those it made in /ownID.
own() { "$pw" --instance $n run /own$1 $1 $nfiles; }
shared() { "$pw" --instance $n run /shared $(($1 + 100)) $nfiles; }
names() { "$pw" --instance $n names /names $1 $nnames; }
for bs in 1024 4096; do
	mke2fs -q -F -t ext3 -b $bs -N 50000 "$img" $size >/dev/null 2>&1
	t_ok $? "mke2fs -t ext3 -b $bs"
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= >/dev/null
	t_ok $? "instance ready ($bs)"
	t_clients $nclients "$T_TMP/pw" own
	t_ok $? "$nclients clients in their own directories, each reads back its files ($bs)"
	t_clients $nclients "$T_TMP/pw" shared
	t_ok $? "$nclients clients in one shared directory, each reads back its files ($bs)"
	bad=0
	for id in $(seq $nclients); do
		"$pw" --instance $n check /own$id $id $nfiles >"$T_TMP/chk" 2>&1 || bad=$((bad + 1))
		"$pw" --instance $n check /shared $((id + 100)) $nfiles >>"$T_TMP/chk" 2>&1 || bad=$((bad + 1))
	done
	t_is $bad 0 "another client finds every file with its bytes, the unlinked ones gone ($bs)"
	sed 's/^/#   /' "$T_TMP/chk" | head -10
	t_clients $nclients "$T_TMP/nm" names
	t_is $? 0 "$nclients clients make $nnames short names each in one directory, unlink half, list the rest ($bs)"
	"$xt" --instance $n ext3d / 2>&1 | grep -v '^/lost+found' >"$T_TMP/x.tree"
	t_instance_stop $n
	e2fsck -fn "$img" >"$T_TMP/fsck.out" 2>&1
	t_ok $? "e2fsck -fn clean ($bs)"
	[ -n "$(tail -c 1 "$T_TMP/fsck.out")" ] && sed 's/^/#   /' "$T_TMP/fsck.out" | head -20
	mkdir -p "$T_TMP/mnt"
	if [ "$(id -u)" -eq 0 ] && mount -o ro,loop -t ext3 "$img" "$T_TMP/mnt" 2>/dev/null; then
		"$xt" host "$T_TMP/mnt" 2>&1 | grep -v '^/lost+found' >"$T_TMP/k.tree"
		umount "$T_TMP/mnt"
		diff "$T_TMP/x.tree" "$T_TMP/k.tree" >"$T_TMP/diff"
		t_ok $? "the kernel sees the tree ext3d showed ($bs, $(grep -c '' "$T_TMP/x.tree") entries)"
		head -10 "$T_TMP/diff" | sed 's/^/#   /'
	else
		t_skip "needs root and a loop mount" "the kernel sees the tree ext3d showed ($bs)"
	fi
done
t_done
