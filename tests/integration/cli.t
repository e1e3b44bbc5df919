#!/bin/sh
# cli.t - every ext3d command (ls, ls -a, ls -l, ls -R, stat, cat, get, put,
# mkdir [-p], rm [-r], mv, ln [-s], chmod, chown, truncate, sync, status,
# status --json, kill, shutdown, usage errors), run from the sanitizer
# build (EXT3D_ASAN_BUILD; ASan+UBSan, halting on the first error, leaks
# checked) with failing paths (ENOENT, ENOTDIR, EISDIR, EEXIST, ENOTEMPTY,
# EINVAL, EPERM, and EACCES as uid 65534) mixed among good ones: each
# call's stdout, stderr lines and exit status are checked, and no
# sanitizer report may appear. cat A B with B failing once aborted with
# "double free detected". After shutdown, e2fsck -fn finds the image the
# write commands changed clean and debugfs reads back what put wrote.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

asan=${EXT3D_ASAN_BUILD:-$T_TOP/build-asan}
if [ -x "$asan/client/ext3d" ]; then
	cli=$asan/client/ext3d
else
	cli=$T_EXT3D
	t_diag "no sanitizer build in $asan: running the CLI of $EXT3D_BUILD"
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:exitcode=99
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
chmod 755 "$T_TMP" # uid 65534 reaches the run directory through it
n=t-cli
export EXT3D_INSTANCE=$n

tree=$T_TMP/tree
mkdir -p "$tree/d/sub" "$tree/secret"
printf 'one\n' >"$tree/d/f1"
printf 'two\n' >"$tree/d/f2"
printf 'hidden\n' >"$tree/secret/s"
printf 'mine\n' >"$tree/noread"
head -c 300000 /dev/urandom >"$tree/big"
ln -s d/f1 "$tree/link"
chmod 700 "$tree/secret"
chmod 600 "$tree/noread"
chmod 644 "$tree/d/f1" "$tree/d/f2" "$tree/big" "$tree/secret/s"
img=$T_TMP/cli.img
mke2fs -q -F -t ext3 -b 1024 -d "$tree" "$img" 8M >/dev/null 2>&1
t_ok $? "image made"
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance ready"

