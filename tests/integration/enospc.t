#!/bin/sh
# enospc.t - running out of space and out of inodes on a small image
# (4 MiB, 1 KiB blocks, 64 inodes, no reserved blocks), through the CLI:
# a put bigger than the free space fails with "No space left on device"
# and leaves a consistent image (e2fsck -fn) with next to no free block;
# small puts and mkdir fail the same way while empty files still fit;
# freeing the big file gives its blocks back and writes work again; empty
# files until the inodes run out fail with ENOSPC at zero free inodes;
# after removing some, creates work again. Then several clients fill a
# fresh 16 MiB image at once (x3-pwriters fill): each one's failing write
# is ENOSPC, never EIO, and its earlier files read back, before and after a
# restart. e2fsck -fn after each phase;
# free counts are read from the superblock after each shutdown (exact
# there; statfs reads the fuzzy counters, approximate by design).
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

xt=$EXT3D_BUILD/tests/tools/x3-tree
img=$T_TMP/img n=t-enospc
export EXT3D_INSTANCE=$n
mke2fs -q -F -t ext3 -b 1024 -N 64 -m 0 "$img" 4M >/dev/null 2>&1
t_ok $? "mke2fs -t ext3 -b 1024 -N 64 -m 0, 4 MiB"
up() { t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= >/dev/null; }
down_fsck() { # down_fsck WHAT
	t_instance_stop $n
	e2fsck -fn "$img" >"$T_TMP/fsck.out" 2>&1
	t_ok $? "e2fsck -fn clean $1"
	[ -n "$(tail -c 1 "$T_TMP/fsck.out")" ] && sed 's/^/#   /' "$T_TMP/fsck.out" | head -20
}
sf() { "$xt" statfs | awk -v k="$1" '$1 == k {print $2}'; }
de() { dumpe2fs -h "$img" 2>/dev/null | sed -n "s/^$1: *//p"; }
up
t_ok $? "instance ready"

head -c 8000000 /dev/urandom >"$T_TMP/big"
head -c 20000 /dev/urandom >"$T_TMP/small"
"$T_EXT3D" put "$T_TMP/big" /big >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(cat "$T_TMP/err")" "1:ext3d: /big: No space left on device" "put of 8 MB into 4 MiB: ENOSPC"
size=$("$T_EXT3D" stat /big | sed -n 's/.*Size: \([0-9]*\).*/\1/p')
t_ok "$([ "${size:-0}" -gt 1000000 ]; echo $?)" "the file keeps what was written (${size:-?} bytes)"
"$T_EXT3D" cat /big | cmp -s -n "${size:-0}" - "$T_TMP/big"
t_ok $? "... and those bytes are the file's first"
"$T_EXT3D" put "$T_TMP/small" /small >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(cat "$T_TMP/err")" "1:ext3d: /small: No space left on device" "a 20000-byte put: ENOSPC"
"$T_EXT3D" mkdir /dir >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(cat "$T_TMP/err")" "1:ext3d: /dir: No space left on device" "mkdir: ENOSPC"
"$T_EXT3D" truncate -s 0 /empty >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(cat "$T_TMP/err")" "0:" "an empty file still fits"
down_fsck "with the disk full"
free=$(de 'Free blocks')
t_ok "$([ "$free" -lt 16 ]; echo $?)" "next to no free block left ($free)"

up
t_ok $? "instance ready again"
"$T_EXT3D" rm /big /small 2>/dev/null
"$T_EXT3D" stat /big >/dev/null 2>&1
t_is $? 1 "the big file is gone"
free2=$(sf bfree)
t_ok "$([ "$free2" -gt 2000 ]; echo $?)" "its blocks are free again ($free2)"
"$T_EXT3D" put "$T_TMP/small" /small >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(cat "$T_TMP/err")" "0:" "put works again"
"$T_EXT3D" cat /small | cmp -s - "$T_TMP/small"
t_ok $? "... and reads back"
"$T_EXT3D" mkdir /dir
t_ok $? "mkdir works again"

# inodes
ffree=$(sf ffree)
made=0 err=
for i in $(seq 100); do
	if ! "$T_EXT3D" truncate -s 0 /dir/i$i >"$T_TMP/out" 2>"$T_TMP/err"; then
		err=$(cat "$T_TMP/err")
		break
	fi
	made=$((made + 1))
done
t_is "$made" "$ffree" "as many empty files as there were free inodes ($ffree)"
t_is "$err" "ext3d: /dir/i$((made + 1)): No space left on device" "the next create: ENOSPC"
"$T_EXT3D" mkdir /dir2 >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(cat "$T_TMP/err")" "1:ext3d: /dir2: No space left on device" "mkdir without inodes: ENOSPC"
"$T_EXT3D" ln -s x /sl >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(cat "$T_TMP/err")" "1:ext3d: /sl: No space left on device" "symlink without inodes: ENOSPC"
"$T_EXT3D" ln /small /small2 >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(cat "$T_TMP/err")" "0:" "a hard link needs no inode"
down_fsck "with no free inode"
t_is "$(de 'Free inodes')" 0 "zero free inodes"

up
t_ok $? "instance ready once more"
"$T_EXT3D" rm /dir/i1 /dir/i2 /dir/i3
t_ok $? "three empty files removed"
"$T_EXT3D" truncate -s 0 /dir/again1 /dir/again2 /dir/again3
t_ok $? "three creates work again"
"$T_EXT3D" truncate -s 0 /dir/again4 >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(cat "$T_TMP/err")" "1:ext3d: /dir/again4: No space left on device" "a fourth: ENOSPC again"
"$T_EXT3D" rm -r /dir
t_ok $? "rm -r of the full directory"
down_fsck "after freeing everything"
# In use: the 11 reserved inodes, /small (with /small2) and /empty.
t_is "$(de 'Free inodes')" "$(($(de 'Inode count') - 13))" "every inode the directory held is free again, and its own"

# Several clients filling a fresh image at once: the write that finds no
# free block fails with ENOSPC, never EIO, and what each wrote before reads
# back, at once and after a restart.
pw=$EXT3D_BUILD/tests/tools/x3-pwriters nfill=4
mke2fs -q -F -t ext3 -b 1024 -N 512 -m 0 "$img" 16M >/dev/null 2>&1
t_ok $? "mke2fs -t ext3 -b 1024 -N 512 -m 0, 16 MiB"
up
t_ok $? "instance ready for $nfill writers"
fill() { "$pw" --instance $n fill /fill$1 $1 1000; }
t_clients $nfill "$T_TMP/fill" fill
t_is $? 0 "$nfill clients fill the image at once: each stops at ENOSPC, its files whole"
down_fsck "after $nfill writers filled the image"
up
t_ok $? "instance ready after the fill"
bad=0
for id in $(seq $nfill); do
	made=$(sed -n 's/.* wrote \([0-9]*\) files, then ENOSPC$/\1/p' "$T_TMP/fill.$id")
	"$pw" --instance $n filled /fill$id $id "${made:-0}" >>"$T_TMP/filled" 2>&1 ||
		bad=$((bad + 1))
done
t_is $bad 0 "after a restart every file written before the ENOSPC reads back"
sed 's/^/#   /' "$T_TMP/filled" | head -10
t_instance_stop $n
t_done
