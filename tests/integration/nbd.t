#!/bin/sh
# nbd.t - an instance on NBD exports served by nbdkit: the file plugin on
# a unix socket and the memory plugin on TCP loopback. An image built by
# mke2fs -d from a tree reads back equal to the tree; writes read back
# through debugfs and leave e2fsck -fn clean; status names the transport,
# the export and its latency; a read-only export runs a read-only
# instance (EROFS, the image unchanged) and refuses one whose journal
# needs replaying; an unreachable server and a TLS URI are refused with a
# reason. (The suites written for files run on exports with
# EXT3D_TEST_NBD: see nbdsuites.t; faults: nbdfault.t.)
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/imgcheck.sh"

t_need_nbdkit
command -v nbdcopy >/dev/null 2>&1 || t_skip_all "needs nbdcopy (libnbd-bin)"
xt=$EXT3D_BUILD/tests/tools/x3-tree
tree=$T_TMP/tree
python3 "$T_TOP/tests/lib/mktree.py" "$tree" --big-dir 500
"$xt" host "$tree" >"$T_TMP/want" 2>"$T_TMP/want.err"
t_ok $? "manifest of the test tree"
img=$T_TMP/img
mke2fs -q -F -t ext3 -b 4096 -d "$tree" "$img" 64M >/dev/null 2>&1
t_ok $? "mke2fs -t ext3 -d TREE"
head -c 3000000 /dev/urandom >"$T_TMP/data"

start() { # start NAME URI [BLOCKDEV ARGS]
	t_instance_start "$1" "$T_TOP/compose/ext3d.compose" --set "IMAGE=$2" \
		--set "BLOCKDEV_ARGS=${3:-}"
}
field() { t_field "$1" "$2" 2>/dev/null; }
# same IMAGE PATH FILE MSG: debugfs dumps PATH from IMAGE equal to FILE.
same() {
	rm -f "$T_TMP/dump"
	debugfs -R "dump $2 $T_TMP/dump" "$1" >/dev/null 2>&1
	cmp -s "$T_TMP/dump" "$3"
	t_ok $? "$4"
}

# The file plugin on a unix socket: read path, write path, status.
t_nbdkit_start file unix file "$img"
t_ok $? "nbdkit serves the image (file plugin, unix socket)"
uri=$t_nbd_uri n=t-nbd
start $n "$uri"
t_ok $? "instance on $uri ready"
"$xt" --instance $n ext3d / >"$T_TMP/got" 2>"$T_TMP/got.err"
diff "$T_TMP/want" "$T_TMP/got" >"$T_TMP/diff"
t_check $? "the whole tree reads back equal over NBD" "$T_TMP/diff"
t_is "$(field $n device.transport)" nbd-unix "status: transport nbd-unix"
t_is "$(field $n device.where)" "$uri" "status: the export's URI"
t_is "$(field $n device.link)" up "status: link up"
t_ok "$([ "$(field $n device.requests)" -gt 0 ] && [ "$(field $n device.p99_us)" -gt 0 ]; echo $?)" \
	"status: requests counted, with a p99 latency"
t_ok "$([ "$(field $n device.max_in_flight)" -gt 1 ]; echo $?)" \
	"several requests were in flight at once ($(field $n device.max_in_flight))"
"$T_EXT3D" --instance $n status >"$T_TMP/st.txt"
grep -q "^device: nbd-unix $uri, link up" "$T_TMP/st.txt"
t_check $? "status's text names the device" "$T_TMP/st.txt"
{ "$T_EXT3D" --instance $n mkdir /new && "$T_EXT3D" --instance $n put "$T_TMP/data" /new/data &&
	"$T_EXT3D" --instance $n rm /dangling && "$T_EXT3D" --instance $n sync; } >"$T_TMP/w.out" 2>&1
t_check $? "mkdir, put, rm and sync over NBD" "$T_TMP/w.out"
t_instance_stop $n
t_img_fsck "$img" "after writes over the unix socket"
same "$img" /new/data "$T_TMP/data" "debugfs reads back the file written over NBD"
debugfs -R "stat /dangling" "$img" 2>&1 | grep -q "File not found"
t_ok $? "debugfs: the removed file is gone"

# The memory plugin on TCP loopback: the image only ever lives in nbdkit.
t_nbdkit_start mem tcp memory 64M
t_ok $? "nbdkit serves a 64 MiB memory export on 127.0.0.1"
memuri=$t_nbd_uri
nbdcopy "$img" "$memuri" >"$T_TMP/copy.out" 2>&1
t_check $? "nbdcopy puts the image into the memory export" "$T_TMP/copy.out"
start $n "$memuri"
t_ok $? "instance on $memuri ready"
t_is "$(field $n device.transport)" nbd-tcp "status: transport nbd-tcp"
{ "$T_EXT3D" --instance $n put "$T_TMP/data" /new/tcp && "$T_EXT3D" --instance $n mv /new/data /moved &&
	"$T_EXT3D" --instance $n sync; } >"$T_TMP/w.out" 2>&1
