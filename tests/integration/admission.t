#!/bin/sh
# admission.t - one user cannot lock the others out of inode-svc: a uid
# holds at most --sessions-per-uid sessions (EUSERS past it, with a reason
# the CLI prints), users other than root together at most 40 of the 48
# (ENFILE), root is always admitted; connections that never send their
# attach message delay nobody; garbage, truncated, oversized messages and
# bad segments are refused by name and disturb no one; --clients=GROUP
# makes session.sock 0660 and of that group, and others cannot connect.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

t_need_root "runs clients as other uids"
command -v setpriv >/dev/null || t_skip_all "needs setpriv"
xp=$EXT3D_BUILD/tests/tools/x3-probe
chmod 755 "$T_TMP" # other uids reach the run directory through it
as() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }
# Background holders: a plain command (a function would keep fd 7 open).
bg_as() { setpriv --reuid="$1" --regid="$1" --clear-groups "$xp" --instance $n "$2" "$3" \
	<"$T_TMP/hold" >"$4" 2>&1 7>&- & hpids="$hpids $!"; }

mkdir -p "$T_TMP/tree"
echo hello >"$T_TMP/tree/file"
img=$T_TMP/img
mke2fs -q -F -t ext3 -d "$T_TMP/tree" "$img" 16M >"$T_TMP/mkfs.log" 2>&1
t_ok $? "mke2fs -t ext3 -d TREE"
n=t-admit
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance ready"
ino_pid=$(t_svc_pid $n inode-svc)

# hold UID N: UID attaches up to N sessions and holds them until release;
# $got is what it says. Not run in $(...): the holder would keep it open.
# fd 7 keeps the holders' stdin open: opened after the instance starts (its
# services would inherit it), closed by release.
mkfifo "$T_TMP/hold"
holders=0 hpids=
hold() {
	holders=$((holders + 1))
	bg_as "$1" hold "$2" "$T_TMP/held.$holders"
	for _ in $(seq 100); do [ -s "$T_TMP/held.$holders" ] && break; sleep 0.1; done
	got=$(cat "$T_TMP/held.$holders")
}
release() { exec 7>&-; wait $hpids; hpids=; }

# The flood: one uid takes all it can.
exec 7<>"$T_TMP/hold"
hold 65534 48
t_diag "hostile uid 65534: $got"
t_is "$(echo "$got" | cut -d' ' -f1-3)" "held 8 refused=EUSERS" \
	"a uid holds at most 8 sessions, then EUSERS"
as 65534 "$T_EXT3D" --instance $n cat /file >"$T_TMP/o" 2>&1
t_is "$(cat "$T_TMP/o")" \
	"ext3d: $n: Too many users: uid 65534 holds 8 sessions, the most one uid may (sessions-per-uid)" \
	"the CLI says why"
t_is "$(as 65533 "$T_EXT3D" --instance $n cat /file 2>&1)" hello "another uid still attaches"
t_is "$("$T_EXT3D" --instance $n cat /file 2>&1)" hello "root still attaches"

# Five uids take every session open to users other than root.
others=0
for u in 65533 1001 1002 1003; do
	hold $u 48
	others=$((others + $(echo "$got" | cut -d' ' -f2)))
done
t_diag "four more uids held $others sessions"
t_is "$others" 32 "four other uids held 8 each beside the hostile one"
hold 1004 48
t_is "$(echo "$got" | cut -d' ' -f1-3)" "held 0 refused=ENFILE" \
	"a sixth uid: ENFILE, the 40 sessions for users other than root are taken"
hold 0 48
t_diag "root then: $got"
t_is "$(echo "$got" | cut -d' ' -f1-3)" "held 8 refused=ENFILE" "root still gets the 8 kept for it"
release
t_is "$(as 65534 "$T_EXT3D" --instance $n cat /file 2>&1)" hello "after the flood, the hostile uid attaches again"

# Silent connections: 32 from one uid, 32 from another; nobody waits.
exec 7<>"$T_TMP/hold"
bg_as 65534 silent 32 "$T_TMP/silent1"
bg_as 65533 silent 32 "$T_TMP/silent2"
for _ in $(seq 100); do [ -s "$T_TMP/silent1" ] && [ -s "$T_TMP/silent2" ] && break; sleep 0.1; done
t_is "$(cat "$T_TMP/silent1" "$T_TMP/silent2" | tr '\n' ' ')" "open 32 open 32 " \
	"64 connections that never send their attach message"
for u in 65534 1001 0; do
	got=$(as $u "$xp" --instance $n attach-ms)
	t_diag "uid $u attached in ${got% *} ms"
	t_ok "$([ "${got#* }" = ok ] && [ "${got% *}" -lt 2000 ]; echo $?)" \
		"uid $u attaches promptly all the same (did not hang)"
done
sleep 2.5
grep -q "sent no attach message" "$T_TMP/$n.log"
t_ok $? "the silent connections are dropped after their deadline"
release

# Bad attach messages and segments: refused by name.
for k in garbage:malformed truncated:malformed oversized:oversized nofd:"carries no segment" \
	unsealed:"not sealed" blank:"bad magic"; do
	got=$(as 65534 "$xp" --instance $n raw "${k%%:*}")
	case $got in "status=EPROTO"*"${k#*:}"*) r=0 ;; *) r=1 ;; esac
	t_ok $r "${k%%:*} attach: refused, $got"
done
t_is "$(t_svc_pid $n inode-svc)" "$ino_pid" "inode-svc was never restarted"
t_is "$(as 65534 "$T_EXT3D" --instance $n cat /file 2>&1)" hello "and serves the others"
t_instance_stop $n

# An instance option: a smaller quota.
n=t-admit-quota
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
	--set SESSIONS_PER_UID=2
t_ok $? "instance with SESSIONS_PER_UID=2 ready"
exec 7<>"$T_TMP/hold"
hold 65534 48
t_is "$(echo "$got" | cut -d' ' -f1-3)" "held 2 refused=EUSERS" "--sessions-per-uid=2 is the quota"
release
t_instance_stop $n

# Who may attach: --clients=GROUP.
grp=$(getent group 100 | cut -d: -f1)
n=t-admit-clients
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
	--set "CLIENTS=$grp"
t_ok $? "instance with CLIENTS=$grp ready"
t_is "$(stat -c '%G %a' "$EXT3D_RUNDIR/$n/session.sock")" "$grp 660" \
	"session.sock is of group $grp, mode 0660"
t_is "$(as 65534 "$T_EXT3D" --instance $n cat /file 2>&1)" \
	"ext3d: $n: Permission denied: $EXT3D_RUNDIR/$n/session.sock: only the instance's client group may attach" \
	"a uid outside the group is refused at connect, saying why"
t_is "$(setpriv --reuid=65534 --regid=65534 --groups=100 "$T_EXT3D" --instance $n cat /file 2>&1)" \
	hello "a member of the group attaches"
t_is "$("$T_EXT3D" --instance $n cat /file 2>&1)" hello "root attaches"
t_instance_stop $n
t_is "$("$T_TOP/compose/up" --clients=no-such-group-x3 2>&1)" \
	"compose/up: --clients: no group no-such-group-x3" "compose/up refuses an unknown group"
t_done
