#!/bin/sh
# jfuzz.t - corrupted journals never crash recovery. As root, a loop-mounted
# ext3 image (1 KiB blocks) is copied right after mount (BEFORE), then a
# workload of synced transactions runs (files, a big file with indirect
# blocks, a deleted tree that makes revoke records, blocks reused after
# the delete) and the image is copied again while still mounted (AFTER).
# BEFORE with AFTER's journal blocks is the base: its log holds every
# transaction and its home blocks are as they were before the first, so a
# replay of any prefix is a consistent filesystem. tests/tools/jfuzz.py
# then corrupts copies of the base with a seed (bad magic, wrong sequence,
# tags outside the filesystem or inside the journal, a truncated
# descriptor, a bad revoke count, bad block types, garbage commit blocks, a
# journal inode with a hole, unknown incompatible features, a bad journal
# superblock) and checks ext3d-recover on each (and the ASan build's when
# EXT3D_ASAN_BUILD is set): no crash or sanitizer report; the transactions
# before the corrupted one replayed exactly (block for block against a
# model), the output saying where the log ended and why, e2fsck -fn clean
# afterwards; a bad journal superblock, inode or feature set refused with
# the reason and the image untouched. 100 cases (EXT3D_JFUZZ_CASES), 2000
# with EXT3D_LONG=1; EXT3D_JFUZZ_SEED picks the seed (default: the date).
set -u
. "$(dirname "$0")/../lib/tap.sh"

PATH=$PATH:/sbin:/usr/sbin
REC=$EXT3D_BUILD/journald-svc/ext3d-recover
mnt=$T_TMP/mnt
mkdir -p "$mnt"
t_at_exit "umount '$mnt' 2>/dev/null"
for tool in mke2fs e2fsck python3; do
	command -v $tool >/dev/null 2>&1 || t_skip_all "needs $tool"
done
[ -x "$REC" ] || t_skip_all "no $REC (build first)"
[ "$(id -u)" -eq 0 ] || t_skip_all "needs root for a loop mount of an ext3 image"

live=$T_TMP/live.img
mke2fs -q -F -t ext3 -b 1024 "$live" 16M >/dev/null 2>&1
mount -o loop -t ext3 "$live" "$mnt" 2>"$T_TMP/mount.err" ||
	t_skip_all "the loop mount failed: $(head -1 "$T_TMP/mount.err")"
sync -f "$mnt"
cp "$live" "$T_TMP/before.img"
mkdir "$mnt/a" && for i in $(seq 30); do echo "a $i" >"$mnt/a/f$i"; done
sync -f "$mnt"
head -c 400000 /dev/urandom >"$mnt/a/big"
sync -f "$mnt"
mkdir -p "$mnt/b/c" && for i in $(seq 20); do echo "b $i" >"$mnt/b/c/g$i"; done
sync -f "$mnt"
rm -rf "$mnt/a"
sync -f "$mnt"
head -c 200000 /dev/urandom >"$mnt/b/reuse"
ln -s b/c "$mnt/link"
sync -f "$mnt"
rm -f "$mnt/b/c/g1" "$mnt/b/c/g2"
mkdir "$mnt/d"
sync -f "$mnt"
cp "$live" "$T_TMP/after.img"
umount "$mnt"

base=$T_TMP/base.img
python3 "$T_TOP/tests/tools/jfuzz.py" merge "$T_TMP/before.img" "$T_TMP/after.img" "$base" >"$T_TMP/merge.out" 2>&1
t_ok $? "the base image: the home blocks before the workload, its journal after"
sed 's/^/# /' "$T_TMP/merge.out"
cp "$base" "$base.whole"
"$REC" "$base.whole" >"$T_TMP/whole.out" 2>&1
t_ok $? "ext3d-recover replays the whole log of the base"
sed 's/^/#   /' "$T_TMP/whole.out"
e2fsck -fn "$base.whole" >"$T_TMP/whole.fsck" 2>&1
t_ok $? "e2fsck -fn finds nothing after that"
[ $? -eq 0 ] || grep '?' "$T_TMP/whole.fsck" | head -5 | sed 's/^/# /'

recs=$REC
asan=${EXT3D_ASAN_BUILD:-}/journald-svc/ext3d-recover
[ -n "${EXT3D_ASAN_BUILD:-}" ] && [ -x "$asan" ] && recs="$REC,$asan"
cases=${EXT3D_JFUZZ_CASES:-100}
[ -n "${EXT3D_LONG:-}" ] && cases=${EXT3D_JFUZZ_CASES:-2000}
seed=${EXT3D_JFUZZ_SEED:-$(date +%Y%m%d)}
t_diag "seed $seed, $cases cases, recovery by $recs"
mkdir -p "$T_TMP/work"
python3 "$T_TOP/tests/tools/jfuzz.py" run "$base" "$recs" "$cases" "$seed" "$T_TMP/work" \
	>"$T_TMP/cases" 2>"$T_TMP/cases.err"
t_ok $? "jfuzz.py ran"
sed 's/^/# /' "$T_TMP/cases.err" | tail -10
tab=$(printf '\t')
while IFS="$tab" read -r res what diag; do
	t_ok "$([ "$res" = ok ]; echo $?)" "$what"
	[ -n "$diag" ] && echo "#   $diag"
done <"$T_TMP/cases"
t_is "$(grep -c '' "$T_TMP/cases")" "$cases" "every case ran"
t_done
