#!/bin/sh
# restartkill.t - deaths during a group restart. inode-svc, the last
# service of the group, waits at a gate (a wrapper that execs it once a
# file exists), so that each kill lands while the group is starting: after
# inode-svc is killed (a group restart), blockdev-svc, journald-svc,
# alloc-svc or the gated inode-svc itself is SIGKILLed before the group is
# ready. The supervisor must see that death at once (status stops showing
# the dead pid, the log names it), not once inode-svc's start times out at
# the gate, then bring the group back once the gate opens, and a read
# issued during the restart must return the file's bytes, not ETIMEDOUT;
# with the gate kept closed, status and the log say what the restart waits
# for, before its deadline. Then, ungated, the
# same kills at their natural moment and a short kill storm; the time from
# the last kill to ready is printed (diag), not judged.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

n=t-rkill-$$ img=$T_TMP/img gate=$T_TMP/gate
mkdir -p "$T_TMP/src"
head -c 300000 /dev/urandom >"$T_TMP/src/f"
mke2fs -q -F -t ext3 -d "$T_TMP/src" "$img" 32M >/dev/null 2>&1
t_ok $? "mke2fs -t ext3 -d (an image with a file)"
printf '#!/bin/sh\nwhile [ ! -e "%s" ]; do sleep 0.01; done\nexec "%s" "$@"\n' \
	"$gate" "$EXT3D_BUILD/inode-svc/inode-svc" >"$T_TMP/gated"
chmod +x "$T_TMP/gated"
sed "s#\${BUILD}/inode-svc/inode-svc#$T_TMP/gated#" "$T_TOP/compose/ext3d.compose" \
	>"$T_TMP/gated.compose"
touch "$gate"
t_instance_start $n "$T_TMP/gated.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance ready" || { t_done; exit 1; }
log=$T_TMP/$n.log

