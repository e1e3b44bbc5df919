#!/bin/sh
# stall.t - the watchdog and the client deadlines: each service stopped
# with SIGSTOP misses its heartbeat, is reported stalled within the
# watchdog's deadline (here 1 s), killed and replaced, while libext3d
# clients keep reading and none blocks past its call deadline; with the
# watchdog set long, a client call on a stopped inode-svc returns ETIMEDOUT
# at its own deadline (EXT3D_CALL_TIMEOUT_MS) instead of hanging, and a
# shutdown with the service still stopped kills it at the stop's deadline
# instead of waiting for it forever.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

tree=$T_TMP/tree img=$T_TMP/img n=t-stall xs=$EXT3D_BUILD/tests/tools/x3-storm
deadline=10000
mkdir -p "$tree"
for i in 1 2 3; do head -c $((i * 300000)) /dev/urandom >"$tree/f$i"; done
mke2fs -q -F -t ext3 -d "$tree" "$img" 64M >/dev/null 2>&1
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
	--watchdog 1000
t_ok $? "instance ready with a 1 s watchdog"
t_is "$(t_field $n supervisor.watchdog_ms)" 1000 "status shows the watchdog deadline"

"$xs" --instance $n --threads 2 --stop "$T_TMP/stop" "$tree" f1 f2 f3 >"$T_TMP/storm.out" 2>&1 &
storm=$!
t_at_exit "touch $T_TMP/stop; kill $storm 2>/dev/null"
for svc in blockdev-svc journald-svc alloc-svc inode-svc; do
	t_instance_wait_ready $n >/dev/null
	pid=$(t_svc_pid $n $svc) stalls=$(t_field $n services.$svc.stalls)
	[ "${pid:-0}" -gt 0 ] || { t_ok 1 "$svc runs"; continue; } # kill 0 would stop us
	kill -STOP "$pid"
	seen=
	for _ in $(seq 100); do # 10 s: a generous bound on a 1 s deadline
		[ "$(t_field $n services.$svc.stalls)" -gt "$stalls" ] && { seen=1; break; }
		sleep 0.1
	done
	t_ok "$([ -n "$seen" ]; echo $?)" "$svc stopped by SIGSTOP is reported stalled"
	grep -q "$svc (pid $pid) stalled: no heartbeat" "$T_TMP/$n.log"
	t_ok $? "the log says $svc stalled"
	t_instance_wait_ready $n
	t_ok "$([ "$(t_svc_pid $n $svc)" != "$pid" ]; echo $?)" "$svc was replaced (a new pid)"
	t_is "$(t_field $n services.$svc.state)" ready "$svc is ready again"
done
touch "$T_TMP/stop"
for _ in $(seq 150); do kill -0 $storm 2>/dev/null || break; sleep 0.1; done
wait $storm
t_ok $? "the clients saw no wrong byte and no error but EIO or ETIMEDOUT"
grep -v '^# timed out' "$T_TMP/storm.out" | sed 's/^/# /'
longest=$(t_storm "$T_TMP/storm.out" max_wait_ms)
t_ok "$([ "${longest:-999999}" -le $((deadline + 1000)) ]; echo $?)" \
	"no client blocked past its deadline of $deadline ms (longest: ${longest:-?} ms)"
t_instance_stop $n

# A watchdog longer than the client's deadline: the client gives up first.
n=t-stall-long
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
	--watchdog 60000
t_ok $? "instance ready with a 60 s watchdog"
pid=$(t_svc_pid $n inode-svc)
t_ok "$([ "${pid:-0}" -gt 0 ]; echo $?)" "inode-svc runs (pid ${pid:-none})"
[ "${pid:-0}" -gt 0 ] || pid=2147483647 # kill -STOP 0 would stop this test
EXT3D_CALL_TIMEOUT_MS=1500 "$xs" --instance $n --threads 2 --seconds 3 "$tree" f1 f2 \
	>"$T_TMP/long.out" 2>&1 &
storm=$!
sleep 0.5 # attached and reading
kill -STOP "$pid"
wait $storm
grep -v '^# timed out' "$T_TMP/long.out" | sed 's/^/# /'
calls=$(t_storm "$T_TMP/long.out" calls) timedout=$(t_storm "$T_TMP/long.out" etimedout)
longest=$(t_storm "$T_TMP/long.out" max_wait_ms)
t_ok "$([ "${timedout:-0}" -ge 1 ]; echo $?)" "calls on a stopped inode-svc return ETIMEDOUT (${timedout:-0} of ${calls:-0} calls)"
# Past the deadline, show which calls timed out and after how long.
[ "${longest:-0}" -gt 2500 ] && t_diag "a call waited ${longest} ms, past its deadline:" &&
	grep '^# timed out' "$T_TMP/long.out" | sed 's/^/#   /'
t_ok "$([ "${longest:-999999}" -le 2500 ]; echo $?)" "at their 1500 ms deadline (longest wait ${longest:-?} ms)"
"$T_EXT3D" --instance $n status >/dev/null
t_is $? 0 "within the watchdog's deadline status still says ready"
# A shutdown while inode-svc is still stopped: it cannot act on SIGTERM, so
# its stop deadline SIGKILLs it, and the others stop after it.
sup=$(t_field $n supervisor.pid)
"$T_EXT3D" --instance $n shutdown >/dev/null 2>&1
for _ in $(seq 600); do t_pid_gone "$sup" && break; sleep 0.1; done
t_pid_gone "$sup"
t_ok $? "a shutdown with inode-svc stopped ends: the supervisor exits"
grep -q "inode-svc (pid $pid) still runs at its deadline: killing it" "$T_TMP/$n.log"
t_ok $? "the log says that the stop killed the stopped inode-svc"
kill -CONT "$pid" 2>/dev/null
t_instance_stop $n
t_done
