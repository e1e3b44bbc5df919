#!/bin/sh
# imglock.t - one writer per image: while an instance runs on an image, a
# second instance on the same image fails at start with blockdev-svc's
# "in use" in its log and status (instead of writing over the first one's
# journal), ext3d-recover refuses the image (exit 2, "in use") and -n
# refuses too, the first instance goes on unharmed, and a SIGKILLed
# blockdev-svc takes the lock again when it restarts. Once the instance
# has stopped, ext3d-recover opens the image again, and e2fsck -fn is
# clean with the file written there in place.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

t_need_root "sandboxed services"
REC=$EXT3D_BUILD/journald-svc/ext3d-recover
img=$T_TMP/lock.img
mke2fs -q -F -t ext3 "$img" 64M >/dev/null 2>&1
a=t-lock-a b=t-lock-b
compose=$T_TOP/compose/ext3d.compose
t_instance_start $a "$compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance a ready on the image"
echo "first" >"$T_TMP/f"
"$T_EXT3D" --instance $a put "$T_TMP/f" /f >/dev/null
t_ok $? "a writes /f"

# The second instance: its blockdev-svc cannot take the lock, so the
# supervisor ends in state failed (a crash loop of blockdev-svc's own).
"$T_SUPERVISOR" --compose "$compose" --instance $b --set "BUILD=$EXT3D_BUILD" \
	--set "IMAGE=$img" --set BLOCKDEV_ARGS= </dev/null >>"$T_TMP/$b.log" 2>&1 &
bpid=$!
t_at_exit "kill $bpid 2>/dev/null"
state=
for _ in $(seq 300); do
	state=$(t_status $b 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["supervisor"]["state"])' 2>/dev/null)
	[ "$state" = failed ] && break
	sleep 0.1
done
t_is "$state" failed "a second instance on the same image fails to start"
grep -q "blockdev-svc.*$img is in use by another ext3d instance" "$T_TMP/$b.log"
t_check $? "its blockdev-svc says the image is in use" "$T_TMP/$b.log"
"$T_EXT3D" --instance $b shutdown >/dev/null 2>&1
"$REC" "$img" >"$T_TMP/rec.out" 2>&1
rc=$?
t_is "$rc:$(grep -c 'in use by another ext3d instance' "$T_TMP/rec.out")" "2:1" \
	"ext3d-recover refuses the image while it is in use"
"$REC" -n "$img" >"$T_TMP/recn.out" 2>&1
t_is "$?" 2 "ext3d-recover -n refuses it too"

# a goes on, and its blockdev-svc takes the lock again after a kill.
echo "second" >"$T_TMP/g"
"$T_EXT3D" --instance $a put "$T_TMP/g" /g >/dev/null
t_ok $? "a still writes"
"$T_EXT3D" --instance $a kill blockdev-svc >/dev/null
ok=1
for _ in $(seq 100); do
	[ "$(t_field $a services.blockdev-svc.restarts 2>/dev/null)" = 1 ] &&
		[ "$(t_field $a services.blockdev-svc.state 2>/dev/null)" = ready ] && { ok=0; break; }
	sleep 0.1
done
t_ok $ok "a killed blockdev-svc restarts and takes the lock again"
"$T_EXT3D" --instance $a sync >/dev/null && "$T_EXT3D" --instance $a cat /g >"$T_TMP/g.back"
t_is "$(cat "$T_TMP/g.back" 2>/dev/null)" second "a reads /g back after the restart"
t_instance_stop $a
"$REC" "$img" >"$T_TMP/rec2.out" 2>&1
t_check $? "once a has stopped, ext3d-recover opens the image" "$T_TMP/rec2.out"
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
t_check $? "e2fsck -fn clean" "$T_TMP/fsck"
t_is "$(debugfs -R 'cat /f' "$img" 2>/dev/null)$(debugfs -R 'cat /g' "$img" 2>/dev/null)" "firstsecond" \
	"both files are on the image"
t_done
