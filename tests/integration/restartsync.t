#!/bin/sh
# restartsync.t - fsync across group restarts (tests/tools/x3-fsync).
# A client keeps four files open, appending and fsyncing, while inode-svc
# and then journald-svc are SIGKILLed (each a group restart): its handles
# keep working after each restart (re-granted by path; run as uid 65534
# when root, so that grants matter), and afterwards every byte an fsync
# acknowledged is there. Then a file written before a restart but not
# synced: its first write after it returns EIO (once), so does its fsync
# (once), a synced file's fsync returns 0,
# and the handle writes and reads on; an O_EXCL create, the first call on
# the new session, makes its file once and opens it (not EEXIST: its own
# file). e2fsck -fn on the image at the end.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

xf=$EXT3D_BUILD/tests/tools/x3-fsync
img=$T_TMP/img n=t-rsync
chmod 755 "$T_TMP" # uid 65534 reaches the run directory through it
mkdir -m 1777 "$T_TMP/logs" # and writes its logs here
trap '' PIPE
mke2fs -q -F -t ext3 -b 1024 -E root_owner=0:0 "$img" 256M >/dev/null 2>&1
t_ok $? "mke2fs -t ext3"
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
	--restart-delay-max 250 >/dev/null
t_ok $? "instance ready"
"$T_EXT3D" --instance $n chmod 1777 / 
t_ok $? "the root directory is writable by all"

as=
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	as="setpriv --reuid=65534 --regid=65534 --clear-groups"
	t_diag "clients run as uid 65534"
fi

for svc in inode-svc journald-svc; do
	d=/loop-$svc log=$T_TMP/logs/log-$svc
	$as "$xf" --instance $n loop $d "$log" 5000 >"$T_TMP/loop.out" 2>&1 &
	w=$!
	sleep 1.5
	before=$(grep -c '' "$log" 2>/dev/null || echo 0)
	t_kill_svc $n $svc
	t_ok $? "SIGKILL $svc (pid $t_killed_pid) with fsyncs running ($before acknowledged so far)"
	t_instance_wait_ready $n
	t_ok $? "the group is back after the kill of $svc"
	wait $w
	t_ok $? "the client's open files kept working after the restart ($(cat "$T_TMP/loop.out"))"
	after=$(grep -c '' "$log" 2>/dev/null || echo 0)
	t_ok "$([ "$after" -gt "$before" ]; echo $?)" "fsyncs acknowledged after the restart too ($before, then $after)"
	$as "$xf" --instance $n check $d "$log" >"$T_TMP/check.out" 2>&1
	t_ok $? "every fsync-acknowledged byte is there (kill of $svc)"
	sed 's/^/#   /' "$T_TMP/check.out" | head -5
done

for svc in inode-svc journald-svc; do
	fifo=$T_TMP/fifo-$svc
	mkfifo "$fifo"
	$as "$xf" --instance $n eio /eio-$svc <"$fifo" >"$T_TMP/eio.out" 2>&1 &
	w=$!
	exec 9>"$fifo"
	for _ in $(seq 100); do grep -q '^ready' "$T_TMP/eio.out" && break; sleep 0.1; done
	grep -q '^ready' "$T_TMP/eio.out" || sed 's/^/#   /' "$T_TMP/eio.out"
	t_kill_svc $n $svc
	t_instance_wait_ready $n
	t_ok $? "group back after the kill of $svc"
	echo go >&9
	exec 9>&-
	wait $w
	v() { awk -v k="$1" '$1 == k {print $2}' "$T_TMP/eio.out"; }
	t_is "$(v first-write-e1) $(v first-fsync-e1) $(v write-e0)" "9000 0 9000" "writes and an fsync before the restart ($svc)"
	t_is "$(v create-excl)" 0 "O_EXCL create of a read-only file as the first call after the restart ($svc)"
	t_is "$(v rewrite-e0) $(v rewrite-e0-again)" "-5 9000" \
		"its first write after the restart: EIO, then the next runs ($svc)"
	t_is "$(v fsync-e0)" -5 "fsync of a file written but not synced before the restart: EIO ($svc)"
	t_is "$(v fsync-e0-again)" 0 "... reported once ($svc)"
	t_is "$(v fsync-e1)" 0 "fsync of a file synced before the restart: 0 ($svc)"
	t_is "$(v write-e1) $(v fsync-e1-after) $(v read-e1)" "9000 0 right" "the same handle writes, fsyncs and reads after the restart ($svc)"
done

t_instance_stop $n
e2fsck -fn "$img" >"$T_TMP/fsck.out" 2>&1
t_ok $? "e2fsck -fn clean"
[ -n "$(tail -c 1 "$T_TMP/fsck.out")" ] && sed 's/^/#   /' "$T_TMP/fsck.out" | head -20
t_done
