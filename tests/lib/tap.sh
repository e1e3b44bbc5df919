# tap.sh - TAP helpers for the shell tests; source it, then call t_done last.
# Paths: EXT3D_BUILD is the build directory (default: build/ beside tests/).
T_TOP=$(cd "$(dirname "$0")/../.." && pwd)
: "${EXT3D_BUILD:=$T_TOP/build}"
t_n=0
t_failed=0

# A failure is said on stderr too, which prove shows without -v: a CI log
# then names the check that failed, not only its number.
t_ok() { # t_ok STATUS MESSAGE: STATUS 0 passes
	t_n=$((t_n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $t_n - $2"; else
		echo "not ok $t_n - $2"; echo "# $(basename "$0"): not ok $t_n - $2" >&2
		t_failed=$((t_failed + 1)); fi
}
t_run() { # t_run MESSAGE CMD...: passes when CMD exits 0
	msg=$1; shift
	if "$@" >"$T_TMP/t_run.out" 2>&1; then t_ok 0 "$msg"; else
		t_ok 1 "$msg"; sed 's/^/# /' "$T_TMP/t_run.out"; fi
}
t_is() { # t_is GOT WANT MESSAGE
	if [ "$1" = "$2" ]; then t_ok 0 "$3"; else
		t_ok 1 "$3"; echo "# got '$1', want '$2'"; echo "#   got '$1', want '$2'" >&2; fi
}
t_check() { # t_check STATUS MESSAGE FILE: t_ok, FILE's head as diagnostics on a failure
	t_ok "$1" "$2"
	[ "$1" -eq 0 ] || sed 's/^/#   /' "$3" | head -20
}
# t_on_tty OUT CMD: runs the shell command CMD with stdout and stderr on a
# pseudo-terminal (script(1)); what it printed goes to OUT.raw, and to OUT
# with each \r a line break, blanks at line ends and empty lines dropped.
# Returns CMD's exit status.
t_on_tty() {
	script -qec "$2" /dev/null </dev/null >"$1.raw" 2>&1
	t_on_tty_rc=$?
	tr '\r' '\n' <"$1.raw" | sed 's/ *$//' | grep -v '^$' >"$1"
	return $t_on_tty_rc
}
t_diag() { echo "# $*"; }
t_skip() { t_n=$((t_n + 1)); echo "ok $t_n - $2 # SKIP $1"; }
t_skip_all() { echo "1..0 # SKIP $*"; exit 0; }
t_done() {
	echo "1..$t_n"
	[ "$t_failed" -eq 0 ]
}
t_relay() { # t_relay PREFIX < LINES: a checker's "PASS what" and "FAIL what"
	# lines as TAP results ("PREFIX: what", or "what" when PREFIX is empty),
	# any other line (a leading "# " dropped) as a diagnostic
	while IFS= read -r line; do
		what=${line#* }
		[ -n "$1" ] && what="$1: $what"
		case $line in
		"PASS "*) t_ok 0 "$what" ;;
		"FAIL "*) t_ok 1 "$what" ;;
		*) t_diag "${line#\# }" ;;
		esac
	done
}
t_storm() { # t_storm FILE NAME: the count NAME on x3-storm's summary line in
	# FILE ("calls N ok N eio N ..."), by name; empty when it is not there
	awk -v k="$2" '/^calls / { for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1) }' "$1"
}
t_clients() { # t_clients N OUT CMD...: runs "CMD ID" for each ID from 1 to N
	# at once, each into OUT.ID; shows the first lines of each output and
	# returns how many failed
	t_cl_n=$1 t_cl_out=$2 t_cl_pids= t_cl_bad=0
	shift 2
	for t_cl_id in $(seq "$t_cl_n"); do
		"$@" "$t_cl_id" >"$t_cl_out.$t_cl_id" 2>&1 &
		t_cl_pids="$t_cl_pids $!"
	done
	t_cl_id=0
	for t_cl_p in $t_cl_pids; do
		t_cl_id=$((t_cl_id + 1))
		wait "$t_cl_p" && continue
		t_cl_bad=$((t_cl_bad + 1))
		# On stderr too, which prove shows even when it is not verbose.
		sed "s/^/# client $t_cl_id: /" "$t_cl_out.$t_cl_id" | head -5 >&2
	done
	for t_cl_id in $(seq "$t_cl_n"); do sed 's/^/#   /' "$t_cl_out.$t_cl_id" | head -5; done
	return $t_cl_bad
}
# t_reachable: for a test that runs ext3d's programs or reads its files as
# other uids. When uid 65534 cannot reach the source and build trees (a
# clone under a 0700 directory, such as /root or one of mktemp -d), the
# programs, compose/ and tests/ are copied under a directory every uid can
# reach, and T_TOP and EXT3D_BUILD name the copy. Call it before sourcing
# instance.sh, which derives the programs' paths from them.
t_reachable() {
	[ "$(id -u)" -eq 0 ] || return 0 # only root runs programs as other uids
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		'test -r "$1/tests/lib/tap.sh" && test -x "$2/compose/ext3d-supervisor"' \
		- "$T_TOP" "$EXT3D_BUILD" 2>/dev/null && return 0
	t_copy=$(mktemp -d "${TMPDIR:-/tmp}/ext3d-tree.XXXXXX")
	t_at_exit "rm -rf $t_copy"
	mkdir -p "$t_copy/top" "$t_copy/build"
	cp -a "$T_TOP/compose" "$T_TOP/tests" "$t_copy/top/"
	(cd "$EXT3D_BUILD" && find . -type f -perm -u+x -not -path '*.p/*' -not -path './meson-*' \
		-exec cp --parents {} "$t_copy/build/" \;)
	chmod -R a+rX "$t_copy"
	t_diag "$T_TOP or $EXT3D_BUILD is out of other uids' reach: running from a copy in $t_copy"
	T_TOP=$t_copy/top EXT3D_BUILD=$t_copy/build
	export EXT3D_BUILD
}
t_need_root() { [ "$(id -u)" -eq 0 ] || t_skip_all "needs root ($1)"; }

T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ext3d-test.XXXXXX")
t_cleanup_hooks=""
t_at_exit() { t_cleanup_hooks="$1; $t_cleanup_hooks"; }
# t_sanitizer_reports: fails the test (exit 1) when a service, tool or
# client that the test ran wrote a sanitizer report into a file under
# $T_TMP (services log there; a sanitized service that aborts is restarted
# like any crash, so its report would otherwise go unseen).
t_sanitizer_reports() {
	found=$(grep -rlIE 'ERROR: (Address|Leak)Sanitizer|runtime error: ' "$T_TMP" 2>/dev/null) || return 0
	for f in $found; do
		echo "# sanitizer report in ${f#"$T_TMP"/}:"
		grep -A30 -E 'ERROR: (Address|Leak)Sanitizer|runtime error: ' "$f" | head -40 | sed 's/^/#   /'
	done
	return 1
}
trap 't_rc=$?; eval "$t_cleanup_hooks"; t_sanitizer_reports || t_rc=1; rm -rf "$T_TMP"; exit $t_rc' EXIT
