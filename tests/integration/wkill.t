#!/bin/sh
# wkill.t - random kills during a write workload with fsyncs: each round a
# libext3d client (tests/tools/x3-kwork) creates, appends, renames, unlinks
# and makes directories in a directory of its own, fsyncing and syncing now
# and then, while one process is SIGKILLed at a random moment: a service
# (blockdev-svc, journald-svc, alloc-svc, inode-svc) or the client itself.
# Once the instance is ready again, the round's directory is checked
# against the client's log: everything an fsync or sync acknowledged is
# there, nothing half-done is visible. First, three rounds stop the client
# between two calls (x3-kwork --stop-at) for an inode-svc kill: its next
# change that would build on a lost one gets EIO. Every 25 rounds and at the end the
# instance is shut down and e2fsck -fn must find the image clean. 200 kills
# in ordered mode by default; EXT3D_LONG=1: 600, the data mode changing
# every 50 rounds.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

kills=200 every=25
[ -n "${EXT3D_LONG:-}" ] && kills=600 every=50
img=$T_TMP/img n=t-wkill
kwork=$EXT3D_BUILD/tests/tools/x3-kwork
mke2fs -q -F -t ext3 -b 1024 "$img" 96M >/dev/null 2>&1
t_ok $? "mke2fs -t ext3 (1 KiB blocks)"

modes="ordered"
[ -n "${EXT3D_LONG:-}" ] && modes="ordered journal writeback"
up() { # up MODE
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" \
		--set BLOCKDEV_ARGS= --set "DATA=$1" --restart-delay-max 250 >/dev/null
}
# A number in [0, $1) from the round's seed.
rnd() { awk -v s="$2" -v m="$1" 'BEGIN { srand(s); print int(rand() * m) }'; }
mode=ordered
up $mode
t_ok $? "instance ready ($mode)"
bad=0 fsck_bad=0 fscks=0 sent=0 lost_round=

# Kills between two calls: x3-kwork stops itself after its Nth append
# (--stop-at), inode-svc is killed, and once the group is back x3-kwork
# goes on. The restart took the files back to their last commit, and
# appends that no fsync covered are gone; x3-kwork's next change to such
# a file or directory must get EIO (libext3d's rule), not build on what
# is gone: its next append used to land at the file's shorter end
# ("wrong byte at offset 0"). Each seed:count below met that case; a
# sync after each takes the restart's EIO, so the next starts clean.
stop_bad=0 stop_eio=0
for sn in 4:5 6:12 27:8; do
	s=${sn%:*} log=$T_TMP/log.s${sn%:*}
	"$kwork" --instance $n --stop-at="${sn#*:}" run "/s$s" "$log" "$s" >/dev/null 2>&1 &
	w=$!
	for _ in $(seq 1000); do
		st=$(awk '{print $3}' "/proc/$w/stat" 2>/dev/null)
		[ "$st" = T ] || [ "$st" = Z ] || [ -z "$st" ] && break
		sleep 0.01
	done
	if [ "$st" = T ]; then
		pid=$(t_svc_pid $n inode-svc)
		kill -9 "$pid" && sent=$((sent + 1)) && t_seen_dead $n inode-svc "$pid"
		t_instance_wait_ready $n >/dev/null
	fi
	kill -CONT $w
	wait $w
	# A change after the restart (not an fsync or a sync) got EIO: the
	# run stopped there instead of appending at a shorter end.
	awk 'p ~ /^B [ACRUM]( |$)/ && $0 == "E -5" { f = 1 } { p = $0 } END { exit !f }' "$log" &&
		stop_eio=$((stop_eio + 1))
	if ! "$kwork" --instance $n check "/s$s" "$log" >"$T_TMP/check.out" 2>&1; then
		stop_bad=$((stop_bad + 1))
		t_diag "seed $s, stopped after append ${sn#*:}:"; sed 's/^/#   /' "$T_TMP/check.out" | head -10
	fi
	"$T_EXT3D" --instance $n sync >/dev/null 2>&1
done
t_is "$stop_bad" 0 "each round killed between two calls checks out"
t_is "$stop_eio" 3 "in each, a change after the restart that would build on a lost one got EIO"
targets="blockdev-svc journald-svc alloc-svc inode-svc client"
for i in $(seq "$kills"); do
	log=$T_TMP/log.$i
	"$kwork" --instance $n run "/r$i" "$log" "$i" >/dev/null 2>&1 &
	w=$!
	sleep "0.$(printf %03d $((20 + $(rnd 280 $i))))"
	t=$(echo $targets | cut -d' ' -f$((1 + $(rnd 5 $((i * 7))))))
	if [ "$t" = client ]; then
		kill -9 $w 2>/dev/null && sent=$((sent + 1))
	else
		pid=$(t_svc_pid $n "$t" 2>/dev/null)
		[ -n "$pid" ] && [ "$pid" != 0 ] && kill -9 "$pid" 2>/dev/null && sent=$((sent + 1)) &&
			t_seen_dead $n "$t" "$pid"
	fi
	wait $w 2>/dev/null
	if ! t_instance_wait_ready $n >"$T_TMP/ready.out"; then
		bad=$((bad + 1)); lost_round=$i
		sed 's/^/# /' "$T_TMP/ready.out"
		break
	fi
	# data=writeback orders no data before its commit: past what an
	# fsync covered, stale bytes may show after a kill (as in the kernel).
	stale=
	[ "$mode" = writeback ] && stale=--stale-ok
	if ! "$kwork" --instance $n $stale check "/r$i" "$log" >"$T_TMP/check.out" 2>&1; then
		bad=$((bad + 1))
		t_diag "round $i (killed $t):"; sed 's/^/#   /' "$T_TMP/check.out" | head -10
		t_diag "the instance's log, last lines:"; tail -15 "$T_TMP/$n.log" | sed 's/^/#   /'
	fi
	if [ $((i % every)) -eq 0 ] || [ "$i" = "$kills" ]; then
		t_instance_stop $n
		fscks=$((fscks + 1))
		if ! e2fsck -fn "$img" >"$T_TMP/fsck.out" 2>&1; then
			fsck_bad=$((fsck_bad + 1))
			t_diag "e2fsck after round $i:"; sed 's/^/#   /' "$T_TMP/fsck.out" | head -20
		fi
		[ "$i" = "$kills" ] && break
		set -- $modes
		[ $# -gt 1 ] && mode=$(echo $modes | cut -d' ' -f$((1 + (i / every) % $#)))
		up $mode || { bad=$((bad + 1)); lost_round=$i; break; }
	fi
done
t_ok "$([ -z "$lost_round" ]; echo $?)" "the instance came back after every kill ${lost_round:+(not after round $lost_round)}"
t_is "$bad" 0 "every round's acknowledged writes were there and nothing half-done ($sent SIGKILLs sent)"
t_is "$fsck_bad" 0 "e2fsck -fn clean each of the $fscks times the instance was shut down"
t_done
