#!/usr/bin/env bash
# corrupt.t - corrupt images from a seeded generator (tests/tools/
# corrupt-gen.py: superblock, descriptors, bitmaps, inode fields, block
# pointers, indirect blocks, directory entries, loops to an ancestor, htree
# roots, symlinks, the journal, random bytes, missing/empty/short images),
# on 1 KiB and 4 KiB block bases. Each image is either refused at start with
# a message in the log, or served: ls -R, ls -lR, cat and stat of every
# path end in time (no hang), print only clean "ext3d: PATH: error" lines,
# never stream without end (output capped with head -c; the cap may be
# reached only by a file whose size stat accepts), and leave every service
# ready with no restart. A size past ext3_max_size is refused with EUCLEAN
# and a log line naming the inode. compose/up shows why it refuses an empty
# or short image. EXT3D_CORRUPT_COUNT images (40; 200 with EXT3D_LONG=1),
# EXT3D_CORRUPT_SEED to replay a run.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/corrupt.sh"

gen=$T_TOP/tests/tools/corrupt-gen.py
count=${EXT3D_CORRUPT_COUNT:-40}
seed=${EXT3D_CORRUPT_SEED:-20261204}
if [ -n "${EXT3D_LONG:-}" ]; then
	count=${EXT3D_CORRUPT_COUNT:-200}
	seed=${EXT3D_CORRUPT_SEED:-$(date +%s)}
fi
limit=$((16 << 20))
t_diag "seed $seed, $count images (EXT3D_CORRUPT_SEED=$seed replays them)"
command -v python3 >/dev/null || t_skip_all "needs python3"

# The base images: every structure the generator damages is in them.
t_corrupt_bases

# The paths probed: all but 399 of the 401 entries of /h; files and
# symlinks are read too.
python3 "$gen" paths "$base1k" | grep -Ev '^. /h/entry-(0[0-9][1-9]|[0-3][1-9][0-9]|[1-3]0[0-9]|4[0-9][1-9])$' >"$T_TMP/paths"
mapfile -t paths < <(cut -c3- "$T_TMP/paths")
mapfile -t files < <(grep '^[fl] ' "$T_TMP/paths" | cut -c3-)

declare -A refused errors fine
classes=$(python3 "$gen" classes)
for c in $classes; do refused[$c]=0 errors[$c]=0 fine[$c]=0; done
ncls=$(echo $classes | wc -w)

# clean_stderr FILE: every line one of the CLI's error lines.
clean_stderr() {
	! grep -Eqv '^ext3d: (ls: .*: not listing already-listed directory|.*: [A-Z][a-z].*)$' "$1" &&
		! grep -Eqi 'sanitizer|runtime error|double free|core dumped|segmentation' "$1"
}

# run_cli NAME CMD...: runs ext3d CMD with its stdout capped at $limit;
# sets out_bytes, cli_rc; notes a failure in $why.
run_cli() {
	name=$1; shift
	timeout 20 "$T_EXT3D" --instance "$name" "$@" 2>>"$T_TMP/err" | head -c $limit >"$T_TMP/out"
	cli_rc=${PIPESTATUS[0]}
	out_bytes=$(stat -c %s "$T_TMP/out")
	if [ "$cli_rc" -eq 124 ]; then
		why="$why; ext3d $* hung"
	elif [ "$out_bytes" -ge $limit ]; then
		cap_hit="$cap_hit $*"
	elif [ "$cli_rc" -gt 2 ]; then
		why="$why; ext3d $* exit $cli_rc"
	fi
	[ "$cli_rc" -eq 0 ] || served_err=1
}

# services_ok NAME: every service ready (the mount service: unmounted),
# no restart, supervisor ready.
services_ok() {
	t_status "$1" 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin)
ok = v["supervisor"]["state"] == "ready" and all(
    s["state"] in ("ready", "unmounted") and s["restarts"] == 0 for s in v["services"])
sys.exit(0 if ok else 1)'
}

# probe NAME IMPOSSIBLE: the served image's checks; sets why.
probe() {
	n=$1 impossible=$2
	: >"$T_TMP/err"
	cap_hit=
	run_cli "$n" ls -R /
	run_cli "$n" ls -lR /
	for p in "${paths[@]}"; do run_cli "$n" stat "$p"; done
	for p in "${files[@]}"; do run_cli "$n" cat "$p"; done
	run_cli "$n" get /dind /dev/stdout # capped like cat: the size may be huge
	if [ -n "$cap_hit" ]; then
		# only cat or get may reach the cap, and only for a size stat accepts
		for p in $(echo "$cap_hit" | grep -oE '(cat|get) [^ ]*' | cut -c5-); do
			# a symlink of the tree: stat (lstat) its target
			[ -L "$tree$p" ] && p=$(realpath -m "$(dirname "$p")/$(readlink "$tree$p")")
			sz=$(timeout 20 "$T_EXT3D" --instance "$n" stat "$p" 2>/dev/null | sed -n 's/.*Size: \([0-9]*\).*/\1/p')
			[ -n "$sz" ] && [ "$sz" -ge $limit ] || why="$why; cat $p streamed $limit bytes, stat size '${sz}'"
		done
		echo "$cap_hit" | grep -q ' ls' && why="$why; ls output reached $limit bytes"
	fi
	if [ -n "$impossible" ]; then
		timeout 20 "$T_EXT3D" --instance "$n" cat "$impossible" 2>"$T_TMP/imp" | head -c $limit >"$T_TMP/out"
		grep -q "$impossible: Structure needs cleaning" "$T_TMP/imp" ||
			why="$why; cat $impossible (size past the maximum) did not fail with EUCLEAN: $(cat "$T_TMP/imp")"
		grep -q "warning: corrupt inode ino=[0-9]* .*beyond the largest file" "$T_TMP/$n.log" ||
			why="$why; no log line names the inode of $impossible"
	fi
	clean_stderr "$T_TMP/err" || why="$why; unclean stderr: $(grep -Ev '^ext3d: ' "$T_TMP/err" | head -3)"
	services_ok "$n" || why="$why; a service restarted or is not ready"
	! grep -Eq 'signal|dumped core|crash' "$T_TMP/$n.log" || why="$why; a service died: $(grep -E 'signal|core' "$T_TMP/$n.log" | head -2)"
}

