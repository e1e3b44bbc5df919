#!/bin/sh
# compose.t - the README's set-up commands: compose/up makes the image when
# it is missing, starts the group and waits until it is ready; a second up
# of the same instance is refused; --locking=big reaches the arena; unknown
# options and --mount of a missing directory are refused clearly (mount.t
# tests --mount);
# compose/down stops it and the image passes e2fsck; after a SIGKILL of the
# supervisor, compose/down and compose/up remove the files it left, say
# so, and down exits 0; an image blockdev-svc refuses makes up fail with
# the reason.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

img=$T_TMP/new.img n=t-up-$$
t_at_exit "$T_TOP/compose/down --instance $n >/dev/null 2>&1"
"$T_TOP/compose/up" --image "$img" --size 64M --instance $n >"$T_TMP/up.out" 2>&1
t_ok $? "compose/up starts an instance"
t_ok "$([ -f "$img" ]; echo $?)" "it made the missing image"
dumpe2fs -h "$img" 2>/dev/null | grep -q "has_journal"
t_ok $? "the image is ext3 (has a journal)"
t_is "$(t_field $n supervisor.state)" ready "status says ready"
t_is "$(t_field $n locking)" fine "default locking is fine"
"$T_TOP/compose/up" --image "$img" --instance $n >"$T_TMP/up2.out" 2>&1
t_ok "$([ $? -ne 0 ] && grep -q "already running" "$T_TMP/up2.out"; echo $?)" \
	"a second compose/up of the same instance is refused"
"$T_TOP/compose/down" --instance $n
t_ok $? "compose/down"
"$T_EXT3D" --instance $n status >/dev/null 2>&1
t_ok "$([ $? -ne 0 ]; echo $?)" "the instance is gone"
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
t_ok $? "e2fsck -fn finds nothing to fix"

"$T_TOP/compose/up" --image "$img" --instance $n --locking=big >/dev/null 2>&1
t_ok $? "compose/up --locking=big"
t_is "$(t_field $n locking)" big "status says locking big"
"$T_TOP/compose/down" --instance $n

# A killed supervisor: its services die with it, its files stay.
"$T_TOP/compose/up" --image "$img" --instance $n >/dev/null 2>&1
sup=$(t_field $n supervisor.pid)
kill -9 "$sup"
sleep 0.5
rd=$EXT3D_RUNDIR/$n
t_ok "$([ -e "$rd/supervisor.pid" ] && [ -e "$rd/control.ipc" ]; echo $?)" \
	"a killed supervisor leaves supervisor.pid and control.ipc"
"$T_TOP/compose/down" --instance $n >"$T_TMP/down.out" 2>&1
t_is $? 0 "compose/down after it exits 0"
grep -q "was not running.*removed the files" "$T_TMP/down.out"
t_ok $? "and says it removed the dead instance's files"
t_ok "$([ ! -e "$rd/supervisor.pid" ] && [ ! -e "$rd/control.ipc" ] && [ ! -e "$rd/session.sock" ]; echo $?)" \
	"supervisor.pid, control.ipc and session.sock are gone"
"$T_TOP/compose/down" --instance $n >"$T_TMP/down.out" 2>&1
t_is $? 0 "compose/down with nothing to stop exits 0"
grep -q "nothing to stop" "$T_TMP/down.out"
t_ok $? "saying there is nothing to stop"

"$T_TOP/compose/up" --image "$img" --instance $n >/dev/null 2>&1
kill -9 "$(t_field $n supervisor.pid)"
sleep 0.5
"$T_TOP/compose/up" --image "$img" --instance $n >"$T_TMP/up3.out" 2>&1
t_is $? 0 "compose/up over a killed supervisor's files starts the instance"
grep -q "was not running.*removed the files" "$T_TMP/up3.out"
t_ok $? "and says it removed them"
t_is "$(t_field $n supervisor.state)" ready "status says ready"
"$T_TOP/compose/down" --instance $n

mkdir -p "$T_TMP/dir.img"
"$T_TOP/compose/up" --image "$T_TMP/dir.img" --instance $n >"$T_TMP/up4.out" 2>&1
t_ok "$([ $? -eq 1 ]; echo $?)" "compose/up on an image blockdev-svc refuses fails"
grep -q "failed" "$T_TMP/up4.out" && grep -q "blockdev-svc crashed" "$T_TMP/up4.out"
t_ok $? "naming the service in the reason"
grep "compose/up\|reason" "$T_TMP/up4.out" | sed 's/^/# /'
"$EXT3D_BUILD/client/ext3d" --instance $n status >/dev/null 2>&1
t_is $? 1 "and leaves no instance behind"

"$T_TOP/compose/up" --bogus >"$T_TMP/bad" 2>&1
t_ok "$([ $? -eq 2 ] && grep -q "unknown option" "$T_TMP/bad"; echo $?)" "an unknown option is refused"
"$T_TOP/compose/up" --image "$img" --instance $n --mount "$T_TMP/mnt" >"$T_TMP/bad" 2>&1
t_ok "$([ $? -eq 2 ] && grep -q "No such file or directory" "$T_TMP/bad"; echo $?)" \
	"--mount of a missing directory is refused before anything starts"
"$EXT3D_BUILD/client/ext3d" --instance $n status >/dev/null 2>&1
t_is $? 1 "and starts no instance"
t_done
