#!/bin/sh
# recovery.t - journal recovery at start against the kernel and e2fsck. For
# 1 KiB and 4 KiB blocks: loop-mount a fresh ext3 image, write, sync, write
# and fsync more (transactions whose home blocks are not yet written, a
# delete that makes the kernel log revoke records), copy the image while it
# is mounted. The copy needs recovery: e2fsck -fy replays one copy (the
# oracle), ext3d-recover another, and they must be equal outside the
# superblock's counters of checks and mounts; e2fsck -fn then finds nothing.
# The same through a running instance (journald-svc replays, inode-svc
# serves the files written). A torn last commit, a bad block in mid-log and
# a log with needs_recovery clear replay as e2fsck does, and so do revoked
# blocks that were reused for file data (a replay that ignored the revoke
# records would write stale metadata over that data); randomly corrupted
# journals are replayed or refused without a crash; a journal with an
# unknown incompatible feature is refused, naming it.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

PATH=$PATH:/sbin:/usr/sbin
export LC_ALL=C
REC=$EXT3D_BUILD/journald-svc/ext3d-recover
mnt=$T_TMP/mnt
mkdir -p "$mnt"
t_at_exit "umount '$mnt' 2>/dev/null"

for tool in mke2fs e2fsck dumpe2fs debugfs; do
	command -v $tool >/dev/null 2>&1 || t_skip_all "needs $tool"
done

# sbdiff A B: dumpe2fs -h of both, less the lines e2fsck -f changes itself.
sbdiff() {
	for f in "$1" "$2"; do
		dumpe2fs -h "$f" 2>/dev/null |
			grep -Ev '^(Last write time|Last checked|Mount count):' >"$f.sb"
	done
	diff "$1.sb" "$2.sb"
}

# same_blocks A B: no byte differs outside the superblock (bytes 1024-2047).
same_blocks() {
	cmp -l "$1" "$2" | awk '$1 <= 1024 || $1 > 2048 { n++ } END { print n + 0 }'
}

# oracle_vs_ours LABEL IMAGE: replays copies of IMAGE with e2fsck -fy and
# ext3d-recover, compares them; leaves $IMAGE.o, $IMAGE.x and $IMAGE.x.out.
oracle_vs_ours() {
	cp "$2" "$2.o" && cp "$2" "$2.x"
	e2fsck -fy "$2.o" >"$2.o.out" 2>&1
	t_ok "$([ $? -le 1 ]; echo $?)" "e2fsck -fy replays the oracle copy ($1)"
	"$REC" "$2.x" >"$2.x.out" 2>&1
	t_ok $? "ext3d-recover replays its copy ($1)"
	sed 's/^/#   /' "$2.x.out"
	t_is "$(same_blocks "$2.x" "$2.o")" 0 \
		"every byte outside the superblock equals e2fsck's replay ($1)"
	sbdiff "$2.x" "$2.o" >"$2.sbdiff"
	t_ok $? "superblock fields equal e2fsck's, but for its check and mount counters ($1)"
	sed 's/^/# /' "$2.sbdiff"
	e2fsck -fn "$2.x" >"$2.fsck" 2>&1
	st=$?
	! grep -q '?' "$2.fsck"
	t_ok "$([ $st -eq 0 ] && [ $? -eq 0 ]; echo $?)" "e2fsck -fn finds nothing after ext3d's replay ($1)"
	grep '?' "$2.fsck" | head -5 | sed 's/^/# /'
}

# txns FILE: the transaction count ext3d-recover printed.
txns() { sed -n 's/^transactions \([0-9]*\) .*/\1/p' "$1"; }

# jblock IMAGE N: the fs block holding journal block N.
jblock() { debugfs -R "bmap <8> $2" "$1" 2>/dev/null; }

# zero_block IMAGE BS BLOCK
zero_block() { dd if=/dev/zero of="$1" bs="$2" seek="$3" count=1 conv=notrunc status=none; }

