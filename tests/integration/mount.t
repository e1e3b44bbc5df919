#!/bin/sh
# mount.t - mounting under the supervisor: compose/up --mount mounts the
# instance with ext3d-fuse and the image's files are there; status shows
# ext3d-fuse with its mount point; it runs as uid 0 with CAP_SYS_ADMIN
# alone, no_new_privs and a seccomp filter; compose/down unmounts first and leaves a
# clean image; `ext3d mount [-o LIST]` and `ext3d umount` on a running
# instance, a busy mount detached lazily with a message; a SIGKILLed ext3d-fuse is
# restarted at the same place, with a file still open on the dead mount,
# ready only once its own new mount is there, while the descriptors opened
# before give EIO or ENOTCONN; a group restart leaves the mount alone and
# the first call after it succeeds, and a descriptor of a file whose
# creation it rolled back fails with ESTALE instead of writing into the
# file that takes its inode number next, and an append after one the
# restart lost fails with EIO instead of landing at the file's old end;
# the stale mount
# a killed supervisor leaves is cleaned by the next compose/down or
# compose/up; a front end that exits before it mounts fails `ext3d mount`
# and is not restarted, one that crashes in a loop is unmounted and marked
# failed while the instance stays ready. Bad input: a corrupt image, a mount point that is missing,
# not a directory or already a mount point. Needs root and /dev/fuse.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

t_need_fuse
# compose/up uses the tree's own build/.
[ "$(cd "$EXT3D_BUILD" && pwd)" = "$T_TOP/build" ] || t_skip_all "compose/up needs EXT3D_BUILD=build/"

n=t-mount-$$ img=$T_TMP/img mnt=$T_TMP/mnt
mkdir -p "$mnt" "$T_TMP/src/sub"
head -c 100000 /dev/urandom >"$T_TMP/src/big"
echo hello >"$T_TMP/src/sub/small"
# Whatever happens, nothing stays mounted.
t_at_exit "umount -l '$mnt' 2>/dev/null; $T_TOP/compose/down --instance $n >/dev/null 2>&1"
mke2fs -q -F -t ext3 -d "$T_TMP/src" "$img" 32M >/dev/null 2>&1
t_ok $? "mke2fs -t ext3 -d (an image with files)"

mounted() { t_fuse_mounted "$1"; }
# mount_ids DIR: the ids of the mounts at DIR, bottom to top.
mount_ids() { awk -v m="$1" '$5 == m { printf "%s%s", s, $1; s = " " }' /proc/self/mountinfo; }
fuse_pid() { t_field $n services.ext3d-fuse.pid; }
# wait_fuse [OLDPID]: until ext3d-fuse is ready again, in another process
# than OLDPID (up to 10 s).
wait_fuse() {
	for _ in $(seq 200); do
		[ "$(t_field $n services.ext3d-fuse.state 2>/dev/null)" = ready ] &&
			[ "$(fuse_pid)" != "${1:-}" ] && return 0
		sleep 0.05
	done
	return 1
}
# errno_of FD|PATH: the errno name a read of descriptor FD (a stat of
# PATH) fails with, or "ok".
errno_of() {
	python3 -c '
import errno, os, sys
a = sys.argv[1]
try:
    os.read(int(a), 4096) if a.isdigit() else os.stat(a); print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])' "$1"
}

"$T_TOP/compose/up" --image "$img" --instance $n --mount "$mnt" >"$T_TMP/up.out" 2>&1
t_ok $? "compose/up --mount"
sed 's/^/# /' "$T_TMP/up.out" | grep -v "^# $" | tail -3
mounted "$mnt"
t_ok $? "the mount is in the mount table"
cmp -s "$T_TMP/src/big" "$mnt/big" && cmp -s "$T_TMP/src/sub/small" "$mnt/sub/small"
t_ok $? "the image's files are there, byte for byte"
t_is "$(t_field $n services.ext3d-fuse.state)" ready "status: ext3d-fuse is ready"
t_is "$(t_field $n services.ext3d-fuse.mount)" "$mnt" "status: with its mount point"
p=$(fuse_pid)
t_is "$(awk '/^CapEff|^CapBnd|^NoNewPrivs|^Seccomp:/ {printf "%s%s ", $1, $2}' /proc/$p/status)" \
	"CapEff:0000000000200000 CapBnd:0000000000200000 NoNewPrivs:1 Seccomp:2 " \
	"ext3d-fuse runs with CAP_SYS_ADMIN alone, no_new_privs and a seccomp filter"
