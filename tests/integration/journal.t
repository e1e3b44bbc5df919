#!/bin/sh
# journal.t - journald-svc's commit thread and clean shutdown in a running
# instance, e2fsck as the oracle. A compose group of blockdev-svc,
# journald-svc (--commit-interval=200) and the jbd-writer test tool, which
# runs handles on raw blocks at the end of a 1 KiB-block ext3 image (log
# 1024 blocks) and writes the model of what it committed:
#   - while it runs, needs_recovery is set; after compose/down it is clear,
#     the log is empty (s_start 0), every block is home and e2fsck -fn
#     finds nothing;
#   - enough handles to wrap the log several times (checkpoints);
#   - the supervisor and every service SIGKILLed after the commits, on
#     images of 1 KiB and of 4 KiB blocks (1024-block logs): the
#     image needs recovery, and e2fsck -fy, ext3d-recover, the kernel (a
#     loop mount; skipped, with the reason, where mounting fails) and a
#     new instance (journald-svc's replay) each give the model's blocks;
#   - --commit-interval and --data reach journald-svc; a bad one stops it.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

PATH=$PATH:/sbin:/usr/sbin
export LC_ALL=C
REC=$EXT3D_BUILD/journald-svc/ext3d-recover
for tool in mke2fs e2fsck dumpe2fs python3; do
	command -v $tool >/dev/null 2>&1 || t_skip_all "needs $tool"
done

# compose FILE MODEL [WRITER FLAGS...]: blockdev-svc, journald-svc (with
# $JD_ARGS), jbd-writer.
JD_ARGS=--commit-interval=200
compose() {
	f=$1 model=$2; shift 2
	{
		echo "service blockdev-svc alone \${BUILD}/blockdev-svc/blockdev-svc --image=\${IMAGE}"
		echo "service journald-svc group \${BUILD}/journald-svc/journald-svc $JD_ARGS"
		echo "service jbd-writer never \${BUILD}/tests/tools/jbd-writer --model=$model $*"
	} >"$f"
}

# wait_model MODEL NAME: up to 60 s for jbd-writer's model.
wait_model() {
	for _ in $(seq 600); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	sed 's/^/#   /' "$T_TMP/$2.log" | tail -20
	return 1
}

