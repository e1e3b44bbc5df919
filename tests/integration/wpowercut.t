#!/bin/sh
# wpowercut.t - power cuts at flush boundaries over a file-level workload.
# An instance with blockdev-svc's write log runs the random-kill test's
# client (tests/tools/x3-kwork: create, append, fsync, sync, rename,
# unlink, mkdir) to its end and shuts down; each durable point in its log
# carries the write log's size when the call returned. The run is then cut
# (tests/tools/wlog-cut.py) at every flush boundary, plain and with seeds
# (the writes after the boundary dropped or landing, in any order), and
# each cut replayed by ext3d-recover must satisfy e2fsck -fn
# (tests/tools/cut-fsck.py). At flush boundaries spread over the whole
# run, every other one seeded, a cut gets the full check: an instance
# starts (journald-svc replays the journal, inode-svc finishes the
# orphan list), x3-kwork checks the tree against
# the durable points that the cut keeps (every fsync- or sync-acknowledged
# byte and name is there, nothing half-done is visible), and after a clean
# shutdown e2fsck -fn finds nothing to fix. In the three data modes at
# 1 KiB blocks and in ordered mode at 4 KiB (in writeback, bytes past what
# an fsync covered may be stale, as the kernel's writeback mode allows);
# 8 full checks and 2 seeds a boundary by default; 48 full checks and 4
# seeds with EXT3D_LONG=1.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

PATH=$PATH:/sbin:/usr/sbin
KWORK=$EXT3D_BUILD/tests/tools/x3-kwork
CUT=$T_TOP/tests/tools/wlog-cut.py
CUTFSCK=$T_TOP/tests/tools/cut-fsck.py
REC=$EXT3D_BUILD/journald-svc/ext3d-recover
for tool in mke2fs e2fsck python3; do
	command -v $tool >/dev/null 2>&1 || t_skip_all "needs $tool"
done
[ -x "$KWORK" ] && [ -x "$REC" ] || t_skip_all "no $KWORK or $REC (build first)"
cuts=8 fsck_seeds=2
[ "${EXT3D_LONG:-0}" = 1 ] && cuts=48 fsck_seeds=4
# The quick check's cut images are written and replayed hundreds of
# times: in memory (/dev/shm) where there is one.
cutdir=$(mktemp -d /dev/shm/ext3d-wcuts.XXXXXX 2>/dev/null) || cutdir=$T_TMP/cuts
mkdir -p "$cutdir"
t_at_exit "rm -rf '$cutdir'"
seed=${EXT3D_SEED:-$(date +%s)}
t_diag "seed $seed (EXT3D_SEED=$seed repeats this run)"

# wp_cut K POS [--seed=S]: the cut at flush boundary K (POS bytes of the
# write log before it), with a seed the writes after it dropped or
# landing, in any order; checked and counted in wp_run's variables.
wp_cut() {
	k=$1 pos=$2 cimg=$d/cut.img what="cut $1${3:+ $3}"
	python3 "$CUT" cut "$d/base.img" "$wl" "$k" "$cimg" ${3:-} >"$d/fate" || { bad_up=$((bad_up + 1)); return; }
	# The durable points this cut keeps: those whose call returned with
	# at most pos bytes in the log. A seeded cut may keep more of what
	# came after; the check allows that as it allows any begun call.
	awk -v pos="$pos" '/^D [FS]/ { m = $NF; sub(/^@/, "", m); if (m + 0 > pos) next } { print }' \
		"$log" >"$d/cut.log"
	c=wc$$$bs$mode$k
	if ! t_instance_start $c "$T_TOP/compose/ext3d.compose" --set "IMAGE=$cimg" \
		--set BLOCKDEV_ARGS= --set "DATA=$mode" >"$d/up.out" 2>&1; then
		bad_up=$((bad_up + 1))
		t_diag "$p: $what: no instance ($(cut -c1-160 "$d/fate"))"; sed 's/^/#   /' "$d/up.out" | tail -5
		return
	fi
	if ! "$KWORK" --instance $c $stale check /w "$d/cut.log" >"$d/check.out" 2>&1; then
		bad_check=$((bad_check + 1))
		t_diag "$p: $what (log byte $pos; $(cut -c1-160 "$d/fate")):"; sed 's/^/#   /' "$d/check.out" | head -8
	fi
	t_instance_stop $c
	if ! e2fsck -fn "$cimg" >"$d/cut.fsck" 2>&1; then
		bad_fsck=$((bad_fsck + 1))
		t_diag "$p: e2fsck after $what ($(cut -c1-160 "$d/fate")):"
		grep -v '^Pass\|^e2fsck' "$d/cut.fsck" | head -8 | sed 's/^/#   /'
	fi
	done_cuts=$((done_cuts + 1))
}

