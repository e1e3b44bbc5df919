#!/bin/sh
# readpath.t - the read path end to end: images built by mke2fs -t ext3 -d
# from a generated tree (1 KiB and 4 KiB blocks; the big directory indexed
# by e2fsck -D) read back through libext3d and through the CLI equal to the
# tree; permission checks as an unprivileged uid; many clients at once; a
# client SIGKILLed mid-read leaves inode-svc serving the others.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

xt=$EXT3D_BUILD/tests/tools/x3-tree
chmod 755 "$T_TMP" # other uids reach the run directory through it
tree=$T_TMP/tree
nentries=${EXT3D_BIGDIR:-20000}
python3 "$T_TOP/tests/lib/mktree.py" "$tree" --big-dir "$nentries"
t_ok $? "test tree made ($nentries-entry directory)"
"$xt" host "$tree" >"$T_TMP/want" 2>"$T_TMP/want.err"
t_ok $? "manifest of the tree from the host"

start() { # start NAME IMAGE
	t_instance_start "$1" "$T_TOP/compose/ext3d.compose" --set "IMAGE=$2" --set BLOCKDEV_ARGS=
}

for bs in 1024 4096; do
	img=$T_TMP/img-$bs n=t-read-$bs
	[ $bs = 1024 ] && size=160M || size=256M
	mke2fs -q -F -t ext3 -b $bs -d "$tree" "$img" $size >"$T_TMP/mkfs.log" 2>&1
	t_ok $? "mke2fs -t ext3 -b $bs -d TREE"
	e2fsck -fyD "$img" >/dev/null 2>&1
	t_ok "$([ $? -le 1 ]; echo $?)" "e2fsck -fyD indexes the directories ($bs)"
	debugfs -R "stat /bigdir" "$img" 2>/dev/null | grep -q "Flags: 0x1000"
	t_ok $? "bigdir has the htree index flag ($bs)"
	start $n "$img"
	t_ok $? "instance on the $bs-byte-block image ready"

	"$xt" --instance $n ext3d / >"$T_TMP/got" 2>"$T_TMP/got.err"
	t_ok $? "libext3d walks the whole tree ($bs)"
	diff "$T_TMP/want" "$T_TMP/got" >"$T_TMP/diff"
	t_ok $? "every name, type, mode, owner, link count, size, content, target and device equals the tree ($bs)"
	head -20 "$T_TMP/diff" | sed 's/^/# /'

	"$xt" --instance $n statfs >"$T_TMP/statfs"
	sf() { awk -v k="$1" '$1 == k {print $2}' "$T_TMP/statfs"; }
	de() { dumpe2fs -h "$img" 2>/dev/null | sed -n "s/^$1: *//p"; }
	t_is "$(sf bsize) $(sf files) $(sf namemax)" "$(de 'Block size') $(de 'Inode count') 255" \
		"ext3d_statfs: block size, inodes as dumpe2fs says ($bs)"
	t_is "$(sf bfree) $(sf ffree)" "$(de 'Free blocks') $(de 'Free inodes')" \
		"ext3d_statfs: free blocks and inodes as dumpe2fs says ($bs)"
	t_is "$(sf bavail)" "$(( $(de 'Free blocks') - $(de 'Reserved block count') ))" \
		"ext3d_statfs: available = free - reserved ($bs)"

	mkdir -p "$T_TMP/mnt"
	if [ "$(id -u)" -eq 0 ] && mount -o ro,loop -t ext3 "$img" "$T_TMP/mnt" 2>/dev/null; then
		t_is "$(sf bsize) $(sf blocks) $(sf bfree) $(sf bavail) $(sf files) $(sf ffree)" \
			"$(stat -f -c '%S %b %f %a %c %d' "$T_TMP/mnt")" \
			"ext3d_statfs equals the kernel's statfs of the same image ($bs)"
		umount "$T_TMP/mnt"
	else
		t_skip "needs root and a loop mount" "ext3d_statfs against the kernel's ($bs)"
	fi

	"$T_EXT3D" --instance $n get /big "$T_TMP/big.out"
	cmp -s "$tree/big" "$T_TMP/big.out"
	t_ok $? "ext3d get of the double-indirect file is byte for byte ($bs)"
	"$T_EXT3D" --instance $n get /holes "$T_TMP/holes.out"
	cmp -s "$tree/holes" "$T_TMP/holes.out"
	t_ok $? "ext3d get of a file with holes is byte for byte ($bs)"
	t_is "$("$T_EXT3D" --instance $n cat /level0/level1/f0 | cksum)" "$(cksum <"$tree/level0/level1/f0")" \
		"ext3d cat ($bs)"
	t_is "$("$T_EXT3D" --instance $n cat /abs-link | cksum)" "$(cksum <"$tree/level0/level1/f0")" \
		"ext3d cat follows an absolute symlink ($bs)"
	t_is "$("$T_EXT3D" --instance $n ls /bigdir | grep -c '^entry-')" "$nentries" \
		"ext3d ls lists every entry of the big directory ($bs)"
	t_is "$("$T_EXT3D" --instance $n ls -aR / | grep -v '^$' | grep -v ':$' | grep -vc '^\.\.\?$')" \
		"$(( $(find "$tree" -mindepth 1 | wc -l) + 1 ))" "ext3d ls -R lists every name (and lost+found) ($bs)"
	"$T_EXT3D" --instance $n stat /big >"$T_TMP/stat"
	grep -q "Size: $(stat -c %s "$tree/big")" "$T_TMP/stat"
	t_ok $? "ext3d stat shows the size ($bs)"
	"$T_EXT3D" --instance $n ls -l / | grep -q "^lrwxrwxrwx .* fast-link -> big$"
	t_ok $? "ext3d ls -l shows a symlink's target ($bs)"
	"$T_EXT3D" --instance $n cat /no-such-file 2>"$T_TMP/err"
	t_ok "$([ $? -ne 0 ] && grep -q "No such file" "$T_TMP/err"; echo $?)" "a missing file: ENOENT ($bs)"
	"$T_EXT3D" --instance $n cat /level0 2>"$T_TMP/err"
	t_ok "$([ $? -ne 0 ] && grep -q "Is a directory" "$T_TMP/err"; echo $?)" "cat of a directory: EISDIR ($bs)"

	if [ $bs = 4096 ]; then
		# Several clients at once.
		pids=
		for k in 1 2 3 4; do
			"$xt" --instance $n ext3d / >"$T_TMP/par$k" 2>&1 &
			pids="$pids $!"
		done
		wait $pids
		ok=0
		for k in 1 2 3 4; do cmp -s "$T_TMP/want" "$T_TMP/par$k" || ok=1; done
		t_ok $ok "four clients walking the tree at once all read it right"

		t_ok "$([ "$(t_field $n cache.reads)" -gt 0 ] && [ "$(t_field $n cache.hits)" -gt 0 ]; echo $?)" \
			"status shows the buffer cache's reads and hits"
		t_ok "$([ "$(t_field $n locks.bcache.acquisitions)" -gt 0 ]; echo $?)" \
			"status shows the cache's stripe locks, folded into one line"

		# Several threads of one client.
		rb=$EXT3D_BUILD/bench/readbench
		want_sum=$("$rb" --sum posix "$tree" seqread /big | sed -n 's/.*sum=\([0-9a-f]*\).*/\1/p')
		got_sum=$("$rb" --sum --threads 4 ext3d $n seqread /big | sed -n 's/.*sum=\([0-9a-f]*\).*/\1/p')
		t_ok "$([ -n "$want_sum" ] && [ "$want_sum" = "$got_sum" ]; echo $?)" \
			"four threads of one client read /big in ranges, checksum equal ($got_sum)"
		got=$("$rb" --threads 4 --mode plus ext3d $n walk / | sed -n 's/.* entries=\([0-9]*\).*/\1/p')
		want=$("$rb" posix "$tree" walk / | sed -n 's/.* entries=\([0-9]*\).*/\1/p')
		t_is "$got" "$((want + 1))" "four threads of one client walk the tree (and lost+found)"

		# A connection that never sends its attach message delays nobody
		# (before, it held the session manager for up to 5 s) and is dropped.
		python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
