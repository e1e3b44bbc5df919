#!/bin/sh
# nbdfault.t - network faults on an NBD export, made with nbdkit's own
# filters, under the random-kill workload (x3-kwork: creates, appends,
# renames, unlinks, fsyncs and syncs, logged so that its check knows what
# was acknowledged as durable):
#  - the server SIGKILLed mid-workload and started again, behind nbdkit's
#    cache filter in writeback mode, so that each kill also loses every
#    write the server acknowledged since the last flush (a server losing
#    its volatile cache): blockdev-svc reconnects and sends those writes
#    again;
#  - I/O errors at a rate (the error filter, switched on by a trigger
#    file): the journal aborts, the instance turns read-only, and once the
#    errors stop a restart replays the journal;
#  - every request delayed (the delay filter), over TCP, the server killed
#    and started again once meanwhile;
#  - the server gone for longer than --device-timeout: calls fail with EIO
#    within the deadline, status says why, and a restart once the server
#    is back replays the journal.
# After each: everything acknowledged by an fsync or a sync is there, no
# client hung, and e2fsck -fn finds the image clean. 8 server kills by
# default; EXT3D_LONG=1: 30.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/imgcheck.sh"

t_need_nbdkit
kills=8
[ -n "${EXT3D_LONG:-}" ] && kills=30
kwork=$EXT3D_BUILD/tests/tools/x3-kwork
img=$T_TMP/img n=t-nbdfault
mke2fs -q -F -t ext3 -b 1024 "$img" 64M >/dev/null 2>&1
t_ok $? "mke2fs -t ext3"

start() { # start [BLOCKDEV ARGS]
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$uri" \
		--set "BLOCKDEV_ARGS=${1:-}" --restart-delay-max 250
}
field() { t_field $n "$1" 2>/dev/null; }
# check ROUND...: x3-kwork's check of each round's directory; how many failed.
check() {
	cbad=0
	for r; do
		if ! "$kwork" --instance $n check "/r$r" "$T_TMP/log.$r" >"$T_TMP/check.out" 2>&1; then
			cbad=$((cbad + 1))
			t_diag "round $r:"; sed 's/^/#   /' "$T_TMP/check.out" | head -8
		fi
	done
	echo $cbad
}
rnd() { awk -v s="$2" -v m="$1" 'BEGIN { srand(s); print int(rand() * m) }'; }

# 1. The server killed and restarted, losing what it had not flushed.
# Writes are slowed a little (the delay filter, in front of the cache),
# so that kills often fall between a write and the flush that covers it.
server() {
	t_nbdkit_start srv unix --filter=delay --filter=cache file "$img" cache=writeback \
		delay-write=3ms
}
server
t_ok $? "nbdkit serves the image behind its cache filter (writeback) and a delay"
uri=$t_nbd_uri
start --device-timeout=30000
t_ok $? "instance ready"
rounds=
for i in $(seq "$kills"); do
	"$kwork" --instance $n run "/r$i" "$T_TMP/log.$i" "$i" >/dev/null 2>&1 &
	w=$!
	sleep "0.$(printf %03d $((100 + $(rnd 400 $i))))"
	t_nbdkit_stop srv KILL
	sleep "0.$(printf %03d $(rnd 500 $((i * 3))))"
	server || break
	wait $w
	rounds="$rounds $i"
done
t_is "$(echo $rounds | wc -w)" "$kills" "the server was killed and started again $kills times"
rec=$(field device.reconnects) replayed=$(field device.replayed)
t_ok "$([ "$rec" -ge $((kills / 2)) ]; echo $?)" "status counts the reconnections ($rec)"
t_ok "$([ "$replayed" -gt 0 ]; echo $?)" "unflushed writes were sent again after them ($replayed)"
t_is "$(field device.link)" up "status: link up"
t_is "$(field services.blockdev-svc.restarts)" 0 \
	"blockdev-svc reconnected from inside its sandbox, never restarted"
# Checked from the device, not from the buffer cache: the instance
# starts again first.
t_instance_stop $n
start
t_ok $? "instance ready again"
t_is "$(check $rounds)" 0 "every round's acknowledged writes are there and nothing half-done"
t_instance_stop $n
t_img_fsck "$img" "e2fsck -fn clean after the server kills"
t_nbdkit_stop srv

