#!/bin/sh
# crashloop.t - a service that crashes by itself on start marks the
# instance failed within seconds, with a reason naming the service and how
# it died, and status exits 5: a program that exits non-zero (/bin/false),
# one that faults (SIGSEGV), blockdev-svc on an image it refuses. Restart
# delays double from 20 ms on the way. A service killed from outside as
# often is never given up on (see killstorm.t); here, one sent SIGKILL or
# SIGTERM ten times back to back is restarted each time, and a stop during
# its restart delay starts it again so that the journal stops cleanly (and
# when that start fails, its death is recorded).
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

img=$T_TMP/img
mke2fs -q -F -t ext3 "$img" 16M >/dev/null 2>&1
printf '#!/bin/sh\nkill -SEGV $$\n' >"$T_TMP/segv"
chmod +x "$T_TMP/segv"

# crash NAME SERVICE-LINE: starts a supervisor on a compose file with
# blockdev-svc and that line; waits up to 15 s for "failed".
crash() {
	printf 'service blockdev-svc alone ${BUILD}/blockdev-svc/blockdev-svc --image=%s\n%s\n' \
		"$img" "$2" >"$T_TMP/$1.compose"
	"$T_SUPERVISOR" --compose "$T_TMP/$1.compose" --instance "$1" --set "BUILD=$EXT3D_BUILD" \
		</dev/null >"$T_TMP/$1.log" 2>&1 &
	eval "t_pid_$(echo "$1" | tr -c 'a-zA-Z0-9\n' _)=$!"
	t_at_exit "t_instance_stop $1"
	start=$(date +%s)
	for _ in $(seq 150); do
		"$T_EXT3D" --instance "$1" status >/dev/null 2>&1
		[ $? -eq 5 ] && return 0
		sleep 0.1
	done
	return 1
}

crash t-false "service bad alone /bin/false"
t_ok $? "a service that exits 1 on start: the instance fails"
t_diag "failed after $(($(date +%s) - start)) s"
t_is "$(t_field t-false supervisor.state)" failed "status says failed"
reason=$(t_field t-false supervisor.reason)
t_diag "reason: $reason"
echo "$reason" | grep -q "bad crashed 5 times within 2000 ms of starting (last: exited with status 1)"
t_ok $? "the reason names the service and how it died"
"$T_EXT3D" --instance t-false status >"$T_TMP/text"
t_is $? 5 "status exits 5 (failed)"
grep -q "^reason: bad crashed" "$T_TMP/text"
t_ok $? "text status prints the reason"
t_is "$(t_field t-false services.bad.state)" failed "the service is marked failed"
t_is "$(t_field t-false services.blockdev-svc.pid)" 0 "its peers were stopped"
t_is "$(grep -o 'restart in [0-9]* ms: bad' "$T_TMP/t-false.log" | awk '{print $3}' | tr '\n' ' ')" \
	"20 40 80 160 " "restart delays double from 20 ms"
"$T_EXT3D" --instance t-false shutdown >/dev/null
t_ok $? "a failed instance shuts down"

crash t-segv "service bad alone $T_TMP/segv"
t_ok $? "a service that faults on start: the instance fails"
t_field t-segv supervisor.reason | grep -q "bad crashed .*killed by signal 11"
t_ok $? "the reason says signal 11"

cat >"$T_TMP/t-bd.compose" <<EOC
service blockdev-svc alone \${BUILD}/blockdev-svc/blockdev-svc --image=$T_TMP/no-such-image
EOC
"$T_SUPERVISOR" --compose "$T_TMP/t-bd.compose" --instance t-bd --set "BUILD=$EXT3D_BUILD" \
	</dev/null >"$T_TMP/t-bd.log" 2>&1 &
t_pid_t_bd=$!
t_at_exit "t_instance_stop t-bd"
for _ in $(seq 150); do
	"$T_EXT3D" --instance t-bd status >/dev/null 2>&1
	[ $? -eq 5 ] && break
	sleep 0.1
