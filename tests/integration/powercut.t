#!/bin/sh
# powercut.t - a power cut at every flush of a journal workload. On ext3
# images with 1 KiB blocks (8 MiB) and 4 KiB blocks (16 MiB), each with the
# smallest journal mke2fs makes (1024 blocks, so the log wraps and
# checkpoints run under pressure), an
# instance with blockdev-svc's write log runs jbd-work (write, create and
# undo access, forget, revoke and reuse, direct writes into revoked
# blocks, forced and sync commits); then a clean shutdown. The whole run
# is then cut (tests/tools/wlog-cut.py) at every flush boundary and, with
# seeds, with the writes after it randomly dropped and torn (the writes
# of the two superblocks stay whole, as JBD assumes); on each cut
# ext3d-recover and e2fsck -fy each replay a copy, which must hold exactly
# the transactions whose commit block was durable (tests/tools/jbd-model.py,
# block for block), and e2fsck -fn finds nothing in ext3d's. Hundreds of
# cuts by default (every boundary and one seeded variant of each, at both
# block sizes); EXT3D_LONG=1 runs longer workloads and more
# seeds (thousands of cuts: three seeded variants of each boundary at
# 1 KiB, two at 4 KiB).
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

PATH=$PATH:/sbin:/usr/sbin
export LC_ALL=C
WORK=$EXT3D_BUILD/tests/tools/jbd-work
REC=$EXT3D_BUILD/journald-svc/ext3d-recover
MODEL=$T_TOP/tests/tools/jbd-model.py
for tool in mke2fs e2fsck debugfs python3; do
	command -v $tool >/dev/null 2>&1 || t_skip_all "needs $tool"
done
[ -x "$WORK" ] && [ -x "$REC" ] || t_skip_all "no $WORK or $REC (build first)"
if [ "${EXT3D_LONG:-0}" = 1 ]; then
	runs="1024:8M:1:2000:3:160:6:6 4096:16M:4:1000:2:160:16:12"
else
	runs="1024:8M:1:300:1:96:10:10 4096:16M:4:200:1:64:16:12"
fi
seed=${EXT3D_SEED:-$(date +%s)}
# The cut images are written, copied and replayed hundreds of times: in
# memory (/dev/shm) where there is one.
cutdir=$(mktemp -d /dev/shm/ext3d-cuts.XXXXXX 2>/dev/null) || cutdir=$T_TMP/cuts
mkdir -p "$cutdir"
t_at_exit "rm -rf '$cutdir'"
t_diag "seed $seed (EXT3D_SEED=$seed repeats this run)"

# pc_run BS SIZE JOURNAL_MB HANDLES SEEDS BLOCKS MAX_OPS COMMIT_EVERY: one
# workload, then its cuts.
pc_run() {
	bs=$1 p="$1-byte blocks" d=$T_TMP/b$1
	mkdir -p "$d"
	img=$d/fs.img wl=$d/run.wlog model=$d/model.0 done=$d/work.done
	mke2fs -q -F -t ext3 -b "$bs" -J size="$3" "$img" "$2" >/dev/null 2>&1
	t_ok $? "$p: mke2fs $2 with a 1024-block journal"
	cp "$img" "$d/base.img"
	{
		cat "$T_TOP/compose/ext3d.compose"
		echo "service jbd-work never \${BUILD}/tests/tools/jbd-work --model=$model" \
			"--done=$done --blocks=$6 --handles=$4 --max-ops=$7 --commit-every=$8" \
			"--seed=$seed --direct=raw --min-log=130"
	} >"$d/compose"
	n=pc$$b$bs
	t_instance_start $n "$d/compose" --set "IMAGE=$img" --set "BLOCKDEV_ARGS=--write-log=$wl"
	t_ok $? "$p: instance with a write log and jbd-work ready"
	i=0
	while [ ! -e "$done" ] && [ $i -lt 1200 ] && t_status $n >/dev/null 2>&1; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -e "$done" ]
	t_ok $? "$p: jbd-work finished (done file)"
	t_diag "$p: jbd-work: $(cat "$done" 2>/dev/null)"
	grep -q 'result=ok' "$done" 2>/dev/null
	t_ok $? "$p: jbd-work: every handle and commit succeeded"
	[ -e "$done" ] || sed 's/^/# log: /' "$T_TMP/$n.log" | tail -20
	"$T_EXT3D" --instance $n shutdown >/dev/null 2>&1
	t_ok $? "$p: clean shutdown"
	t_instance_stop $n
	e2fsck -fn "$img" >"$d/final.fsck" 2>&1
	t_ok $? "$p: e2fsck -fn finds nothing on the image after the clean shutdown"
	grep '?' "$d/final.fsck" | head -5 | sed 's/^/# /'
	python3 "$MODEL" final --base="$d/base.img" --image="$img" "$model" >"$d/final.out" 2>&1
	t_is $? 0 "$p: the model checker read the model"
	t_relay "$p" <"$d/final.out"

	# The cuts: every flush boundary, plus seeded drop/tear variants.
	start=$(date +%s)
	jsb=$(debugfs -R "bmap <8> 0" "$d/base.img" 2>/dev/null)
	python3 "$MODEL" powercut --base="$d/base.img" --log="$wl" --recover="$REC" \
		--tmp="$cutdir" --jsb="$jsb" --seeds="$5" --min-wraps=1 "$model" >"$d/cuts.out" 2>&1
	st=$?
	t_relay "$p" <"$d/cuts.out"
	t_is $st 0 "$p: the power-cut checker ran to the end"
	t_diag "$p: cuts took $(($(date +%s) - start)) s"
}

for r in $runs; do
	# shellcheck disable=SC2046
	pc_run $(echo "$r" | tr : ' ')
done

t_done
