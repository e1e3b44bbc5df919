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
# the reason and the image untouched. 100 cases in all (EXT3D_JFUZZ_CASES), 1000
# with EXT3D_LONG=1; EXT3D_JFUZZ_SEED picks the seed (default: the date).
# Then, with the clang build, libFuzzer runs tests/tools/fuzz-jbd on the
# plain base's log, seeded with it and its corruptions, for
# EXT3D_JFUZZ_SECONDS (15; 120 with EXT3D_LONG=1).
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

# fsync_new DIR N TAG: N files made in DIR, each fsynced (a transaction each,
# or a few together when the kernel batches them).
fsync_new() {
	python3 - "$@" <<'PY'
import os, sys
d, n, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(d, exist_ok=True)
for i in range(n):
    fd = os.open(os.path.join(d, '%s%d' % (tag, i)), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, tag.encode() * (1 + i % 50))
    os.fsync(fd)
    os.close(fd)
fd = os.open(d, os.O_RDONLY)
os.fsync(fd)
os.close(fd)
PY
}

# The plain base: a 16 MiB filesystem, the log from its first block.
base_plain() {
	mke2fs -q -F -t ext3 -b 1024 "$live" 16M >/dev/null 2>&1 &&
		mount -o loop -t ext3 "$live" "$mnt" 2>"$T_TMP/mount.err" || return 1
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
}

# The wrapped base: the smallest journal mke2fs makes (1024 blocks); a
# first workload moves the log's head near its end; a read-only remount
# checkpoints everything and empties the log (the kernel moves the tail
# lazily: after a mere sync the tail could still name transactions older
# than BEFORE's home blocks, and replaying a prefix of those over newer
# home blocks mixes two states), and one more transaction starts the log
# there; BEFORE is copied then, and the workload after it (small fsynced
# transactions, a delete with revokes) runs the log round its end.
base_wrapped() {
	mke2fs -q -F -t ext3 -b 1024 -J size=1 "$live" 16M >/dev/null 2>&1 &&
		mount -o loop -t ext3 "$live" "$mnt" 2>"$T_TMP/mount.err" || return 1
	fsync_new "$mnt/w1" 100 w
	head -c 300000 /dev/urandom >"$mnt/w1/big"
	sync -f "$mnt"
	mount -o remount,ro "$mnt" && mount -o remount,rw "$mnt" || return 1
	fsync_new "$mnt/t0" 1 t
	cp "$live" "$T_TMP/before.img"
	fsync_new "$mnt/w2" 30 x
	rm -rf "$mnt/w1"
	fsync_new "$mnt/w2" 1 y
	fsync_new "$mnt/w3" 25 z
	cp "$live" "$T_TMP/after.img"
	umount "$mnt"
}

recs=$REC
asan=${EXT3D_ASAN_BUILD:-}/journald-svc/ext3d-recover
[ -n "${EXT3D_ASAN_BUILD:-}" ] && [ -x "$asan" ] && recs="$REC,$asan"
cases=${EXT3D_JFUZZ_CASES:-100}
[ -n "${EXT3D_LONG:-}" ] && cases=${EXT3D_JFUZZ_CASES:-1000}
seed=${EXT3D_JFUZZ_SEED:-$(date +%Y%m%d)}
t_diag "seed $seed, $cases cases in all, recovery by $recs"
live=$T_TMP/live.img
tab=$(printf '\t')
for kind in plain wrapped; do
	base=$T_TMP/base-$kind.img
	if ! base_$kind; then
		umount "$mnt" 2>/dev/null
		t_skip "the loop mount failed: $(head -1 "$T_TMP/mount.err")" "$kind base"
		continue
	fi
	python3 "$T_TOP/tests/tools/jfuzz.py" merge "$T_TMP/before.img" "$T_TMP/after.img" "$base" \
		>"$T_TMP/merge.out" 2>&1
	t_ok $? "$kind base: the home blocks before the workload, its journal after"
	sed 's/^/# /' "$T_TMP/merge.out"
	cp "$base" "$base.whole"
	"$REC" "$base.whole" >"$T_TMP/whole.out" 2>&1
	t_ok $? "$kind base: ext3d-recover replays the whole log"
	sed 's/^/#   /' "$T_TMP/whole.out"
	e2fsck -fn "$base.whole" >"$T_TMP/whole.fsck" 2>&1
	t_ok $? "$kind base: e2fsck -fn finds nothing after that"
	[ $? -eq 0 ] || grep '?' "$T_TMP/whole.fsck" | head -5 | sed 's/^/# /'
	mkdir -p "$T_TMP/work"
	n=$((cases / 2))
	[ $kind = wrapped ] && n=$((cases - cases / 2))
	python3 "$T_TOP/tests/tools/jfuzz.py" run "$base" "$recs" "$n" "$seed" "$T_TMP/work" \
		>"$T_TMP/cases" 2>"$T_TMP/cases.err"
	t_ok $? "$kind base: jfuzz.py ran"
	sed 's/^/# /' "$T_TMP/cases.err" | tail -10
	while IFS="$tab" read -r res what diag; do
		t_ok "$([ "$res" = ok ]; echo $?)" "$kind base, $what"
		[ -n "$diag" ] && echo "#   $diag"
	done <"$T_TMP/cases"
	t_is "$(grep -c '' "$T_TMP/cases")" "$n" "$kind base: every case ran"
	[ $kind = plain ] && cp "$base" "$T_TMP/fuzz-base.img"
done

# libFuzzer on recovery, from the plain base's log and its corruptions.
fz=${EXT3D_ASAN_BUILD:-}/tests/tools/fuzz-jbd
secs=${EXT3D_JFUZZ_SECONDS:-15}
[ -n "${EXT3D_LONG:-}" ] && secs=${EXT3D_JFUZZ_SECONDS:-120}
if [ -z "${EXT3D_ASAN_BUILD:-}" ] || [ ! -x "$fz" ]; then
	t_skip "no clang fuzz build (EXT3D_ASAN_BUILD)" "libFuzzer on journal recovery"
elif [ ! -f "$T_TMP/fuzz-base.img" ]; then
	t_skip "no plain base" "libFuzzer on journal recovery"
else
	mkdir -p "$T_TMP/seeds" "$T_TMP/corpus"
	python3 "$T_TOP/tests/tools/jfuzz.py" seeds "$T_TMP/fuzz-base.img" "$seed" "$T_TMP/seeds"
	EXT3D_JFUZZ_BASE=$T_TMP/fuzz-base.img ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$fz" -max_total_time="$secs" \
		-max_len=100000 -timeout=10 -print_final_stats=1 -seed="$seed" \
		-artifact_prefix="$T_TMP/" "$T_TMP/corpus" "$T_TMP/seeds" >"$T_TMP/fz.log" 2>&1
	rc=$?
	t_ok $rc "libFuzzer ran $secs s on journal recovery without a crash, leak or timeout"
	[ $rc -eq 0 ] || tail -30 "$T_TMP/fz.log" | sed 's/^/# /'
	grep -E "stat::number_of_executed_units|stat::new_units_added" "$T_TMP/fz.log" | sed 's/^/# /'
fi
t_done