done
t_field t-bd supervisor.reason | grep -q "blockdev-svc crashed .*exited with status 1"
t_ok $? "blockdev-svc on an image it cannot open: failed, naming blockdev-svc"

# kill_bd SIG N: sends SIG to N blockdev-svc processes of t-kill in turn,
# each as soon as it runs (a new pid, not the one killed before); up to
# 10 s. Prints how many it sent.
kill_bd() {
	kills=0 last=
	for _ in $(seq 1000); do
		p=$(pgrep -P "$t_pid_t_kill" -x -r R,S,D blockdev-svc | head -1)
		[ -n "$p" ] && [ "$p" != "$last" ] && kill "-$1" "$p" && kills=$((kills + 1)) && last=$p
		[ $kills -ge "$2" ] && break
		sleep 0.01
	done
	echo $kills
}

# Outside kills are not crashes: ten back to back, then it is ready again.
t_instance_start t-kill "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_is "$(kill_bd KILL 10)" 10 "blockdev-svc killed ten times, each as soon as it ran"
t_instance_wait_ready t-kill
t_ok $? "it is restarted each time (not failed); the instance is ready"
t_ok "$([ "$(t_field t-kill services.blockdev-svc.restarts)" -ge 9 ]; echo $?)" \
	"restarts: $(t_field t-kill services.blockdev-svc.restarts)"
# SIGTERM: the service exits 0 by itself, still not a crash.
t_is "$(kill_bd TERM 10)" 10 "blockdev-svc sent SIGTERM ten times, each as soon as it ran"
t_instance_wait_ready t-kill
t_ok $? "it is restarted each time; the instance is ready"

# A stop while blockdev-svc waits out its restart delay (1 s after seven
# quick kills) starts it again first: journald-svc writes back through it,
# the journal is shut down cleanly and the supervisor exits.
t_is "$(kill_bd KILL 8)" 8 "blockdev-svc killed eight more times"
"$T_EXT3D" --instance t-kill shutdown >/dev/null 2>&1 &
for _ in $(seq 100); do kill -0 "$t_pid_t_kill" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$t_pid_t_kill" 2>/dev/null
t_ok $? "a stop during blockdev-svc's restart delay: the supervisor exits within 10 s"
grep -q "starting blockdev-svc again for the stop" "$T_TMP/t-kill.log"
t_ok $? "blockdev-svc was started again for the stop"
grep -q "journal shut down cleanly" "$T_TMP/t-kill.log"
t_ok $? "the journal was shut down cleanly"
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
t_ok $? "e2fsck -fn: clean" || sed 's/^/# /' "$T_TMP/fsck"

# The same stop with blockdev-svc's image gone: its start for the stop
# fails, and that death is recorded like any other (the stop must not
# signal its pid again, by then maybe another process's).
cp "$img" "$T_TMP/gone.img"
t_instance_start t-kill "$T_TOP/compose/ext3d.compose" --set "IMAGE=$T_TMP/gone.img" \
	--set BLOCKDEV_ARGS= >/dev/null
t_is "$(kill_bd KILL 8)" 8 "on a copy of the image: blockdev-svc killed eight times"
mv "$T_TMP/gone.img" "$T_TMP/away.img"
"$T_EXT3D" --instance t-kill shutdown >/dev/null 2>&1 &
for _ in $(seq 300); do t_pid_gone "$t_pid_t_kill" && break; sleep 0.1; done
t_pid_gone "$t_pid_t_kill"
t_ok $? "the image moved away, a stop: the supervisor exits"
awk '/starting blockdev-svc again for the stop/ { s = "" }
	/ext3d-supervisor.*blockdev-svc/ && !/again for the stop/ && s == "" { s = $0 }
	END { print s }' "$T_TMP/t-kill.log" >"$T_TMP/after"
grep -q "blockdev-svc (pid [0-9]*) exited with status 1$" "$T_TMP/after"
t_ok $? "its failed start for the stop is recorded as a death: $(cat "$T_TMP/after")"
t_done
