#!/bin/sh
# writeops.t - inode-svc's write operations end to end, in the three data
# modes (ordered at 1 KiB blocks, journal at 4 KiB, writeback at 1 KiB):
# every op with its error cases as root (wops scripts: each line an op and
# the answer the kernel gives), the same as uid 65534 against permissions
# and a sticky directory, data written and read back, truncate shrink and
# grow, rename's EXCHANGE, acting for another user (ext3d_act_as), punch
# hole, fsync / fdatasync / sync (fsync commits at once; fdatasync skips a
# change of timestamps only), a file unlinked while another session
# holds it freed when that session forgets it or ends and, when the group
# restarts first, by the orphan list at start. A small image is filled to
# ENOSPC and out of inodes. Then shutdown: e2fsck -fn clean,
# debugfs reads back names, sizes, modes and bytes, and a kernel loop
# mount (read-only) shows the tree libext3d showed.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

wops=$EXT3D_BUILD/tests/tools/wops
xt=$EXT3D_BUILD/tests/tools/x3-tree
chmod 755 "$T_TMP" # uid 65534 reaches the run directory through it
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
can_drop=$([ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && echo yes)

# pat SEED LEN: the bytes wops's "fill ... SEED" writes.
pat() {
	python3 -c 'import sys
seed, n = int(sys.argv[1]), int(sys.argv[2])
x = (seed * 2654435761 + 1) & 0xffffffff
out = bytearray(n)
for i in range(n):
    x = (x * 1103515245 + 12345) & 0xffffffff
    out[i] = (x >> 16) & 0xff
sys.stdout.buffer.write(out)' "$1" "$2"
}
crc() { cksum | cut -d' ' -f1; }

# check MESSAGE [as_nobody]: runs the script in $T_TMP/script ("OP => WANT"
# lines, $-expanded by the shell) through wops and compares every answer.
check() {
	msg=$1; shift
	sed 's/ *=> .*//' "$T_TMP/script" >"$T_TMP/ops"
	sed 's/.* => //' "$T_TMP/script" >"$T_TMP/want"
	"$@" "$wops" --instance "$n" <"$T_TMP/ops" >"$T_TMP/got" 2>&1
	paste -d'|' "$T_TMP/ops" "$T_TMP/got" >"$T_TMP/side"
	diff "$T_TMP/want" "$T_TMP/got" >"$T_TMP/diff"
	t_ok $? "$msg"
	[ -s "$T_TMP/diff" ] && sed 's/^/# /' "$T_TMP/side" | head -80
	return 0
}

# A session kept open (holding what it looked up): a_start, a CMD, a_stop.
a_start() {
	rm -f "$T_TMP/a.in" "$T_TMP/a.out"
	mkfifo "$T_TMP/a.in"
	: >"$T_TMP/a.out"
	"$wops" --instance "$n" <"$T_TMP/a.in" >>"$T_TMP/a.out" 2>&1 &
	a_pid=$!
	exec 3>"$T_TMP/a.in"
}
a() { # a CMD: runs it in the open session, prints its answer
	a_line=$(($(wc -l <"$T_TMP/a.out") + 1))
	echo "$*" >&3
	for _ in $(seq 300); do
		[ "$(wc -l <"$T_TMP/a.out")" -ge $a_line ] && break
		sleep 0.05
	done
	sed -n "${a_line}p" "$T_TMP/a.out"
}
a_stop() { exec 3>&-; wait $a_pid 2>/dev/null; }

long=$(printf 'n%.0s' $(seq 256))
target=$(printf 't%.0s' $(seq 100))

for mode in ordered journal writeback; do
	case $mode in journal) bs=4096 ;; *) bs=1024 ;; esac
	bb=$((bs / 512))
	n=t-wops-$mode img=$T_TMP/img-$mode
	mke2fs -q -F -t ext3 -b $bs -I 256 "$img" 64M >/dev/null 2>&1
	t_ok $? "mke2fs -t ext3 -b $bs ($mode)"
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" \
		--set BLOCKDEV_ARGS= --set DATA=$mode
	t_ok $? "instance ready, data=$mode"

	cat >"$T_TMP/script" <<EOF