# run WANT_STATUS WANT_STDOUT WANT_STDERR MESSAGE -- ARGS...: runs the
# CLI (as uid 65534 when $as is set) and checks all three.
as=
run() {
	want_rc=$1 want_out=$2 want_err=$3 msg=$4
	shift 5
	if [ -n "$as" ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups "$cli" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	else
		"$cli" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	fi
	rc=$?
	got_out=$(cat "$T_TMP/out")
	got_err=$(cat "$T_TMP/err")
	if [ "$rc" = "$want_rc" ] && [ "$got_out" = "$want_out" ] && [ "$got_err" = "$want_err" ]; then
		t_ok 0 "$msg"
	else
		t_ok 1 "$msg"
		echo "# ext3d $*: exit $rc (want $want_rc)"
		sed 's/^/#   out: /' "$T_TMP/out" | head -10
		sed 's/^/#   err: /' "$T_TMP/err" | head -20
	fi
}
nl='
'
E=ext3d

# cat: failures of every kind between good files, the handle of each freed once
run 0 "one${nl}two" "" "cat two files" -- cat /d/f1 /d/f2
run 1 "one${nl}two" "$E: /nope: No such file or directory" "cat A ENOENT B" -- cat /d/f1 /nope /d/f2
run 1 "one${nl}two" "$E: /d/f1/x: Not a directory" "cat A ENOTDIR B (once a double free)" -- cat /d/f1 /d/f1/x /d/f2
run 1 "one${nl}two" "$E: /d: Is a directory" "cat A EISDIR B" -- cat /d/f1 /d /d/f2
run 1 "one${nl}one" "$E: /d/f1/x: Not a directory${nl}$E: /nope: No such file or directory${nl}$E: /d: Is a directory" \
	"cat with three failures among good files" -- cat /d/f1 /d/f1/x /nope /d /link
run 1 "" "$E: usage: cat PATH...: Invalid argument" "cat without a path" -- cat
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	as=65534
	run 1 "one${nl}two" "$E: /secret/s: Permission denied" "cat A EACCES (0700 dir) B as uid 65534" -- cat /d/f1 /secret/s /d/f2
	run 1 "one${nl}two" "$E: /noread: Permission denied${nl}$E: /d/f1/x: Not a directory" \
		"cat A EACCES (0600 file) ENOTDIR B as uid 65534" -- cat /d/f1 /noread /d/f1/x /d/f2
	run 1 "" "$E: /secret: Permission denied" "ls of a 0700 directory as uid 65534" -- ls /secret
	run 1 "" "$E: /secret/s: Permission denied" "stat inside a 0700 directory as uid 65534" -- stat /secret/s
	run 1 "$(printf '/:\nlost+found\nbig\nd\nlink\nnoread\nsecret\n\n\n/d:\nf1\nf2\nsub\n\n/d/sub:\n')" \
		"$E: /lost+found: Permission denied${nl}$E: /secret: Permission denied" \
		"ls -R / as uid 65534 lists what it may and names what it may not" -- ls -R /
	run 1 "" "$E: /secret/s: Permission denied" "get of a file in a 0700 directory as uid 65534" -- get /secret/s "$T_TMP/nobody.out"
	run 1 "" "$E: /newdir: Permission denied" "mkdir in a 0755 root-owned directory as uid 65534" -- mkdir /newdir
	run 1 "" "$E: /d/f1: Permission denied" "rm in a 0755 root-owned directory as uid 65534" -- rm /d/f1
	run 1 "" "$E: /d/f1: Operation not permitted" "chmod of another's file as uid 65534" -- chmod 777 /d/f1
	as=
else
	for _ in 1 2 3 4 5 6 7; do t_skip "needs root and setpriv" "as uid 65534"; done
fi

# ls, ls -a, ls -l, ls -R
run 0 "$(printf 'f1\nf2\nsub')" "" "ls /d hides . and .." -- ls /d
run 0 "$(printf '.\n..\nf1\nf2\nsub')" "" "ls -a /d" -- ls -a /d
run 0 "/d/f1" "" "ls of a file prints its name" -- ls /d/f1
run 1 "" "$E: /nope: No such file or directory" "ls ENOENT" -- ls /nope
run 1 "" "$E: /d/f1/x: Not a directory" "ls ENOTDIR" -- ls /d/f1/x
"$cli" ls -l / >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(grep -c '' "$T_TMP/err")" "0:0" "ls -l / succeeds quietly"
grep -q '^lrwxrwxrwx   1     0     0          4 .* link -> d/f1$' "$T_TMP/out" &&
	grep -q '^-rw-------   1     0     0          5 .* noread$' "$T_TMP/out" &&
	grep -q '^drwx------   2     0     0       1024 .* secret$' "$T_TMP/out"
t_ok $? "ls -l / shows modes, owners, sizes and a symlink's target"
run 0 "$(printf '/d:\nf1\nf2\nsub\n\n/d/sub:')" "" "ls -R /d" -- ls -R /d
"$cli" ls -lR / >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(grep -c '' "$T_TMP/err"):$(grep -c ':$' "$T_TMP/out")" "0:0:5" "ls -lR / lists the five directories"

# stat
"$cli" stat /d/f1 >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(sed -n 's/.*Size: \([0-9]*\).*/\1/p' "$T_TMP/out"):$(grep -c '' "$T_TMP/err")" "0:4:0" "stat /d/f1"
run 1 "" "$E: /nope: No such file or directory" "stat ENOENT" -- stat /nope
run 1 "" "$E: /d/f1/x: Not a directory" "stat ENOTDIR" -- stat /d/f1/x
run 1 "" "$E: usage: stat PATH: Invalid argument" "stat without a path" -- stat

# get
run 0 "" "" "get /big" -- get /big "$T_TMP/big.out"
cmp -s "$tree/big" "$T_TMP/big.out"
t_ok $? "get /big is byte for byte"
run 1 "" "$E: /nope: No such file or directory" "get ENOENT" -- get /nope "$T_TMP/x.out"
run 1 "" "$E: /d: Is a directory" "get EISDIR" -- get /d "$T_TMP/x.out"
run 1 "" "$E: /d/f1/x: Not a directory" "get ENOTDIR" -- get /d/f1/x "$T_TMP/x.out"
run 1 "" "$E: /d/f1: No such file or directory" "get into a local directory that does not exist" -- get /d/f1 "$T_TMP/no/such/dir"
run 1 "" "$E: usage: get PATH LOCALFILE: Invalid argument" "get without a local file" -- get /d/f1

# put, mkdir, rm, mv, ln, chmod, chown, truncate, sync
head -c 200000 /dev/urandom >"$T_TMP/local"
printf 'x\n' >"$T_TMP/small"
run 0 "" "" "put a 200 KB file" -- put "$T_TMP/local" /w1
"$cli" cat /w1 >"$T_TMP/w1.out" 2>"$T_TMP/err"
cmp -s "$T_TMP/local" "$T_TMP/w1.out"
t_ok $? "cat reads back what put wrote"
run 0 "" "" "put over an existing file truncates it" -- put "$T_TMP/small" /w1
run 0 "x" "" "the shorter file is all there is" -- cat /w1
run 1 "" "$E: $T_TMP/nope: No such file or directory" "put of a local file that does not exist" -- put "$T_TMP/nope" /w2
run 1 "" "$E: /nodir/w2: No such file or directory" "put into a directory that does not exist" -- put "$T_TMP/small" /nodir/w2
run 1 "" "$E: /d/f1/w2: Not a directory" "put under a file" -- put "$T_TMP/small" /d/f1/w2
run 0 "" "" "put into a directory keeps the local name" -- put "$T_TMP/small" /d
run 0 "x" "" "... as /d/small" -- cat /d/small
run 1 "" "$E: usage: put LOCAL PATH: Invalid argument" "put without a path" -- put "$T_TMP/small"
run 0 "" "" "mkdir" -- mkdir /m1
run 1 "" "$E: /m1: File exists" "mkdir EEXIST" -- mkdir /m1
run 1 "" "$E: /m2/a: No such file or directory" "mkdir ENOENT" -- mkdir /m2/a
run 1 "" "$E: /w1/a: Not a directory" "mkdir ENOTDIR" -- mkdir /w1/a
run 1 "" "$E: /m1: File exists" "mkdir A EEXIST B makes B" -- mkdir /m1 /m3
run 0 "" "" "mkdir -p of a deep path" -- mkdir -p /m2/a/b/c
run 0 "" "" "mkdir -p of an existing path" -- mkdir -p /m2/a/b
run 1 "" "$E: /w1: File exists" "mkdir -p through a file" -- mkdir -p /w1/x
run 0 "$(printf 'a')" "" "ls /m2" -- ls /m2
run 0 "" "" "ln -s" -- ln -s ../w1 /m1/sl
run 0 "x" "" "cat through the new symlink" -- cat /m1/sl
run 1 "" "$E: /m1/sl: File exists" "ln -s EEXIST" -- ln -s x /m1/sl
run 0 "" "" "ln (hard link)" -- ln /w1 /m1/hl
"$cli" stat /w1 >"$T_TMP/out" 2>&1
t_is "$(sed -n 's/.*Links: \([0-9]*\).*/\1/p' "$T_TMP/out")" 2 "the file has two links"
run 1 "" "$E: /m2: Operation not permitted" "ln of a directory" -- ln /m2 /m2link
run 1 "" "$E: /nope: No such file or directory" "ln of a missing file names it" -- ln /nope /m1/x
run 0 "" "" "mv a file" -- mv /m1/hl /m1/hl2
run 0 "" "" "mv into a directory" -- mv /m1/hl2 /m3
run 0 "x" "" "... is there" -- cat /m3/hl2
run 1 "" "$E: /nope: No such file or directory" "mv of a missing source names it" -- mv /nope /m3/z
run 1 "" "$E: /m2/a/b/m2: Invalid argument" "mv of a directory into itself" -- mv /m2 /m2/a/b
run 1 "" "$E: /m1/q/z: No such file or directory" "mv to a missing directory names the target" -- mv /m3/hl2 /m1/q/z
run 0 "" "" "chmod" -- chmod 640 /w1
"$cli" stat /w1 >"$T_TMP/out" 2>&1
t_is "$(sed -n 's/.*Access: (\([0-7]*\).*/\1/p' "$T_TMP/out")" 0640 "the mode is 0640"
run 1 "" "$E: 9z: Invalid argument" "chmod of a bad mode" -- chmod 9z /w1
run 1 "" "$E: /nope: No such file or directory" "chmod ENOENT" -- chmod 600 /nope
run 0 "" "" "chown" -- chown 123:456 /w1
"$cli" stat /w1 >"$T_TMP/out" 2>&1
t_is "$(sed -n 's/.*Uid: \([0-9]*\)  Gid: \([0-9]*\).*/\1:\2/p' "$T_TMP/out")" "123:456" "owner 123, group 456"
run 0 "" "" "chown of the group alone" -- chown :789 /w1
"$cli" stat /w1 >"$T_TMP/out" 2>&1
t_is "$(sed -n 's/.*Uid: \([0-9]*\)  Gid: \([0-9]*\).*/\1:\2/p' "$T_TMP/out")" "123:789" "owner kept, group 789"
run 1 "" "$E: no-such-user-x: Invalid argument" "chown to an unknown user" -- chown no-such-user-x /w1
run 0 "" "" "truncate -s 100K" -- truncate -s 100K /w1
"$cli" stat /w1 >"$T_TMP/out" 2>&1
t_is "$(sed -n 's/.*Size: \([0-9]*\).*/\1/p' "$T_TMP/out")" 102400 "the file is 100 KiB"
run 0 "" "" "truncate -s 1 shrinks it" -- truncate -s 1 /w1
run 0 "x" "" "... to its first byte" -- cat /w1
run 0 "" "" "truncate of a missing file makes it" -- truncate -s 10 /m3/new
run 1 "" "$E: /m1: Is a directory" "truncate of a directory" -- truncate -s 0 /m1
run 1 "" "$E: usage: truncate -s SIZE PATH...: Invalid argument" "truncate without -s" -- truncate /w1
run 1 "" "$E: /m2: Is a directory" "rm of a directory without -r" -- rm /m2
run 1 "" "$E: /nope: No such file or directory" "rm ENOENT" -- rm /nope
run 1 "" "$E: /d/f1/x: Not a directory" "rm ENOTDIR" -- rm /d/f1/x
run 0 "" "" "rm -r of a tree" -- rm -r /m2
run 1 "" "$E: /m2: No such file or directory" "... it is gone" -- ls /m2
run 0 "" "" "rm of a file and a symlink" -- rm /m1/sl /m3/new
run 0 "$(printf 'hl2')" "" "what is left in /m3" -- ls /m3
run 0 "" "" "sync" -- sync
run 1 "" "$E: usage: sync: Invalid argument" "sync with an argument" -- sync now
"$cli" ls / 2>&1 | sort >"$T_TMP/out"
t_is "$(cat "$T_TMP/out" | tr '\n' ' ')" "big d link lost+found m1 m3 noread secret w1 " "ls / after the writes"

# status, kill, usage, shutdown
"$cli" status >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(grep -c "^instance $n: ready" "$T_TMP/out"):$(grep -c '' "$T_TMP/err")" "0:1:0" "status"
"$cli" status --json 2>"$T_TMP/err" | python3 -c 'import json, sys; v = json.load(sys.stdin); sys.exit(len(v["services"]) != 5)'
t_is "$?:$(grep -c '' "$T_TMP/err")" "0:0" "status --json is JSON with five services (ext3d-fuse too)"
run 0 "" "" "kill alloc-svc" -- kill alloc-svc
t_instance_wait_ready $n
t_ok $? "instance ready again after the kill"
"$cli" kill no-such-svc >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(grep -c '^ext3d: ' "$T_TMP/err"):$(grep -vc '^ext3d: ' "$T_TMP/err")" "1:1:0" "kill of an unknown service fails with one line"
run 1 "" "$E: usage: kill SERVICE: Invalid argument" "kill without a service" -- kill
"$cli" frobnicate >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(grep -c '^usage: ext3d' "$T_TMP/err")" "2:1" "an unknown command prints the usage, exit 2"
"$cli" >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(grep -c '^usage: ext3d' "$T_TMP/err")" "2:1" "no command prints the usage, exit 2"
run 0 "one" "" "--instance=NAME" -- --instance=$n cat /d/f1
run 0 "one" "" "--instance NAME" -- --instance $n cat /d/f1
"$cli" --instance no-such-instance cat /d/f1 >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(grep -c '^ext3d: ' "$T_TMP/err"):$(grep -vc '^ext3d: ' "$T_TMP/err")" "1:1:0" "cat on an instance that is not running fails with one line"
"$cli" --instance no-such-instance status >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(grep -c '^ext3d: instance no-such-instance: ' "$T_TMP/err")" "1:1" "status of an instance that is not running"
run 1 "" "$E: usage: shutdown: Invalid argument" "shutdown with an argument" -- shutdown now
run 0 "" "" "shutdown" -- shutdown
"$cli" status >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(grep -c "^ext3d: instance $n: " "$T_TMP/err")" "1:1" "status after shutdown fails with one line"
t_instance_stop $n
e2fsck -fn "$img" >"$T_TMP/fsck.out" 2>&1
t_ok $? "e2fsck -fn: the image the write commands changed is clean"
[ $? -eq 0 ] || sed 's/^/#   /' "$T_TMP/fsck.out" | head -20
debugfs -R "cat /d/small" "$img" 2>/dev/null >"$T_TMP/dbg.out"
cmp -s "$T_TMP/small" "$T_TMP/dbg.out"
t_ok $? "debugfs reads back what put wrote"
t_done