# wp_run BS SIZE MODE: one workload under a write log, then its cuts.
wp_run() {
	bs=$1 mode=$3 p="$3, $1-byte blocks" d=$T_TMP/$3-$1 stale=
	# data=writeback orders no data before the commit that grows a file:
	# past what an fsync covered, stale bytes may show after a cut.
	[ "$mode" = writeback ] && stale=--stale-ok
	mkdir -p "$d"
	img=$d/fs.img wl=$d/run.wlog log=$d/kwork.log
	mke2fs -q -F -t ext3 -b "$bs" -J size=4 "$img" "$2" >/dev/null 2>&1
	t_ok $? "$p: mke2fs $2"
	cp "$img" "$d/base.img"
	n=wp$$$bs$mode
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" \
		--set "BLOCKDEV_ARGS=--write-log=$wl" --set "DATA=$mode"
	t_ok $? "$p: instance with a write log ready"
	"$KWORK" --instance $n --wlog="$wl" run /w "$log" "$seed" >"$d/run.out" 2>&1
	t_ok $? "$p: the workload ran to its end ($(grep -c '^D [FS]' "$log") durable points)"
	t_instance_stop $n
	e2fsck -fn "$img" >"$d/final.fsck" 2>&1
	t_ok $? "$p: e2fsck -fn clean after the run"

	# The quick check, at every boundary: cut, replay, e2fsck -fn.
	python3 "$CUTFSCK" "$d/base.img" "$wl" "$REC" "$cutdir" --seeds=$fsck_seeds \
		--first-seed="$seed" >"$d/cut-fsck.out" 2>&1
	t_ok $? "$p: every boundary, cut plain and with $fsck_seeds seeds, replays clean for e2fsck -fn ($(tail -1 "$d/cut-fsck.out"))"
	grep -v '^cuts ' "$d/cut-fsck.out" | sed 's/^/#   /'

	python3 "$CUT" offsets "$wl" >"$d/offsets"
	total=$(wc -l <"$d/offsets")
	step=1
	[ "$cuts" -gt 0 ] && [ "$total" -gt "$cuts" ] && step=$(((total + cuts - 1) / cuts))
	t_diag "$p: $total boundaries, cutting every $step"
	bad_up=0 bad_check=0 bad_fsck=0 done_cuts=0
	while read -r k pos; do
		[ $((k % step)) -eq 0 ] || [ "$k" -eq $((total - 1)) ] || continue
		# Every other cut keeps a seeded part of the writes after it.
		if [ $((done_cuts % 2)) -eq 0 ]; then
			wp_cut "$k" "$pos"
		else
			wp_cut "$k" "$pos" --seed=$((seed + k))
		fi
	done <"$d/offsets"
	t_ok $((done_cuts < 2)) "$p: $done_cuts cuts checked"
	t_is $bad_up 0 "$p: an instance came up on every cut (journal replayed)"
	t_is $bad_check 0 "$p: every durable point the cut keeps is there, nothing half-done"
	t_is $bad_fsck 0 "$p: e2fsck -fn clean on every cut after recovery and shutdown"
}

wp_run 1024 16M ordered
wp_run 1024 16M journal
wp_run 1024 16M writeback
wp_run 4096 32M ordered
t_done