mkdir /d 0755 => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
mknod /d/f 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
mknod /d/f 0100644 => EEXIST
mknod /d/. 0100644 => EEXIST
mknod /nodir/f 0100644 => ENOENT
mknod /d/f/x 0100644 => ENOTDIR
mknod /d/$long 0100644 => ENAMETOOLONG
mknod /d/bad 0170644 => EINVAL
mknod /d/c 020640 259 => ok mode=20640 nlink=1 uid=0 gid=0 size=0 blocks=0 rdev=259
mknod /d/b 060600 76805 => ok mode=60600 nlink=1 uid=0 gid=0 size=0 blocks=0 rdev=76805
mknod /d/p 010600 => ok mode=10600 nlink=1 uid=0 gid=0 size=0 blocks=0
mknod /d/s 0140755 => ok mode=140755 nlink=1 uid=0 gid=0 size=0 blocks=0
mkdir /d/sub 0700 => ok mode=40700 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
stat /d => ok mode=40755 nlink=3 uid=0 gid=0 size=$bs blocks=$bb
symlink /d/f /d/fast => ok
symlink /$target /d/slow => ok
readlink /d/fast => ok /d/f
readlink /d/slow => ok /$target
stat /d/slow => ok mode=120777 nlink=1 uid=0 gid=0 size=101 blocks=$bb
link /d/f /d/f2 => ok
stat /d/f => ok mode=100644 nlink=2 uid=0 gid=0 size=0 blocks=0
link /d/sub /d/sub2 => EPERM
link /d/f /d/f2 => EEXIST
write /d/f 0 hello => ok 5 crc=3287646509
cat /d/f2 0 100 => ok hello
write /d/f 0 X append => ok 1 crc=$(printf X | crc)
cat /d/f 0 100 => ok helloX
write /d/sub 0 x => EISDIR
write /d/p 0 x => EINVAL
unlink /d/f => ok
stat /d/f2 => ok mode=100644 nlink=1 uid=0 gid=0 size=6 blocks=$bb
unlink /d/sub => EISDIR
unlink /d/nothere => ENOENT
unlink /d/. => EISDIR
rmdir /d/f2 => ENOTDIR
rmdir /d => ENOTEMPTY
rmdir /d/. => EINVAL
rmdir /d/.. => ENOTEMPTY
mkdir /d/sub/inner 0755 => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
rmdir /d/sub => ENOTEMPTY
rename /d/sub /d/sub/inner/x => EINVAL
rename /d/sub /d/sub/x => EINVAL
rename /d/f2 /d/sub => EISDIR
rename /d/sub /d/f2 => ENOTDIR
rename /d/. /d/x => EBUSY
rename /d/f2 /d => ENOTEMPTY
rename /d/sub/inner /d => ENOTEMPTY
mkdir /e 0755 => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
rename /d/sub /e/moved => ok
stat /d => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
stat /e => ok mode=40755 nlink=3 uid=0 gid=0 size=$bs blocks=$bb
stat /e/moved/.. => ok mode=40755 nlink=3 uid=0 gid=0 size=$bs blocks=$bb
mkdir /e/empty 0755 => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
rename /e/moved/inner /e/empty => ok
stat /e => ok mode=40755 nlink=4 uid=0 gid=0 size=$bs blocks=$bb
stat /e/moved => ok mode=40700 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
rmdir /e/moved => ok
stat /e => ok mode=40755 nlink=3 uid=0 gid=0 size=$bs blocks=$bb
mknod /d/g 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
rename /d/f2 /d/g noreplace => EEXIST
rename /d/f2 /d/g => ok
cat /d/g 0 100 => ok helloX
rename /d/g /d/g => ok
rename /d/nothere /d/x => ENOENT
rename /d/g /e/g => ok
link /e/g /d/g => ok
rename /d/g /e/g => ok
stat /e/g => ok mode=100644 nlink=2 uid=0 gid=0 size=6 blocks=$bb
mkdir /x 0755 => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
mknod /x/f 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
rename /x /e => ENOTEMPTY
unlink /x/f => ok
rename /x /e/empty => ok
stat /e/empty => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
rmdir /e/empty/.. => ENOTEMPTY
EOF
	check "every namespace op and its errors as root ($mode)"

	big=3000000
	pat 7 $big >"$T_TMP/big"
	pat 3 10 >"$T_TMP/sparse"
	cat >"$T_TMP/script" <<EOF
