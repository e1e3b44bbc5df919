#!/bin/sh
# alloc.t - alloc-svc in a real instance, driven by tests/tools/alloc-client
# (a compose service after it, with journal handles of its own as
# inode-svc has): single requests and goal placement, a full goal group,
# inode placement and Orlov's spreading of directories, blocks freed but
# not committed never handed out, two threads allocating in different
# groups at once, bad requests refused with EUCLEAN, ENOSPC with and
# without the reserved blocks, exact counters after each commit, and
# alloc-svc SIGKILLed while idle and restarted alone (the group is not).
# Then compose down: e2fsck -fn finds nothing, and dumpe2fs shows the free
# counts the counters ended with, which are the image's first ones (every
# allocation was freed again). With --locking fine and big on 1 KiB
# blocks, and fine on 4 KiB blocks.
# Then an image whose block bitmap says a system block is free: alloc-svc
# logs the corruption and never hands that block out. Last, an image whose
# superblock counts are stale gets exact ones at compose down.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

PATH=$PATH:/sbin:/usr/sbin
export LC_ALL=C
CLIENT=$EXT3D_BUILD/tests/tools/alloc-client
for tool in mke2fs e2fsck dumpe2fs python3; do
	command -v $tool >/dev/null 2>&1 || t_skip_all "needs $tool"
done
[ -x "$CLIENT" ] || t_skip_all "no $CLIENT (build first)"
seed=${EXT3D_SEED:-$(date +%s)}
t_diag "seed $seed"

# sb_count IMAGE FIELD: "Free blocks" or "Free inodes" from dumpe2fs -h.
sb_count() { dumpe2fs -h "$1" 2>/dev/null | awk -F: -v f="$2" '$1 == f { gsub(/ /, "", $2); print $2 }'; }