t_is "$(awk '/^Uid:/ {print $2}' /proc/$p/status)" 0 "as uid 0 (its callers' credentials pass only from root)"
"$T_EXT3D" --instance $n status | grep -q "^mount: ext3d-fuse at $mnt\$"
t_ok $? "status in words says where it is mounted"
echo written >"$mnt/new" && sync "$mnt/new"
t_is "$("$T_EXT3D" --instance $n cat /new)" written "a file written through the mount reads back through libext3d"

"$T_TOP/compose/down" --instance $n >"$T_TMP/down.out" 2>&1
t_ok $? "compose/down"
mounted "$mnt"
t_ok "$([ $? -ne 0 ]; echo $?)" "it unmounted first"
"$T_EXT3D" --instance $n status >/dev/null 2>&1
t_is $? 1 "the instance is gone"
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
t_ok $? "e2fsck -fn finds nothing to fix" || sed 's/^/# /' "$T_TMP/fsck" | tail -5
t_is "$(debugfs -R "cat /new" "$img" 2>/dev/null)" written "debugfs reads the file written through the mount"

# ext3d mount and umount on a running instance.
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "an instance without a mount"
t_is "$(t_field $n services.ext3d-fuse.state)" unmounted "status: ext3d-fuse unmounted"
t_is "$(t_field $n supervisor.state)" ready "which leaves the instance ready, not degraded"
"$T_EXT3D" --instance $n mount "$mnt" >"$T_TMP/m.out" 2>&1
t_ok $? "ext3d mount DIR"
cmp -s "$T_TMP/src/big" "$mnt/big"
t_ok $? "files visible"
"$T_EXT3D" --instance $n mount "$mnt" >"$T_TMP/m2.out" 2>&1
t_ok "$([ $? -ne 0 ] && grep -q "already mounted at $mnt" "$T_TMP/m2.out"; echo $?)" \
	"a second mount is refused: already mounted"
"$T_EXT3D" --instance $n umount >"$T_TMP/u.out" 2>&1
t_ok $? "ext3d umount"
mounted "$mnt"
t_ok "$([ $? -ne 0 ]; echo $?)" "the mount is gone"
t_is "$(t_field $n services.ext3d-fuse.pid)" 0 "and ext3d-fuse stopped, not restarted"
"$T_EXT3D" --instance $n umount >"$T_TMP/u2.out" 2>&1
t_ok "$([ $? -ne 0 ] && grep -q "not mounted" "$T_TMP/u2.out"; echo $?)" \
	"umount of an unmounted instance says it is not mounted"
"$T_EXT3D" --instance $n mount -o ro,attr_timeout=0 "$mnt" >/dev/null 2>&1
t_ok $? "ext3d mount -o ro,attr_timeout=0 DIR"
t_is "$(t_field $n services.ext3d-fuse.mount_options)" ro,attr_timeout=0 "status shows the options"
sh -c "echo x >'$mnt/ro'" 2>"$T_TMP/ro.err"
t_ok "$([ $? -ne 0 ] && grep -q "Read-only" "$T_TMP/ro.err"; echo $?)" "they reach ext3d-fuse (ro: EROFS)"
"$T_EXT3D" --instance $n umount >/dev/null 2>&1
"$T_EXT3D" --instance $n mount -o "x y" "$mnt" >"$T_TMP/o.out" 2>&1
t_ok "$([ $? -ne 0 ] && grep -q "mount options" "$T_TMP/o.out"; echo $?)" \
	"options that are not a list of words are refused"

"$T_EXT3D" --instance $n mount "$mnt" >/dev/null 2>&1
(cd "$mnt/sub" && sleep 3) &
busy=$!
sleep 0.3
"$T_EXT3D" --instance $n umount >"$T_TMP/u3.out" 2>&1
t_ok "$([ $? -eq 0 ] && grep -q "busy: detached it lazily" "$T_TMP/u3.out"; echo $?)" \
	"a busy mount is detached lazily, with a message"
mounted "$mnt"
t_ok "$([ $? -ne 0 ]; echo $?)" "and is out of the mount table at once"
kill $busy 2>/dev/null; wait $busy 2>/dev/null

