#!/bin/sh
# fsx.t - tests/tools/x3-fsx (read, write, truncate, mmap read and write,
# punch hole, copy_file_range, fsync, reopen on one file, checked against
# a model after every step) on a kernel loop mount, as a check of the tool,
# then on ext3d-fuse mounts at 1 KiB and 4 KiB blocks, where punch hole and
# copy_file_range must work (--strict). e2fsck -fn clean afterwards.
# Default: 2000 steps per run; EXT3D_LONG=1: 20000 steps and a 2 MiB file.
# EXT3D_SEED=N sets the seed; EXT3D_FUSE_ARGS adds ext3d-fuse options (e.g.
# "-o writeback_cache").
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/fusemnt.sh"

t_need_root "kernel loop mounts"
t_need_kmount
fsx=$EXT3D_BUILD/tests/tools/x3-fsx
steps=2000 maxlen=262144
[ -n "${EXT3D_LONG:-}" ] && steps=20000 maxlen=2097152
seed=${EXT3D_SEED:-$(date +%s)}
why=$(t_fuse_missing)
t_diag "seed $seed, $steps steps, files up to $maxlen bytes"

# fsx MESSAGE FILE [--strict]
fsx() {
	msg=$1 f=$2; shift 2
	timeout 300 "$fsx" --seed "$seed" --steps $steps --maxlen $maxlen "$@" "$f" >"$T_TMP/fsx.out" 2>&1
	t_ok $? "$msg"
	grep -v '^x3-fsx seed' "$T_TMP/fsx.out" | head -40 | sed 's/^/#   /'
}

t_mkimg "$T_TMP/k.img" 1024 && t_kmount "$T_TMP/k.img" "$T_TMP/mk"
t_ok $? "kernel mount of a fresh image"
fsx "x3-fsx on the kernel's ext3, punch hole and copy_file_range included" "$T_TMP/mk/f" --strict
t_umount "$T_TMP/mk"
e2fsck -fn "$T_TMP/k.img" >/dev/null 2>&1
t_ok $? "e2fsck -fn clean on the kernel's image"

k=0
for bs in 1024 4096; do
	k=$((k + 1)) img=$T_TMP/x$bs.img n=t-fsx-$k
	if [ -n "$why" ]; then
		t_skip "$why" "x3-fsx on ext3d-fuse at $bs-byte blocks"
		continue
	fi
	t_mkimg "$img" $bs && t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" \
		--set BLOCKDEV_ARGS= >/dev/null && t_fuse_mount $n "$T_TMP/mx"
	t_ok $? "ext3d instance up and mounted with ext3d-fuse ($bs-byte blocks)"
	fsx "x3-fsx on ext3d-fuse, every step as modelled ($bs-byte blocks, $steps steps run)" "$T_TMP/mx/f" --strict
	t_umount "$T_TMP/mx"
	t_instance_stop $n
	e2fsck -fn "$img" >"$T_TMP/fsck.out" 2>&1
	rc=$?
	t_ok $rc "e2fsck -fn clean on the image ext3d wrote ($bs-byte blocks)"
	[ $rc -eq 0 ] || sed 's/^/#   /' "$T_TMP/fsck.out" | head -20
done
t_done