mknod /big 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
fill /big 0 $big 7 => ok $big crc=$(crc <"$T_TMP/big")
read /big 0 $big => ok $big crc=$(crc <"$T_TMP/big")
fsync /big => ok
setattr /big size=100000 => ok mode=100644 nlink=1 uid=0 gid=0 size=100000 blocks=$(( ((100000 + bs - 1) / bs + 1) * bb ))
read /big 0 $big => ok 100000 crc=$(head -c 100000 "$T_TMP/big" | crc)
setattr /big size=5000000 => ok mode=100644 nlink=1 uid=0 gid=0 size=5000000 blocks=$(( ((100000 + bs - 1) / bs + 1) * bb ))
read /big 4000000 100 => ok 100 crc=$(head -c 100 /dev/zero | crc)
read /big 99000 1000 => ok 1000 crc=$(tail -c +99001 "$T_TMP/big" | head -c 1000 | crc)
fsync /big data => ok
mknod /sparse 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
fill /sparse 10000000 10 3 sync => ok 10 crc=$(crc <"$T_TMP/sparse")
read /sparse 10000000 100 => ok 10 crc=$(crc <"$T_TMP/sparse")
read /sparse 0 100 => ok 100 crc=$(head -c 100 /dev/zero | crc)
setattr /sparse size=1125899906842624 => EFBIG
write /sparse 1125899906842624 x => EFBIG
setattr /sparse size=5 => ok mode=100644 nlink=1 uid=0 gid=0 size=5 blocks=0
setattr /sparse mode=04755 uid=7 gid=8 => ok mode=100755 nlink=1 uid=7 gid=8 size=5 blocks=0
setattr /sparse mode=06755 => ok mode=106755 nlink=1 uid=7 gid=8 size=5 blocks=0
setattr /sparse mtime=100.123456789 atime=200.5 => ok mode=106755 nlink=1 uid=7 gid=8 size=5 blocks=0
times /sparse => ok atime=200 mtime=100
sync => ok
EOF
	check "writes, reads, truncate shrink and grow, EFBIG, setattr, fsync, sync ($mode)"

	if [ -n "$can_drop" ]; then
		cat >"$T_TMP/script" <<EOF
mkdir /pub 0755 => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
setattr /pub mode=0777 => ok mode=40777 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
mkdir /tmp 0755 => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
setattr /tmp mode=01777 => ok mode=41777 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
mkdir /ro 0755 => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
mknod /ro/f 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
mknod /tmp/rootfile 0100666 => ok mode=100666 nlink=1 uid=0 gid=0 size=0 blocks=0
mknod /pub/rootfile 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
mknod /pub/suid 0106777 => ok mode=106777 nlink=1 uid=0 gid=0 size=0 blocks=0
mknod /pub/grp 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
setattr /pub/grp uid=65534 gid=0 => ok mode=100644 nlink=1 uid=65534 gid=0 size=0 blocks=0
EOF
		check "root prepares a public, a sticky and a read-only directory ($mode)"
		cat >"$T_TMP/script" <<EOF
mknod /ro/x 0100644 => EACCES
unlink /ro/f => EACCES
rename /ro/f /pub/f => EACCES
mknod /pub/mine 0100644 => ok mode=100644 nlink=1 uid=65534 gid=65534 size=0 blocks=0
mknod /tmp/mine 0100644 => ok mode=100644 nlink=1 uid=65534 gid=65534 size=0 blocks=0
unlink /tmp/rootfile => EPERM
rename /tmp/rootfile /tmp/x => EPERM
rename /tmp/mine /tmp/rootfile => EPERM
rename /tmp/mine /tmp/mine2 => ok
unlink /pub/rootfile => ok
write /ro/f 0 x => EACCES
setattr /ro/f mode=0777 => EPERM
setattr /ro/f uid=65534 => EPERM
setattr /pub/mine uid=0 => EPERM
setattr /pub/mine gid=0 => EPERM
setattr /pub/mine mode=02600 => ok mode=102600 nlink=1 uid=65534 gid=65534 size=0 blocks=0
setattr /pub/grp mode=02644 => ok mode=100644 nlink=1 uid=65534 gid=0 size=0 blocks=0
setattr /pub/grp gid=65534 => ok mode=100644 nlink=1 uid=65534 gid=65534 size=0 blocks=0
setattr /ro/f mtime=5.0 => EPERM
setattr /ro/f mtime=now => EACCES
setattr /ro/f size=0 => EACCES
setattr /tmp/rootfile mtime=now atime=now => ok mode=100666 nlink=1 uid=0 gid=0 size=0 blocks=0
write /pub/suid 0 abc => ok 3 crc=$(printf abc | crc)
stat /pub/suid => ok mode=100777 nlink=1 uid=0 gid=0 size=3 blocks=$bb
mkdir /pub/d 0755 => ok mode=40755 nlink=2 uid=65534 gid=65534 size=$bs blocks=$bb
rename /pub/d /tmp/d => ok
rmdir /tmp/d => ok
mkdir /ro/d 0755 => EACCES
rmdir /pub => EACCES
EOF
		check "uid 65534: write permission, the sticky bit, owners, set-id bits ($mode)" as_nobody
	else
		t_skip "needs root and setpriv" "uid 65534's permission checks ($mode)"
	fi

	# What ext3d-fuse adds: rename's EXCHANGE, acting for another user,
	# fallocate's punch hole (and the modes ext3 refuses).
	nb=$(( (20000 + bs - 1) / bs )); [ $nb -gt 12 ] && nb=$((nb + 1))
	freed=$(( 6000 / bs - (1000 + bs - 1) / bs )); [ $freed -lt 0 ] && freed=0
	cat >"$T_TMP/script" <<EOF
