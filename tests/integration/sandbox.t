#!/bin/sh
# sandbox.t - every service confines itself once initialised: no effective
# capabilities, no_new_privs, a seccomp filter (Seccomp: 2); a forbidden
# syscall kills it with SIGSYS and the supervisor records the crash. Also:
# each service refuses a bad or stale arena with a clear message.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

img=$T_TMP/img
mke2fs -q -F -t ext3 "$img" 64M >/dev/null 2>&1
services="blockdev-svc journald-svc alloc-svc inode-svc"

t_instance_start t-sbx "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance ready"
for s in $services; do
	pid=$(t_svc_pid t-sbx $s)
	st=/proc/$pid/status
	t_is "$(awk '/^CapEff:/ {print $2}' "$st")" 0000000000000000 "$s: CapEff 0"
	t_is "$(awk '/^CapBnd:/ {print $2}' "$st")" 0000000000000000 "$s: bounding set empty"
	t_is "$(awk '/^Seccomp:/ {print $2}' "$st")" 2 "$s: Seccomp 2 (filter)"
	t_is "$(awk '/^NoNewPrivs:/ {print $2}' "$st")" 1 "$s: no_new_privs"
done
t_instance_stop t-sbx

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
