#!/bin/sh
# benchrun.t - bench/report, the step of bench/run that turns a results.tsv
# into table.md and plot.png, on the canned tests/data/benchrun-results.tsv
# (no benchmark runs, no timing): the table has a section per suite, the
# known ratios of a row (libext3d creates with 2 clients: ext3d/kernel
# 0.23, ext3d/fuse2fs 3.76, ext3d/ext3d-big 1.36, 2 clients/1 0.79), the
# mount suite without an ext3d-big column, the quick mark in its heading;
# plot.png is a PNG. Skipped without gnuplot.
set -u
. "$(dirname "$0")/../lib/tap.sh"

command -v gnuplot >/dev/null 2>&1 || t_skip_all "gnuplot is not installed (compose/install-deps)"

dir=$T_TMP/results
mkdir -p "$dir"
cp "$T_TOP/tests/data/benchrun-results.tsv" "$dir/results.tsv"
t_run "bench/report makes the table and the plot" \
	"$T_TOP/bench/report" --quick --title "fixture" "$dir"
table=$dir/table.md

# row SUITE_HEADING WORKLOAD THREADS: that row of the suite's table.
row() {
	awk -v h="$1" -v w="$2" -v t="$3" '
	/^## / { in_s = index($0, h) > 0 }
	in_s && $0 ~ "^\\| " w " \\| " t " \\|" { print; exit }' "$table"
}

t_is "$(head -1 "$table")" "# fixture (quick)" "the heading names the run and marks it quick"
t_is "$(grep -c '^## ' "$table")" 2 "one section per suite"
t_is "$(row libext3d create 2)" \
	"| create | 2 | creates/s | 65259 | 84148 | 3942 | 10926 | 14835 | 0.23 | 3.76 | 1.36 | 0.79 |" \
	"libext3d create, 2 clients: values, ext3d/kernel, /fuse2fs, /ext3d-big and 2/1"
t_is "$(row libext3d fsync 8 | awk -F' [|] ' '{ print $NF }')" "4.61 |" \
	"libext3d fsync, 8 writers: ext3d 8/1"
t_is "$(row 'the mount' stat 1)" \
	"| stat | 1 | ops/s | 290684 | 8322 | 143525 | 0.49 | 17.25 |  |" \
	"the mount's stat row: kernel read from \"kernel\", no ext3d-big column"
t_is "$(row libext3d create 1 | cut -d'|' -f5)" " 50427 " \
	"kernel-ordered is the kernel column"
t_is "$(head -c 8 "$dir/plot.png" | od -An -tx1 | tr -d ' \n')" 89504e470d0a1a0a \
	"plot.png is a PNG"

t_done