for run in fine:1024 big:1024 fine:4096; do
	mode=${run%:*} bs=${run#*:}
	lk=$mode/$bs
	d=$T_TMP/$mode$bs
	mkdir -p "$d"
	img=$d/fs.img
	mke2fs -q -F -t ext3 -b $bs -g 1024 -N 1024 "$img" $((16 * bs / 1024))M >/dev/null 2>&1
	t_ok $? "$lk: mke2fs: 16 groups of 1024 blocks of $bs bytes"
	b0=$(sb_count "$img" "Free blocks")
	i0=$(sb_count "$img" "Free inodes")
	{
		cat "$T_TOP/compose/ext3d.compose"
		echo "service alloc-client never \${BUILD}/tests/tools/alloc-client --out=$d/out --seed=$seed"
	} >"$d/compose"
	n=al$$$mode$bs
	t_instance_start $n "$d/compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= --locking $mode
	t_ok $? "$lk: instance with alloc-client ready"
	for _ in $(seq 1200); do
		grep -q '^DONE' "$d/out" 2>/dev/null && break
		sleep 0.1
	done
	grep -q '^DONE' "$d/out" 2>/dev/null
	t_ok $? "$lk: alloc-client ran every case"
	t_relay "$lk" <"$d/out"
	t_is "$(t_field $n services.alloc-svc.restarts)" 1 "$lk: alloc-svc restarted once, alone"
	t_is "$(t_field $n generation)" 0 "$lk: the group was not restarted"
	grep -E 'alloc-svc\[[0-9]+\] (error|warning)' "$T_TMP/$n.log" | grep -v 'refusing a request' |
		head -3 | sed 's/^/# /'
	t_is "$(grep -cE 'alloc-svc\[[0-9]+\] error' "$T_TMP/$n.log")" 0 "$lk: alloc-svc logged no error"
	t_instance_stop $n
	counts=$(sed -n 's/^COUNTS //p' "$d/out")
	e2fsck -fn "$img" >"$d/fsck" 2>&1
	st=$?
	t_is $st 0 "$lk: e2fsck -fn finds nothing after compose down"
	[ $st -eq 0 ] || sed 's/^/# /' "$d/fsck" | head -20
	t_is "free_blocks=$(sb_count "$img" "Free blocks") free_inodes=$(sb_count "$img" "Free inodes")" \
		"$counts" "$lk: the superblock's free counts are the counters' exact sums"
	t_is "$counts" "free_blocks=$b0 free_inodes=$i0" "$lk: which are the image's first ones"
done

# A corrupt block bitmap: group 2's first inode table block marked free.
# alloc-svc must log it, never hand the block out, refuse to free it, and
# leave the image no worse: e2fsck -fn finds what it found before.
for tool in debugfs; do
	command -v $tool >/dev/null 2>&1 || t_skip_all "needs $tool"
done
d=$T_TMP/corrupt
mkdir -p "$d"
img=$d/fs.img
mke2fs -q -F -t ext3 -b 1024 -g 1024 -N 1024 "$img" 16M >/dev/null 2>&1
itab=$(dumpe2fs "$img" 2>/dev/null | awk '/^Group 2:/ { g = 1 } g && /Inode table at/ { split($4, r, "-"); print r[1]; exit }')
debugfs -w -R "freeb $itab" "$img" >/dev/null 2>&1
e2fsck -fn "$img" 2>&1 | grep -v '^e2fsck\|^Pass\|files' >"$d/fsck.before"
grep -q "+$itab" "$d/fsck.before"
t_ok $? "corrupt: group 2's inode table block $itab is free in its bitmap"
{
	cat "$T_TOP/compose/ext3d.compose"
	echo "service alloc-client never \${BUILD}/tests/tools/alloc-client --out=$d/out --corrupt=$itab"
} >"$d/compose"
n=al$$c
t_instance_start $n "$d/compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "corrupt: instance with alloc-client ready"
for _ in $(seq 300); do
	grep -q '^DONE' "$d/out" 2>/dev/null && break
	sleep 0.1
done
t_relay corrupt <"$d/out"
grep -q "alloc-svc\[[0-9]*\] error: group 2 is corrupt" "$T_TMP/$n.log"
t_ok $? "corrupt: alloc-svc logged the corrupt group"
grep 'alloc-svc.*corrupt\|refusing' "$T_TMP/$n.log" | head -2 | sed 's/^.*svc\[[0-9]*\] /#   /'
t_instance_stop $n
e2fsck -fn "$img" 2>&1 | grep -v '^e2fsck\|^Pass\|files' >"$d/fsck.after"
cmp -s "$d/fsck.before" "$d/fsck.after"
t_ok $? "corrupt: e2fsck -fn finds what it found before, nothing more"
diff "$d/fsck.before" "$d/fsck.after" | head -10 | sed 's/^/# /'

# A superblock whose free counts are stale (as an unclean kernel leaves
# them): an instance that allocates nothing still leaves the exact sums at
# compose down.
d=$T_TMP/stale
mkdir -p "$d"
img=$d/fs.img
mke2fs -q -F -t ext3 -b 1024 -g 1024 -N 1024 "$img" 16M >/dev/null 2>&1
b0=$(sb_count "$img" "Free blocks")
i0=$(sb_count "$img" "Free inodes")
debugfs -w -R "ssv free_blocks_count 1234" "$img" >/dev/null 2>&1
debugfs -w -R "ssv free_inodes_count 56" "$img" >/dev/null 2>&1
t_is "$(sb_count "$img" "Free blocks") $(sb_count "$img" "Free inodes")" "1234 56" \
	"stale: the superblock says 1234 free blocks and 56 free inodes"
n=al$$s
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "stale: instance ready"
t_instance_stop $n
t_is "$(sb_count "$img" "Free blocks") $(sb_count "$img" "Free inodes")" "$b0 $i0" \
	"stale: compose down leaves the descriptors' sums ($b0, $i0)"
e2fsck -fn "$img" >"$d/fsck" 2>&1
t_is $? 0 "stale: e2fsck -fn finds nothing"
grep 'superblock' "$T_TMP/$n.log" | grep 'free' | sed 's/^.*svc\[[0-9]*\] /#   /'

t_done