# poke IMAGE OFFSET EXPR: rewrites the 4 bytes at OFFSET, v being their
# big-endian value and l their little-endian value, to EXPR (in the same
# byte order as the variable used).
poke() {
	python3 - "$1" "$2" "$3" <<'EOF'
import struct, sys
path, off, expr = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, 'r+b') as f:
    f.seek(off)
    raw = f.read(4)
    v, = struct.unpack('>I', raw)
    l, = struct.unpack('<I', raw)
    new = eval(expr)
    f.seek(off)
    f.write(struct.pack('>I' if 'v' in expr else '<I', new & 0xffffffff))
EOF
}

# write_workload: the files and transactions of the crash images; prints
# the manifest of what is on the mount when the copy is taken.
write_workload() {
	mkdir -p "$mnt/old/sub" "$mnt/keep" || return 1
	head -c 300000 /dev/urandom >"$mnt/old/big"
	for i in $(seq 40); do echo "old $i" >"$mnt/old/sub/f$i"; done
	head -c 5000 /dev/urandom >"$mnt/keep/a"
	sync
	head -c 100000 /dev/urandom >"$mnt/keep/b"
	sync "$mnt/keep/b" "$mnt/keep"
	rm -rf "$mnt/old"
	sync "$mnt" "$mnt/keep"
	mkdir "$mnt/new"
	for i in $(seq 30); do echo "new $i" >"$mnt/new/g$i"; done
	head -c 70000 /dev/urandom >"$mnt/new/big2"
	ln -s keep/a "$mnt/link"
	sync "$mnt/new/big2" "$mnt/new" "$mnt"
	(cd "$mnt" && find . -type f | sort | while read -r f; do
		echo "${f#.} $(cksum <"$f")"; done)
}

