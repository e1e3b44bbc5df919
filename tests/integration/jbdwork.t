#!/bin/sh
# jbdwork.t - randomized handle workloads from several processes, every
# one SIGKILLed at a random point. Each round: a fresh ext3 image (1 KiB
# blocks, the smallest journal), an instance with three jbd-work workers on
# disjoint free blocks (write, create and undo access, forget, revoke, sync
# handles, forced commits at different rates, direct writes into revoked
# blocks from one of them); the workers are SIGKILLed one by one at random
# moments, then the supervisor and every service at once. ext3d-recover,
# e2fsck -fy and journald-svc (an instance started on it) each replay a
# copy of the image as the processes left it; each must be explained,
# block for block, by the model (tests/tools/jbd-model.py) at one
# transaction id no older than any commit a worker saw complete, with every
# handle whole or absent; e2fsck -fn then finds nothing. Two rounds, the
# second with --locking=big; EXT3D_LONG=1 runs eight.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

PATH=$PATH:/sbin:/usr/sbin
export LC_ALL=C
WORK=$EXT3D_BUILD/tests/tools/jbd-work
REC=$EXT3D_BUILD/journald-svc/ext3d-recover
MODEL=$T_TOP/tests/tools/jbd-model.py
for tool in mke2fs e2fsck python3; do
	command -v $tool >/dev/null 2>&1 || t_skip_all "needs $tool"
done
[ -x "$WORK" ] && [ -x "$REC" ] || t_skip_all "no $WORK or $REC (build first)"
[ "${EXT3D_LONG:-0}" = 1 ] && rounds=8 || rounds=2
seed=${EXT3D_SEED:-$(date +%s)}
t_diag "seed $seed (EXT3D_SEED=$seed repeats the choices of this run)"

# jw_rand N: a number in [0, N) from the seeded sequence.
jw_state=$seed
jw_rand() {
	jw_state=$(((jw_state * 1103515245 + 12345) % 2147483648))
	echo $((jw_state / 65536 % $1))
}

# jw_gone PID: waits up to 5 s for PID to be gone (or a zombie).
jw_gone() {
	for _ in $(seq 50); do
		st=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null)
		{ [ -z "$st" ] || [ "$st" = Z ]; } && return 0
		sleep 0.1
	done
	return 1
}

for round in $(seq $rounds); do
	d=$T_TMP/r$round
	mkdir -p "$d"
	img=$d/fs.img
	mke2fs -q -F -t ext3 -b 1024 -J size=1 "$img" 8M >/dev/null 2>&1 || {
		t_ok 1 "round $round: mke2fs"
		continue
	}
	cp "$img" "$d/base.img"
	{
		cat "$T_TOP/compose/ext3d.compose"
		for w in 0 1 2; do
			echo "service jbd-work-$w never \${BUILD}/tests/tools/jbd-work --worker=$w" \
				"--name=jbd-work-$w" \
				"--model=$d/model.$w --blocks=48 --handles=0 --max-ops=8" \
				"--commit-every=$((2 + 4 * w)) --seed=$((seed + round))" \
				"$([ $w = 1 ] && echo --direct)"
		done
	} >"$d/compose"
	n=jw$$r$round
	[ $((round % 2)) = 0 ] && lk=big || lk=fine
	t_instance_start $n "$d/compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= --locking $lk
	st=$?
	t_ok $st "round $round: instance with three jbd-work workers ready (--locking $lk)"
	if [ $st -ne 0 ]; then
		t_instance_stop $n
		continue
	fi
	pids=$(t_status $n | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(s["supervisor"]["pid"], " ".join(str(v["pid"]) for v in s["services"] if v.get("pid")))')
	eval "sup=\$t_pid_$n"
	killed=0
	for w in $(echo "0 1 2" | tr ' ' '\n' | awk -v s="$((seed + round))" 'BEGIN {srand(s)} {print rand(), $0}' | sort | cut -d' ' -f2); do
		sleep "0.$(jw_rand 9)$(jw_rand 10)"
		# (during a group restart it may have no pid for a moment)
		for _ in $(seq 30); do
			pid=$(t_svc_pid $n jbd-work-$w 2>/dev/null)
			[ -n "$pid" ] && [ "$pid" != 0 ] && [ "$pid" != None ] && break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
		t_diag "round $round: killed jbd-work-$w (pid ${pid:-none}) after $(grep -c '^stop' "$d/model.$w" 2>/dev/null) handles"
	done
	t_is $killed 3 "round $round: all three workers were running when SIGKILLed"
	t_is "$(grep -c 'jbd-work-[0-9] (pid [0-9]*) exited with status [1-9]' "$T_TMP/$n.log")" 0 \
		"round $round: no worker ended on its own (an error)"
	grep 'jbd-work\[' "$T_TMP/$n.log" | grep -v 'info:' | head -3 | sed 's/^/# /'
	sleep "0.$(jw_rand 5)"
	# shellcheck disable=SC2086
	kill -9 $sup $pids 2>/dev/null
	left=0
	for p in $sup $pids; do jw_gone "$p" || left=$((left + 1)); done
	wait "$sup" 2>/dev/null
	t_is $left 0 "round $round: the supervisor and every service SIGKILLed and gone"
	cat "$d"/model.* | awk '$1 == "stop" && $5 == 0 { h++ } $1 == "commit" { c++ }
		END { printf "# round %d: %d handles stopped, %d commits seen\n", r, h, c }' r="$round"

	cp "$img" "$d/x.img" && cp "$img" "$d/o.img"
	"$REC" "$d/x.img" >"$d/x.out" 2>&1
	t_ok $? "round $round: ext3d-recover replays the killed run's journal"
	sed 's/^/#   /' "$d/x.out" | head -4
	e2fsck -fy "$d/o.img" >"$d/o.out" 2>&1
	t_ok "$([ $? -le 1 ]; echo $?)" "round $round: e2fsck -fy replays it too"
	# And journald-svc's own replay at start, then a clean shutdown.
	cp "$img" "$d/s.img"
	t_instance_start ${n}s "$T_TOP/compose/ext3d.compose" --set "IMAGE=$d/s.img" --set BLOCKDEV_ARGS=
	t_ok $? "round $round: an instance starts on the killed run's image (journald-svc replays)"
	grep 'journal recovered' "$T_TMP/${n}s.log" | sed 's/^.*info: /#   /'
	t_instance_stop ${n}s
	for which in x o s; do
		python3 "$MODEL" settled --base="$d/base.img" --pre="$img" --post="$d/$which.img" \
			"$d"/model.* >"$d/$which.check" 2>&1
		rc=$?
		case $which in
		x) who="ext3d-recover's replay" ;;
		o) who="e2fsck's replay" ;;
		s) who="journald-svc's replay" ;;
		esac
		t_relay "round $round: $who" <"$d/$which.check"
		t_is "$rc" 0 "round $round: the model checker ran to the end ($who)"
	done
	cmp -l "$d/x.img" "$d/o.img" | awk '$1 <= 1024 || $1 > 2048 { n++ } END { print n + 0 }' >"$d/diff"
	t_is "$(cat "$d/diff")" 0 "round $round: ext3d-recover's replay equals e2fsck's outside the superblock"
	e2fsck -fn "$d/x.img" >"$d/x.fsck" 2>&1
	st=$?
	! grep -q '?' "$d/x.fsck"
	t_ok "$([ $st -eq 0 ] && [ $? -eq 0 ]; echo $?)" "round $round: e2fsck -fn finds nothing after ext3d's replay"
	grep '?' "$d/x.fsck" | head -5 | sed 's/^/# /'
	t_instance_stop $n
done

t_done
