#!/bin/sh
# killstorm.t - SIGKILLs of random services at random moments (some back to
# back within milliseconds) while several libext3d clients read files and
# check every byte against the host's copies (tests/tools/x3-storm):
# afterwards every service is ready, every read was right or a clean error
# (EIO, ETIMEDOUT), and no call waited past its deadline. 200 kills with a
# restart delay capped at 250 ms; EXT3D_LONG=1: 500 kills with the default
# cap (1 s).
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

kills=200 cap=250 deadline=${EXT3D_CALL_TIMEOUT_MS:-10000}
[ -n "${EXT3D_LONG:-}" ] && kills=500 cap=1000
tree=$T_TMP/tree img=$T_TMP/img n=t-storm
mkdir -p "$tree"
python3 -c '
import random, sys
r = random.Random(7)
for i in range(1, 7):
    with open("%s/f%d" % (sys.argv[1], i), "wb") as f:
        f.write(bytes(r.getrandbits(8) for _ in range(i * i * 60000 + i)))' "$tree"
mke2fs -q -F -t ext3 -d "$tree" "$img" 64M >/dev/null 2>&1
t_ok $? "image with six files of known content"
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS= \
	--restart-delay-max $cap
t_ok $? "instance ready"
sup=$(t_field $n supervisor.pid)

"$EXT3D_BUILD/tests/tools/x3-storm" --instance $n --threads 3 --stop "$T_TMP/stop" \
	"$tree" f1 f2 f3 f4 f5 f6 >"$T_TMP/storm.out" 2>&1 &
storm=$!
t_at_exit "touch $T_TMP/stop; kill $storm 2>/dev/null"
sleep 0.5
start=$(date +%s)
python3 "$T_TOP/tests/lib/killer.py" "$sup" $kills blockdev-svc journald-svc alloc-svc inode-svc \
	--seed 11 --give-up $((kills * 2)) >"$T_TMP/killer.out" 2>&1
t_ok $? "$kills SIGKILLs sent: $(cat "$T_TMP/killer.out")"
t_diag "the storm took $(($(date +%s) - start)) s"
t_instance_wait_ready $n
t_ok $? "the instance is ready afterwards"
t_is "$(t_status $n | python3 -c 'import json,sys; print(" ".join(s["state"] for s in json.load(sys.stdin)["services"]))')" \
	"ready ready ready ready unmounted" "every service is ready (ext3d-fuse: not mounted)"
"$T_EXT3D" --instance $n status >/dev/null
t_is $? 0 "status exits 0 (ready)"
t_is "$(t_field $n supervisor.pid)" "$sup" "the same supervisor (it never gave up)"

touch "$T_TMP/stop"
for _ in $(seq $((deadline / 100 + 100))); do kill -0 $storm 2>/dev/null || break; sleep 0.1; done
wait $storm
t_ok $? "the clients saw no wrong byte and no error but EIO or ETIMEDOUT"
grep -v '^# timed out' "$T_TMP/storm.out" | sed 's/^/# /'
ok=$(t_storm "$T_TMP/storm.out" ok) longest=$(t_storm "$T_TMP/storm.out" max_wait_ms)
t_is "$(t_storm "$T_TMP/storm.out" bad)" 0 "no wrong byte"
t_is "$(t_storm "$T_TMP/storm.out" other)" 0 "no other error"
t_ok "$([ "${ok:-0}" -gt 0 ]; echo $?)" "reads succeeded during the storm (${ok:-0})"
t_ok "$([ "${longest:-999999}" -le $((deadline + 1000)) ]; echo $?)" \
	"no call waited past its deadline of $deadline ms (longest: ${longest:-?} ms)"

"$EXT3D_BUILD/tests/tools/x3-storm" --instance $n --threads 2 --seconds 1 \
	"$tree" f1 f2 f3 f4 f5 f6 >"$T_TMP/after.out" 2>&1
t_ok $? "reads after the storm are right"
t_is "$(t_storm "$T_TMP/after.out" eio)/$(t_storm "$T_TMP/after.out" etimedout)" 0/0 \
	"and none fails (EIO/ETIMEDOUT)"
t_instance_stop $n
t_done
