#!/bin/sh
# killedge.t - SIGKILLs at the edges of the instance's life, each followed
# by: the instance comes back ready, what a sync or an fsync acknowledged is
# there (x3-kwork check, and a file synced before the kills), and e2fsck
# -fn finds the image clean after the shutdown.
#  - group restarts under a status load: inode-svc killed again and again
#    while x3-statusload keeps the supervisor's control thread busy, the
#    supervisor on one CPU (taskset) so that its main thread preempts the
#    control thread: a reply still being packed when the group restarts
#    must not name what the restart changes or frees; the supervisor lives;
#  - a full filesystem: x3-kwork's writes get ENOSPC while a random service
#    is killed (each round frees 32 KiB, which a put fills at once);
#  - a restart in progress: inode-svc killed, then a service of the new
#    generation (journald-svc while it replays a journal full of data, or
#    blockdev-svc under that replay) killed as soon as it runs;
#  - checkpoints: a 1 MiB journal in data=journal mode, so that x3-kwork's
#    writes checkpoint all the time, and random kills among them.
# Short by default; EXT3D_LONG=1 runs five times as many rounds.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

scale=1
[ -n "${EXT3D_LONG:-}" ] && scale=5
kwork=$EXT3D_BUILD/tests/tools/x3-kwork
targets="blockdev-svc journald-svc alloc-svc inode-svc"
# A number in [0, $1) from the seed $2.
sent=0 # SIGKILLs sent, for the soak's table
rnd() { awk -v s="$2" -v m="$1" 'BEGIN { srand(s); print int(rand() * m) }'; }
pick() { echo $targets | cut -d' ' -f$((1 + $(rnd 4 "$1"))); }
# kill_svc NAME SERVICE [NOTPID]: SIGKILLs SERVICE once it runs in a process
# other than NOTPID (waits up to 20 s for that); 1 if it never did.
kill_svc() {
	for _ in $(seq 400); do
		p=$(t_svc_pid "$1" "$2" 2>/dev/null)
		if [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "${3:-}" ]; then
			kill -9 "$p" 2>/dev/null && sent=$((sent + 1)) && return 0
		fi
		sleep 0.05
	done
	return 1
}
# kill_new SUPERVISOR SERVICE NOTPID: SIGKILLs SERVICE as soon as it runs
# in a process other than NOTPID, a child of SUPERVISOR (pgrep is quicker
# than status, so the kill lands while the new process starts up).
kill_new() {
	for _ in $(seq 2000); do
		p=$(pgrep -P "$1" -x -r R,S,D "$2" | grep -vx "$3" | head -1)
		[ -n "$p" ] && kill -9 "$p" 2>/dev/null && sent=$((sent + 1)) && return 0
		sleep 0.01
	done
	return 1
}
# back NAME ROUND WHAT: the instance is ready again; else its log is shown.
back() {
	t_instance_wait_ready "$1" >"$T_TMP/ready.out" && return 0
	t_diag "round $2 ($3): the instance did not come back"
	sed 's/^/# /' "$T_TMP/ready.out"
	return 1
}
# checked NAME DIR LOG: x3-kwork check of one round, its complaints shown.
checked() {
	"$kwork" --instance "$1" check "$2" "$3" >"$T_TMP/check.out" 2>&1 && return 0
	t_diag "check of $2:"; sed 's/^/#   /' "$T_TMP/check.out" | head -10
	return 1
}
# fsck_clean NAME IMG WHAT: shut down, then e2fsck -fn.
fsck_clean() {
	t_instance_stop "$1"
	e2fsck -fn "$2" >"$T_TMP/fsck.out" 2>&1
	t_ok $? "e2fsck -fn clean after $3" || sed 's/^/# /' "$T_TMP/fsck.out" | head -20
}

