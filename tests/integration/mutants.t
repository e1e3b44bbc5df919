#!/bin/sh
# mutants.t - do the crash tests catch what they promise? Each line of
# tests/mutations/expect names a patch that plants a defect (a flush left
# out, revoke records ignored) and a test that must catch it:
# tests/tools/mutate.sh builds a patched copy of the tree and runs the test
# against it, which must fail. Several builds and crash tests in a row, so
# only with EXT3D_MUTANTS=1 (never in the default run).
set -u
. "$(dirname "$0")/../lib/tap.sh"

[ "${EXT3D_MUTANTS:-0}" = 1 ] || t_skip_all "set EXT3D_MUTANTS=1 to build the mutants and run their tests"
M=$T_TOP/tests/mutations
grep -v '^#' "$M/expect" >"$T_TMP/expect"
while read -r patch test; do
	"$T_TOP/tests/tools/mutate.sh" "$M/$patch" "$test" >"$T_TMP/out" 2>&1
	t_is "$?" 0 "$test catches $patch"
	sed 's/^/# /' "$T_TMP/out"
done <"$T_TMP/expect"
t_done