# A killed ext3d-fuse comes back at the same place, whatever was open on
# the dead mount; old descriptors fail. Attributes cached for long, as a
# busy mount has them fresh: a stat of the dead mount then succeeds.
"$T_EXT3D" --instance $n mount -o attr_timeout=60 "$mnt" >/dev/null 2>&1
exec 8<"$mnt/big"
old=$(fuse_pid) oldmnt=$(mount_ids "$mnt")
kill -9 "$old"
wait_fuse "$old"
t_ok $? "a SIGKILLed ext3d-fuse (a file open on its mount) is restarted"
t_ok "$([ "$(fuse_pid)" != "$old" ] && [ "$(fuse_pid)" != 0 ]; echo $?)" "as a new process"
mounted "$mnt" && cmp -s "$T_TMP/src/big" "$mnt/big"
t_ok $? "mounted again at the same place, files there"
newmnt=$(mount_ids "$mnt")
t_ok "$([ -n "$newmnt" ] && [ "$newmnt" = "${newmnt% *}" ] && [ "$newmnt" != "$oldmnt" ]; echo $?)" \
	"ready with its own new mount, the dead one detached (mount ids: $oldmnt, then $newmnt)"
e=$(errno_of 8)
t_ok "$(case $e in EIO|ENOTCONN) echo 0 ;; *) echo 1 ;; esac)" \
	"a descriptor opened before the kill gives EIO or ENOTCONN ($e), not data"
exec 8<&-
t_ok "$([ "$(t_field $n services.ext3d-fuse.restarts)" -ge 1 ]; echo $?)" "status counts the restart"
"$T_EXT3D" --instance $n umount >/dev/null 2>&1
"$T_EXT3D" --instance $n mount "$mnt" >/dev/null 2>&1

# A group restart: ext3d-fuse keeps running and its session re-attaches.
old=$(fuse_pid)
t_kill_svc $n inode-svc
t_instance_wait_ready $n >/dev/null
t_is "$(fuse_pid)" "$old" "a group restart (inode-svc killed) leaves ext3d-fuse running"
# Nothing was in flight at the restart: the first call after it succeeds.
t_is "$(errno_of "$mnt/missing-$$")" ENOENT \
	"the first call through the mount after the restart gets its answer (a missing name: ENOENT)"
ok=1
for _ in $(seq 50); do
	cmp -s "$T_TMP/src/sub/small" "$mnt/sub/small" 2>/dev/null && { ok=0; break; }
	sleep 0.1
done
t_ok $ok "and the mount serves the new group"

# A node id the kernel keeps across a group restart that rolled back the
# inode's creation: the number goes to the next file made, and a write
# through the old descriptor must fail, not land in that file.
exec 3>"$mnt/rolled-$$"
fino=$(stat -c %i "$mnt/rolled-$$")
t_kill_svc $n inode-svc
t_instance_wait_ready $n >/dev/null
: >"$T_TMP/empty"
if "$T_EXT3D" --instance $n stat "/rolled-$$" >/dev/null 2>&1; then
	t_skip "the creation was committed before the kill" "a write through a rolled-back file's descriptor"
else
	"$T_EXT3D" --instance $n put "$T_TMP/empty" "/taker-$$" >/dev/null 2>&1
	tino=$("$T_EXT3D" --instance $n stat "/taker-$$" 2>/dev/null | sed -n 's/.*Inode: \([0-9]*\).*/\1/p')
	t_is "$tino" "$fino" "the restart rolled back a creation through the mount; the next file takes its inode"
	(echo stale >&3) 2>/dev/null
	t_ok $(($? == 0)) "a write through the old descriptor fails (ESTALE)"
	t_is "$("$T_EXT3D" --instance $n cat "/taker-$$" 2>&1)" "" \
		"and does not land in the file that took the inode"
fi
exec 3>&-

# The same with a file another client made: the kernel learnt its node id
# by a lookup, so only the node id's generation tells it from the file
# that takes its number after the restart.
"$T_EXT3D" --instance $n put "$T_TMP/empty" "/other-$$" >/dev/null 2>&1
exec 5>>"$mnt/other-$$"
oino=$(stat -c %i "$mnt/other-$$")
t_kill_svc $n inode-svc
t_instance_wait_ready $n >/dev/null
printf 'secret\n' >"$T_TMP/secret"
if "$T_EXT3D" --instance $n stat "/other-$$" >/dev/null 2>&1; then
	t_skip "the creation was committed before the kill" "a write through a rolled-back file's descriptor"
