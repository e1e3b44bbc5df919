#!/bin/sh
# holders.t - a process SIGKILLed while it holds shared state of the arena
# (tests/tools/lock-holder, run as one more service after inode-svc): the
# journal's j_list_lock or j_state_lock, a bh_state stripe, a buffer-cache
# hash stripe, a LOCKED buffer, an open journal handle; and a service that
# dies executing a request (which, unlike block I/O, must not be executed
# again by a restart of that service alone). Each time the
# supervisor restarts the whole group on a new arena, says why in its log,
# the instance is ready again, a read that was waiting behind the held
# stripe or buffer ends (no hang), and ext3d cat gives the file's bytes.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

img=$T_TMP/img tree=$T_TMP/tree
mkdir -p "$tree"
python3 -c '
import random, sys
r = random.Random(11)
with open(sys.argv[1] + "/f", "wb") as f:
    f.write(bytes(r.getrandbits(8) for _ in range(200000)))' "$tree"
mke2fs -q -F -t ext3 -d "$tree" "$img" 64M >/dev/null 2>&1
t_ok $? "image with a 200000-byte file"
blk=$(debugfs -R "bmap /f 0" "$img" 2>/dev/null)
t_ok "$([ "${blk:-0}" -gt 0 ] 2>/dev/null; echo $?)" "its first data block is block ${blk:-?}"

compose=$T_TMP/holders.compose
cp "$T_TOP/compose/ext3d.compose" "$compose"
echo 'service lock-holder never ${BUILD}/tests/tools/lock-holder --hold=${HOLD} --block=${HOLD_BLOCK} --once=${HOLD_ONCE}' >>"$compose"

# ends PID SECONDS: 0 if PID ended within SECONDS.
ends() {
	for _ in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}

# case_hold WHAT WANT: hold WHAT, read behind it, kill the holder; WANT is
# how the supervisor's log must say it died.
case_hold() {
	what=$1 want=$2 n=t-hold-$1
	t_instance_start $n "$compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
		--set "HOLD=$what" --set "HOLD_BLOCK=$blk" --set "HOLD_ONCE=$T_TMP/once-$what"
	t_ok $? "$what: instance with a process holding $what is ready"
	"$T_EXT3D" --instance $n cat /f >"$T_TMP/bg-$what" 2>"$T_TMP/bg-$what.err" &
	bg=$!
	sleep 0.5
	case $what in stripe|locked)
		t_ok "$(kill -0 $bg 2>/dev/null; echo $?)" "$what: a read of the file waits behind it";;
	esac
	"$T_EXT3D" --instance $n kill lock-holder
	t_instance_wait_ready $n
	t_is "$(t_field $n generation)" 1 "$what: its death restarted the group (generation 1)"
	grep -Eq "lock-holder died $want|lost its owner" "$T_TMP/$n.log"
	t_ok $? "$what: the log says why ($want)"
	grep -E "group restart in" "$T_TMP/$n.log" | head -1 | sed 's/^/# /'
	ends $bg 30
	t_ok $? "$what: the read that was running ended (no hang)"
	wait $bg 2>/dev/null
	if cmp -s "$T_TMP/bg-$what" "$tree/f"; then
		t_diag "$what: the waiting read then gave the right bytes"
	else
		t_diag "$what: the waiting read failed cleanly: $(head -c 200 "$T_TMP/bg-$what.err")"
	fi
	"$T_EXT3D" --instance $n cat /f >"$T_TMP/got-$what" 2>"$T_TMP/got-$what.err"
	t_ok "$(cmp -s "$T_TMP/got-$what" "$tree/f"; echo $?)" "$what: ext3d cat gives the file's bytes"
	t_is "$(t_field $n supervisor.state)" ready "$what: status ready"
	t_instance_stop $n
}

case_hold j_list_lock "holding j_list_lock"
case_hold j_state_lock "holding j_state_lock"
case_hold bh_state "holding bh_state"
case_hold stripe "holding a bcache stripe"
case_hold locked "holding 1 LOCKED buffer \\(block $blk\\)"
case_hold handle "holding a journal handle"
case_hold call "executing a request on channel [0-9]+, which must not run twice"
t_done
