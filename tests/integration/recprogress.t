#!/bin/sh
# recprogress.t - progress of journal recovery (issue 22). An image whose
# journal holds 50 transactions of 100 blocks (debugfs jo/jw/jc: 5100 log
# blocks) needs recovery. ext3d-recover on a pseudo-terminal (script(1))
# draws one line on stderr redrawn in place with \r through its passes,
# ending at "recovering: replay 5100/5100 blocks  100%" (-n: at the scan);
# with stderr a file it prints what it printed before and nothing more;
# EXT3D_PROGRESS=1 turns the line on without a terminal, EXT3D_PROGRESS=0
# off on one; a clean journal draws no line. An instance started on a copy
# (journald-svc replays it) shows in ext3d status, text and --json, what
# its replay came to: 5100 log blocks replayed, 5000 blocks written; an
# instance whose journal needed no replay shows none. e2fsck -fn finds the
# replayed images clean.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/journaled.sh"

PATH=$PATH:/sbin:/usr/sbin
export LC_ALL=C
unset EXT3D_PROGRESS
REC=$EXT3D_BUILD/journald-svc/ext3d-recover
for tool in mke2fs e2fsck debugfs script; do
	command -v $tool >/dev/null 2>&1 || t_skip_all "needs $tool"
done

# progress_line RAW: the part of RAW before its first line break (the
# terminal's \r\n), each \r a line break, empty lines dropped.
progress_line() { head -n 1 "$1" | tr '\r' '\n' | sed 's/ *$//' | grep -v '^$'; }

img=$T_TMP/rec.img
t_journaled "$img"
t_ok $? "an image whose journal holds 50 transactions of 100 blocks"
dumpe2fs -h "$img" 2>/dev/null | grep -q '^Filesystem features:.*needs_recovery'
t_ok $? "the image needs recovery"
for c in file tty dry on off svc; do cp "$img" "$img.$c"; done

# (1) stderr a file: the report on stdout as before, nothing on stderr.
"$REC" "$img.file" >"$T_TMP/out" 2>"$T_TMP/err"
t_is "$?:$(wc -c <"$T_TMP/err")" "0:0" "ext3d-recover, stderr a file: replays and prints nothing on stderr"
t_is "$(grep -c recovering "$T_TMP/out")" 0 "no progress on stdout either"
grep -q '^transactions 50 (tids 1..50), log blocks 5100$' "$T_TMP/out"
t_check $? "it replays the 50 transactions, 5100 log blocks" "$T_TMP/out"

# (2) On a terminal: one line redrawn in place, ended by a newline, at
# 100% of the replay; then the same report.
t_on_tty "$T_TMP/tty" "$REC $img.tty"
t_is "$?" 0 "ext3d-recover on a terminal replays"
progress_line "$T_TMP/tty.raw" >"$T_TMP/line"
t_is "$(tail -n 1 "$T_TMP/line")" "recovering: replay 5100/5100 blocks  100%" \
	"the progress line ends at 'recovering: replay 5100/5100 blocks  100%'"
grep -Eq '^recovering: revoke [0-9]+/5100 blocks +[0-9]+%$' "$T_TMP/line"
t_check $? "the line goes through the revoke pass" "$T_TMP/line"
tail -n +2 "$T_TMP/tty.raw" | tr -d '\r' | sed "s|$img.tty|IMG|" >"$T_TMP/tty.rest"
sed "s|$img.file|IMG|" "$T_TMP/out" | diff - "$T_TMP/tty.rest" >"$T_TMP/diff"
t_check $? "after the line, the report as with stderr a file" "$T_TMP/diff"
cmp "$img.file" "$img.tty" >/dev/null 2>&1
t_ok $? "the image replayed on a terminal equals the one replayed off it"
t_on_tty "$T_TMP/dry" "$REC -n $img.dry"
t_is "$(progress_line "$T_TMP/dry.raw" | tail -n 1)" "recovering: scan 5100/5100 blocks  100%" \
	"ext3d-recover -n: the line ends at the scan's 5100 blocks"

# (3) EXT3D_PROGRESS forces it: on into a file, off on a terminal.
EXT3D_PROGRESS=1 "$REC" "$img.on" >/dev/null 2>"$T_TMP/err"
tr '\r' '\n' <"$T_TMP/err" | grep -qx 'recovering: replay 5100/5100 blocks  100%'
t_check $? "EXT3D_PROGRESS=1: the line without a terminal" "$T_TMP/err"
t_on_tty "$T_TMP/off" "EXT3D_PROGRESS=0 $REC $img.off"
t_is "$(grep -c recovering "$T_TMP/off.raw")" 0 "EXT3D_PROGRESS=0: no line on a terminal"

# (4) Nothing to replay: no line.
t_on_tty "$T_TMP/clean" "$REC $img.tty"
t_is "$(grep -c recovering "$T_TMP/clean.raw")" 0 "a clean journal draws no line on a terminal"

# (5) journald-svc's replay at start, as status shows it after.
n=t-recprogress
if [ "$(id -u)" -ne 0 ]; then
	t_skip "needs root" "status shows journald-svc's replay"
else
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img.svc" --set BLOCKDEV_ARGS=
	t_ok $? "an instance starts on a copy, journald-svc replaying its journal"
	"$T_EXT3D" --instance $n status >"$T_TMP/status" 2>&1
	grep -qx 'recovered: 5100 log blocks replayed, 5000 blocks written' "$T_TMP/status"
	t_check $? "status says 'recovered: 5100 log blocks replayed, 5000 blocks written'" "$T_TMP/status"
	t_status $n >"$T_TMP/status.json" 2>&1
	grep -q '"recovery":{"pass":"done","done":5100,"total":5100,"blocks_written":5000}' "$T_TMP/status.json"
	t_check $? "status --json: the recovery record, done" "$T_TMP/status.json"
	t_instance_stop $n
	# Started again, on the image now clean: no replay, no record.
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img.svc" --set BLOCKDEV_ARGS=
	t_ok $? "the instance starts again on the replayed image"
	t_status $n >"$T_TMP/status.json" 2>&1
	grep -q '"recovery":null' "$T_TMP/status.json"
	t_check $? "status --json: no recovery record when the journal needed no replay" "$T_TMP/status.json"
	"$T_EXT3D" --instance $n status >"$T_TMP/status" 2>&1
	t_is "$(grep -c '^recover' "$T_TMP/status")" 0 "status text: no recovery line either"
	t_instance_stop $n
fi

for c in file tty on svc; do
	e2fsck -fn "$img.$c" >"$T_TMP/fsck" 2>&1
	t_check $? "e2fsck -fn: the image replayed ($c) is clean" "$T_TMP/fsck"
done
t_done
