#!/bin/sh
# fusekill.t - kills under a write load through the FUSE mount: each round
# tests/tools/x3-kwork --mount writes through the mount with system calls
# (creates, appends, renames, unlinks, mkdirs, fsyncs, syncfs), logging
# every call before and after, while ext3d-fuse, inode-svc or blockdev-svc
# (in turn) is SIGKILLed at a random moment. Once the instance and its
# mount are back, x3-kwork check reads the round's directory through
# libext3d: every byte and name an fsync acknowledged is there, nothing
# half-done is visible (syncfs is no durable point through FUSE: the kernel
# does not pass it to the daemon; x3-kwork does not count it). At the end
# the instance is unmounted and shut down and e2fsck -fn must find the
# image clean. 4 kills of each in
# data=ordered by default (about 30 s); EXT3D_LONG=1: 40 of each in each of
# the three data modes, each on a fresh image (120 rounds fill most of
# the 64 MiB: on one image the later modes' writers ran out of space, and
# writeback's returned no fsync at all).
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

t_need_fuse

each=4 modes=ordered
[ -n "${EXT3D_LONG:-}" ] && each=40 modes="ordered journal writeback"
n=t-fusekill-$$ img=$T_TMP/img mnt=$T_TMP/mnt
kwork=$EXT3D_BUILD/tests/tools/x3-kwork
mkdir -p "$mnt"
t_at_exit "umount -l '$mnt' 2>/dev/null"
# A number in [0, $1) from seed $2.
rnd() { awk -v s="$2" -v m="$1" 'BEGIN { srand(s); print int(rand() * m) }'; }
# Until the group is ready and ext3d-fuse is ready at its mount (10 s).
wait_back() {
	for _ in $(seq 200); do
		st=$(t_status $n 2>/dev/null)
		echo "$st" | grep -q '"supervisor":{[^}]*"state":"ready"' &&
			[ "$(t_field $n services.ext3d-fuse.state 2>/dev/null)" = ready ] && return 0
		sleep 0.05
	done
	return 1
}

# run MODE: a fresh image, an instance in data mode MODE, mounted, 3 x
# $each kill rounds.
run() {
	mode=$1 bad=0 sent=0 durable=0 lost=
	mke2fs -q -F -t ext3 -b 1024 "$img" 64M >/dev/null 2>&1
	t_ok $? "mke2fs -t ext3 (1 KiB blocks, $mode)"
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
		--set "DATA=$mode" --restart-delay-max 250
	t_ok $? "instance ready ($mode)"
	"$T_EXT3D" --instance $n mount "$mnt" >/dev/null 2>&1
	t_ok $? "mounted at $mnt"
	# data=writeback orders no data before its commit: past what an fsync
	# covered, stale bytes may show after a kill (as in the kernel).
	stale=
	[ "$mode" = writeback ] && stale=--stale-ok
	for i in $(seq "$rounds"); do
		t=$(echo $targets | cut -d' ' -f$((1 + i % 3)))
		log=$T_TMP/log.$mode.$i
		"$kwork" --instance $n "--mount=$mnt" run "/$mode-$i" "$log" "$i" >/dev/null 2>&1 &
		w=$!
		sleep "0.$(printf %03d $((50 + $(rnd 350 $i))))"
		pid=$(t_svc_pid $n "$t" 2>/dev/null)
		[ -n "$pid" ] && [ "$pid" != 0 ] && kill -9 "$pid" 2>/dev/null && sent=$((sent + 1))
		wait $w 2>/dev/null
		if ! wait_back; then
			bad=$((bad + 1)) lost="round $i ($t): the instance or its mount did not come back"
			break
		fi
		durable=$((durable + $(grep -c '^D F' "$log")))
		if ! "$kwork" --instance $n $stale check "/$mode-$i" "$log" >"$T_TMP/check.out" 2>&1; then
			bad=$((bad + 1))
			t_diag "round $i ($t killed):"
			sed 's/^/#   /' "$T_TMP/check.out" | head -10
		fi
	done
	if [ -n "$lost" ]; then
		t_diag "$lost; the end of its log:"
		sed 's/^/#   /' "$T_TMP/$n.log" | tail -20
	fi
	t_is "$sent" "$rounds" "every round SIGKILLed its service ($sent SIGKILLs sent, $each each of $targets)"
	t_is "$bad" 0 "every fsync-acknowledged byte and name is there after each kill ($mode)"
	t_ok "$([ "$durable" -gt 0 ]; echo $?)" "the writers' fsyncs returned ($durable)"
	t_fuse_mounted "$mnt"
	t_ok $? "still mounted at the same place"
	"$T_EXT3D" --instance $n umount >/dev/null 2>&1
	t_ok $? "ext3d umount"
	t_instance_stop $n
	e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
	t_ok $? "e2fsck -fn finds nothing to fix ($mode)" || sed 's/^/# /' "$T_TMP/fsck" | tail -5
}

targets="ext3d-fuse inode-svc blockdev-svc"
rounds=$((each * 3))
for m in $modes; do
	run $m
done
t_done
