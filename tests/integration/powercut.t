#!/bin/sh
# powercut.t - a power cut at every flush of a journal workload. On an
# 8 MiB ext3 image with 1 KiB blocks and the smallest journal mke2fs makes
# (1024 blocks, so the log wraps and checkpoints under pressure), an
# instance with blockdev-svc's write log runs jbd-work (write, create and
# undo access, forget, revoke and reuse, direct writes into revoked
# blocks, forced and sync commits); then a clean shutdown. The whole run
# is then cut (tests/tools/wlog-cut.py) at every flush boundary and, with
# seeds, with the writes after it randomly dropped and torn (the writes
# of the two superblocks stay whole, as JBD assumes); on each cut
# ext3d-recover and e2fsck -fy each replay a copy, which must hold exactly
# the transactions whose commit block was durable (tests/tools/jbd-model.py,
# block for block), and e2fsck -fn finds nothing in ext3d's. Hundreds of
# cuts by default; EXT3D_LONG=1 runs a longer workload and more seeds.
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
	handles=2000 seeds=6 blocks=160
else
	handles=400 seeds=1 blocks=96
fi
seed=${EXT3D_SEED:-$(date +%s)}
t_diag "seed $seed (EXT3D_SEED=$seed repeats this run)"

# pc_lines: the lines of the checker's output as TAP.
pc_lines() {
	while read -r verdict what; do
		case $verdict in
		PASS) t_ok 0 "$what" ;;
		FAIL) t_ok 1 "$what" ;;
		*) echo "$verdict $what" ;;
		esac
	done
}

img=$T_TMP/fs.img wl=$T_TMP/run.wlog model=$T_TMP/model.0 done=$T_TMP/work.done
mke2fs -q -F -t ext3 -b 1024 -J size=1 "$img" 8M >/dev/null 2>&1
t_ok $? "mke2fs: 8 MiB, 1 KiB blocks, a 1024-block journal"
cp "$img" "$T_TMP/base.img"
{
	cat "$T_TOP/compose/ext3d.compose"
	echo "service jbd-work never \${BUILD}/tests/tools/jbd-work --model=$model --done=$done" \
		"--blocks=$blocks --handles=$handles --seed=$seed --commit-every=6 --direct"
} >"$T_TMP/pc.compose"
n=pc$$
t_instance_start $n "$T_TMP/pc.compose" --set "IMAGE=$img" --set "BLOCKDEV_ARGS=--write-log=$wl"
t_ok $? "instance with a write log and jbd-work ready"
i=0
while [ ! -e "$done" ] && [ $i -lt 1200 ] && t_status $n >/dev/null 2>&1; do
	sleep 0.1
	i=$((i + 1))
done
[ -e "$done" ]
t_ok $? "jbd-work finished (done file)"
t_diag "jbd-work: $(cat "$done" 2>/dev/null)"
grep -q 'result=ok' "$done" 2>/dev/null
t_ok $? "jbd-work: every handle and commit succeeded"
[ -e "$done" ] || sed 's/^/# log: /' "$T_TMP/$n.log" | tail -20
"$T_EXT3D" --instance $n shutdown >/dev/null 2>&1
t_ok $? "clean shutdown"
t_instance_stop $n
e2fsck -fn "$img" >"$T_TMP/final.fsck" 2>&1
t_ok $? "e2fsck -fn finds nothing on the image after the clean shutdown"
grep '?' "$T_TMP/final.fsck" | head -5 | sed 's/^/# /'
python3 "$MODEL" final --base="$T_TMP/base.img" --image="$img" "$model" >"$T_TMP/final.out" 2>&1
t_is $? 0 "the model checker read the model"
pc_lines <"$T_TMP/final.out"

# The cuts: every flush boundary, plus seeded drop/tear variants.
mkdir -p "$T_TMP/cuts"
start=$(date +%s)
jsb=$(debugfs -R "bmap <8> 0" "$T_TMP/base.img" 2>/dev/null)
python3 "$MODEL" powercut --base="$T_TMP/base.img" --log="$wl" --recover="$REC" \
	--tmp="$T_TMP/cuts" --jsb="$jsb" --seeds=$seeds --min-wraps=1 "$model" >"$T_TMP/cuts.out" 2>&1
st=$?
pc_lines <"$T_TMP/cuts.out"
t_is $st 0 "the power-cut checker ran to the end"
t_diag "cuts took $(($(date +%s) - start)) s"

t_done