# check IMAGE NAME IMPOSSIBLE: starts an instance on IMAGE and sets state
# (refused, served or hang), served_err (1: some call failed) and why.
check() {
	img=$1 n=$2 why= served_err=0
	: >"$T_TMP/$n.log"
	"$T_SUPERVISOR" --compose "$T_TOP/compose/ext3d.compose" --instance $n \
		--set "BUILD=$EXT3D_BUILD" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
		</dev/null >>"$T_TMP/$n.log" 2>&1 &
	pid=$!
	state=hang
	for _ in $(seq 200); do
		if ! kill -0 $pid 2>/dev/null; then state=refused; break; fi
		st=$(t_status $n 2>/dev/null)
		if echo "$st" | grep -q '"supervisor":{[^}]*"state":"ready"'; then state=served; break; fi
		# A service that refuses the image exits by itself at every start:
		# the supervisor marks the instance failed and stays up to say why.
		if echo "$st" | grep -q '"supervisor":{[^}]*"state":"failed"'; then
			state=refused
			"$T_EXT3D" --instance $n shutdown >/dev/null 2>&1
			break
		fi
		sleep 0.05
	done
	case $state in
	refused)
		wait $pid
		grep -Eq '(blockdev|inode)-svc\[[0-9]+\] error: (refusing the device|cannot serve this image|no ext3 superblock)|journald-svc\[[0-9]+\] error: journal recovery failed: |alloc-svc\[[0-9]+\] error: refusing the superblock: ' "$T_TMP/$n.log" ||
			why="refused without a message: $(tail -3 "$T_TMP/$n.log")"
		;;
	served)
		probe $n "$3"
		"$T_EXT3D" --instance $n shutdown >/dev/null 2>&1
		for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
		kill -0 $pid 2>/dev/null && { why="$why; supervisor did not stop"; kill -9 $pid; }
		wait $pid 2>/dev/null
		;;
	hang)
		why="neither ready nor refused after 10 s"
		kill -9 $pid 2>/dev/null
		;;
	esac
	why=${why#; }
	[ -z "$why" ] || sed 's/^/#   /' "$T_TMP/$n.log" | tail -8
	[ "$state" != refused ] || grep -m1 ' error: ' "$T_TMP/$n.log" | sed 's/^/# refused: /'
	rm -f "$T_TMP/$n.log"
}

for b in 1k 4k; do
	check "$T_TMP/base-$b.img" base-$b ""
	t_is "$state $served_err $why" "served 0 " "the undamaged $b base is served and every probe succeeds"
	[ $served_err -eq 0 ] || sed 's/^/#   /' "$T_TMP/err"
done

start=$(date +%s)
for i in $(seq 0 $((count - 1))); do
	base=$base1k
	[ $(( (i / ncls) % 2 )) -eq 1 ] && base=$base4k
	img=$T_TMP/c.img
	rm -f "$img"
	if ! desc=$(python3 "$gen" make "$base" "$seed" "$i" "$img" 2>&1); then
		t_ok 1 "image $i made"; echo "$desc" | sed 's/^/# /'; continue
	fi
	cls=${desc%% *}
	check "$img" c$i "$(echo "$desc" | sed -n 's/.* impossible=\([^ ]*\).*/\1/p')"
	case $state in
	refused) refused[$cls]=$((refused[$cls] + 1)) ;;
	served) if [ $served_err -eq 0 ]; then fine[$cls]=$((fine[$cls] + 1)); else errors[$cls]=$((errors[$cls] + 1)); fi ;;
	esac
	t_is "$why" "" "image $i $state: $desc"
done
t_diag "$count images in $(( $(date +%s) - start )) s; per class: refused at start / served with clean errors / served fine"
for c in $classes; do
	t_diag "$(printf '  %-9s %3d / %3d / %3d' "$c" "${refused[$c]}" "${errors[$c]}" "${fine[$c]}")"
done

# compose/up says why it refuses an image (it makes only a missing one).
up() { # up IMAGE: compose/up's output, the instance stopped again
	"$T_TOP/compose/up" --image "$1" --instance cu >"$T_TMP/up.out" 2>&1
	rc=$?
	"$T_TOP/compose/down" --instance cu >/dev/null 2>&1
	return $rc
}
: >"$T_TMP/empty.img"
up "$T_TMP/empty.img"
t_is "$?:$(grep -q 'is empty (0 bytes)' "$T_TMP/up.out"; echo $?)" "1:0" "compose/up on a 0-byte image fails and says it is empty"
head -c 1000 "$base1k" >"$T_TMP/short.img"
up "$T_TMP/short.img"
t_is "$?:$(grep -q 'too small: 1000 bytes' "$T_TMP/up.out"; echo $?)" "1:0" "compose/up on a 1000-byte image fails and says it is too small"
head -c $((1 << 20)) "$base1k" >"$T_TMP/trunc.img"
up "$T_TMP/trunc.img"
t_is "$?:$(grep -q 'image too small: 1048576 bytes, the superblock says 4194304' "$T_TMP/up.out"; echo $?)" "1:0" \
	"compose/up on a truncated image fails and says how much the superblock wants"
t_done
