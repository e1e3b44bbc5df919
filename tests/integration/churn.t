#!/bin/sh
# churn.t - many writers on the same few files at once (tests/tools/x3-churn):
# eight clients, three as root and five as other users (where the test
# runs as root), each with its own session, run a seeded random mix of
# create, write, truncate, punch hole, unlink, rename, link, mkdir, rmdir,
# symlink, extended attributes, fsync and close over twelve shared names,
# keeping files open after their names go; then the same as system calls
# through an ext3d-fuse mount (as root, where /dev/fuse is there). After every run the instance
# shuts down and e2fsck -fn must find nothing: no block or inode that no
# file owns, none owned twice. Every data mode, both block sizes. Then the
# same clients race creates (and writes to what they made) against unlinks
# of two names: a create whose inode an unlink frees before the creator
# holds it must not hand the creator a free inode to write into.
# A short run each here; EXT3D_LONG=1 runs each for 8 s (tests/soak runs
# the whole test several times).
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/fusemnt.sh"

churn=$EXT3D_BUILD/tests/tools/x3-churn
secs=3 rounds=1 nclients=8
[ -n "${EXT3D_LONG:-}" ] && secs=8
img=$T_TMP/img n=t-churn
chmod 755 "$T_TMP" # the other users reach session.sock through it
[ "$(id -u)" -eq 0 ] || t_diag "not root: every client runs as $(id -un)"
nofuse=$(t_fuse_missing)
[ "$(id -u)" -eq 0 ] || nofuse="mounting needs root"

# as ID CMD...: client ID runs CMD, as root (IDs 1-3) or as uid 1000+ID.
as() {
	id=$1; shift
	if [ "$(id -u)" -ne 0 ] || [ "$id" -le 3 ]; then "$@"; else
		setpriv --reuid=$((1000 + id)) --regid=$((1000 + id)) --clear-groups "$@"; fi
}

# churn SEED DIR ARGS...: the clients run x3-churn ARGS in DIR; how many
# failed.
churn() {
	seed=$1 dir=$2; shift 2
	pids=
	for id in $(seq $nclients); do
		as $id "$churn" --instance $n --seed "$seed$id" "$@" "$dir" >"$T_TMP/c.$id" 2>&1 &
		pids="$pids $!"
	done
	bad=0
	for p in $pids; do wait $p || bad=$((bad + 1)); done
	for id in $(seq $nclients); do sed 's/^/#   /' "$T_TMP/c.$id" | head -4; done
	return $bad
}

for round in $(seq $rounds); do
for bs in 1024 4096; do
for data in ordered journal writeback; do
	what="$bs-byte blocks, data=$data, round $round"
	mke2fs -q -F -t ext3 -b $bs -N 20000 "$img" 256M >/dev/null 2>&1
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
		--set "DATA=$data" >/dev/null
	t_ok $? "instance ready ($what)"
	"$T_EXT3D" --instance $n mkdir /d && "$T_EXT3D" --instance $n chmod 0777 /d
	churn "$round$bs" /d --seconds $secs
	t_is $? 0 "$nclients clients, every operation: no error a racing client could not cause ($what)"
	churn "$round$bs" /d --seconds $secs --names 2 --ops create,write,unlink,close
	t_is $? 0 "$nclients clients create, write, unlink and close two names ($what)"
	if [ -n "$nofuse" ]; then
		t_skip "$nofuse" "$nclients clients through the mount ($what)"
	elif t_fuse_mount $n "$T_TMP/m"; then
		churn "$round$bs" "$T_TMP/m/d" --posix --seconds $secs
		t_is $? 0 "$nclients clients through the mount, as system calls ($what)"
		t_umount "$T_TMP/m"
	else
		t_ok 1 "$nclients clients through the mount ($what)"
	fi
	restarts=0
	for s in blockdev-svc journald-svc alloc-svc inode-svc; do
		restarts=$((restarts + $(t_field $n "services.$s.restarts")))
	done
	t_is $restarts 0 "no service restarted ($what)"
	t_instance_stop $n
	e2fsck -fn "$img" >"$T_TMP/fsck.out" 2>&1
	rc=$?
	t_ok $rc "e2fsck -fn clean ($what)"
	[ $rc -eq 0 ] || grep -v '^Pass\|^e2fsck\|^$' "$T_TMP/fsck.out" | head -8 | sed 's/^/#   /'
done
done
done
t_done
