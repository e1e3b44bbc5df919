#!/bin/sh
# leak.t - clients that attach, read and detach thousands of times leave
# the arena as they found it: its data and metadata zones use the same
# bytes before and after (read from the arena header by arena-probe), and
# the same channels are open. The cache is kept small and each cycle reads
# a file the last one did not, so every cycle reads the device through
# blockdev-svc (scatter reads included). EXT3D_LONG=1 runs 20000 cycles.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

command -v mke2fs >/dev/null 2>&1 || t_skip_all "needs mke2fs"
cycles=2000
[ "${EXT3D_LONG:-0}" = 1 ] && cycles=20000
nfiles=32
probe=$EXT3D_BUILD/tests/tools/arena-probe
cycler=$EXT3D_BUILD/tests/tools/attach-cycle

mkdir "$T_TMP/tree"
python3 - "$T_TMP/tree" "$nfiles" <<'EOF'
import sys
for k in range(int(sys.argv[2])):
    with open("%s/f%d" % (sys.argv[1], k), "wb") as f:
        f.write(bytes((k * 131 + j * 7) & 0xff for j in range(48 << 10)))
EOF
img=$T_TMP/img
mke2fs -q -F -t ext3 -d "$T_TMP/tree" "$img" 32M >/dev/null 2>&1
t_ok $? "image with $nfiles files of 48 KiB"
sed -e 's|--rundir=${RUNDIR}$|--rundir=${RUNDIR} --cache-size=1|' \
	-e 's|^\(service journald-svc .*\)$|\1 --cache-size=1|' \
	"$T_TOP/compose/ext3d.compose" >"$T_TMP/leak.compose"
t_instance_start t-leak "$T_TMP/leak.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance ready (1 MiB buffer cache)"
sup=$(t_field t-leak supervisor.pid)

# usage KEY: a line of arena-probe --usage.
usage() { "$probe" --usage="$sup" | awk -v k="$1" '$1 == k {print $2}'; }
# settled: channels open and arena use once every detached session is
# gone (inode-svc ends a session when it sees the hang-up).
settled() {
	prev=
	for _ in $(seq 100); do
		now="$(t_field t-leak channels.open) $(usage meta_used) $(usage data_used)"
		[ "$now" = "$prev" ] && break
		prev=$now
		sleep 0.1
	done
	echo "$now"
}

"$cycler" --instance t-leak $((2 * nfiles)) $nfiles >"$T_TMP/warm" 2>&1
t_ok $? "warm-up: $((2 * nfiles)) cycles"
before=$(settled)
misses=$(t_field t-leak cache.misses)
start=$(date +%s)
"$cycler" --instance t-leak $cycles $nfiles >"$T_TMP/cycles" 2>&1
t_ok $? "$cycles cycles of attach, read 48 KiB, detach: every byte right"
sed 's/^/# /' "$T_TMP/cycles"
after=$(settled)
t_diag "$cycles cycles in $(($(date +%s) - start)) s;" \
	"cache misses: $(($(t_field t-leak cache.misses) - misses))"
set -- $before
ch0=$1 meta0=$2 data0=$3
set -- $after
t_is "$1" "$ch0" "channels open: $ch0 before, $1 after"
t_is "$2" "$meta0" "metadata zone: $meta0 bytes used before, $2 after"
t_is "$3" "$data0" "data zone: $data0 bytes used before, $3 after (of $(usage data_size))"
t_diag "arena use before/after $cycles cycles: meta $meta0/$2 data $data0/$3 bytes"
t_is "$(t_field t-leak generation)" 0 "no group restart on the way"
t_is "$(t_field t-leak supervisor.state)" ready "instance still ready"
t_instance_stop t-leak
t_done