else
	# Files until one takes the number (a lower free one goes first).
	for k in 1 2 3 4 5 6 7 8; do
		"$T_EXT3D" --instance $n put "$T_TMP/secret" "/taker2-$$-$k" >/dev/null 2>&1
		tino=$("$T_EXT3D" --instance $n stat "/taker2-$$-$k" 2>/dev/null |
			sed -n 's/.*Inode: \([0-9]*\).*/\1/p')
		[ "$tino" = "$oino" ] && break
	done
	t_is "$tino" "$oino" "another client's file, rolled back: a new file takes its inode"
	(printf 'intruder\n' >&5) 2>/dev/null
	t_ok $(($? == 0)) "a write through the old descriptor fails (ESTALE)"
	t_is "$("$T_EXT3D" --instance $n cat "/taker2-$$-$k" 2>&1)" secret \
		"and does not land in the file that took the inode"
fi
exec 5>&-

# An append lost in a group restart: the next change to the file through
# the mount gets EIO instead of landing at the file's old end.
(: >"$mnt/app-$$") 2>/dev/null
t_ok $(($? == 0)) "the first change after the restart in a directory changed before it fails (EIO)"
printf 'one\n' >"$mnt/app-$$" && sync "$mnt/app-$$"
t_ok $? "the next one works"
exec 4>>"$mnt/app-$$"
printf 'two\n' >&4
t_kill_svc $n inode-svc
t_instance_wait_ready $n >/dev/null
if [ "$("$T_EXT3D" --instance $n cat "/app-$$" 2>&1)" != one ]; then
	t_skip "the append was committed before the kill" "an append after a lost one"
else
	(printf 'three\n' >&4) 2>/dev/null
	t_ok $(($? == 0)) "the next append to a file whose last append the restart lost fails (EIO)"
	t_is "$("$T_EXT3D" --instance $n cat "/app-$$" 2>&1)" one \
		"and lands nowhere: the file holds what was committed"
fi
exec 4>&-

# A killed supervisor leaves a stale mount: compose/down cleans it.
kill -9 "$(t_field $n supervisor.pid)"
sleep 0.5
stat "$mnt" >/dev/null 2>"$T_TMP/stat.err"
grep -q "not connected" "$T_TMP/stat.err"
t_ok $? "a killed supervisor (and its ext3d-fuse) leaves a stale mount (ENOTCONN)"
"$T_TOP/compose/down" --instance $n >"$T_TMP/down2.out" 2>&1
t_ok "$([ $? -eq 0 ] && grep -q "unmounted the stale mount at $mnt" "$T_TMP/down2.out"; echo $?)" \
	"compose/down unmounts it, and says so"
mounted "$mnt"
t_ok "$([ $? -ne 0 ]; echo $?)" "the stale mount is gone"

# ... and so does compose/up --mount at the same place.
"$T_TOP/compose/up" --image "$img" --instance $n --mount "$mnt" >/dev/null 2>&1
kill -9 "$(t_field $n supervisor.pid)"
sleep 0.5
"$T_TOP/compose/up" --image "$img" --instance $n --mount "$mnt" >"$T_TMP/up2.out" 2>&1
t_ok "$([ $? -eq 0 ] && grep -q "unmounted the stale mount" "$T_TMP/up2.out"; echo $?)" \
	"compose/up --mount over a stale mount cleans it, says so, and mounts"
cmp -s "$T_TMP/src/big" "$mnt/big"
t_ok $? "files visible again"

# A front end that dies before it mounts: the mount fails with its exit
# status, nothing is left mounted, nothing restarts, the instance is ready.
sed 's#^mount .*#mount ext3d-fuse alone /bin/false ${MOUNT}#' "$T_TOP/compose/ext3d.compose" \
	>"$T_TMP/false.compose"
mke2fs -q -F -t ext3 "$T_TMP/img2" 16M >/dev/null 2>&1
t_instance_start t-mfalse-$$ "$T_TMP/false.compose" --set "IMAGE=$T_TMP/img2" --set BLOCKDEV_ARGS=
mkdir -p "$T_TMP/mnt2"
"$T_EXT3D" --instance t-mfalse-$$ mount "$T_TMP/mnt2" >"$T_TMP/f.out" 2>&1
t_ok "$([ $? -ne 0 ] && grep -q "ext3d-fuse exited with status 1 before it mounted" "$T_TMP/f.out"; echo $?)" \
	"a front end that exits before mounting: ext3d mount fails and says how it ended"
sleep 0.3
t_is "$(t_field t-mfalse-$$ services.ext3d-fuse.state):$(t_field t-mfalse-$$ supervisor.state)" \
	unmounted:ready "it is not restarted and the instance stays ready"