# --- group restarts under a status load ---------------------------------
n=t-kedge-st img=$T_TMP/st.img
mke2fs -q -F -t ext3 -b 1024 "$img" 16M >/dev/null 2>&1
real=$T_SUPERVISOR pin=
if command -v taskset >/dev/null 2>&1; then
	pin=" (on one CPU)"
	printf '#!/bin/sh\nexec taskset -c 0 "%s" "$@"\n' "$real" >"$T_TMP/pinned"
	chmod +x "$T_TMP/pinned"
	T_SUPERVISOR=$T_TMP/pinned
fi
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" \
	--set BLOCKDEV_ARGS= --restart-delay-max 250
t_ok $? "instance ready$pin"
T_SUPERVISOR=$real
sup=$(t_field $n supervisor.pid)
"$EXT3D_BUILD/tests/tools/x3-statusload" --instance $n 4 "$T_TMP/st.stop" >"$T_TMP/st.out" &
load=$!
lost=
for i in $(seq $((40 * scale))); do
	t_instance_wait_ready $n >/dev/null || { lost=$i; break; }
	kill_svc $n inode-svc
	sleep 0.1
	t_pid_gone "$sup" && { lost=$i; break; }
done
touch "$T_TMP/st.stop"
wait $load
t_ok "$([ -z "$lost" ]; echo $?)" "the supervisor lived through $((40 * scale)) group restarts under a status load ${lost:+(not round $lost)}"
[ -n "$lost" ] && tail -5 "$T_TMP/$n.log" | sed 's/^/# /'
replies=$(awk '$1 == "replies" {print $2}' "$T_TMP/st.out")
t_ok "$([ "${replies:-0}" -gt 0 ]; echo $?)" "status replies kept coming (${replies:-0})"
fsck_clean $n "$img" "the restarts under a status load"

# --- one instance for the rest: a 1 MiB journal, data=journal ------------
n=t-kedge img=$T_TMP/img
mke2fs -q -F -t ext3 -b 1024 -J size=1 "$img" 16M >/dev/null 2>&1
t_ok $? "mke2fs -t ext3 (1 KiB blocks, 1 MiB journal)"
up() {
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" \
		--set BLOCKDEV_ARGS= --set DATA=journal --restart-delay-max 250 >/dev/null
}
up
t_ok $? "instance ready (data=journal)"
head -c 300000 /dev/urandom >"$T_TMP/keep"
"$T_EXT3D" --instance $n put "$T_TMP/keep" /keep && "$T_EXT3D" --instance $n sync
t_ok $? "a file put and synced before the kills"
keep_ok() { "$T_EXT3D" --instance $n cat /keep 2>/dev/null | cmp -s - "$T_TMP/keep"; }
# after_kill ROUND WHAT DIR: the instance is back (else lost=ROUND, 1), and
# x3-kwork's round in /DIR (its log $T_TMP/DIR.log) and /keep check (each
# failure counted in bad).
after_kill() {
	back $n "$1" "$2" || { lost=$1; return 1; }
	checked $n "/$3" "$T_TMP/$3.log" || bad=$((bad + 1))
	keep_ok || bad=$((bad + 1))
}
# verdict WHAT: the results of one kind of kill.
verdict() {
	t_ok "$([ -z "$lost" ]; echo $?)" "back after each kill $1 ${lost:+(not round $lost)}"
	t_is "$bad" 0 "the synced writes were there after each of them"
}

# --- checkpoints ---------------------------------------------------------
head -c 1048576 /dev/urandom >"$T_TMP/mb"
bad=0 lost= cps=0
for i in $(seq $((6 * scale))); do
	"$T_EXT3D" --instance $n rm "/cp$((i - 1))" >/dev/null 2>&1
	# A MiB of data through the 1 MiB journal: checkpoint after checkpoint.
	"$T_EXT3D" --instance $n put "$T_TMP/mb" "/cp$i" >/dev/null 2>&1 &
	bg=$!
	"$kwork" --instance $n run "/c$i" "$T_TMP/c$i.log" "$i" >/dev/null 2>&1 &
	w=$!
	sleep "0.$(printf %03d $((150 + $(rnd 400 "$i"))))"
	cps=$((cps + $(t_field $n journal.checkpoints 2>/dev/null || echo 0)))
	kill_svc $n "$(pick "$i")"
	wait $w $bg
	after_kill "$i" checkpoints "c$i" || break
