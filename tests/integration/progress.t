#!/bin/sh
# progress.t - the CLI's progress line (issue 22): put and get of a 20 MiB
# file and rm -r of a tree of 304 entries print nothing more than before
# when stderr is a file, and on a pseudo-terminal (script(1)) one line
# redrawn in place with \r that ends at the size and 100% (put, get) or at
# the count of entries removed (rm -r). A put from a pipe that pauses
# (no size, so no percent) is redrawn after the pause, not at each of its
# reads. EXT3D_PROGRESS=1 turns it on without a terminal,
# EXT3D_PROGRESS=0 off on one. An error in the middle of rm -r stands on
# a line of its own, the progress line erased first. The copies are byte
# for byte, and e2fsck -fn finds the image clean after shutdown.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

t_need_root "an instance's sandboxed services"
command -v script >/dev/null || t_skip_all "no script(1) for a pseudo-terminal"
unset EXT3D_PROGRESS
n=t-progress
export EXT3D_INSTANCE=$n
cli=$T_EXT3D

# A tree of 304 entries for rm -r: /t, three directories, 100 files each;
# /u the same for rm -r off a terminal.
tree=$T_TMP/tree
for top in t u; do
	for d in a b c; do
		mkdir -p "$tree/$top/$d"
		for i in $(seq 100); do echo "$i" >"$tree/$top/$d/f$i"; done
	done
done
img=$T_TMP/progress.img
mke2fs -q -F -t ext3 -I 256 -b 4096 -N 4096 -d "$tree" "$img" 96M >/dev/null 2>&1
t_ok $? "image made with two trees of 304 entries"
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance ready"
big=$T_TMP/big
head -c $((20 << 20)) /dev/urandom >"$big"

# quiet MESSAGE: the last command's status, stdout and stderr are 0, empty, empty.
quiet() {
	t_check "$(($? + $(wc -c <"$T_TMP/out") + $(wc -c <"$T_TMP/err")))" "$1" "$T_TMP/err"
}
rate='  [0-9.]+ (B|KiB|MiB|GiB)/s$'

# (1) Not on a terminal: nothing on stderr.
"$cli" put "$big" /big </dev/null >"$T_TMP/out" 2>"$T_TMP/err"
quiet "put of 20 MiB, stderr a file: nothing printed"
"$cli" get /big "$T_TMP/big.1" </dev/null >"$T_TMP/out" 2>"$T_TMP/err"
quiet "get of 20 MiB, stderr a file: nothing printed"
cmp "$big" "$T_TMP/big.1" >/dev/null 2>&1
t_ok $? "get reads back byte for byte what put wrote"

# (2) On a terminal: the line ends at the whole size and 100%, and it is
# redrawn in place: the only line break is the last byte.
t_on_tty "$T_TMP/tty" "$cli put $big /big2"
t_is "$?" 0 "put on a terminal succeeds"
tail -n 1 "$T_TMP/tty" | grep -Eq "^/big2: 20\.0 MiB / 20\.0 MiB  100%$rate"
t_check $? "put on a terminal ends at '/big2: 20.0 MiB / 20.0 MiB  100%  RATE/s'" "$T_TMP/tty"
t_is "$(grep -c '' "$T_TMP/tty.raw"):$(tail -c 2 "$T_TMP/tty.raw" | od -An -c | tr -d ' ')" \
	'1:\r\n' "put's progress is one line redrawn in place, ended by a newline"
t_on_tty "$T_TMP/tty" "$cli get /big2 $T_TMP/big.2"
t_is "$?" 0 "get on a terminal succeeds"
tail -n 1 "$T_TMP/tty" | grep -Eq "^/big2: 20\.0 MiB / 20\.0 MiB  100%$rate"
t_check $? "get on a terminal ends at '/big2: 20.0 MiB / 20.0 MiB  100%  RATE/s'" "$T_TMP/tty"
cmp "$big" "$T_TMP/big.2" >/dev/null 2>&1
t_ok $? "the copy put and got on a terminal is byte for byte"

# A put from a pipe that pauses: the size unknown, so no total and no
# percent; the line redrawn after the pause, but not at each 64 KiB read.
t_on_tty "$T_TMP/tty" "{ head -c 1048576 $big; sleep 0.5; head -c 1048576 $big; } | $cli put /dev/stdin /pipe"
t_is "$?" 0 "put from a pipe on a terminal succeeds"
draws=$(grep -c '' "$T_TMP/tty")
tail -n 1 "$T_TMP/tty" | grep -Eq "^/pipe: 2\.0 MiB$rate" && [ "$draws" -ge 3 ] && [ "$draws" -le 8 ] &&
	[ "$(grep -c '' "$T_TMP/tty.raw")" -eq 1 ]
t_check $? "put from a pipe: drawn in place 3 to 8 times (not at each of its 32 reads), ending at '/pipe: 2.0 MiB  RATE/s'" "$T_TMP/tty"

# EXT3D_PROGRESS forces it: on into a file, off on a terminal.
EXT3D_PROGRESS=1 "$cli" put "$big" /big3 2>"$T_TMP/err"
tr '\r' '\n' <"$T_TMP/err" | grep -Eq "^/big3: 20\.0 MiB / 20\.0 MiB  100%$rate"
t_check $? "EXT3D_PROGRESS=1: the line without a terminal" "$T_TMP/err"
t_on_tty "$T_TMP/tty" "EXT3D_PROGRESS=0 $cli get /big3 $T_TMP/big.3"
t_check "$(($? + $(wc -c <"$T_TMP/tty.raw")))" "EXT3D_PROGRESS=0: nothing on a terminal" "$T_TMP/tty"

# (3) rm -r: the count of entries removed, an error on a line of its own.
"$cli" rm -r /u </dev/null >"$T_TMP/out" 2>"$T_TMP/err"
quiet "rm -r of 304 entries, stderr a file: nothing printed"
t_on_tty "$T_TMP/tty" "$cli rm -r /t /nope"
t_is "$?" 1 "rm -r /t /nope on a terminal fails for /nope"
t_is "$(tail -n 1 "$T_TMP/tty")" "rm -r: 304 removed" "rm -r on a terminal ends at the 304 entries removed"
t_is "$(grep -c '^ext3d: /nope: No such file or directory$' "$T_TMP/tty")" 1 \
	"rm -r's error stands alone on its line, the progress line erased before it"
"$cli" ls / >"$T_TMP/out" 2>&1
t_is "$(sort "$T_TMP/out" | tr '\n' ' ')" "big big2 big3 lost+found pipe " "/t and /u are gone"

# (4) The image is clean.
t_instance_stop $n
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
t_check $? "e2fsck -fn: the image is clean" "$T_TMP/fsck"
t_done