mounted "$T_TMP/mnt2"
t_ok "$([ $? -ne 0 ]; echo $?)" "nothing is mounted there"
t_instance_stop t-mfalse-$$

# A front end that mounts, then crashes every time: after a crash loop it
# is unmounted and marked failed; the instance goes on, ready.
printf '#!/bin/sh\n"%s" --instance "$1" -f "$2" &\nsleep 0.4\nkill -SEGV $!\nwait $!\n' \
	"$EXT3D_BUILD/client/fuse/ext3d-fuse" >"$T_TMP/crashy"
chmod +x "$T_TMP/crashy"
sed "s#^mount .*#mount ext3d-fuse alone $T_TMP/crashy \${INSTANCE} \${MOUNT}#" \
	"$T_TOP/compose/ext3d.compose" >"$T_TMP/crashy.compose"
t_instance_start t-mcrash-$$ "$T_TMP/crashy.compose" --set "IMAGE=$T_TMP/img2" --set BLOCKDEV_ARGS=
"$T_EXT3D" --instance t-mcrash-$$ mount "$T_TMP/mnt2" >/dev/null 2>&1
t_ok $? "a front end that crashes after it mounted: the first mount succeeds"
st=
for _ in $(seq 150); do
	st=$(t_field t-mcrash-$$ services.ext3d-fuse.state)
	[ "$st" = failed ] && break
	sleep 0.1
done
t_is "$st:$(t_field t-mcrash-$$ services.ext3d-fuse.mount):$(t_field t-mcrash-$$ supervisor.state)" \
	failed::ready "after a crash loop it is failed and unmounted, the instance ready"
mounted "$T_TMP/mnt2"
t_ok "$([ $? -ne 0 ]; echo $?)" "and nothing is left mounted"
t_instance_stop t-mcrash-$$

# Bad input.
mkdir -p "$T_TMP/busy" && mount -t tmpfs none "$T_TMP/busy"
t_at_exit "umount '$T_TMP/busy' 2>/dev/null"
"$T_EXT3D" --instance $n umount >/dev/null 2>&1
"$T_EXT3D" --instance $n mount "$T_TMP/busy" >"$T_TMP/b.out" 2>&1
t_ok "$([ $? -ne 0 ] && grep -q "already a mount point" "$T_TMP/b.out"; echo $?)" \
	"ext3d mount on a busy directory: already a mount point"
"$T_EXT3D" --instance $n mount "$T_TMP/src/big" >"$T_TMP/b.out" 2>&1
t_ok "$([ $? -ne 0 ] && grep -q "is not a directory" "$T_TMP/b.out"; echo $?)" \
	"ext3d mount on a file: not a directory"
t_is "$(t_field $n supervisor.state)" ready "the instance stays ready after refused mounts"
"$T_TOP/compose/down" --instance $n >/dev/null 2>&1

for bad in "$T_TMP/nonexistent:No such file or directory" "$T_TMP/src/big:is not a directory" \
	"$T_TMP/busy:already a mount point"; do
	dir=${bad%%:*} want=${bad#*:}
	"$T_TOP/compose/up" --image "$img" --instance $n --mount "$dir" >"$T_TMP/b.out" 2>&1
	t_ok "$([ $? -eq 2 ] && grep -q "$want" "$T_TMP/b.out"; echo $?)" \
		"compose/up --mount $(basename "$dir"): $want"
done
"$T_EXT3D" --instance $n status >/dev/null 2>&1
t_is $? 1 "and no instance was started"

cp "$img" "$T_TMP/bad.img"
printf '\000\000' | dd of="$T_TMP/bad.img" bs=1 seek=1080 conv=notrunc 2>/dev/null
"$T_TOP/compose/up" --image "$T_TMP/bad.img" --instance $n --mount "$mnt" >"$T_TMP/c.out" 2>&1
st=$?
t_ok "$([ $st -ne 0 ] && grep -qi "superblock\|magic\|not an ext" "$T_TMP/c.out"; echo $?)" \
	"a corrupt image is refused at compose/up --mount with a clear message"
sed 's/^/# /' "$T_TMP/c.out" | tail -3
mounted "$mnt"
t_ok "$([ $? -ne 0 ]; echo $?)" "and leaves no mount behind"
"$T_EXT3D" --instance $n status >/dev/null 2>&1
t_is $? 1 "nor an instance"
t_done