# svc NAME: "pid state" of a service, from one status.
svc() {
	t_status $n 2>/dev/null | python3 -c '
import json, sys
s = next(x for x in json.load(sys.stdin)["services"] if x["name"] == sys.argv[1])
print(s["pid"], s["state"])' "$1"
}
# wait_until CMD...: until CMD succeeds (up to 10 s).
wait_until() {
	for _ in $(seq 200); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# kill9 PID: SIGKILLs a service's process; never pid 0 or nothing, which
# would be this test's own process group.
kill9() { [ "${1:-0}" -gt 0 ] 2>/dev/null && kill -9 "$1" 2>/dev/null; }
# starting_after PID: inode-svc is in another process than PID and at the gate.
starting_after() { set -- "$1" $(svc inode-svc); [ "$2" != "$1" ] && [ "$3" = starting ]; }
# gone PID NAME: status no longer shows NAME in process PID.
gone() { set -- "$1" $(svc "$2"); [ -n "${2:-}" ] && [ "$2" != "$1" ]; }
# restarted PID NAME: NAME runs again, in another process than PID.
restarted() { set -- "$1" $(svc "$2"); [ -n "${2:-}" ] && [ "$2" != "$1" ] && [ "$2" != 0 ]; }
# all_ready: the instance and every service of the group ready, each pid alive.
all_ready() {
	t_status $n 2>/dev/null | python3 -c '
import json, os, sys
st = json.load(sys.stdin)
g = [s for s in st["services"] if s["name"] != "ext3d-fuse"]
alive = all(os.path.exists("/proc/%d" % s["pid"]) and
            open("/proc/%d/stat" % s["pid"]).read().split(")")[-1].split()[0] != "Z" for s in g)
sys.exit(0 if st["supervisor"]["state"] == "ready" and alive and
         all(s["state"] == "ready" for s in g) else 1)'
}
read_ok() { "$T_EXT3D" --instance $n cat /f >"$1" 2>&1 && cmp -s "$T_TMP/src/f" "$1"; }

for t in blockdev-svc journald-svc alloc-svc inode-svc; do
	rm -f "$gate"
	ino=$(svc inode-svc | cut -d' ' -f1)
	kill9 "$ino"
	wait_until starting_after "$ino"
	t_ok $? "$t: inode-svc killed, the group restarts and waits at the gate"
	pid=$(svc $t | cut -d' ' -f1) hung=$(grep -c "was not ready in" "$log")
	kill9 "$pid"
	start=$(now_ms)
	read_ok "$T_TMP/read.$t" &
	reader=$!
	# At once: not when the gated inode-svc's start times out (15 s).
	wait_until gone "$pid" $t && [ "$(grep -c "was not ready in" "$log")" = "$hung" ]
	t_ok $? "$t: its death during the restart is seen at once (status drops pid $pid)"
	grep -q "$t (pid $pid) killed by signal 9" "$log"
	t_ok $? "$t: and the supervisor's log says so"
	touch "$gate"
	t_instance_wait_ready $n >/dev/null
	t_ok $? "$t: the instance is ready once the gate opens"
	t_diag "$t: ready $(($(now_ms) - start)) ms after its kill (gated)"
	t_is "$(t_status $n | python3 -c 'import json,sys; print(" ".join(s["state"] for s in json.load(sys.stdin)["services"]))')" \
		"ready ready ready ready unmounted" "$t: every service is ready"
	wait $reader
	t_ok $? "$t: a read issued during the restart returned the file's bytes" ||
		sed 's/^/# /' "$T_TMP/read.$t" | head -3
done
grep -q "Input/output error" "$log"
t_ok "$([ $? -ne 0 ]; echo $?)" "no service failed on a dead blockdev-svc (Input/output error)"

# A restart that cannot finish says so before its deadline: with the gate
# closed, status names the service the restart waits for and its cause,
# and halfway to the deadline the log and status say that it is late.
rm -f "$gate"
ino=$(svc inode-svc | cut -d' ' -f1)
kill9 "$ino"
wait_until starting_after "$ino"
reason=$(t_field $n supervisor.reason)
case "$reason" in
"inode-svc killed by signal 9 (Killed); waiting for inode-svc (pid "*")") r=0 ;;
*) r=1 ;;
esac
t_ok $r "status says what the restart waits for, after what: $reason"
wait_until grep -q "inode-svc (pid [0-9]*) is not ready after 7500 ms; it is killed at 15000 ms" "$log"
t_ok $? "halfway to its deadline the log says that inode-svc is late"
reason=$(t_field $n supervisor.reason)
case "$reason" in *"waiting for inode-svc (pid "*"), not ready after 7500 ms") r=0 ;; *) r=1 ;; esac
t_ok $r "and so does status: $reason"
touch "$gate"
t_instance_wait_ready $n >/dev/null
t_ok $? "the instance is ready once the gate opens"

# Ungated: a kill as soon as the restart has started the service again.
for t in blockdev-svc journald-svc alloc-svc; do
	wait_until all_ready
	ino=$(svc inode-svc | cut -d' ' -f1) pid=$(svc $t | cut -d' ' -f1)
	kill9 "$ino"
	wait_until restarted "$pid" $t
	new=$(svc $t | cut -d' ' -f1)
	kill9 "$new"
	start=$(now_ms)
	wait_until restarted "$new" $t && wait_until all_ready
	t_ok $? "$t killed again while the group restarts: ready again"
	t_diag "$t: ready $(($(now_ms) - start)) ms after its kill during a restart"
	read_ok "$T_TMP/read2.$t"
	t_ok $? "$t: the file reads back"
done

sup=$(t_field $n supervisor.pid)
python3 "$T_TOP/tests/lib/killer.py" "$sup" 30 blockdev-svc journald-svc alloc-svc inode-svc \
	--seed 5 --max-sleep 0.1 >"$T_TMP/killer.out" 2>&1
t_ok $? "a storm of 30 SIGKILLs: $(cat "$T_TMP/killer.out")"
start=$(now_ms)
wait_until all_ready
t_ok $? "ready after the storm"
t_diag "ready $(($(now_ms) - start)) ms after the storm's last kill"
read_ok "$T_TMP/read3"
t_ok $? "the file reads back after the storm"
t_instance_stop $n
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
t_ok $? "e2fsck -fn finds nothing to fix" || sed 's/^/# /' "$T_TMP/fsck" | tail -5
t_done
