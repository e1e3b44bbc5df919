#!/usr/bin/env bash
# corruptw.t - writes on damaged images never make the damage worse. For
# each image of the seeded generator (tests/tools/corrupt-gen.py, every
# class on 1 KiB and 4 KiB block bases) that is served, a write workload
# runs (truncate, rm, put, mkdir, mv, ln, rm -r, with syncs so that freed
# blocks are handed out again), and e2fsck -fn's complaints after are never
# more than before; no service dies. Images alternate between the 1 KiB
# base, with mke2fs's errors=continue, and the 4 KiB one, given
# errors=remount-ro. Then images of seeds that such writes damaged
# before (SEED:INDEX), and the cases
# found before: a truncate or rm of a file whose indirect block points at
# itself fails with EUCLEAN and changes nothing (size, name, blocks, orphan
# list), the next file written gets none of its blocks; a descriptor's
# wrong free-inode count stays out of the superblock; the error lands in
# the superblock as ext4 records it (dumpe2fs), and errors=remount-ro gives
# EROFS to every later write, said by ext3d status and the log, and
# errors=panic stops inode-svc, whose group the supervisor restarts.
# EXT3D_CORRUPTW_COUNT images (15: each class once; 120 with EXT3D_LONG=1),
# EXT3D_CORRUPT_SEED to replay a run.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/corrupt.sh"

gen=$T_TOP/tests/tools/corrupt-gen.py
count=${EXT3D_CORRUPTW_COUNT:-15}
seed=${EXT3D_CORRUPT_SEED:-20261206}
if [ -n "${EXT3D_LONG:-}" ]; then
	count=${EXT3D_CORRUPTW_COUNT:-120}
	seed=${EXT3D_CORRUPT_SEED:-$(date +%s)}
fi
command -v python3 >/dev/null || t_skip_all "needs python3"
command -v e2fsck >/dev/null || export PATH=/usr/sbin:/sbin:$PATH
command -v e2fsck >/dev/null || t_skip_all "needs e2fsprogs"
t_diag "seed $seed, $count images (EXT3D_CORRUPT_SEED=$seed replays them)"
t_corrupt_bases
head -c 30000 /dev/urandom >"$T_TMP/new"

# complaints IMAGE: how many things e2fsck -fn finds wrong: each line it
# prints that is not a pass header, the summary or a question alone on its
# line ("Fix? no", "Connect to /lost+found? no": it belongs to the problem
# above it, so that "Unattached inode 16" counts as one, as "Inode 16 ref
# count is 2, should be 1.  Fix? no" does), each block or inode of a
# bitmap difference.
complaints() {
	e2fsck -fn "$1" 2>&1 | python3 -c '
import re, sys
n = 0
for l in sys.stdin:
    l = l.strip()
    if not l or l.startswith(("e2fsck ", "Pass ", "Running additional passes", "(There are")) \
            or "files (" in l or "WARNING: Filesystem still has errors" in l \
            or re.fullmatch(r"[^0-9]*\? no", l):
        continue
    if "differences:" not in l:
        n += 1
        continue
    for t in l.split(":", 1)[1].split():
        r = re.fullmatch(r"[+-]\((\d+)--(\d+)\)", t)
        n += int(r.group(2)) - int(r.group(1)) + 1 if r else 1
print(n)'
}

x() { timeout 20 "$T_EXT3D" --instance "$name" "$@" >/dev/null 2>>"$T_TMP/err"; }

# serve IMAGE NAME: starts an instance; state is served or refused.
serve() {
	name=$2
	: >"$T_TMP/$name.log"
	"$T_SUPERVISOR" --compose "$T_TOP/compose/ext3d.compose" --instance "$name" \
		--set "BUILD=$EXT3D_BUILD" --set "IMAGE=$1" --set BLOCKDEV_ARGS= \
		</dev/null >>"$T_TMP/$name.log" 2>&1 &
	pid=$!
	state=refused
	for _ in $(seq 400); do
		kill -0 $pid 2>/dev/null || break
		# The supervisor's own state, not a service's ("[^}]*").
		st=$(t_status "$name" 2>/dev/null | grep -o '"supervisor":{[^}]*"state":"[a-z]*"')
		case $st in
		*'"state":"ready"') state=served; break ;;
		*'"state":"failed"') break ;;
		esac
		sleep 0.05
	done
}

