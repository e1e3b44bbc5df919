# fusemnt.sh - kernel loop mounts and ext3d-fuse mounts for the FUSE shell
# tests. Source after tap.sh and instance.sh. Every mount made here is
# unmounted at exit whatever happens; a daemon still alive 10 s after its
# unmount is killed (and said so).
T_FUSE=$EXT3D_BUILD/client/fuse/ext3d-fuse

# t_fuse_missing: prints why an ext3d mount cannot run here, or nothing.
t_fuse_missing() {
	if [ ! -x "$T_FUSE" ]; then
		echo "ext3d-fuse is not built ($T_FUSE)"
	elif [ ! -c /dev/fuse ]; then
		echo "no /dev/fuse"
	fi
}

t_is_mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts; }

# t_kmount IMAGE DIR [OPTIONS]: the kernel's ext3 on a loop device.
t_kmount() {
	mkdir -p "$2"
	mount -o "loop${3:+,$3}" -t ext3 "$1" "$2" || return 1
	t_at_exit "t_umount $2"
}

# t_fuse_mount INSTANCE DIR: ext3d-fuse serving INSTANCE at DIR (extra
# daemon arguments from EXT3D_FUSE_ARGS); 0 once the mount is there.
t_fuse_mount() {
	mkdir -p "$2"
	# shellcheck disable=SC2086
	"$T_FUSE" --instance "$1" ${EXT3D_FUSE_ARGS:-} -f "$2" >>"$T_TMP/fuse-$1.log" 2>&1 &
	eval "t_fusepid_$(echo "$2" | tr -c 'a-zA-Z0-9\n' _)=$!"
	t_at_exit "t_umount $2"
	for _ in $(seq 100); do
		t_is_mounted "$2" && return 0
		kill -0 $! 2>/dev/null || break
		sleep 0.1
	done
	echo "# ext3d-fuse did not mount $2; its log:"
	sed 's/^/#   /' "$T_TMP/fuse-$1.log" | tail -20
	return 1
}

# t_umount DIR: unmounts DIR if mounted; waits for its ext3d-fuse, if any.
t_umount() {
	if t_is_mounted "$1"; then
		umount "$1" 2>/dev/null || { sleep 0.5; umount "$1" 2>/dev/null; } || umount -l "$1"
	fi
	eval "pid=\${t_fusepid_$(echo "$1" | tr -c 'a-zA-Z0-9\n' _):-}"
	[ -n "$pid" ] || return 0
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "# ext3d-fuse for $1 (pid $pid) still running 10 s after the unmount: killed"
	kill -9 "$pid" 2>/dev/null
}

# t_need_kmount: skips the whole test when the kernel cannot loop-mount ext3.
t_need_kmount() {
	mke2fs -q -F -t ext3 "$T_TMP/probe.img" 4M >/dev/null 2>&1
	mkdir -p "$T_TMP/probe"
	mount -o loop -t ext3 "$T_TMP/probe.img" "$T_TMP/probe" 2>/dev/null ||
		t_skip_all "no kernel ext3 loop mount here"
	umount "$T_TMP/probe"
	rm -f "$T_TMP/probe.img"
}

# t_mkimg IMAGE BLOCKSIZE [SIZE]: a fresh ext3 image with 256-byte inodes.
t_mkimg() { mke2fs -q -F -t ext3 -I 256 -b "$2" -N 4096 "$1" "${3:-64M}" >/dev/null 2>&1; }

# t_both NAME SCRIPT: runs the python SCRIPT in $T_TMP/mk (the kernel's
# mount) and $T_TMP/mx (ext3d-fuse's), each its working directory with
# argv[1] saying which (k or x); the outputs must be equal.
t_both() {
	for m in k x; do
		( cd "$T_TMP/m$m" && python3 -c "$2" $m ) >"$T_TMP/$1.$m" 2>&1
	done
	diff "$T_TMP/$1.k" "$T_TMP/$1.x" >"$T_TMP/diff" 2>&1
	t_ok $? "$1: the kernel and ext3d-fuse print the same ($(tr '\n' ' ' <"$T_TMP/$1.k" | cut -c1-100))"
	sed 's/^/#   /' "$T_TMP/diff" | head -20
}
