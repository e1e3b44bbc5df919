# twin.sh - an ext3d instance and a kernel twin of the same image, for the
# tests that hold inode-svc's permission rules to the kernel's answers.
# Source after tap.sh and instance.sh.

# t_twin_need: skips the whole test unless root with setpriv; lets uid
# 65534 (as_nobody CMD...) reach the run directory.
t_twin_need() {
	t_need_root "runs clients as uid 65534"
	command -v setpriv >/dev/null || t_skip_all "needs setpriv"
	chmod 755 "$T_TMP"
}
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# t_twin_start NAME WHAT: $T_TMP/img made from the tree $T_TMP/tree (owners
# and modes kept), its copy $T_TMP/twin, and instance NAME serving img.
t_twin_start() {
	mke2fs -q -F -t ext3 -d "$T_TMP/tree" "$T_TMP/img" 16M >"$T_TMP/mkfs.log" 2>&1
	t_ok $? "mke2fs -t ext3 $2"
	cp "$T_TMP/img" "$T_TMP/twin"
	t_instance_start "$1" "$T_TOP/compose/ext3d.compose" --set "IMAGE=$T_TMP/img" \
		--set BLOCKDEV_ARGS=
	t_ok $? "instance ready"
}

# t_twin_kernel CALL: with the twin mounted by the kernel, runs os.CALL as
# uid 65534 for each line of stdin ("/PATH... NUMBER...", numbers with a
# leading 0 octal, 0x hex) and prints "ok" or the errno's name for each;
# prints nothing without a kernel ext3 loop mount.
t_twin_kernel() {
	mkdir -p "$T_TMP/k"
	mount -o loop -t ext3 "$T_TMP/twin" "$T_TMP/k" 2>/dev/null || return 0
	as_nobody /usr/bin/python3 -c '
import errno, os, sys
call, top = getattr(os, sys.argv[1]), sys.argv[2]
def arg(w):
    if w.startswith("/"):
        return top + w
    return int(w, 8 if w[:1] == "0" and w[:2] != "0x" else 0)
for line in sys.stdin:
    try:
        call(*[arg(w) for w in line.split()])
        print("ok")
    except OSError as e:
        print(errno.errorcode[e.errno])' "$1" "$T_TMP/k" 2>&1
	umount "$T_TMP/k"
}
