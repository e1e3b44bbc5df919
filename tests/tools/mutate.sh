#!/usr/bin/env bash
# mutate.sh PATCH TEST... - does TEST catch the defect that PATCH plants?
# Copies the files of this tree that git tracks or would (as they are now)
# to a scratch directory, applies PATCH there, builds that copy and runs
# each TEST (a path under tests/integration/, or a unit test binary's name
# under build/tests/unit/) against the mutant build. The scratch copy is
# kept ($EXT3D_MUTANTS_DIR, default /tmp/ext3d-mutants, one directory per
# patch), so a second run rebuilds only what changed.
# Prints one line per test, "killed" (the test failed: it caught the
# mutant) or "survived", with the test's output in NAME.out beside the
# copy. Exit status: 0 every test killed the mutant, 1 one survived, 2 the
# patch does not apply or the mutant does not build (the reason on stderr).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 2 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
patch=$(realpath "$1") || exit 2
shift
name=$(basename "$patch" .patch)
dir=${EXT3D_MUTANTS_DIR:-/tmp/ext3d-mutants}/$name
mkdir -p "$dir/src" || exit 2

# Fresh sources with their own times (ninja rebuilds what is newer than
# its objects), then the patch, which gives the files it changes a new time.
git -C "$top" ls-files -co --exclude-standard -z | (cd "$top" && tar --null -T - -cf -) | tar -xf - -C "$dir/src" ||
	{ echo "mutate: cannot copy $top" >&2; exit 2; }
if ! patch -s -p1 -d "$dir/src" <"$patch" >"$dir/patch.out" 2>&1; then
	echo "mutate: $name does not apply to this tree:" >&2
	cat "$dir/patch.out" >&2
	exit 2
fi
sed -n 's|^+++ b/||p' "$patch" | while read -r f; do touch "$dir/src/$f"; done
if ! "$dir/src/compose/build" build >"$dir/build.out" 2>&1; then
	echo "mutate: the mutant $name does not build (last lines of $dir/build.out):" >&2
	tail -20 "$dir/build.out" >&2
	exit 2
fi

# run_test TEST: runs one test against the mutant build.
run_test() {
	case $1 in
	*.t) (cd "$dir/src" && EXT3D_BUILD=$dir/src/build prove -v "$1") ;;
	*) "$dir/src/build/tests/unit/$1" ;;
	esac
}

status=0
for t in "$@"; do
	if run_test "$t" >"$dir/$(basename "$t").out" 2>&1; then
		echo "$name $t survived"
		status=1
	else
		echo "$name $t killed"
	fi
done
exit $status