done
verdict "among checkpoints"
t_diag "$cps checkpoints in all, counted just before the kills"

# --- a restart in progress ----------------------------------------------
bad=0 lost= during=$(grep -c "while the group was starting\|before it was ready" "$T_TMP/$n.log")
for i in $(seq $((4 * scale))); do
	"$kwork" --instance $n run "/g$i" "$T_TMP/g$i.log" "$((i + 100))" >/dev/null 2>&1
	"$T_EXT3D" --instance $n sync >/dev/null 2>&1
	second=journald-svc
	[ $((i % 2)) -eq 0 ] && second=blockdev-svc
	sup=$(t_field $n supervisor.pid) old=$(t_svc_pid $n $second)
	kill_svc $n inode-svc
	kill_new "$sup" $second "$old"
	after_kill "$i" "inode-svc then $second" "g$i" || break
done
verdict "of the new generation"
t_diag "$(($(grep -c "while the group was starting\|before it was ready" "$T_TMP/$n.log") - during)) of the kills landed while the group was starting"
fsck_clean $n "$img" "the kills among checkpoints and restarts"

# --- a full filesystem ---------------------------------------------------
up
t_ok $? "instance ready again"
# The earlier rounds' trees go, so that the fill below, not they, decides
# how much room is left.
for i in $(seq $((6 * scale))); do echo "/c$i /cp$i"; done >"$T_TMP/old"
for i in $(seq $((4 * scale))); do echo "/g$i"; done >>"$T_TMP/old"
"$T_EXT3D" --instance $n rm -r $(cat "$T_TMP/old") >/dev/null 2>&1
head -c 16384 /dev/urandom >"$T_TMP/small"
f=0
while "$T_EXT3D" --instance $n put "$T_TMP/mb" "/fill$f" 2>/dev/null; do f=$((f + 1)); done
"$T_EXT3D" --instance $n rm "/fill$f" >/dev/null 2>&1 # what the failed put left
s=0
while "$T_EXT3D" --instance $n put "$T_TMP/small" "/s$s" 2>/dev/null; do s=$((s + 1)); done
"$T_EXT3D" --instance $n put "$T_TMP/small" /nospace 2>"$T_TMP/put.err"
grep -q "No space left" "$T_TMP/put.err"
t_ok $? "the filesystem is full ($f MiB and $s small files; a put gets ENOSPC)"
bad=0 lost= enospc=0 bigfull=0
for i in $(seq $((6 * scale))); do
	# A little room (32 KiB and what the last put left), which a put of a
	# MiB fills at once: x3-kwork's writes meet ENOSPC too.
	"$T_EXT3D" --instance $n rm "/s$((s - 1))" "/s$((s - 2))" "/big$((i - 1))" >/dev/null 2>&1
	s=$((s - 2))
	"$kwork" --instance $n run "/f$i" "$T_TMP/f$i.log" "$((i + 200))" >/dev/null 2>&1 &
	w=$!
	"$T_EXT3D" --instance $n put "$T_TMP/mb" "/big$i" 2>"$T_TMP/big.err" &
	bg=$!
	sleep "0.$(printf %03d $((50 + $(rnd 300 "$i"))))"
	kill_svc $n "$(pick "$((i + 7))")"
	wait $w $bg
	grep -q "^E -28" "$T_TMP/f$i.log" && enospc=$((enospc + 1))
	grep -q "No space left" "$T_TMP/big.err" && bigfull=$((bigfull + 1))
	after_kill "$i" full "f$i" || break
done
verdict "on a full filesystem"
t_diag "ENOSPC in $bigfull rounds' puts and in $enospc rounds' x3-kwork writes"
fsck_clean $n "$img" "the kills on a full filesystem"
t_diag "$sent SIGKILLs sent"
t_done
