#!/bin/sh
# asan.t - the services, the supervisor, the client and the test tools of
# the AddressSanitizer + UndefinedBehaviorSanitizer build (EXT3D_ASAN_BUILD,
# which tests/run makes) run other tests of this suite: a memory error,
# undefined behaviour or a leak anywhere aborts that process, and tap.sh
# fails a test whose processes wrote such a report, even when the
# supervisor restarted the service and the test went on. A few tests that
# cover writes, kills, restarts and dead lock holders by default;
# EXT3D_LONG=1: every integration test that runs on any build, each in its
# short form.
set -u
. "$(dirname "$0")/../lib/tap.sh"

asan=${EXT3D_ASAN_BUILD:-$T_TOP/build-asan}
[ -x "$asan/compose/ext3d-supervisor" ] || t_skip_all "no sanitizer build at $asan (tests/run makes one)"

here=$(dirname "$0")
tests="writeops restartkill holders"
if [ -n "${EXT3D_LONG:-}" ]; then
	# mount.t runs compose/up, which builds build/; mutants.t builds its own.
	tests=$(cd "$here" && ls *.t | sed 's/\.t$//' | grep -vxE 'asan|mount|mutants')
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in $tests; do
	env -u EXT3D_LONG EXT3D_BUILD="$asan" EXT3D_ASAN_BUILD="$asan" "$here/$t.t" >"$T_TMP/$t.out" 2>&1
	rc=$?
	t_ok $rc "$t.t on the sanitizer build: exit $rc, $(grep -c '^ok' "$T_TMP/$t.out") passed"
	[ $rc -eq 0 ] || grep -E '^not ok|^#' "$T_TMP/$t.out" | head -60
done
t_done