for bs in 1024 4096; do
	[ $bs = 1024 ] && size=64M || size=256M
	live=$T_TMP/live-$bs.img crash=$T_TMP/crash-$bs.img
	mke2fs -q -F -t ext3 -b $bs "$live" $size >/dev/null 2>&1
	t_ok $? "mke2fs -t ext3 -b $bs"
	if [ "$(id -u)" -ne 0 ] || ! mount -o loop -t ext3 "$live" "$mnt" 2>"$T_TMP/mount.err"; then
		why="needs root and a loop mount ($(head -1 "$T_TMP/mount.err" 2>/dev/null))"
		for i in $(seq 25); do t_skip "$why" "kernel-written journal, $bs-byte blocks, check $i"; done
		continue
	fi
	write_workload >"$T_TMP/manifest-$bs"
	t_ok $? "files written on the loop mount, synced and fsynced ($bs)"
	cp "$live" "$crash"
	umount "$mnt"

	dumpe2fs -h "$crash" 2>/dev/null | grep -q '^Filesystem features:.*needs_recovery'
	t_ok $? "the copy taken while mounted has needs_recovery set ($bs)"
	debugfs -R logdump "$crash" >"$crash.log" 2>&1
	ncommit=$(grep -c 'type 2 (commit block)' "$crash.log")
	t_ok "$([ "$ncommit" -ge 3 ]; echo $?)" "logdump shows $ncommit committed transactions ($bs)"
	grep -q 'type 5 (revoke table)' "$crash.log"
	t_ok $? "logdump shows a revoke block ($bs)"
	cp "$crash" "$T_TMP/pristine.img"
	"$REC" -n "$crash" >"$T_TMP/dry.out" 2>&1
	t_is "$(txns "$T_TMP/dry.out")" "$ncommit" "ext3d-recover -n finds as many transactions as logdump ($bs)"
	cmp -s "$crash" "$T_TMP/pristine.img"
	t_ok $? "ext3d-recover -n writes nothing ($bs)"

	oracle_vs_ours "kernel journal, $bs" "$crash"
	t_diag "bytes outside the superblock the replay changed: $(same_blocks "$crash" "$crash.x")"
	grep -q "revoke records [1-9]" "$crash.x.out"
	t_ok $? "ext3d-recover read the revoke records ($bs)"
	"$REC" "$crash.x" >"$T_TMP/again.out" 2>&1
	grep -q "clean: nothing to recover" "$T_TMP/again.out"
	t_ok $? "a second ext3d-recover finds nothing to do ($bs)"

	# Through a running instance: journald-svc replays before inode-svc serves.
	inst=$T_TMP/inst-$bs.img n=t-rec-$bs
	cp "$crash" "$inst"
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$inst" --set BLOCKDEV_ARGS=
	t_ok $? "instance on the crashed $bs-byte-block image ready"
	grep -q "journald-svc.*journal recovered: $ncommit transactions" "$T_TMP/$n.log"
	t_ok $? "journald-svc says it replayed $ncommit transactions ($bs)"
	grep "journal recovered" "$T_TMP/$n.log" | sed 's/^/#   /'
	bad=0
	while read -r path crc len; do
		got=$("$T_EXT3D" --instance $n cat "$path" | cksum)
		[ "$got" = "$crc $len" ] || { bad=$((bad + 1)); echo "# $path: got $got, want $crc $len"; }
	done <"$T_TMP/manifest-$bs"
	t_is "$bad" 0 "ext3d cat reads back every file written before the crash ($(wc -l <"$T_TMP/manifest-$bs") files, $bs)"
	t_is "$("$T_EXT3D" --instance $n cat /link | cksum)" "$(grep '^/keep/a ' "$T_TMP/manifest-$bs" | cut -d' ' -f2-)" \
		"ext3d cat follows the symlink made before the crash ($bs)"
	"$T_EXT3D" --instance $n ls / >"$T_TMP/ls" 2>&1
	! grep -qx old "$T_TMP/ls"
	t_ok $? "the directory deleted before the crash stays deleted ($bs)"
	t_instance_stop $n
	t_is "$(same_blocks "$inst" "$crash.o")" 0 "the instance's image equals e2fsck's replay outside the superblock ($bs)"
	e2fsck -fn "$inst" >"$T_TMP/inst.fsck" 2>&1
	t_ok $? "e2fsck -fn finds nothing on the instance's image ($bs)"

	# A torn last transaction: its commit block zeroed.
	torn=$T_TMP/torn-$bs.img
	cp "$crash" "$torn"
	last=$(sed -n 's/.*type 2 (commit block) at block \([0-9]*\).*/\1/p' "$crash.log" | tail -1)
	zero_block "$torn" $bs "$(jblock "$torn" "$last")"
	oracle_vs_ours "last commit block zeroed, $bs" "$torn"
	t_is "$(txns "$torn.x.out")" $((ncommit - 1)) "the torn transaction is not replayed ($bs)"

	# A bad block in mid-log: the descriptor of the last-but-one transaction.
	mid=$T_TMP/mid-$bs.img
	cp "$crash" "$mid"
	desc=$(sed -n 's/.*type 1 (descriptor block) at block \([0-9]*\).*/\1/p' "$crash.log" | tail -2 | head -1)
	zero_block "$mid" $bs "$(jblock "$mid" "$desc")"
	oracle_vs_ours "descriptor in mid-log zeroed, $bs" "$mid"
	t_is "$(txns "$mid.x.out")" $((ncommit - 2)) "the log ends at the bad block ($bs)"

	# needs_recovery clear with a log still in it: replayed, as e2fsck -y does.
	clr=$T_TMP/clr-$bs.img
	cp "$crash" "$clr"
	poke "$clr" $((1024 + 0x60)) 'l & ~4'
	oracle_vs_ours "needs_recovery clear, log not empty, $bs" "$clr"
done

