# corrupt.sh - the undamaged base images that tests/tools/corrupt-gen.py
# damages, shared by corrupt.t (reads) and corruptw.t (writes). Source
# after tap.sh. t_corrupt_bases makes $tree, $base1k and $base4k (1 KiB and
# 4 KiB blocks, every structure the generator damages in them, directories
# indexed) and says so in two TAP lines.
t_corrupt_bases() {
	command -v mke2fs >/dev/null || export PATH=/usr/sbin:/sbin:$PATH
	tree=$T_TMP/tree
	mkdir -p "$tree/a/b/c" "$tree/h"
	printf 'hello\n' >"$tree/small"
	head -c 20000 /dev/urandom >"$tree/ind"
	head -c 300000 /dev/urandom >"$tree/dind"
	printf x | dd of="$tree/sparse" bs=1 seek=5000000 status=none
	ln -s small "$tree/fast"
	ln -s "$(printf './%.0s' $(seq 47))small" "$tree/slow" # 99 bytes: a slow symlink
	echo deep >"$tree/a/b/c/f"
	ln "$tree/small" "$tree/a/hard"
	mkfifo "$tree/fifo"
	for i in $(seq -w 0 400); do : >"$tree/h/entry-$i"; done
	base1k=$T_TMP/base-1k.img base4k=$T_TMP/base-4k.img
	mke2fs -q -F -t ext3 -b 1024 -J size=1 -N 512 -d "$tree" "$base1k" 4M >/dev/null 2>&1 &&
		mke2fs -q -F -t ext3 -b 4096 -J size=4 -N 512 -d "$tree" "$base4k" 12M >/dev/null 2>&1
	t_ok $? "base images made (1 KiB and 4 KiB blocks)"
	e2fsck -fyD "$base1k" >/dev/null 2>&1; e2fsck -fyD "$base4k" >/dev/null 2>&1
	e2fsck -fn "$base1k" >/dev/null 2>&1 && e2fsck -fn "$base4k" >/dev/null 2>&1
	t_ok $? "base images pass e2fsck, directories indexed"
}
