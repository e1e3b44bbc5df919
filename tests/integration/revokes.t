#!/bin/sh
# revokes.t - one transaction with more revoke records than the journal
# keeps: data=journal revokes every data block it frees, so removing 48
# files of 2 MiB in 1 KiB blocks within one commit interval revokes 98304
# blocks, more than the revoke records of two transactions, in a
# transaction far from full of credits. A running transaction full of
# revokes must be committed, as one full of credits is, and every remove
# succeed; e2fsck -fn then finds the image clean and the blocks free.
# data=ordered (which revokes only metadata) is run alike.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

img=$T_TMP/img n=t-revokes nfiles=48
used() { dumpe2fs -h "$img" 2>/dev/null | awk -F: '/^Block count/ {n = $2} /^Free blocks/ {f = $2} END {print n - f}'; }
head -c 2M /dev/urandom >"$T_TMP/f"
for data in journal ordered; do
	mke2fs -q -F -t ext3 -b 1024 "$img" 256M >/dev/null 2>&1
	before=$(used)
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
		--set "DATA=$data" --set COMMIT_MS=60000 >/dev/null
	t_ok $? "instance ready (data=$data)"
	bad=0
	for i in $(seq $nfiles); do
		"$T_EXT3D" --instance $n put "$T_TMP/f" /f$i >/dev/null 2>&1 || bad=$((bad + 1))
	done
	"$T_EXT3D" --instance $n sync
	t_is $bad 0 "$nfiles files of 2 MiB written (data=$data)"
	set --
	for i in $(seq $nfiles); do set -- "$@" /f$i; done
	t_run "all removed at once: $((nfiles * 2048)) data blocks freed (data=$data)" \
		"$T_EXT3D" --instance $n rm "$@"
	t_diag "revoke records: $(t_field $n journal.revokes), commits: $(t_field $n journal.commits)"
	t_instance_stop $n
	e2fsck -fn "$img" >"$T_TMP/fsck.out" 2>&1
	t_ok $? "e2fsck -fn clean (data=$data)"
	after=$(used)
	t_ok $((after - before > 8)) "the files' blocks are free again ($before blocks in use before, $after after; data=$data)"
done
t_done
