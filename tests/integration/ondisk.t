#!/bin/sh
# ondisk.t - common/ondisk.c against e2fsprogs: ondisk-dump decodes fresh
# mke2fs images and every field it prints must equal dumpe2fs's, line for
# line (superblock, each group descriptor, journal superblock); damaged
# superblocks and journal superblocks must be refused.
set -u
. "$(dirname "$0")/../lib/tap.sh"

PATH=$PATH:/sbin:/usr/sbin
export LC_ALL=C
DUMP=$EXT3D_BUILD/tests/tools/ondisk-dump

command -v mke2fs >/dev/null 2>&1 || t_skip_all "needs mke2fs"
command -v dumpe2fs >/dev/null 2>&1 || t_skip_all "needs dumpe2fs"
if [ ! -x "$DUMP" ]; then
	t_ok 1 "ondisk-dump is built ($DUMP)"
	t_done
	exit 1
fi

# line LABEL FILE: the first line starting with "LABEL:".
line() { grep -m1 "^$1:" "$2"; }

# value LABEL FILE: what follows "LABEL:" and its padding.
value() { line "$1" "$2" | sed "s/^$1:[[:space:]]*//"; }

# check_line NAME LABEL [DEFAULT]: ondisk-dump's line equals dumpe2fs's;
# where dumpe2fs omits the line and DEFAULT is given (dumpe2fs leaves out
# values it considers usual), ondisk-dump's value must equal DEFAULT.
check_line() {
	want=$(line "$2" "$T_TMP/$1.e2")
	if [ -z "$want" ] && [ $# -ge 3 ]; then
		t_is "$(value "$2" "$T_TMP/$1.dump")" "$3" "$1: $2 (default)"
	else
		t_is "$(line "$2" "$T_TMP/$1.dump")" "$want" "$1: $2"
	fi
}

check_super() { # check_super NAME
	while read -r label; do
		check_line "$1" "$label"
	done <<EOF
Inode count
Block count
Reserved block count
Free blocks
Free inodes
First block
Block size
Blocks per group
Inodes per group
Inode size
Filesystem magic number
Filesystem UUID
Filesystem features
Reserved GDT blocks
Journal inode
Journal backup
EOF
}

check_journal() { # check_journal NAME
	check_line "$1" "Journal features"
	check_line "$1" "Journal block size" "$(value "Block size" "$T_TMP/$1.e2")"
	check_line "$1" "Total journal blocks"
	check_line "$1" "Journal first block" 1
	check_line "$1" "Journal sequence"
	check_line "$1" "Journal start"
}

# Both sides as "group block-bitmap inode-bitmap inode-table free-blocks
# free-inodes dirs", one group per line.
groups_e2() {
	awk '/^Group [0-9]+:/ { g = $2; sub(/:$/, "", g) }
	     /^  Block bitmap at / { bb = $4 }
	     /^  Inode bitmap at / { ib = $4 }
	     /^  Inode table at / { split($4, a, "-"); it = a[1] }
	     / free blocks, .* free inodes, .* directories/ {
		print g, bb, ib, it, $1, $4, $7 }' "$1"
}
groups_dump() {
	sed -n 's/^Group \([0-9]*\): block bitmap \([0-9]*\), inode bitmap \([0-9]*\), inode table \([0-9]*\), free blocks \([0-9]*\), free inodes \([0-9]*\), used dirs \([0-9]*\)$/\1 \2 \3 \4 \5 \6 \7/p' "$1"
}

check_groups() { # check_groups NAME
	groups_e2 "$T_TMP/$1.e2full" >"$T_TMP/$1.g.e2"
	groups_dump "$T_TMP/$1.dump" >"$T_TMP/$1.g.dump"
	t_is "$(wc -l <"$T_TMP/$1.g.dump")" "$(wc -l <"$T_TMP/$1.g.e2")" \
		"$1: group count"
	# one "group want got field" line per field of each dumpe2fs group
	awk 'NR == FNR { for (i = 2; i <= 7; i++) got[$1, i] = $i; next }
	     { split("block bitmap,inode bitmap,inode table,free blocks," \
		     "free inodes,used dirs", name, ",")
	       for (i = 2; i <= 7; i++)
		print $1, $i, (($1, i) in got ? got[$1, i] : "none"),
		      name[i - 1] }' \
		"$T_TMP/$1.g.dump" "$T_TMP/$1.g.e2" >"$T_TMP/$1.g.pairs"
	while read -r g want got field; do
		t_is "$got" "$want" "$1: group $g $field"
	done <"$T_TMP/$1.g.pairs"
}

check_image() { # check_image NAME SIZE MKE2FS-OPTION...
	name=$1 size=$2 img=$T_TMP/$1.img
	shift 2
	t_run "$name: mke2fs $* $size" mke2fs -q -F -t ext3 "$@" "$img" "$size"
	dumpe2fs -h "$img" >"$T_TMP/$name.e2" 2>/dev/null
	dumpe2fs "$img" >"$T_TMP/$name.e2full" 2>/dev/null
	"$DUMP" "$img" >"$T_TMP/$name.dump" 2>"$T_TMP/$name.err"
	t_ok $? "$name: ondisk-dump exits 0"
	sed 's/^/# /' "$T_TMP/$name.err"
	check_super "$name"
	check_groups "$name"
	check_journal "$name"
}

check_image k1 64M -b 1024
check_image k4 256M -b 4096
check_image i128 64M -b 1024 -I 128

# expect_refused NAME IMAGE WORD: ondisk-dump fails, naming WORD.
expect_refused() {
	if "$DUMP" "$2" >/dev/null 2>"$T_TMP/$1.err"; then
		t_ok 1 "$1: ondisk-dump exits non-zero"
	else
		t_ok 0 "$1: ondisk-dump exits non-zero"
	fi
	grep -qi "$3" "$T_TMP/$1.err"
	t_ok $? "$1: the message mentions $3"
	t_diag "$(cat "$T_TMP/$1.err")"
}

# poke IMAGE OFFSET BYTES: overwrite bytes (\0NNN escapes) in place.
poke() {
	printf '%b' "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# Damaged copies of the 1K image.
cp "$T_TMP/k1.img" "$T_TMP/bad.img"
poke "$T_TMP/bad.img" $((0x438)) '\000\000'
expect_refused "bad magic" "$T_TMP/bad.img" magic

cp "$T_TMP/k1.img" "$T_TMP/bs.img"
poke "$T_TMP/bs.img" $((1024 + 0x18)) '\007'
expect_refused "block size 128K" "$T_TMP/bs.img" "block size"

dd if="$T_TMP/k1.img" of="$T_TMP/short.img" bs=1M count=32 2>/dev/null
expect_refused "truncated image" "$T_TMP/short.img" "image too small"

mke2fs -q -F -t ext4 "$T_TMP/ext4.img" 64M >/dev/null 2>&1
expect_refused "ext4 image" "$T_TMP/ext4.img" "unsupported features: extent"

cp "$T_TMP/k1.img" "$T_TMP/jsb.img"
jblk=$(debugfs -R "bmap <8> 0" "$T_TMP/jsb.img" 2>/dev/null)
case $jblk in
[1-9]*)
	poke "$T_TMP/jsb.img" $((jblk * 1024)) '\000\000\000\000'
	expect_refused "journal magic" "$T_TMP/jsb.img" "journal magic" ;;
*)
	t_skip "no debugfs bmap" "journal magic: ondisk-dump exits non-zero"
	t_skip "no debugfs bmap" "journal magic: the message mentions it" ;;
esac

t_done
