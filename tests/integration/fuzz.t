#!/bin/sh
# fuzz.t - a bounded libFuzzer run of the ext3 parsers (superblock, group
# descriptors, inodes, block maps, directories, htree) under ASan+UBSan,
# seeded also with the classes that once never ended (a directory entry
# pointing back at an ancestor, sizes at and past ext3_max_size) and with
# empty, sub-superblock and truncated images; the target aborts if it
# mounts an image shorter than its fs or serves an impossible size:
# EXT3D_FUZZ_SECONDS (default 20; 180 with EXT3D_LONG=1). Needs the clang
# build that tests/run makes (EXT3D_ASAN_BUILD, default build-asan/).
set -u
. "$(dirname "$0")/../lib/tap.sh"

asan=${EXT3D_ASAN_BUILD:-$T_TOP/build-asan}
[ -x "$asan/inode-svc/ext3fs/fuzz-ext3fs" ] || t_skip_all "no clang fuzz build in $asan"
secs=${EXT3D_FUZZ_SECONDS:-20}
[ -n "${EXT3D_LONG:-}" ] && secs=${EXT3D_FUZZ_SECONDS:-180}
FUZZ_WORK=$T_TMP/fuzz "$T_TOP/inode-svc/ext3fs/fuzz-run" "$asan" "$secs" >"$T_TMP/fuzz.log" 2>&1
rc=$?
t_ok $rc "libFuzzer ran $secs s on the ext3 parsers without a crash, leak or timeout"
[ $rc -eq 0 ] || tail -30 "$T_TMP/fuzz.log" | sed 's/^/# /'
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$T_TMP/fuzz.log" | tail -1)
t_diag "${execs:-no} inputs run"
t_done
