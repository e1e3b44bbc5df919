#!/bin/sh
# sandbox.t - every service confines itself once initialised: started as
# root, it becomes an unprivileged user (ext3d, else nobody; SERVICE_USER
# names another) with all four uids and gids switched and no groups; no
# effective capabilities, no_new_privs, a seccomp filter (Seccomp: 2). The
# instance still serves reads, and services restarted alone or with the
# group drop too; a killed supervisor still takes its services with it. A
# forbidden syscall kills a service with SIGSYS and the supervisor records
# the crash. Also: each service refuses a bad or stale arena with a clear
# message.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

mkdir "$T_TMP/tree"
head -c 200000 /dev/urandom >"$T_TMP/tree/data"
img=$T_TMP/img
mke2fs -q -F -t ext3 -d "$T_TMP/tree" "$img" 64M >/dev/null 2>&1
services="blockdev-svc journald-svc alloc-svc inode-svc"

# The ids the services should have: unchanged when not started as root.
if [ "$(id -u)" -eq 0 ]; then
	want_uid=$(getent passwd ext3d | cut -d: -f3) want_gid=$(getent passwd ext3d | cut -d: -f4)
	[ -n "$want_uid" ] || want_uid=65534 want_gid=65534
else
	want_uid=$(id -u) want_gid=$(id -g)
fi

# check_confined INSTANCE WHAT UID GID: every service's /proc status.
check_confined() {
	for s in $services; do
		pid=$(t_svc_pid "$1" $s)
		st=/proc/$pid/status
		t_is "$(awk '/^Uid:/ {print $2, $3, $4, $5}' "$st")" "$3 $3 $3 $3" \
			"$s$2: real, effective, saved and fs uid $3"
		t_is "$(awk '/^Gid:/ {print $2, $3, $4, $5}' "$st")" "$4 $4 $4 $4" \
			"$s$2: real, effective, saved and fs gid $4"
		t_is "$(awk '/^Groups:/ {print $2}' "$st")" "" "$s$2: no supplementary groups"
		t_is "$(awk '/^CapEff:/ {print $2}' "$st")" 0000000000000000 "$s$2: CapEff 0"
		t_is "$(awk '/^CapBnd:/ {print $2}' "$st")" 0000000000000000 "$s$2: bounding set empty"
		t_is "$(awk '/^Seccomp:/ {print $2}' "$st")" 2 "$s$2: Seccomp 2 (filter)"
		t_is "$(awk '/^NoNewPrivs:/ {print $2}' "$st")" 1 "$s$2: no_new_privs"
	done
}

# reads_ok INSTANCE WHAT: the file comes back byte for byte.
reads_ok() {
	"$T_EXT3D" --instance "$1" cat /data >"$T_TMP/got" 2>"$T_TMP/err"
	cmp -s "$T_TMP/got" "$T_TMP/tree/data"
	t_ok $? "$2: a 200000-byte file reads back right"
}

# restarted INSTANCE SERVICE: kills it and waits for a new ready pid.
restarted() {
	old=$(t_svc_pid "$1" "$2")
	"$T_EXT3D" --instance "$1" kill "$2" >/dev/null
	for _ in $(seq 100); do
		sleep 0.1
		t_instance_wait_ready "$1" >/dev/null || continue
		new=$(t_svc_pid "$1" "$2")
		[ -n "$new" ] && [ "$new" != "$old" ] && [ "$new" != 0 ] && return 0
	done
	return 1
}

t_instance_start t-sbx "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance ready"
t_diag "services expected as uid $want_uid gid $want_gid"
check_confined t-sbx "" "$want_uid" "$want_gid"
reads_ok t-sbx "confined services"
restarted t-sbx blockdev-svc
t_ok $? "blockdev-svc killed and restarted alone"
check_confined t-sbx " (blockdev-svc restarted)" "$want_uid" "$want_gid"
restarted t-sbx inode-svc
t_ok $? "inode-svc killed: the group restarted"
t_is "$(t_field t-sbx generation)" 1 "on a new arena (generation 1)"
check_confined t-sbx " (group restarted)" "$want_uid" "$want_gid"
reads_ok t-sbx "after the restarts (session.sock bound anew)"
# Changing credentials clears the parent-death signal; the services set it
# again, so they still die with their supervisor.
pids=$(for s in $services; do t_svc_pid t-sbx $s; done)
kill -9 "$(t_field t-sbx supervisor.pid)"
for _ in $(seq 50); do
	alive=
	for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
	[ -z "$alive" ] && break
	sleep 0.1