t_check $? "put, mv and sync over TCP" "$T_TMP/w.out"
t_instance_stop $n
nbdcopy "$memuri" "$T_TMP/memimg" >"$T_TMP/copy.out" 2>&1
t_check $? "nbdcopy takes the image back out" "$T_TMP/copy.out"
t_img_fsck "$T_TMP/memimg" "after writes to the memory export"
same "$T_TMP/memimg" /new/tcp "$T_TMP/data" "debugfs reads back the file written over TCP"
same "$T_TMP/memimg" /moved "$T_TMP/data" "and the renamed one"
t_nbdkit_stop mem

# A read-only export: a read-only instance, the image untouched.
t_nbdkit_stop file
t_nbdkit_start file unix -r file "$img"
t_ok $? "nbdkit serves the image read-only"
sum=$(md5sum <"$img")
start $n "$uri"
t_ok $? "instance on the read-only export ready"
t_is "$(field $n device.read_only)" True "status: read_only"
"$T_EXT3D" --instance $n status | grep -q "READ-ONLY export: writes get EROFS"
t_ok $? "status's text says the export is read-only"
"$T_EXT3D" --instance $n cat /new/data | cmp -s - "$T_TMP/data"
t_ok $? "a file reads back from the read-only export"
"$T_EXT3D" --instance $n mkdir /nope 2>"$T_TMP/ro.err"
t_ok "$(grep -q "Read-only file system" "$T_TMP/ro.err"; echo $?)" "mkdir gets EROFS"
"$T_EXT3D" --instance $n put "$T_TMP/data" /new/nope 2>"$T_TMP/ro.err"
t_ok "$(grep -q "Read-only file system" "$T_TMP/ro.err"; echo $?)" "a write gets EROFS"
t_instance_stop $n
t_is "$(md5sum <"$img")" "$sum" "the image is byte for byte what it was"

# A journal that needs replaying on a read-only export is refused: the
# group is killed after a sync, leaving needs_recovery set.
t_nbdkit_stop file
t_nbdkit_start file unix file "$img"
start $n "$uri"
"$T_EXT3D" --instance $n put "$T_TMP/data" /new/dirty >/dev/null 2>&1 &&
	"$T_EXT3D" --instance $n sync >/dev/null 2>&1
t_ok $? "a write synced, then the whole instance is killed"
eval "sup=\$t_pid_$(echo $n | tr -c 'a-zA-Z0-9\n' _)"
pids="$sup $(for s in blockdev-svc journald-svc alloc-svc inode-svc; do t_svc_pid $n $s; done)"
kill -9 $pids 2>/dev/null
for p in $pids; do while ! t_pid_gone "$p"; do sleep 0.05; done; done
dumpe2fs -h "$img" 2>/dev/null | grep -q needs_recovery
t_ok $? "needs_recovery is set on the image"
t_nbdkit_stop file
t_nbdkit_start file unix -r file "$img"
start $n "$uri" >/dev/null
t_ok "$([ $? -ne 0 ]; echo $?)" "an instance on the read-only export does not start"
grep -q "the journal needs recovery and the device is read-only" "$T_TMP/$n.log"
t_ok $? "its log says why: the journal needs recovery"
t_instance_stop $n
t_nbdkit_stop file
t_nbdkit_start file unix file "$img"
start $n "$uri"
t_ok $? "writable again, the instance replays the journal and starts"
"$T_EXT3D" --instance $n cat /new/dirty | cmp -s - "$T_TMP/data"
t_ok $? "the synced file is there after the replay"
t_instance_stop $n
t_img_fsck "$img" "after the replay over NBD"

# compose/up takes the URI as its --image (it makes no image for one).
if [ "$(cd "$EXT3D_BUILD" && pwd)" = "$T_TOP/build" ]; then
	up=t-nbd-up-$$
	t_at_exit "$T_TOP/compose/down --instance $up >/dev/null 2>&1"
	"$T_TOP/compose/up" --instance $up --image "$uri" --device-timeout 5 >"$T_TMP/up.out" 2>&1
	t_check $? "compose/up --image $uri --device-timeout 5" "$T_TMP/up.out"
	t_is "$(t_field $up device.transport 2>/dev/null)" nbd-unix "its status names the NBD transport"
	"$T_EXT3D" --instance $up cat /new/dirty | cmp -s - "$T_TMP/data"
	t_ok $? "and it serves the export's files"
	"$T_TOP/compose/down" --instance $up >/dev/null 2>&1
	t_ok $? "compose/down stops it"
else
	t_skip "compose/up needs EXT3D_BUILD=build/" "compose/up --image URI"
fi

# Refusals with a reason.
start t-nbd-gone "nbd+unix:///?socket=$T_TMP/no-such.sock" >/dev/null
t_ok "$([ $? -ne 0 ]; echo $?)" "an instance on an unreachable server does not start"
grep -q "cannot connect to nbd+unix:///?socket=$T_TMP/no-such.sock" "$T_TMP/t-nbd-gone.log"
t_ok $? "its log names the server it could not reach"
t_instance_stop t-nbd-gone
start t-nbd-tls "nbds+unix:///?socket=$T_TMP/nbd/file.sock" >/dev/null
t_ok "$([ $? -ne 0 ]; echo $?)" "a TLS URI does not start"
grep -q "TLS (nbds) is not supported" "$T_TMP/t-nbd-tls.log"
t_ok $? "its log says TLS is not supported"
t_instance_stop t-nbd-tls
t_done