# stop: shuts the instance down and waits for its supervisor.
stop() {
	"$T_EXT3D" --instance "$name" shutdown >/dev/null 2>&1
	for _ in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
	kill -0 $pid 2>/dev/null && { t_diag "supervisor of $name did not stop: killed"; kill -9 $pid; }
	wait $pid 2>/dev/null
}

# kx CMD ARGS: the workload's command on the kernel's mount at $kmnt.
kx() {
	local cmd=$1 a args=()
	shift
	for a; do
		case $a in
		"$T_TMP"/*) args+=("$a") ;;
		/*) args+=("$kmnt$a") ;;
		*) args+=("$a") ;;
		esac
	done
	case $cmd in
	put) cmd=cp ;;
	sync) args=(-f "$kmnt") ;;
	esac
	timeout 20 "$cmd" "${args[@]}" >/dev/null 2>&1
}

# workload [RUN]: the writes, through RUN (x: ext3d; kx: the kernel).
workload() {
	local run=${1:-x}
	$run truncate -s 5000 /dind
	$run truncate -s 0 /ind
	$run rm /small /a/hard /h/entry-007
	$run put "$T_TMP/new" /new1
	$run mkdir /nd /a/b/nd /h/nd
	$run mv /sparse /a/moved
	$run mv /fast /h/entry-100
	$run ln -s small /nl
	$run ln /dind /a/b/dl
	$run sync
	$run put "$T_TMP/new" /new2
	$run rm -r /a
	$run truncate -s 0 /dind
	$run put "$T_TMP/new" /h/new3
	$run sync
}

# kernel_complaints IMAGE: e2fsck's complaints after the same workload on
# the kernel's ext3, on a loop mount of a copy of IMAGE (unchanged if the
# kernel refuses to mount it); fails where the kernel cannot be asked
# (not root, no loop device).
kmnt=$T_TMP/kmnt
kernel_complaints() {
	[ "$(id -u)" -eq 0 ] && [ -n "$kernel" ] || return 1
	cp "$1" "$T_TMP/k.img"
	mkdir -p "$kmnt"
	if timeout 20 mount -o loop -t ext3 "$T_TMP/k.img" "$kmnt" 2>/dev/null; then
		workload kx
		umount "$kmnt" 2>/dev/null || { sleep 0.5; umount "$kmnt"; } || umount -l "$kmnt"
	fi
	complaints "$T_TMP/k.img"
}
kernel=
mke2fs -q -F -t ext3 "$T_TMP/probe.img" 4M >/dev/null 2>&1 && mkdir -p "$kmnt" &&
	mount -o loop -t ext3 "$T_TMP/probe.img" "$kmnt" 2>/dev/null && umount "$kmnt" && kernel=yes

# check SEED INDEX: the generator's image INDEX of SEED, served and
# written if ext3d agrees, is no more damaged after.
check() {
	local seed=$1 i=$2 b=1k
	[ $((i % 2)) -eq 1 ] && b=4k
	img=$T_TMP/w.img
	rm -f "$img"
	desc=$(python3 "$gen" make "$T_TMP/base-$b.img" "$seed" "$i" "$img" 2>&1)
	[ $b = 4k ] && [ -s "$img" ] && tune2fs -e remount-ro "$img" >/dev/null 2>&1
	if [ ! -s "$img" ] || ! before=$(complaints "$img"); then
		t_skip "no image to check" "image $i ($b): $desc"
		return
	fi
	: >"$T_TMP/err"
	cp "$img" "$T_TMP/w0.img"
	serve "$img" w$i
	if [ $state = served ]; then
		workload
		stop
	else
		stop
	fi
	after=$(complaints "$img")
	why=
	# Where the damage itself makes writes harm (a file's indirect block
	# that is a journal block, overwritten by every commit), the kernel's
	# ext3 given the same writes is the measure.
	if [ "$after" -gt "$before" ] && kafter=$(kernel_complaints "$T_TMP/w0.img") &&
		[ "$after" -le "$kafter" ]; then
		t_diag "image $i: $before e2fsck complaints before, $after after; the kernel's ext3 left $kafter"
	elif [ "$after" -gt "$before" ]; then
		why="e2fsck complaints $before before, $after after (the kernel's ext3: ${kafter:-not asked})"
	fi
	! grep -Eq 'signal|dumped core|sanitizer|runtime error' "$T_TMP/w$i.log" "$T_TMP/err" ||
		why="$why; a service died: $(grep -Eh 'signal|core|sanitizer|runtime error' "$T_TMP/w$i.log" "$T_TMP/err" | head -2)"
	t_is "${why#; }" "" "image $i ($b, $state): $desc"
	[ -z "$why" ] || { e2fsck -fn "$img" 2>&1 | tail -15 | sed 's/^/#   /'; grep -E ' (error|warning): ' "$T_TMP/w$i.log" | head -5 | sed 's/^/#   /'; }
}

for i in $(seq 0 $((count - 1))); do
	check "$seed" "$i"
done

# The cases found before, as SEED:INDEX of the generator: group 0's inode
# bitmap scribbled, its padding with it (inodes in use were handed out);
# its block bitmap scribbled (blocks in use were handed out, and a
# truncate stopped half done at a block it says is free); group 0's
# descriptor naming a free block as its inode bitmap (deletes went half
# way, to the inode's free that the zeroed bitmap refused); /a/hard naming
# the root (rm -r /a went on through it and emptied the root: a walk now
# gets ELOOP there); an indexed directory's link count of 1 (mkdir made it
# 2, which e2fsck rejects); the root's i_size 0 (served as an empty root:
# now refused, as the kernel does); random bytes that make /dind's
# indirect block a journal block (refusing the truncate left it mapped, for
# every commit to scribble: its pointers to blocks that are not data
# blocks are now cut); /h's i_size 0 (a mkdir laid a new block over its
# entries: now EUCLEAN); group 0's directory count 0 (alloc-svc refused
# the free of /a's inode after inode-svc had deleted it, leaving its bit
# set: the count now stays 0 and the inode goes free); /a's i_size 0 (rm -r
# found it empty and removed it from under /a/b: too small for "." and
# "..", it is now EUCLEAN); a descriptor naming the last block as group
# 0's block bitmap (truncates split e2fsck's ranges of blocks in use that
# the bitmap shows free: more ranges, fewer blocks, so blocks are counted,
# not ranges).
for c in 1796530016:47 1796530016:92 1796530016:107 1796530016:32 1796530016:76 \
	1796530016:106 1796533628:54 1796533628:110 424242:4 424242:58 424242:64 \
	1796542304:46 1796542304:64 31337:1; do
	check "${c%:*}" "${c#*:}"
done

# The 1 KiB base: /ind's indirect block points
# at itself in every slot.
blk=$(debugfs -R 'stat /ind' "$base1k" 2>/dev/null | sed -n 's/.*(IND):\([0-9]*\).*/\1/p')
ino=$(debugfs -R 'stat /ind' "$base1k" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p')
selfptr() { # selfptr IMAGE ERRORS
	cp "$base1k" "$1"
	python3 -c 'import struct, sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2]) * 1024); f.write(struct.pack("<I", int(sys.argv[2])) * 256)' "$1" "$blk"
	tune2fs -e "$2" "$1" >/dev/null
}
img=$T_TMP/self.img
selfptr "$img" continue
before=$(complaints "$img")
serve "$img" self
: >"$T_TMP/err"
out=$(timeout 20 "$T_EXT3D" --instance self truncate -s 0 /ind 2>&1)
t_is "$out" "ext3d: /ind: Structure needs cleaning" "truncate of a file whose indirect block points at itself: EUCLEAN"
size=$(timeout 20 "$T_EXT3D" --instance self stat /ind 2>/dev/null | sed -n 's/.*Size: \([0-9]*\).*/\1/p')
t_is "$size" 20000 "the failed truncate kept the size"
# Every free block goes to the next file once the truncate has committed
# (it is larger than the free space): a block the truncate freed would be
# among them.
x sync
free=$(dumpe2fs -h "$base1k" 2>/dev/null | sed -n 's/^Free blocks: *//p')
head -c $(((free + 64) << 10)) /dev/urandom >"$T_TMP/big"
out=$(timeout 60 "$T_EXT3D" --instance self put "$T_TMP/big" /big 2>&1)
t_is "$out" "ext3d: /big: No space left on device" \
	"with errors=continue, the next file is written until no block is free"
out=$(timeout 20 "$T_EXT3D" --instance self rm /ind 2>&1)
t_is "$out" "ext3d: /ind: Structure needs cleaning" "rm of it: EUCLEAN"
x stat /ind
t_ok $? "the failed rm kept the name"
t_is "$(t_field self filesystem.read_only):$(t_field self filesystem.errors)" "False:2" \
	"status: two errors recorded, not read-only"
stop
after=$(complaints "$img")
t_ok $((after > before)) "e2fsck finds no more than before ($before complaints, $after after)"
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
! grep -q 'shared with [1-9]' "$T_TMP/fsck"
t_ok $? "no block of /ind went to the new file"
grep -q 'shared with [1-9]' "$T_TMP/fsck" && grep '^Multiply-claimed' "$T_TMP/fsck" | cut -c1-100 | sed 's/^/# /'
dumpe2fs -h "$img" >"$T_TMP/dump" 2>/dev/null
t_ok $(grep -q '^First orphan inode' "$T_TMP/dump"; echo $((! $?))) "the orphan list is empty"
grep -q '^Filesystem state: *clean with errors' "$T_TMP/dump" &&
	grep -q '^FS Error count: *2$' "$T_TMP/dump" &&
	grep -q "^First error inode #: *$ino\$" "$T_TMP/dump" &&
	grep -q '^First error function: *ino_h_setattr$' "$T_TMP/dump" &&
	grep -q '^Last error function: *ino_h_unlink$' "$T_TMP/dump" &&
	grep -q '^Last error err: *EFSCORRUPTED$' "$T_TMP/dump"
ok=$?
t_ok $ok "the superblock records the errors as ext4 does (dumpe2fs)"
[ $ok -eq 0 ] || grep -i 'error' "$T_TMP/dump" | sed 's/^/#   /'

# errors=remount-ro: after the first error every write gets EROFS.
selfptr "$img" remount-ro
serve "$img" ro
name=ro
x truncate -s 0 /ind
out=$(timeout 20 "$T_EXT3D" --instance ro put "$T_TMP/new" /new 2>&1)
t_is "$out" "ext3d: /new: Read-only file system" "with errors=remount-ro, the next write gets EROFS"
out=$(timeout 20 "$T_EXT3D" --instance ro mkdir /d 2>&1)
t_is "$out" "ext3d: /d: Read-only file system" "and the one after"
t_is "$(t_field ro filesystem.read_only)" True "status --json says read-only"
"$T_EXT3D" --instance ro status | grep -q 'READ-ONLY (errors=remount-ro)'
t_ok $? "status says why"
grep -q 'inode-svc\[[0-9]*\] error: setattr ino=[0-9]* met a corrupt structure: remounting read-only' "$T_TMP/ro.log"
t_ok $? "the log says why"
stop
grep -q '^FS Error count: *1$' <(dumpe2fs -h "$img" 2>/dev/null)
t_ok $? "the error is in the superblock"

# errors=panic: inode-svc stops at the first error, with the error
# recorded; the supervisor restarts the group, as a panicked machine
# reboots.
selfptr "$img" panic
serve "$img" pn
name=pn
x truncate -s 0 /ind
t_instance_wait_ready pn >/dev/null
t_ok $? "with errors=panic, the instance is back after the group restart"
grep -q 'inode-svc\[[0-9]*\] error: setattr ino=[0-9]* met a corrupt structure: panic (errors=panic)' "$T_TMP/pn.log"
t_ok $? "the log says inode-svc panicked"
t_ok $(($(t_field pn services.inode-svc.restarts) < 1)) "inode-svc was restarted"
stop
grep -q '^FS Error count: *1$' <(dumpe2fs -h "$img" 2>/dev/null)
t_ok $? "the error is in the superblock"

# A descriptor's free-inode count that its bitmap contradicts.
img=$T_TMP/gd.img
cp "$base1k" "$img"
python3 -c 'import struct, sys
f = open(sys.argv[1], "r+b"); f.seek(2048 + 14); f.write(struct.pack("<H", 1))' "$img"
before=$(complaints "$img")
sbfree=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Free inodes: *//p')
serve "$img" gd
name=gd
x mkdir /d
t_ok $? "mkdir on it"
stop
t_is "$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Free inodes: *//p')" $((sbfree - 1)) \
	"the superblock counts the free inodes of the bitmap, not of the descriptor"
after=$(complaints "$img")
t_ok $((after > before)) "e2fsck finds no more than before ($before complaints, $after after)"
t_done