time.sleep(8)' "$EXT3D_RUNDIR/$n/session.sock" &
		staller=$!
		sleep 0.3
		t_is "$(timeout 4 "$T_EXT3D" --instance $n cat /one-byte)" x \
			"a client attaches while another connection stalls its attach"
		sleep 5.5
		grep -q "sent no attach message" "$T_TMP/$n.log"
		t_ok $? "the stalled connection is dropped after its time"
		kill $staller 2>/dev/null; wait $staller 2>/dev/null

		# A client killed in the middle of a read.
		ino_pid=$(t_svc_pid $n inode-svc)
		( while :; do "$T_EXT3D" --instance $n cat /big >/dev/null; done ) &
		loop=$!
		sleep 1
		pkill -KILL -P $loop ext3d; kill -KILL $loop 2>/dev/null; wait $loop 2>/dev/null
		sleep 0.3
		"$xt" --instance $n ext3d / >"$T_TMP/after" 2>&1
		cmp -s "$T_TMP/want" "$T_TMP/after"
		t_ok $? "after a client was SIGKILLed mid-read, another reads the whole tree"
		t_is "$(t_svc_pid $n inode-svc)" "$ino_pid" "inode-svc was not disturbed"
		grep -q "detached" "$T_TMP/$n.log"
		t_ok $? "the dead client's session was cleaned up"

		# Permission checks as another uid.
		if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
			as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
			as_nobody "$T_EXT3D" --instance $n cat /world-readable >"$T_TMP/o" 2>&1
			t_is "$(cat "$T_TMP/o")" everyone "an unprivileged uid reads a 0644 file"
			as_nobody "$T_EXT3D" --instance $n cat /root-only >"$T_TMP/o" 2>&1
			grep -q "Permission denied" "$T_TMP/o"
			t_ok $? "an unprivileged uid cannot read a 0600 root file (EACCES)"
			as_nobody "$T_EXT3D" --instance $n cat /private/secret >"$T_TMP/o" 2>&1
			grep -q "Permission denied" "$T_TMP/o"
			t_ok $? "nor look up a name in a 0700 directory"
			as_nobody "$T_EXT3D" --instance $n ls /no-exec >"$T_TMP/o" 2>&1
			t_ok $? "lists a readable directory without search permission"
			as_nobody "$T_EXT3D" --instance $n cat /group-readable >"$T_TMP/o" 2>&1
			grep -q "Permission denied" "$T_TMP/o"
			t_ok $? "cannot read a 0640 file of another group"
			setpriv --reuid=65534 --regid=65534 --groups=100 "$T_EXT3D" --instance $n \
				cat /group-readable >"$T_TMP/o" 2>&1
			t_is "$(cat "$T_TMP/o")" "group 100" "reads it as a member of that supplementary group"
			as_nobody "$T_EXT3D" --instance $n cat /nobody-file >"$T_TMP/o" 2>&1
			t_is "$(cat "$T_TMP/o")" nobody-file "reads its own file"
		else
			t_skip "needs root and setpriv" "permission checks as another uid"
		fi
	fi
	t_instance_stop $n
	e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
	t_ok $? "e2fsck -fn finds nothing to fix afterwards ($bs)"