# 2. I/O errors at a rate, from the moment the trigger file appears.
trigger=$T_TMP/errors-on
t_nbdkit_start srv unix --filter=error file "$img" error=EIO error-rate=5% "error-file=$trigger"
uri=$t_nbd_uri
start
t_ok $? "instance on the export with the error filter ready"
"$kwork" --instance $n run /re1 "$T_TMP/log.e1" 101 >/dev/null 2>&1
touch "$trigger"
"$kwork" --instance $n run /re2 "$T_TMP/log.e2" 102 >/dev/null 2>&1
"$kwork" --instance $n run /re3 "$T_TMP/log.e3" 103 >/dev/null 2>&1
injected=$(field device.errors)
t_ok "$([ "$injected" -gt 0 ]; echo $?)" "errors reached blockdev-svc ($injected)"
grep -q "E -5" "$T_TMP/log.e2" "$T_TMP/log.e3"
t_ok $? "the client saw EIO"
rm -f "$trigger"
t_instance_stop $n
start
t_ok $? "with the errors off, the instance starts again (the journal replayed)"
t_is "$(check e1 e2 e3)" 0 "everything acknowledged before and during the errors is there"
t_instance_stop $n
t_img_fsck "$img" "e2fsck -fn clean after the I/O errors"
t_nbdkit_stop srv

# 3. Every request delayed, on TCP loopback, and the server killed and
# started again once in the middle (a reconnection over TCP).
delayed() { t_nbdkit_start tcpsrv tcp --filter=delay file "$img" delay-write=20ms delay-read=5ms; }
delayed
uri=$t_nbd_uri
start
t_ok $? "instance on the delayed export (TCP) ready"
"$kwork" --instance $n run /rd1 "$T_TMP/log.d1" 201 >/dev/null 2>&1 &
w=$!
sleep 1
t_nbdkit_stop tcpsrv KILL
delayed
t_ok $? "the server is killed and started again on the same port"
wait $w
p99=$(field device.p99_us) rec=$(field device.reconnects)
t_ok "$([ "$p99" -ge 16384 ]; echo $?)" "status's p99 latency shows the delay ($p99 us)"
t_ok "$([ "$rec" -ge 1 ]; echo $?)" "blockdev-svc reconnected over TCP ($rec)"
t_is "$(field services.blockdev-svc.restarts)" 0 "from inside its sandbox, never restarted"
t_is "$(check d1)" 0 "the delayed round checks out"
t_instance_stop $n
t_img_fsck "$img" "e2fsck -fn clean after the delays"
t_nbdkit_stop tcpsrv

# 4. The server gone past --device-timeout (2 s).
t_nbdkit_start srv unix file "$img"
uri=$t_nbd_uri
start --device-timeout=2000
t_ok $? "instance with --device-timeout=2000 ready"
"$kwork" --instance $n run /rg1 "$T_TMP/log.g1" 301 >/dev/null 2>&1
"$T_EXT3D" --instance $n sync >/dev/null 2>&1
t_ok $? "a round, synced"
t_nbdkit_stop srv KILL
head -c 200000 /dev/urandom >"$T_TMP/data"
t0=$(date +%s)
{ "$T_EXT3D" --instance $n put "$T_TMP/data" /late && "$T_EXT3D" --instance $n sync; } \
	>"$T_TMP/late.out" 2>&1
rc=$? t1=$(date +%s)
t_ok "$([ $rc -ne 0 ]; echo $?)" "a write and sync with the server gone fail"
grep -qE "Input/output error|Read-only file system" "$T_TMP/late.out"
t_check $? "with EIO (or EROFS once the journal aborted)" "$T_TMP/late.out"
t_ok "$([ $((t1 - t0)) -le 30 ]; echo $?)" "no client hung: they returned after $((t1 - t0)) s"
t_is "$(field device.link)" failed "status: link failed"
field device.last_error | grep -q "connect"
t_ok $? "status: the last device error names the failed connection"
t_nbdkit_start srv unix file "$img"
t_instance_stop $n
start
t_ok $? "with the server back, the instance starts again"
t_is "$(check g1)" 0 "the round synced before the server went is there"
t_instance_stop $n
t_img_fsck "$img" "e2fsck -fn clean after the server came back"
t_done