# Revoked blocks reused for file data: a directory of long names and a
# file with indirect blocks are written and synced (their metadata blocks
# logged), deleted and synced (the blocks revoked), then a file fills the
# filesystem, reusing them for data written straight home. The log still
# holds the old copies, so a replay that ignored the revoke records would
# write them over the new data; tests/tools/revoke-trap.py counts the
# revoked blocks whose home differs from their logged copy.
for bs in 1024 4096; do
	[ $bs = 1024 ] && size=4M || size=16M
	reuse=$T_TMP/reuse-$bs.img
	mke2fs -q -F -t ext3 -b $bs -J size=$((bs / 1024)) "$reuse" $size >/dev/null 2>&1
	if [ "$(id -u)" -ne 0 ] || ! mount -o loop -t ext3 "$reuse" "$mnt" 2>"$T_TMP/mount.err"; then
		why="needs root and a loop mount ($(head -1 "$T_TMP/mount.err" 2>/dev/null))"
		for i in $(seq 7); do t_skip "$why" "revoked blocks reused for data, $bs-byte blocks, check $i"; done
		continue
	fi
	mkdir "$mnt/d"
	for i in $(seq 100); do echo "$i" >"$mnt/d/$(printf 'f%099d' "$i")"; done
	head -c 300000 /dev/urandom >"$mnt/d/big"
	sync "$mnt/d/big" "$mnt/d"
	rm -rf "$mnt/d"
	sync "$mnt"
	head -c $((${size%M} * 1048576)) /dev/urandom >"$mnt/fill" 2>/dev/null
	sync "$mnt/fill" "$mnt"
	cp "$reuse" "$reuse.crash"
	umount "$mnt"
	python3 "$T_TOP/tests/tools/revoke-trap.py" "$reuse.crash" >"$reuse.trap" 2>&1
	trapped=$(sed -n 's/.* trapped \([0-9]*\)$/\1/p' "$reuse.trap")
	t_ok "$([ "${trapped:-0}" -ge 1 ]; echo $?)" \
		"the log holds revoked blocks reused for data ($(head -1 "$reuse.trap"), $bs)"
	oracle_vs_ours "revoked blocks reused for data, $bs" "$reuse.crash"
	skipped=$(sed -n 's/.*revoked blocks skipped \([0-9]*\).*/\1/p' "$reuse.crash.x.out")
	t_ok "$([ "${skipped:-0}" -ge "${trapped:-1}" ]; echo $?)" \
		"ext3d-recover skipped the revoked copies (${skipped:-none} skipped, $trapped trapped, $bs)"
done

# Corrupted journals: random bytes of the journal superblock, the log and
# the superblock changed in copies of a small crashed image; ext3d-recover
# (the sanitizer build's when there is one) must replay or refuse, never
# crash. EXT3D_LONG=1 runs 5000 rounds.
small=$T_TMP/small.img
asan=${EXT3D_ASAN_BUILD:-$T_TOP/build-asan}/journald-svc/ext3d-recover
[ -x "$asan" ] && fuzzrec=$asan || fuzzrec=$REC
mke2fs -q -F -t ext3 -b 1024 -J size=1 "$small" 4M >/dev/null 2>&1
if [ "$(id -u)" -eq 0 ] && mount -o loop -t ext3 "$small" "$mnt" 2>/dev/null; then
	mkdir "$mnt/a" && for i in $(seq 20); do echo $i >"$mnt/a/f$i"; done
	head -c 40000 /dev/urandom >"$mnt/a/big"
	sync "$mnt/a/big" "$mnt/a"
	rm -rf "$mnt/a"; mkdir "$mnt/b"; echo x >"$mnt/b/y"
	sync "$mnt/b/y" "$mnt/b" "$mnt"
	cp "$small" "$small.crash"
	umount "$mnt"
	rounds=300
	[ -n "${EXT3D_LONG:-}" ] && rounds=5000
	python3 - "$fuzzrec" "$small.crash" "$(jblock "$small.crash" 0)" $rounds >"$T_TMP/fuzz.out" 2>&1 <<'PYEOF'
