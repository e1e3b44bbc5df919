#!/bin/sh
# readdirsplit.t - readdir of an indexed directory while other writers
# split its leaves: through the mount, three threads make thousands of
# names in one directory of a 1 KiB-block image (a leaf splits every few
# dozen names, moving half a leaf to a new block at the directory's end)
# while another lists it again and again; each of the names made before
# must be listed exactly once in every listing. inode-svc lists an
# indexed directory in hash order (as ext3_dx_readdir does), where a split
# moves no entry; listing by byte offset met the moved entries twice (156
# of 200 listings in a run of this workload). Then two listings of the
# quiet directory are equal, e2fsck -fn is clean, and the kernel (as
# root) lists the same names. EXT3D_LONG=1 lists more and longer.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/fusemnt.sh"

t_need_root "an instance's sandboxed services and a FUSE mount"
why=$(t_fuse_missing)
[ -z "$why" ] || t_skip_all "$why"
stable=3000 lists=40 per=4000
[ -n "${EXT3D_LONG:-}" ] && stable=5000 lists=300 per=20000
img=$T_TMP/rd.img mnt=$T_TMP/mnt n=t-rdsplit
mke2fs -q -F -t ext3 -b 1024 -N 200000 "$img" 512M >/dev/null 2>&1
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= &&
	t_fuse_mount $n "$mnt" && mkdir "$mnt/d"
t_ok $? "instance up, mounted, a directory made"
python3 "$T_TOP/tests/data/readdir-splits.py" "$mnt/d" $stable $lists 3 $per >"$T_TMP/out" 2>&1
t_check $? "every listing under leaf splits lists each of $stable names once ($(tail -1 "$T_TMP/out"))" "$T_TMP/out"
ls -f "$mnt/d" >"$T_TMP/l1" && ls -f "$mnt/d" >"$T_TMP/l2" && cmp -s "$T_TMP/l1" "$T_TMP/l2"
t_ok $? "two listings of the quiet directory are equal ($(wc -l <"$T_TMP/l1") names)"
sort "$T_TMP/l1" | uniq -d >"$T_TMP/dups"
t_ok $([ ! -s "$T_TMP/dups" ]; echo $?) "no name listed twice"
t_umount "$mnt"
t_instance_stop $n
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
t_check $? "e2fsck -fn clean" "$T_TMP/fsck"
if t_kmount "$img" "$T_TMP/k" 2>/dev/null; then
	ls -f "$T_TMP/k/d" | sort >"$T_TMP/kl"
	sort "$T_TMP/l1" >"$T_TMP/el"
	cmp -s "$T_TMP/kl" "$T_TMP/el"
	t_ok $? "the kernel lists the same names"
	t_umount "$T_TMP/k"
else
	t_skip "no kernel loop mount here" "the kernel lists the same names"
fi
t_done
