#!/bin/sh
# rundir.t - a client without XDG_RUNTIME_DIR or EXT3D_RUNDIR uses
# /tmp/ext3d-UID only when it is a directory of its own with mode 0700,
# and attaches only to a session.sock served by root or by itself
# (SO_PEERCRED); otherwise it refuses, says why, and sends nothing: a
# server posing as the instance (tests/lib/posing.py, run as uid 65534)
# logs every connection and what came over it. Refused: /tmp/ext3d-UID
# made by uid 65534 (by the CLI's control commands and the user's
# supervisor too); /tmp/ext3d-UID of the user but mode 0755; a socket in
# the user's own 0700 directory served by uid 65534. Allowed: a
# supervisor run by the user makes /tmp/ext3d-UID 0700 and its client
# attaches; a root instance whose services run as another user (they
# listen before they drop root) takes a client of any uid.
set -u
. "$(dirname "$0")/../lib/tap.sh"
t_reachable
. "$T_TOP/tests/lib/instance.sh"

t_need_root "runs clients as other uids"
command -v setpriv >/dev/null || t_skip_all "needs setpriv"
chmod 755 "$T_TMP"
posing=$T_TOP/tests/lib/posing.py
# A uid of our own for this run, so that /tmp/ext3d-UID is nobody else's.
u=$((40000 + $$ % 20000))
while [ -e /tmp/ext3d-$u ]; do u=$((u + 1)); done
dir=/tmp/ext3d-$u
t_at_exit "rm -rf $dir"
# The posing server or user's supervisor still running at exit (a pid, or empty).
pose_pid= user_pid=
t_at_exit 'for p in $pose_pid $user_pid; do kill $p 2>/dev/null; done'
as_user() { env -u XDG_RUNTIME_DIR -u EXT3D_RUNDIR setpriv --reuid=$u --regid=$u --clear-groups "$@"; }

# pose AS: a posing server on $dir/default/session.sock, started as AS
# (root binds, then becomes 65534); waits until it listens.
pose() {
	log=$T_TMP/pose.log
	: >"$log" && chmod 666 "$log"
	rm -f "$dir/default/session.sock"
	${1:-} /usr/bin/python3 "$posing" "$dir/default/session.sock" 65534 "$log" 2>>"$T_TMP/pose.err" &
	pose_pid=$!
	for _ in $(seq 400); do
		grep -q listening "$log" && return 0
		kill -0 $pose_pid 2>/dev/null || break
		sleep 0.05
	done
	echo "# the posing server did not listen:"; sed 's/^/#   /' "$T_TMP/pose.err"
	return 1
}
# unpose: ends the posing server; $posed: what it logged after listening.
unpose() {
	/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(b"end")' "$dir/default/session.sock"
	wait $pose_pid
	pose_pid=
	posed=$(sed 1d "$log" | paste -sd' ')
}
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# refused TEXT WHAT: uid $u's libext3d (wops's attach) and its control
# commands (ext3d status) both fail, saying TEXT.
refused() {
	as_user "$EXT3D_BUILD/tests/tools/wops" </dev/null >"$T_TMP/out" 2>&1
	t_is "$?:$(grep -c "$1" "$T_TMP/out")" "1:1" "libext3d of uid $u refuses $2, saying so"
	sed 's/^/# /' "$T_TMP/out"
	as_user "$T_EXT3D" status >"$T_TMP/out" 2>&1
	t_is "$?:$(grep -c "$1" "$T_TMP/out")" "1:1" "so does its ext3d status"
}

img=$T_TMP/img
mke2fs -q -F -t ext3 "$img" 16M >/dev/null 2>&1 && chown $u:$u "$img"
# user_start: uid $u's own supervisor, without EXT3D_RUNDIR ($user_pid).
user_start() {
	as_user "$T_SUPERVISOR" --compose "$T_TOP/compose/ext3d.compose" --set "BUILD=$EXT3D_BUILD" \
		--set "IMAGE=$img" --set BLOCKDEV_ARGS= </dev/null >"$T_TMP/user.log" 2>&1 &
	user_pid=$!
}
# user_wait: $user_rc, its exit status once it exits; "running" (and it
# is killed) if it has not 10 s later.
user_wait() {
	for _ in $(seq 200); do kill -0 $user_pid 2>/dev/null || break; sleep 0.05; done
	if kill -0 $user_pid 2>/dev/null; then
		kill $user_pid
		wait $user_pid
		user_rc=running
	else
		wait $user_pid
		user_rc=$?
	fi
	user_pid=
}

# 1. Another uid made /tmp/ext3d-UID first.
as_nobody mkdir -m 777 "$dir" "$dir/default"
pose as_nobody
t_ok $? "uid 65534 serves $dir/default/session.sock"
refused "$dir belongs to uid 65534, not to you (uid $u)" "a $dir of uid 65534"
unpose
t_is "$posed" "end" "the posing server got no connection"
user_start
user_wait
t_is "$user_rc:$(grep -c "$dir belongs to uid 65534, not to you (uid $u)" "$T_TMP/user.log")" \
	"1:1" "uid $u's supervisor refuses it too, saying so"
rm -rf "$dir"

# 2. The user's own, but others may write it.
mkdir -m 755 "$dir" && mkdir -m 777 "$dir/default" && chown $u:$u "$dir"
pose
t_ok $? "a posing server in uid $u's $dir of mode 0755"
refused "$dir has mode 0755, not 0700" "its $dir of mode 0755"
unpose
t_is "$posed" "end" "the posing server got no connection"

# 3. The directory is right, the server is not.
chmod 700 "$dir"
pose
t_ok $? "a posing server of uid 65534 in uid $u's own 0700 $dir"
as_user "$T_EXT3D" ls / >"$T_TMP/out" 2>&1
t_is "$?:$(grep -c "session.sock is served by uid 65534, neither root nor you (uid $u)" \
	"$T_TMP/out")" "1:1" "uid $u refuses a server of uid 65534 (SO_PEERCRED), saying so"
sed 's/^/# /' "$T_TMP/out"
unpose
t_is "$posed" "bytes=0 fds=0 end" "it connected and sent nothing: no attach message, no memfd"
rm -rf "$dir"

# 4. The user's own instance under /tmp.
user_start
ready=1
for _ in $(seq 400); do
	as_user "$T_EXT3D" status --json 2>/dev/null | grep -q '"supervisor":{[^}]*"state":"ready"' &&
		ready=0 && break
	kill -0 $user_pid 2>/dev/null || break
	sleep 0.05
done
t_ok $ready "uid $u's own supervisor is ready, in $dir"
[ $ready -eq 0 ] || sed 's/^/#   /' "$T_TMP/user.log" | tail -20
t_is "$(stat -c '%u %a' "$dir")" "$u 700" "the supervisor made $dir uid $u's, mode 0700"
t_is "$(as_user "$T_EXT3D" ls / 2>&1)" "lost+found" "uid $u attaches to it"
as_user "$T_EXT3D" shutdown >/dev/null 2>&1
user_wait
t_is "$user_rc" 0 "its supervisor shuts down"

# 5. A root instance whose services become user ext3d (or 65534).
n=t-rundir
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "root's instance ready"
t_is "$(ps -o user= -p "$(t_svc_pid $n inode-svc)" | grep -c -v '^root$')" "1" \
	"its inode-svc no longer runs as root"
t_is "$(setpriv --reuid=$u --regid=$u --clear-groups "$T_EXT3D" --instance $n ls / 2>&1)" \
	"lost+found" "uid $u attaches to it (it listened as root)"
t_done
