#!/bin/sh
# syncerr.t - what a successful sync promises across group restarts
# (docs/write-path.md, "Durability"). Each CLI call is a session of its
# own, so a sync cannot learn from its session that an earlier one's
# writes were thrown away: the instance's error sequence tells it.
#   1. `ext3d put` returns 0, inode-svc or journald-svc is SIGKILLed before
#      the put's transaction commits (commit interval 60 s), `ext3d sync`
#      then returns EIO, once: the next sync returns 0.
#   2. Nothing acknowledged was lost (put, sync, kill): the sync after the
#      restart returns 0 and the file is there.
#   3. The issue's loop at the default commit interval, the kill after a
#      delay or after the put's commit: every file whose sync returned 0
#      is there, whole.
# 2 and 3 run in ordered and in writeback mode; 3 runs 6 and 3 rounds
# (five times as many with EXT3D_LONG=1).
# e2fsck -fn on the image at the end.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

img=$T_TMP/img n=t-syncerr
mke2fs -q -F -t ext3 -b 1024 "$img" 64M >/dev/null 2>&1
t_ok $? "mke2fs -t ext3"

up() { # up COMMIT_MS [DATA]
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" \
		--set BLOCKDEV_ARGS= --set "COMMIT_MS=$1" --set "DATA=${2:-ordered}" \
		--restart-delay-max 250 >/dev/null
}
x() { "$T_EXT3D" --instance $n "$@"; }
# generation: how many group restarts the instance has been through.
generation() { t_status $n 2>/dev/null | grep -o '"generation":[0-9]*'; }
# kill_wait SERVICE: SIGKILL it, then wait for the group's restart to end.
kill_wait() {
	before=$(generation)
	pid=$(t_svc_pid $n "$1")
	case $pid in
	'' | 0 | *[!0-9]*) echo "# no pid for $1: '$pid'"; return 1 ;;
	esac
	kill -9 "$pid" || return 1
	for _ in $(seq 100); do
		[ "$(generation)" != "$before" ] && break
		sleep 0.2
	done
	t_instance_wait_ready $n
}
# sync_rc: the exit status of `ext3d sync`, and its message on stdout.
sync_rc() {
	x sync 2>"$T_TMP/sync.err"
	echo "$? $(sed 's/^ext3d: //' "$T_TMP/sync.err")"
}
# committed: waits until the running transaction has committed.
committed() {
	tid=$(t_field $n journal.running_tid)
	for _ in $(seq 600); do
		[ "$tid" = 0 ] || [ "$(t_field $n journal.commit_sequence)" -ge "$tid" ] && return 0
		sleep 0.1
	done
	return 1
}
# same PATH LOCAL: PATH on ext3d holds LOCAL's bytes.
same() { x get "$1" "$T_TMP/got" 2>/dev/null && cmp -s "$T_TMP/got" "$2"; }

up 60000
t_ok $? "instance ready (commit interval 60 s)"
for svc in inode-svc journald-svc; do
	seq 1 500 | sed "s/^/$svc /" >"$T_TMP/lost"
	x put "$T_TMP/lost" "/lost-$svc"
	t_ok $? "put /lost-$svc ($svc)"
	kill_wait $svc
	t_ok $? "SIGKILL $svc: the group restarted"
	t_is "$(sync_rc)" "1 sync: Input/output error" \
		"a new session's sync after the restart that lost the put: EIO ($svc)"
	t_is "$(sync_rc)" "0 " "the next sync: 0, the loss was reported ($svc)"
done
t_instance_stop $n

# The issue's loop, in ordered mode and in writeback (where a commit is
# not enough: the data is durable once an fsync or sync has flushed it).
# A sync that returns 0 after a put must find the put's file durable,
# whether the kill came before its commit or after.
for mode in ordered writeback; do
	up 5000 $mode
	t_ok $? "instance ready ($mode, commit interval 5 s)"
	seq 1 800 >"$T_TMP/kept"
	x put "$T_TMP/kept" "/kept-$mode" && x sync
	t_ok $? "put /kept-$mode, sync"
	kill_wait inode-svc
	t_ok $? "SIGKILL inode-svc: the group restarted"
	t_is "$(sync_rc)" "0 " "nothing acknowledged was lost: the sync after the restart returns 0 ($mode)"
	same "/kept-$mode" "$T_TMP/kept"
	t_ok $? "/kept-$mode is there, whole"

	rounds=6 ok=0 eio=0 other=0 missing=
	[ $mode = writeback ] && rounds=3
	[ -n "${EXT3D_LONG:-}" ] && rounds=$((rounds * 5))
	for i in $(seq $rounds); do
		f=$mode-$i
		seq "$i" 700 | sed "s/^/$f /" >"$T_TMP/$f"
		if ! x put "$T_TMP/$f" "/$f"; then
			other=$((other + 1))
			continue
		fi
		# Most kills come before the commit, one in three after it.
		if [ $((i % 3)) -eq 0 ]; then committed; else
			sleep "0.$(printf %03d $((i * 83 % 1000)))"; fi
		svc=inode-svc
		[ $((i % 4)) -eq 1 ] && svc=journald-svc
		kill_wait $svc >/dev/null || { other=$((other + 1)); break; }
		case $(sync_rc) in
		"0 ")
			ok=$((ok + 1))
			same "/$f" "$T_TMP/$f" || missing="$missing /$f" ;;
		"1 sync: Input/output error") eio=$((eio + 1)) ;;
		*) other=$((other + 1)) ;;
		esac
	done
	t_diag "$mode, $rounds rounds: sync returned 0 $ok times, EIO $eio times, something else $other times"
	t_is "$other" 0 "every put and every sync answered 0 or EIO ($mode)"
	t_is "${missing:-none}" none "every file whose sync returned 0 is there, whole ($mode)"
	t_instance_stop $n
done

e2fsck -fn "$img" >"$T_TMP/fsck.out" 2>&1
t_ok $? "e2fsck -fn clean"
[ -n "$(tail -c 1 "$T_TMP/fsck.out")" ] && sed 's/^/#   /' "$T_TMP/fsck.out" | head -20
t_done