mkdir /xa 0777 => ok mode=40777 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
mknod /xa/f 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
mkdir /xb 0755 => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
mkdir /xb/sub 0700 => ok mode=40700 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
rename /xa/f /xb/sub exchange noreplace => EINVAL
rename /xa/f /xb/nothere exchange => ENOENT
rename /xa/f /xb/sub exchange => ok
stat /xa/f => ok mode=40700 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
stat /xb/sub => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
stat /xa/f/.. => ok mode=40777 nlink=3 uid=0 gid=0 size=$bs blocks=$bb
stat /xb => ok mode=40755 nlink=2 uid=0 gid=0 size=$bs blocks=$bb
rename /xa /xa/f/x exchange => ENOENT
mknod /xa/f/x 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
rename /xa /xa/f/x exchange => EINVAL
rename /xa/f/x /xa exchange => EINVAL
rename /xb/sub /xb/sub exchange => ok
actas 1000 1000 => ok
mknod /xa/mine 0100644 => ok mode=100644 nlink=1 uid=1000 gid=1000 size=0 blocks=0
mknod /xb/no 0100644 => EACCES
actas off => ok
mknod /xa/r 0100644 => ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0
fill /xa/r 0 20000 3 => ok 20000 crc=$(pat 3 20000 | crc)
fallocate /xa/r 3 1000 5000 => ok
read /xa/r 0 20000 => ok 20000 crc=$( (pat 3 1000; head -c 5000 /dev/zero; pat 3 20000 | tail -c 14000) | crc)
stat /xa/r => ok mode=100644 nlink=1 uid=0 gid=0 size=20000 blocks=$(( (nb - freed) * bb ))
fallocate /xa/r 3 30000 10 => ok
fallocate /xa/r 0 0 4096 => EOPNOTSUPP
fallocate /xa/r 1 0 4096 => EOPNOTSUPP
fallocate /xa/r 3 0 0 => EINVAL
fallocate /xa 3 0 10 => EISDIR
EOF
	check "rename EXCHANGE, act as another user, punch a hole ($mode)"
	if [ -n "$can_drop" ]; then
		t_is "$(echo 'actas 0 0' | as_nobody "$wops" --instance $n)" EPERM \
			"only root may act for another user ($mode)"
	else
		t_skip "needs root and setpriv" "only root may act for another user ($mode)"
	fi

	# fsync commits at once, not at the 5 s timer; fdatasync does not
	# commit for a change of timestamps only.
	jseq() { t_field $n journal.commit_sequence; }
	printf 'mknod /fs 0100644\nwrite /fs 0 abc\n' | "$wops" --instance $n >/dev/null
	s0=$(jseq) t0=$(date +%s%N)
	echo "fsync /fs" | "$wops" --instance $n >"$T_TMP/o"
	ms=$((($(date +%s%N) - t0) / 1000000))
	t_ok "$([ "$(cat "$T_TMP/o")" = ok ] && [ $ms -lt 2000 ] && [ "$(jseq)" -gt "$s0" ]; echo $?)" \
		"fsync forces the commit holding the write: ${ms} ms ($mode)"
	echo "setattr /fs mtime=5.0" | "$wops" --instance $n >/dev/null
	s0=$(jseq)
	echo "fsync /fs data" | "$wops" --instance $n >"$T_TMP/o"
	t_is "$(cat "$T_TMP/o") $(jseq)" "ok $s0" "fdatasync skips a commit of timestamps only ($mode)"
	echo "fsync /fs" | "$wops" --instance $n >"$T_TMP/o"
	t_ok "$([ "$(cat "$T_TMP/o")" = ok ] && [ "$(jseq)" -gt "$s0" ]; echo $?)" \
		"fsync does commit it ($mode)"

	# A file unlinked while another session holds it: freed at the forget.
	a_start
	t_is "$(a mknod /held 0100644)" "ok mode=100644 nlink=1 uid=0 gid=0 size=0 blocks=0" \
		"session A creates /held ($mode)"
	a fill /held 0 200000 9 >/dev/null
	hino=$(a hold /held | sed 's/^ok //')
	printf 'unlink /held\nsync\n' | "$wops" --instance $n >"$T_TMP/o"
	t_is "$(tr '\n' ' ' <"$T_TMP/o")" "ok ok " "session B unlinks it ($mode)"
	t_is "$(a read $hino 0 300000)" "ok 200000 crc=$(pat 9 200000 | crc)" \
		"session A still reads the unlinked file ($mode)"
	t_is "$(a stat $hino | cut -d' ' -f1-3)" "ok mode=100644 nlink=0" "with no link left ($mode)"
	t_is "$(a write $hino 0 more)" "ok 4 crc=$(printf more | crc)" "and writes it ($mode)"
	t_is "$(a forget $hino)" ok "session A forgets it ($mode)"
	a_stop
	hino1=${hino#ino:}
	# Held, unlinked, and the holding session ends without a forget.
	a_start
	a mknod /held3 0100644 >/dev/null
	a fill /held3 0 30000 5 >/dev/null
	hino=$(a hold /held3 | sed 's/^ok //')
	printf 'unlink /held3\n' | "$wops" --instance $n >/dev/null
	t_is "$(a stat $hino | cut -d' ' -f1-3)" "ok mode=100644 nlink=0" \
		"another unlinked file still held ($mode)"
	a_stop
	hino3=${hino#ino:}
	# The same, but the group restarts while the file is held.
	a_start
	a mknod /held2 0100644 >/dev/null
	a fill /held2 0 50000 4 >/dev/null
	hino=$(a hold /held2 | sed 's/^ok //')
	printf 'unlink /held2\nsync\n' | "$wops" --instance $n >/dev/null
	"$T_EXT3D" --instance $n kill inode-svc >/dev/null 2>&1
	a_stop
	sleep 1
	t_instance_wait_ready $n
	t_ok $? "the group restarted with the unlinked file held ($mode)"
	grep -q "orphan list: 1 inodes" "$T_TMP/$n.log"
	t_ok $? "inode-svc processed the orphan list at start ($mode)"
	hino2=${hino#ino:}

	"$xt" --instance $n ext3d / >"$T_TMP/via-ext3d" 2>&1
	t_instance_stop $n
	e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
	rc=$?
	t_ok $rc "e2fsck -fn finds nothing to fix ($mode)"
	[ $rc -ne 0 ] && grep -v '^Pass\|^e2fsck' "$T_TMP/fsck" | head -10 | sed 's/^/# /'
	for k in $hino1 $hino2 $hino3; do
		debugfs -R "testi <$k>" "$img" 2>/dev/null | grep -q "not in use"
		t_ok $? "the unlinked inode $k was freed ($mode)"
	done
	head -c 100000 "$T_TMP/big" >"$T_TMP/big.want"
	truncate -s 5000000 "$T_TMP/big.want"
	debugfs -R "dump /big $T_TMP/big.out" "$img" >/dev/null 2>&1
	cmp -s "$T_TMP/big.out" "$T_TMP/big.want"
	t_ok $? "debugfs reads back /big's bytes and hole ($mode)"
	t_is "$(debugfs -R 'stat /sparse' "$img" 2>/dev/null | sed -n 's/.*Mode: *\([0-7]*\).*Flags.*/\1/p; s/^User: *\([0-9]*\) *Group: *\([0-9]*\).*Size: \([0-9]*\).*/\1 \2 \3/p' | tr '\n' ' ')" \
		"06755 7 8 5 " "debugfs: /sparse's mode, owner and size ($mode)"
	t_is "$(debugfs -R 'stat /sparse' "$img" 2>/dev/null | sed -n 's/^ *\([am]time\): \(0x[0-9a-f:]*\) .*/\1=\2/p' | sort | tr '\n' ' ')" \
		"atime=0x000000c8:00000014 mtime=0x00000064:1d6f3454 " \
		"debugfs: times set to the nanosecond ($mode)"
	t_is "$(debugfs -R 'ls /d' "$img" 2>/dev/null | tr -s ' \n' '\n' | grep -v '^(\|^[0-9]*$\|^$' | sort | tr '\n' ' ')" \
		". .. b c fast g p s slow " "debugfs: the names in /d ($mode)"
	t_is "$(debugfs -R 'cat /e/g' "$img" 2>/dev/null)" helloX "debugfs: the bytes of /e/g ($mode)"

	mkdir -p "$T_TMP/mnt"
	if [ "$(id -u)" -eq 0 ] && mount -o ro,loop -t ext3 "$img" "$T_TMP/mnt" 2>/dev/null; then
		"$xt" host "$T_TMP/mnt" 2>&1 | grep -v lost+found >"$T_TMP/via-kernel"
		umount "$T_TMP/mnt"
		diff "$T_TMP/via-ext3d" "$T_TMP/via-kernel" >"$T_TMP/diff"
		t_ok $? "the kernel's mount shows the tree libext3d showed ($mode)"
		head -20 "$T_TMP/diff" | sed 's/^/# /'
	else
		t_skip "needs root and a loop mount" "the kernel's view of the tree ($mode)"
	fi
done

# Full: blocks run out (a non-root writer stops at the reserved blocks,
# root goes on into them), then inodes; ENOSPC each time, a consistent
# image, and space freed is written again.
n=t-wops-full img=$T_TMP/img-full
mke2fs -q -F -t ext3 -b 1024 -N 32 "$img" 4M >/dev/null 2>&1
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance on a 4 MiB image with 32 inodes ready"
printf 'mkdir /pub 0777\nsetattr /pub mode=0777\n' | "$wops" --instance $n >/dev/null
if [ -n "$can_drop" ]; then
	printf 'mknod /pub/u 0100644\nfill /pub/u 0 8000000 1\nfill /pub/u 8000000 4096 2\n' |
		as_nobody "$wops" --instance $n >"$T_TMP/o"
	t_is "$(sed -n 3p "$T_TMP/o")" ENOSPC "uid 65534 writes until ENOSPC"
	t_ok "$(sed -n 2p "$T_TMP/o" | grep -q '^ok [0-9]'; echo $?)" \
		"its big write came back short: $(sed -n 2p "$T_TMP/o" | cut -d' ' -f1-2)"
	printf 'mknod /r 0100644\nfill /r 0 4096 3\n' | "$wops" --instance $n >"$T_TMP/o"
	t_is "$(sed -n 2p "$T_TMP/o" | cut -d' ' -f1-2)" "ok 4096" \
		"root still writes into the reserved blocks"
else
	t_skip "needs root and setpriv" "the reserved blocks"
	t_skip "needs root and setpriv" "the reserved blocks"
	t_skip "needs root and setpriv" "the reserved blocks"
fi
printf 'mknod /rr 0100644\nfill /rr 0 8000000 4\nfill /rr 8000000 4096 5\n' |
	"$wops" --instance $n >"$T_TMP/o"
t_is "$(sed -n 3p "$T_TMP/o")" ENOSPC "root writes until ENOSPC"
for i in $(seq 40); do echo "mknod /i$i 0100644"; done | "$wops" --instance $n >"$T_TMP/o"
t_is "$(grep -c '^ok' "$T_TMP/o") $(sort -u "$T_TMP/o" | grep -v '^ok')" "$(grep -c '^ok' "$T_TMP/o") ENOSPC" \
	"creates fail with ENOSPC once the inodes run out ($(grep -c '^ok' "$T_TMP/o") made)"
{ for i in $(seq 40); do echo "unlink /i$i"; done; echo "unlink /rr"; echo "unlink /pub/u"
  echo "mknod /again 0100644"; echo "fill /again 0 100000 6"; echo sync; } |
	"$wops" --instance $n >"$T_TMP/o"
t_is "$(tail -3 "$T_TMP/o" | cut -d' ' -f1-2 | tr '\n' ' ')" "ok mode=100644 ok 100000 ok " \
	"after unlinking, a new file and its bytes fit again"
t_instance_stop $n
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
rc=$?
t_ok $rc "e2fsck -fn finds nothing to fix after ENOSPC"
[ $rc -ne 0 ] && grep -v '^Pass\|^e2fsck' "$T_TMP/fsck" | head -10 | sed 's/^/# /'

t_done