import os, random, subprocess, sys
rec, path, jsb, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
base = open(path, 'rb').read()
env = dict(os.environ, ASAN_OPTIONS='exitcode=99', UBSAN_OPTIONS='exitcode=99:halt_on_error=1')
random.seed(11)
counts = {}
for i in range(rounds):
    b = bytearray(base)
    for _ in range(random.randint(1, 12)):
        blk = random.choice([jsb] * 4 + list(range(jsb + 1, jsb + 40)) + [1, 2])
        off = blk * 1024 + random.choice(list(range(24)) + [0x1c, 0x28, random.randrange(1024)])
        b[off] = random.choice([0, 0xff, random.randrange(256), b[off] ^ 1])
    open(path + '.f', 'wb').write(b)
    p = subprocess.run([rec, path + '.f'], env=env, capture_output=True, text=True, timeout=60)
    counts[p.returncode] = counts.get(p.returncode, 0) + 1
    if p.returncode not in (0, 1):
        print('round %d: exit %d\n%s' % (i, p.returncode, p.stderr[-1500:]))
        sys.exit(1)
print('exit status counts:', counts)
PYEOF
	t_ok $? "$rounds corrupted journals replayed or refused, no crash ($fuzzrec)"
	sed 's/^/# /' "$T_TMP/fuzz.out" | tail -20
else
	t_skip "needs root and a loop mount" "corrupted journals replayed or refused, no crash"
fi

# A journal feature ext3d does not know is refused, by name.
feat=$T_TMP/feat.img
if [ -f "$T_TMP/crash-1024.img" ]; then
	cp "$T_TMP/crash-1024.img" "$feat"
else
	mke2fs -q -F -t ext3 -b 1024 "$feat" 64M >/dev/null 2>&1
fi
poke "$feat" $(($(jblock "$feat" 0) * 1024 + 0x28)) 'v | 0x100'
cp "$feat" "$feat.before"
"$REC" "$feat" >"$T_TMP/feat.out" 2>&1
t_is "$?" 1 "ext3d-recover refuses a journal with an unknown incompat feature"
grep -q "features ext3d cannot replay: FEATURE_I8" "$T_TMP/feat.out"
t_ok $? "the refusal names the feature (FEATURE_I8)"
sed 's/^/#   /' "$T_TMP/feat.out"
cmp -s "$feat" "$feat.before"
t_ok $? "the refused image is left untouched"
poke "$feat" $(($(jblock "$feat" 0) * 1024 + 0x28)) 'v & ~0x100 | 0x4'
"$REC" "$feat" >"$T_TMP/feat.out" 2>&1
grep -q "cannot replay: journal_async_commit" "$T_TMP/feat.out"
t_ok $? "journal_async_commit, unknown to JBD, is refused by name"
t_instance_start t-rec-feat "$T_TOP/compose/ext3d.compose" --set "IMAGE=$feat" --set BLOCKDEV_ARGS= >/dev/null
t_ok "$([ $? -ne 0 ]; echo $?)" "an instance on that image does not start"
grep -q "journald-svc.*journal recovery failed: journal has features ext3d cannot replay: journal_async_commit" \
	"$T_TMP/t-rec-feat.log"
t_ok $? "journald-svc says why, naming the feature"

# Not ext3: extents and 64-bit descriptors change how the journal is found.
mke2fs -q -F -t ext4 "$T_TMP/ext4.img" 64M >/dev/null 2>&1
"$REC" "$T_TMP/ext4.img" >"$T_TMP/ext4.out" 2>&1
t_is "$?" 1 "ext3d-recover refuses an ext4 image"
grep -q "unsupported features: extent" "$T_TMP/ext4.out"
t_ok $? "the refusal names the features ($(head -1 "$T_TMP/ext4.out"))"
t_done
