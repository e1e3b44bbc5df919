#!/bin/sh
# supervisor.t - the supervisor and the CLI on a real group: status (text
# and JSON), a killed blockdev-svc restarted alone, a killed group-policy
# service restarting the whole group on a new arena, a process that dies
# holding an arena lock forcing a group restart, a stale run directory left
# by a crashed supervisor, a second instance of the same name refused, and
# a supervisor that crashes (SIGSEGV) saying so in its log's last line.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

img=$T_TMP/img
mke2fs -q -F -t ext3 "$img" 64M >/dev/null 2>&1
compose=$T_TOP/compose/ext3d.compose
n=t-sup

t_instance_start $n "$compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance starts and reports ready"
t_status $n | python3 -m json.tool >/dev/null
t_ok $? "status --json is valid JSON"
t_is "$(t_status $n | python3 -c 'import json,sys; print(" ".join(s["name"]+":"+s["state"] for s in json.load(sys.stdin)["services"]))')" \
	"blockdev-svc:ready journald-svc:ready alloc-svc:ready inode-svc:ready ext3d-fuse:unmounted" \
	"four services ready, in start order; ext3d-fuse not started (no mount point)"
"$T_EXT3D" --instance $n status | grep -q '^j_list_lock '
t_ok $? "text status lists the lock counters"
t_is "$(t_field $n locking)" fine "locking mode fine"

bd=$(t_svc_pid $n blockdev-svc) jd=$(t_svc_pid $n journald-svc)
"$T_EXT3D" --instance $n kill blockdev-svc
t_ok $? "ext3d kill blockdev-svc"
t_instance_wait_ready $n && sleep 0.3
t_is "$(t_field $n services.blockdev-svc.restarts)" 1 "blockdev-svc restarted once"
t_is "$(t_field $n services.blockdev-svc.last_exit_signal)" 9 "its last exit: SIGKILL"
t_ok "$([ "$(t_svc_pid $n blockdev-svc)" != "$bd" ]; echo $?)" "blockdev-svc has a new pid"
t_is "$(t_svc_pid $n journald-svc)" "$jd" "its peers keep running (journald-svc pid unchanged)"
t_is "$(t_field $n generation)" 0 "no group restart"

"$T_EXT3D" --instance $n kill journald-svc
sleep 0.3
t_instance_wait_ready $n
t_is "$(t_field $n generation)" 1 "killing journald-svc restarts the group (generation 1)"
t_ok "$([ "$(t_svc_pid $n journald-svc)" != "$jd" ]; echo $?)" "journald-svc has a new pid"
t_is "$(t_field $n services.alloc-svc.restarts)" 1 "every service was restarted with the group"

"$T_EXT3D" --instance $n kill no-such-svc 2>"$T_TMP/err"
t_ok "$([ $? -ne 0 ]; echo $?)" "kill of an unknown service fails"
grep -q "no such service" "$T_TMP/err"
t_ok $? "with a clear message"

"$T_SUPERVISOR" --compose "$compose" --instance $n --set "BUILD=$EXT3D_BUILD" \
	--set "IMAGE=$img" --set BLOCKDEV_ARGS= >"$T_TMP/second.log" 2>&1
t_ok "$([ $? -ne 0 ]; echo $?)" "a second supervisor for the same instance is refused"
grep -q "already running" "$T_TMP/second.log"
t_ok $? "saying the instance is already running"

# A crash of the supervisor: its services die with it (PDEATHSIG), its run
# directory stays behind, and the next start cleans it.
sup=$(t_field $n supervisor.pid)
pids=$(t_status $n | python3 -c 'import json,sys; print(" ".join(str(s["pid"]) for s in json.load(sys.stdin)["services"]))')
kill -9 "$sup"
sleep 0.5
t_ok "$([ -e "$EXT3D_RUNDIR/$n/supervisor.pid" ]; echo $?)" "a killed supervisor leaves its pid file"
alive=0
for p in $pids; do # a zombie is dead (here PID 1 may not reap orphans)
	st=$(awk '/^State:/ {print $2}' /proc/$p/status 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ] && alive=$((alive + 1))
done
t_is "$alive" 0 "its services ($pids) died with it"
t_instance_start $n "$compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "a new supervisor starts over the stale run directory"
grep -q "stale run directory" "$T_TMP/$n.log"
t_ok $? "and says it removed a stale run directory"
t_instance_stop $n
sleep 0.2
t_ok "$([ ! -e "$EXT3D_RUNDIR/$n/supervisor.pid" ]; echo $?)" "shutdown removes the pid file"
"$T_EXT3D" --instance $n status >/dev/null 2>&1
t_ok "$([ $? -ne 0 ]; echo $?)" "status of a stopped instance fails"

# A process that dies holding an arena lock: the group restarts.
cat >"$T_TMP/holder.compose" <<EOC
service blockdev-svc alone \${BUILD}/blockdev-svc/blockdev-svc --image=$img
service lock-holder never \${BUILD}/tests/tools/arena-probe --hold=j_list_lock
EOC
t_instance_start t-hold "$T_TMP/holder.compose"
t_ok $? "an instance with a lock-holding process starts"
"$T_EXT3D" --instance t-hold kill lock-holder
sleep 0.3
t_instance_wait_ready t-hold
t_is "$(t_field t-hold generation)" 1 "its death holding j_list_lock restarted the group"
grep -q "lock-holder died holding j_list_lock" "$T_TMP/t-hold.log"
t_ok $? "the log names the lock"
t_instance_stop t-hold

# A supervisor that crashes says so in the last line of its log (no core
# dump wanted: ulimit -c 0 for it alone).
(ulimit -c 0; exec "$T_SUPERVISOR" --compose "$compose" --instance t-crash \
	--set "BUILD=$EXT3D_BUILD" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
	</dev/null >"$T_TMP/t-crash.log" 2>&1) &
crashed=$!
t_instance_wait_ready t-crash $crashed >/dev/null
t_ok $? "another instance is ready"
kill -SEGV $crashed
for _ in $(seq 100); do t_pid_gone $crashed && break; sleep 0.1; done
wait $crashed 2>/dev/null
tail -1 "$T_TMP/t-crash.log" |
	grep -q "^ext3d-supervisor\[$crashed\] error: crashed, its services die with it: signal 11$"
t_ok $? "killed by SIGSEGV, its log's last line says that it crashed"
"$T_EXT3D" --instance t-crash shutdown >/dev/null 2>&1 # its stale run directory

t_done