# check_blocks IMAGE MODEL [BS]: how many model blocks the image does not
# hold (BS the block size, 1024 if not given).
check_blocks() {
	python3 - "$1" "$2" "${3:-1024}" <<'EOF'
import struct, sys
img, model, bs = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad = 0
with open(img, 'rb') as f:
    for line in open(model):
        blk, gen = map(int, line.split())
        want = bytearray(struct.pack('<II', blk, gen) * (bs // 8))
        if gen % 5 == 0:
            want[0:4] = struct.pack('>I', 0xC03B3998)
        f.seek(blk * bs)
        if f.read(bs) != bytes(want):
            bad += 1
            if bad <= 3:
                print('# block %d differs from generation %d' % (blk, gen), file=sys.stderr)
print(bad)
EOF
}

needs_recovery() { dumpe2fs -h "$1" 2>/dev/null | grep -q 'features:.*needs_recovery'; }
jstart() { dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Journal start: *//p'; }

# ---- clean shutdown, with the log wrapping ----
img=$T_TMP/clean.img model=$T_TMP/clean.model n=t-jrnl-$$
mke2fs -q -F -t ext3 -b 1024 -J size=1 "$img" 16M
compose "$T_TMP/clean.compose" "$model" --handles=1500 --per=8 --blocks=400 --seed=7
t_instance_start $n "$T_TMP/clean.compose" --set "IMAGE=$img"
t_ok $? "instance with journald-svc and jbd-writer ready"
wait_model "$model" $n
t_ok $? "jbd-writer ran 1500 handles, all committed"
needs_recovery "$img"
t_ok $? "needs_recovery is set while the journal runs"
sed -n 's/.*jbd-writer.*info: //p' "$T_TMP/$n.log" | sed 's/^/# /'
t_instance_stop $n
grep -q "journal shut down cleanly" "$T_TMP/$n.log"
t_ok $? "journald-svc shut the journal down cleanly"
sed -n 's/.*journald-svc.*info: journal shut/# journal shut/p' "$T_TMP/$n.log"
commits=$(sed -n 's/.*shut down cleanly: \([0-9]*\) commits.*/\1/p' "$T_TMP/$n.log")
cps=$(sed -n 's/.* \([0-9]*\) checkpoints$/\1/p' "$T_TMP/$n.log" | tail -1)
t_ok "$([ "${cps:-0}" -ge 2 ]; echo $?)" "the log wrapped: ${cps:-0} checkpoints in ${commits:-0} commits"
needs_recovery "$img"
t_ok "$([ $? -ne 0 ]; echo $?)" "needs_recovery is clear after compose/down"
t_is "$(jstart "$img")" 0 "the log is empty (s_start 0)"
t_is "$(check_blocks "$img" "$model")" 0 "every committed block is home"
e2fsck -fn "$img" >"$T_TMP/clean.fsck" 2>&1
t_ok $? "e2fsck -fn finds nothing"

# ---- every process SIGKILLed after the commits, at 1 KiB and 4 KiB blocks ----
mnt=$T_TMP/mnt
mkdir -p "$mnt"
t_at_exit "umount '$mnt' 2>/dev/null"
for bs in 1024 4096; do
img=$T_TMP/crash$bs.img model=$T_TMP/crash$bs.model n=t-jrnl-k$bs-$$
if [ $bs = 1024 ]; then
	mke2fs -q -F -t ext3 -b 1024 -J size=1 "$img" 16M
else
	mke2fs -q -F -t ext3 -b 4096 -J size=4 "$img" 64M
fi
JD_ARGS="--commit-interval=300 --data=writeback"
compose "$T_TMP/crash$bs.compose" "$model" --handles=1000 --per=6 --blocks=300 --seed=11
t_instance_start $n "$T_TMP/crash$bs.compose" --set "IMAGE=$img"
t_ok $? "bs $bs: instance ready"
grep -q "commit every 300 ms, data=writeback" "$T_TMP/$n.log"
t_ok $? "journald-svc took --commit-interval=300 --data=writeback"
wait_model "$model" $n
t_ok $? "jbd-writer ran 1000 handles, all committed (the log wrapped)"
sup=$(t_field $n supervisor.pid)
pids="$sup $(t_svc_pid $n blockdev-svc) $(t_svc_pid $n journald-svc)"
kill -9 $pids 2>/dev/null
for _ in $(seq 50); do
	alive=0
	for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
	[ $alive = 0 ] && break
	sleep 0.1
done
t_is $alive 0 "supervisor, blockdev-svc and journald-svc SIGKILLed"
"$T_TOP/compose/down" --instance $n >/dev/null 2>&1
needs_recovery "$img"
t_ok $? "the image needs recovery"
t_ok "$([ "$(jstart "$img")" != 0 ]; echo $?)" "the log is not empty (s_start $(jstart "$img"))"
cp "$img" "$img.o" && cp "$img" "$img.x"
e2fsck -fy "$img.o" >"$T_TMP/crash$bs.fsck" 2>&1
t_ok "$([ $? -le 1 ]; echo $?)" "e2fsck -fy replays it"
t_is "$(check_blocks "$img.o" "$model" $bs)" 0 "e2fsck's replay holds every committed block"
e2fsck -fn "$img.o" >/dev/null 2>&1
t_ok $? "e2fsck -fn then finds nothing"
"$REC" "$img.x" >"$T_TMP/crash$bs.rec" 2>&1
t_ok $? "ext3d-recover replays a copy"
t_is "$(check_blocks "$img.x" "$model" $bs)" 0 "ext3d-recover's replay holds every committed block"
t_is "$(cmp -l "$img.x" "$img.o" | awk '$1 <= 1024 || $1 > 2048 { n++ } END { print n + 0 }')" 0 \
	"and equals e2fsck's outside the superblock"
# The kernel replays at mount (ext3 through the ext4 driver).
cp "$img" "$img.k"
if mount -o loop -t ext3 "$img.k" "$mnt" 2>"$T_TMP/mount.err"; then
	umount "$mnt"
	t_is "$(check_blocks "$img.k" "$model" $bs)" 0 "the kernel's replay at mount holds every committed block"
	e2fsck -fn "$img.k" >/dev/null 2>&1
	t_ok $? "e2fsck -fn finds nothing after the kernel's replay"
else
	why="loop mount failed: $(head -1 "$T_TMP/mount.err")"
	t_skip "$why" "the kernel's replay at mount holds every committed block"
	t_skip "$why" "e2fsck -fn finds nothing after the kernel's replay"
fi
head -2 "$T_TMP/crash$bs.compose" >"$T_TMP/idle.compose"
t_instance_start t-jrnl-r$bs-$$ "$T_TMP/idle.compose" --set "IMAGE=$img"
t_ok $? "an instance on the crashed image starts (journald-svc replays)"
t_instance_stop t-jrnl-r$bs-$$
t_is "$(check_blocks "$img" "$model" $bs)" 0 "journald-svc's replay holds every committed block"
e2fsck -fn "$img" >/dev/null 2>&1
t_ok $? "e2fsck -fn finds nothing after it"
done

# A bad option stops journald-svc with its usage.
JD_ARGS=--commit-interval=soon
compose "$T_TMP/bad.compose" "$T_TMP/bad.model"
head -2 "$T_TMP/bad.compose" >"$T_TMP/bad2.compose"
t_instance_start t-jrnl-b-$$ "$T_TMP/bad2.compose" --set "IMAGE=$img" >/dev/null
t_ok "$([ $? -ne 0 ]; echo $?)" "journald-svc --commit-interval=soon: the instance does not start"
grep -q "usage: journald-svc" "$T_TMP/t-jrnl-b-$$.log"
t_ok $? "journald-svc says its usage"
t_done