done
t_is "$alive" "" "a killed supervisor takes its dropped services with it"
rm -rf "${EXT3D_RUNDIR:?}/t-sbx"

if [ "$(id -u)" -eq 0 ]; then
	t_instance_start t-user "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" \
		--set BLOCKDEV_ARGS= --set SERVICE_USER=4242
	t_ok $? "instance with SERVICE_USER=4242 ready"
	check_confined t-user " (SERVICE_USER=4242)" 4242 4242
	reads_ok t-user "as uid 4242"
	t_instance_stop t-user
	"$T_SUPERVISOR" --compose "$T_TOP/compose/ext3d.compose" --instance t-nouser \
		--set "BUILD=$EXT3D_BUILD" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
		--set SERVICE_USER=no-such-user-x3 </dev/null >"$T_TMP/nouser.log" 2>&1 &
	sup=$!
	for _ in $(seq 100); do kill -0 $sup 2>/dev/null || break; sleep 0.1; done
	kill -9 $sup 2>/dev/null
	grep -q "user 'no-such-user-x3' does not exist" "$T_TMP/nouser.log"
	t_ok $? "an unknown SERVICE_USER is refused with a message"
	grep "does not exist" "$T_TMP/nouser.log" | head -1 | sed 's/^/# /'
	if ! getent passwd ext3d >/dev/null; then
		grep -q "no user 'ext3d'" "$T_TMP/t-sbx.log"
		t_ok $? "without the ext3d user the services say they fell back to 65534"
	fi
else
	t_skip "needs root" "SERVICE_USER names the user"
	t_skip "needs root" "an unknown SERVICE_USER is refused"
fi

# Each service makes a forbidden syscall (openat) after it is ready:
# blockdev-svc on its own, then the others above a blockdev-svc that
# behaves (inode-svc mounts through it).
echo "service blockdev-svc never \${BUILD}/blockdev-svc/blockdev-svc --image=$img --test-forbidden-syscall" \
	>"$T_TMP/forbidden-bd.compose"
{
	echo "service blockdev-svc alone \${BUILD}/blockdev-svc/blockdev-svc --image=$img"
	echo "service journald-svc never \${BUILD}/journald-svc/journald-svc --test-forbidden-syscall"
	echo "service alloc-svc never \${BUILD}/alloc-svc/alloc-svc --test-forbidden-syscall"
	echo "service inode-svc never \${BUILD}/inode-svc/inode-svc --rundir=\${RUNDIR} --test-forbidden-syscall"
} >"$T_TMP/forbidden.compose"
for c in forbidden-bd forbidden; do
	t_instance_start t-$c "$T_TMP/$c.compose"
	t_ok $? "instance with forbidden-syscall services started ($c)"
	sleep 1
done
for s in $services; do
	n=t-forbidden
	[ $s = blockdev-svc ] && n=t-forbidden-bd
	t_is "$(t_field $n services.$s.state)" exited "$s: killed after its forbidden syscall"
	t_is "$(t_field $n services.$s.last_exit_signal)" 31 "$s: by SIGSYS (31)"
done
grep -q "the forbidden syscall returned" "$T_TMP"/t-forbidden*.log
t_ok "$([ $? -ne 0 ]; echo $?)" "no service survived its forbidden syscall"
t_instance_stop t-forbidden
t_instance_stop t-forbidden-bd

probe=$EXT3D_BUILD/tests/tools/arena-probe
for s in $services; do
	extra=
	[ $s = blockdev-svc ] && extra=--image=$img
	[ $s = inode-svc ] && extra=--rundir=$T_TMP
	for kind in garbage:"not an ext3d arena" version:"this build speaks" \
		size:"the memfd has" stale:"stale arena" small:"too small" slot:"belongs to"; do
		k=${kind%%:*} want=${kind#*:}
		"$probe" --bad=$k -- "$EXT3D_BUILD/${s%-svc}-svc/$s" $extra >"$T_TMP/out" 2>&1
		rc=$?
		t_ok "$([ $rc -ne 0 ] && grep -q "$want" "$T_TMP/out"; echo $?)" \
			"$s refuses a $k arena: exit $rc, '$want'"
	done
done

t_done