done

# A corrupt directory block: the client gets EUCLEAN, the log names the
# inode and block, and inode-svc goes on serving.
img=$T_TMP/img-1024 n=t-corrupt
blk=$(debugfs -R "blocks /level0" "$img" 2>/dev/null | awk '{print $1}')
printf '\005\000' | dd of="$img" bs=1 seek=$((blk * 1024 + 4)) conv=notrunc status=none
start $n "$img"
t_ok $? "instance on an image with a corrupt directory (block $blk)"
"$T_EXT3D" --instance $n ls /level0 >"$T_TMP/o" 2>&1
grep -q "Structure needs cleaning" "$T_TMP/o"
t_ok $? "listing the corrupt directory: EUCLEAN"
grep -q "corrupt directory.*blk=$blk" "$T_TMP/$n.log"
t_ok $? "the log names the directory's block"
ino_pid=$(t_svc_pid $n inode-svc)
t_is "$("$T_EXT3D" --instance $n cat /level0-missing 2>&1; "$T_EXT3D" --instance $n cat /one-byte)" \
	"ext3d: /level0-missing: No such file or directory
x" "the rest of the image is still served"
t_is "$(t_svc_pid $n inode-svc)" "$ino_pid" "inode-svc did not crash"
t_instance_stop $n

# An image with features ext3d does not serve is refused by name.
mke2fs -q -F -t ext4 "$T_TMP/ext4.img" 64M >/dev/null 2>&1
start t-ext4 "$T_TMP/ext4.img" >/dev/null 2>&1
t_ok "$([ $? -ne 0 ]; echo $?)" "an ext4 image is not served"
grep -q "unsupported.*extent" "$T_TMP/t-ext4.log"
t_ok $? "the refusal names the feature: $(grep -o "unsupported[^:]*: .*" "$T_TMP/t-ext4.log" | head -1)"

t_done
