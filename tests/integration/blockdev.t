#!/bin/sh
# blockdev.t - blockdev-svc on its own, driven by bd-stress (a compose
# service of blockdev.compose): (a) random reads and writes checked byte
# for byte against a model; (b) malformed requests all rejected with the
# right errno while the service keeps running; (c) blockdev-svc SIGKILLed 3
# times under a stream of writes: restarted alone, requests resubmitted,
# every acknowledged write on the image; (d) the write log; (e) transient
# and persistent injected I/O errors. EXT3D_LONG=1 makes the runs longer.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

stress=$EXT3D_BUILD/tests/tools/bd-stress
compose=$T_TOP/tests/integration/blockdev.compose
id=bd$$
if [ "${EXT3D_LONG:-0}" = 1 ]; then
	random_ops=40000 stream_writes=40000 wlog_writes=5000
else
	random_ops=4000 stream_writes=8000 wlog_writes=600
fi
[ -x "$stress" ] || t_skip_all "no $stress (build first)"

# bd_image PATH: a 64M image; ext3 when mke2fs is there (so it is not zero).
bd_image() {
	rm -f "$1"
	mke2fs -q -F -t ext3 "$1" 64M >/dev/null 2>&1 || truncate -s 64M "$1"
}

# bd_start NAME IMAGE BLOCKDEV_ARGS [BD_STRESS_FLAG...] (at most 8 flags)
bd_start() {
	name=$1 img=$2 bdargs=$3
	shift 3
	while [ $# -lt 8 ]; do set -- "$@" ""; done
	t_instance_start "$name" "$compose" --set "IMAGE=$img" --set "BLOCKDEV_ARGS=$bdargs" \
		--set "STRESS_1=$1" --set "STRESS_2=$2" --set "STRESS_3=$3" --set "STRESS_4=$4" \
		--set "STRESS_5=$5" --set "STRESS_6=$6" --set "STRESS_7=$7" --set "STRESS_8=$8"
	t_ok $? "$name: instance ready"
}

# bd_lines FILE: its line count, 0 while it does not exist
bd_lines() { if [ -e "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# bd_wait_done NAME DONE [SECONDS]: the done file, then bd-stress reaped;
# gives up at once if the instance is gone.
bd_wait_done() {
	i=0 limit=$((${3:-30} * 10))
	while [ ! -e "$2" ] && [ $i -lt $limit ] && t_status "$1" >/dev/null 2>&1; do
		sleep 0.1
		i=$((i + 1))
	done
	while [ "$(t_field "$1" services.bd-stress.state 2>/dev/null)" = ready ] &&
		[ $i -lt $limit ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -e "$2" ]
	t_ok $? "$1: bd-stress finished (done file)"
	t_is "$(t_field "$1" services.bd-stress.last_exit_status)" 0 "$1: bd-stress exited 0"
	grep '^not ok\|error=-\|failures=[1-9]' "$2" | sed 's/^/# /'
}

# bd_field FILE KEY: the value of KEY=VALUE in FILE
bd_field() { sed -n "s/.*\\<$2=\\([^ ]*\\).*/\\1/p" "$1" | head -1; }

# bd_svc_kept NAME PID: blockdev-svc still the same process, never restarted
bd_svc_kept() {
	t_is "$(t_svc_pid "$1" blockdev-svc)" "$2" "$1: blockdev-svc pid unchanged"
	t_is "$(t_field "$1" services.blockdev-svc.restarts)" 0 "$1: blockdev-svc restarts 0"
	t_is "$(t_field "$1" services.blockdev-svc.state)" ready "$1: blockdev-svc still ready"
}

# bd_stop NAME: ext3d shutdown, and the supervisor must exit (status 0).
bd_stop() {
	eval "pid=\$t_pid_$(echo "$1" | tr -c 'a-zA-Z0-9\n' _)"
	"$T_EXT3D" --instance "$1" shutdown
	t_ok $? "$1: ext3d shutdown"
	st=gone
	for _ in $(seq 50); do
		st=$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
		{ [ -z "$st" ] || [ "$st" = Z ]; } && break
		sleep 0.1
	done
	if [ -z "$st" ] || [ "$st" = Z ]; then
		wait "$pid"
		t_is $? 0 "$1: the supervisor exited with status 0"
	else
		t_ok 1 "$1: the supervisor exited (still $st after 5 s)"
	fi
}

# (a) random writes and reads against a model of the whole device.
img=$T_TMP/a.img
bd_image "$img"
n=$id-rand
bd_start $n "$img" "" --mode=random --count=$random_ops --seed=11 \
	--done="$T_TMP/a.done" --model-out="$T_TMP/a.model"
bd_wait_done $n "$T_TMP/a.done" 60
t_diag "random: $(head -1 "$T_TMP/a.done")"
t_is "$(bd_field "$T_TMP/a.done" mismatches)" 0 "random: every read matched the model"
t_ok "$([ "$(bd_field "$T_TMP/a.done" reads)" -gt 0 ]; echo $?)" "random: reads were made"
bd_stop $n
cmp -s "$T_TMP/a.model" "$img"
t_ok $? "random: the image file equals the model byte for byte"
rm -f "$T_TMP/a.model"

# (b) malformed requests: each gets its errno, nothing else changes.
n=$id-bad
bd_start $n "$img" "" --mode=bad --done="$T_TMP/b.done" --seed=5
bdpid=$(t_svc_pid $n blockdev-svc)
bd_wait_done $n "$T_TMP/b.done"
t_is "$(grep -c '^not ok' "$T_TMP/b.done")" 0 "bad: no request got a wrong answer"
t_is "$(grep -c '^ok' "$T_TMP/b.done")" 48 "bad: all 48 cases answered as expected"
for k in 'unknown op' 'record version' 'nsect 0' 'max+1' 'across the end' 'UINT64_MAX' \
	'data_off 0' 'metadata zone' 'flags 0x4' 'good read' 'readv into two buffers' 'readv table entry' \
	'writev from two buffers' 'writev table entry' 'PREFLUSH'; do
	grep -q "^ok .*$k" "$T_TMP/b.done"
	t_ok $? "bad: '$k' case passed"
done
bd_svc_kept $n "$bdpid"
bd_stop $n

# (c) SIGKILL blockdev-svc three times under a stream of writes.
img=$T_TMP/c.img
bd_image "$img"
n=$id-kill ack=$T_TMP/c.ack
bd_start $n "$img" "" --mode=stream --count=$stream_writes --seed=42 --ack-log="$ack" \
	--done="$T_TMP/c.done" --pipeline=32 --pause-every=8 --pause-ms=2
for k in 1 2 3; do
	want=$((stream_writes * k / 5)) i=0
	while [ "$(bd_lines "$ack")" -lt $want ] && [ $i -lt 600 ] && [ ! -e "$T_TMP/c.done" ]; do
		sleep 0.02
		i=$((i + 1))
	done
	acked=$(bd_lines "$ack")
	t_ok "$([ ! -e "$T_TMP/c.done" ] && [ "$acked" -lt "$stream_writes" ]; echo $?)" \
		"kill $k lands mid-stream ($acked of $stream_writes writes acknowledged)"
	"$T_EXT3D" --instance $n kill blockdev-svc
	t_ok $? "kill $k: ext3d kill blockdev-svc"
	i=0
	until [ "$(t_field $n services.blockdev-svc.restarts 2>/dev/null)" = $k ] ||
		[ $i -ge 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
done
bd_wait_done $n "$T_TMP/c.done" 60
t_diag "stream: $(head -1 "$T_TMP/c.done")"
t_is "$(t_field $n services.blockdev-svc.restarts)" 3 "kill: blockdev-svc restarted 3 times"
t_is "$(t_field $n services.blockdev-svc.state)" ready "kill: blockdev-svc ready again"
t_is "$(t_field $n services.blockdev-svc.last_exit_signal)" 9 "kill: its last exit was SIGKILL"
t_is "$(t_field $n generation)" 0 "kill: restarted alone (no group restart)"
t_is "$(bd_field "$T_TMP/c.done" writes)" $stream_writes "kill: every write acknowledged"
t_is "$(bd_field "$T_TMP/c.done" mismatches)" 0 "kill: reads through blockdev-svc find every write"
resub=$(bd_field "$T_TMP/c.done" resubmitted)
t_diag "requests resubmitted after the restarts: $resub"
t_ok "$([ "${resub:-0}" -gt 0 ]; echo $?)" "kill: requests were resubmitted ($resub)"
bd_stop $n
t_is "$(bd_lines "$ack")" $stream_writes "kill: the ack log has every write"
"$stress" --mode=verify --image="$img" --ack-log="$ack" --seed=42 >"$T_TMP/c.verify" 2>&1
t_ok $? "kill: bd-stress --mode=verify finds every acknowledged write on the image"
sed 's/^/# verify: /' "$T_TMP/c.verify" | head -5
t_ok "$([ "$(bd_field "$T_TMP/c.verify" checked)" -gt 0 ]; echo $?)" \
	"kill: verify checked $(bd_field "$T_TMP/c.verify" checked) sectors"

# (d) the write log: one WRITE record per write, in order, and FLUSHes.
img=$T_TMP/d.img wl=$T_TMP/d.wlog
truncate -s 64M "$img"
cp "$img" "$T_TMP/d.before"
n=$id-wlog
bd_start $n "$img" "--write-log=$wl" --mode=stream --count=$wlog_writes --seed=9 \
	--ack-log="$T_TMP/d.ack" --done="$T_TMP/d.done" --pipeline=8 --fua-every=50
bd_wait_done $n "$T_TMP/d.done"
t_is "$(bd_field "$T_TMP/d.done" mismatches)" 0 "wlog: stream read back intact"
t_is "$(bd_field "$T_TMP/d.done" resubmitted)" 0 "wlog: nothing resubmitted without a restart"
bd_stop $n
t_is "$(head -c 8 "$wl")" EXT3DWL1 "wlog: the log starts with EXT3DWL1"
# struct bd_wlog_rec (blockdev-svc/internal.h): u32 magic, u32 op, u64
# sector, u32 nsect, u32 flags, host order; WRITEs followed by the data.
python3 - "$wl" "$T_TMP/d.ack" "$T_TMP/d.before" "$img" >"$T_TMP/d.parse" 2>&1 <<'EOF'
import struct, sys
log, ack, before, after = sys.argv[1:5]
data = open(log, "rb").read()
dev = bytearray(open(before, "rb").read())
acks = [tuple(map(int, l.split()[1:])) for l in open(ack)]
pos, writes, flushes, fua, seq, bad = 8, 0, 0, 0, [], 0
while pos + 24 <= len(data):
    magic, op, sector, nsect, flags = struct.unpack_from("=IIQII", data, pos)
    pos += 24
    if magic != 0x474f4c57 or op not in (1, 2):
        bad += 1
        break
    if op == 2:
        flushes += 1
        continue
    n = nsect * 512
    dev[sector * 512:sector * 512 + n] = data[pos:pos + n]
    pos += n
    writes += 1
    fua += flags & 1
    seq.append((sector, nsect))
print("writes=%d flushes=%d fua=%d bad=%d trailing=%d order=%d replay=%d" % (
    writes, flushes, fua, bad, len(data) - pos, seq == acks,
    bytes(dev) == open(after, "rb").read()))
EOF
t_diag "wlog: $(cat "$T_TMP/d.parse")"
t_is "$(bd_field "$T_TMP/d.parse" writes)" $wlog_writes \
	"wlog: one WRITE record per write ($wlog_writes)"
t_is "$(bd_field "$T_TMP/d.parse" bad)/$(bd_field "$T_TMP/d.parse" trailing)" 0/0 \
	"wlog: every record well formed, no trailing bytes"
t_is "$(bd_field "$T_TMP/d.parse" fua)" $((wlog_writes / 50)) "wlog: FUA writes flagged"
t_is "$(bd_field "$T_TMP/d.parse" flushes)" $((wlog_writes / 50 + 1)) \
	"wlog: a FLUSH record per FUA write and per flush"
t_is "$(bd_field "$T_TMP/d.parse" order)" 1 "wlog: WRITE records in acknowledgement order"
t_is "$(bd_field "$T_TMP/d.parse" replay)" 1 "wlog: replaying the log rebuilds the image"

# (e) injected I/O errors: returned as errors, never as success.
for kind in transient persistent; do
	n=$id-$kind
	bd_start $n "$img" "--fault=ioerr:$kind:3" --mode=ioerr --expect=$kind --fault-at=3 \
		--done="$T_TMP/e.$kind"
	bdpid=$(t_svc_pid $n blockdev-svc)
	bd_wait_done $n "$T_TMP/e.$kind"
	t_is "$(grep -c '^not ok' "$T_TMP/e.$kind")" 0 "$kind: every write and read answered as expected"
	grep -q '^ok write 3: got -5 want -5' "$T_TMP/e.$kind"
	t_ok $? "$kind: the 3rd write failed with EIO"
	if [ $kind = transient ]; then
		grep -q '^ok write 4: got 0 want 0' "$T_TMP/e.$kind"
		t_ok $? "$kind: the 4th write succeeded"
	else
		t_is "$(grep -c '^ok write [0-9]*: got -5' "$T_TMP/e.$kind")" 22 \
			"$kind: writes 3..24 all failed with EIO"
	fi
	grep -q '^ok flush after the faults' "$T_TMP/e.$kind"
	t_ok $? "$kind: flush and reads still served after the errors"
	bd_svc_kept $n "$bdpid"
	bd_stop $n
done

t_done
