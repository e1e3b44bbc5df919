#!/bin/sh
# compose.t - the README's set-up commands: compose/up makes the image when
# it is missing, starts the group and waits until it is ready; a second up
# of the same instance is refused; --locking=big reaches the arena; unknown
# options and --mount (no FUSE front end yet) are refused clearly;
# compose/down stops it and the image passes e2fsck.
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

"$T_TOP/compose/up" --bogus >"$T_TMP/bad" 2>&1
t_ok "$([ $? -eq 2 ] && grep -q "unknown option" "$T_TMP/bad"; echo $?)" "an unknown option is refused"
"$T_TOP/compose/up" --image "$img" --instance $n --mount "$T_TMP/mnt" >"$T_TMP/bad" 2>&1
t_ok "$([ $? -eq 2 ] && grep -q "ext3d-fuse" "$T_TMP/bad"; echo $?)" "--mount says the FUSE front end is missing"
t_done
