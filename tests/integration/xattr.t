#!/bin/sh
# xattr.t - extended attributes and POSIX ACLs end to end through libext3d
# (xops scripts: each line an operation and the answer the kernel gives),
# on an image with 256-byte inodes (attributes in the inode, spilling to a
# block) and one with 128-byte inodes (blocks only), 1 KiB blocks: set,
# get, list, remove with their errors; a block debugfs made shared by two
# inodes copied on write; ACLs set, read back, turned into mode bits,
# following chmod, inherited from a directory's default ACL (and the umask
# without one); ctime moving on set and remove; as uid 1000, access an ACL
# grants and one it denies, the namespace rules and the sticky directory's;
# on the -I 128 image, attribute blocks changed while inode-svc and
# alloc-svc are SIGKILLed.
# Then shutdown: e2fsck -fn clean (no leaked block after the unlinks),
# debugfs reads the attributes back, and as root a kernel loop mount shows
# the same through getfattr and getfacl.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

xops=$EXT3D_BUILD/tests/tools/xops
chmod 755 "$T_TMP" # uid 1000 reaches the run directory through it
as_user() { setpriv --reuid=1000 --regid=1000 --clear-groups "$@"; }
can_drop=$([ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && echo yes)
kernel=$([ "$(id -u)" -eq 0 ] && command -v getfacl >/dev/null && echo yes)

# check MESSAGE [as_user]: runs $T_TMP/script ("OP => WANT" lines) through
# xops and compares every answer.
check() {
	msg=$1; shift
	sed 's/ *=> .*//' "$T_TMP/script" >"$T_TMP/ops"
	sed 's/.* => //' "$T_TMP/script" >"$T_TMP/want"
	"$@" "$xops" --instance "$n" <"$T_TMP/ops" >"$T_TMP/got" 2>&1
	paste -d'|' "$T_TMP/ops" "$T_TMP/got" >"$T_TMP/side"
	diff "$T_TMP/want" "$T_TMP/got" >"$T_TMP/diff"
	t_ok $? "$msg"
	[ -s "$T_TMP/diff" ] && sed 's/^/# /' "$T_TMP/side" | head -80
	return 0
}

dbg() { debugfs -R "$1" "$img" 2>/dev/null; }
ea() { # ea PATH NAME: the value debugfs reads
	debugfs -R "ea_get -f $T_TMP/ea $1 $2" "$img" >/dev/null 2>&1 && cat "$T_TMP/ea"
	rm -f "$T_TMP/ea"
}
facl() { getfacl -cn "$1" 2>/dev/null | grep . | tr '\t\n' '  '; }
dbgw() { debugfs -w -R "$1" "$img" >/dev/null 2>&1; }
fsck_clean() {
	e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
	rc=$?
	t_ok $rc "e2fsck -fn finds nothing to fix ($1)"
	[ $rc -ne 0 ] && grep -v '^Pass\|^e2fsck' "$T_TMP/fsck" | head -10 | sed 's/^/# /'
	return 0
}

acl_r='u::rw-,u:1000:r--,g::---,m::r--,o::---'
dacl='u::rwx,u:1000:rwx,g::r-x,m::rwx,o::---'

for isize in 256 128; do
	n=t-xattr-$isize img=$T_TMP/img-$isize
	mke2fs -q -F -t ext3 -b 1024 -I $isize "$img" 16M >/dev/null 2>&1
	t_ok $? "mke2fs -t ext3 -I $isize"
	# Two files sharing one attribute block, as the kernel's mbcache or
	# mke2fs -d leaves them: s2 takes s1's block, the count goes to 2.
	head -c 400 /dev/zero | tr '\0' y >"$T_TMP/v400"
	share() { # share A B: B takes A's attribute block
		dbgw "write /dev/null $1"
		dbgw "write /dev/null $2"
		dbgw "ea_set -f $T_TMP/v400 /$1 user.shared"
		sb=$(dbg "stat /$1" | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
		dbgw "sif /$2 file_acl $sb"
		dbgw "sif /$2 blocks 2"
		printf '\002' | dd of="$img" bs=1 seek=$((sb * 1024 + 4)) conv=notrunc 2>/dev/null
	}
	share s1 s2
	blk=$sb
	share s3 s4
	fsck_clean "a block shared by two inodes, before ($isize)"
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" \
		--set BLOCKDEV_ARGS= --set DATA=ordered
	t_ok $? "instance ready ($isize)"
	# in-inode names first, then the block's (sorted by index, name length, name)
	if [ $isize = 256 ]; then listf=user.empty,trusted.t,security.s,user.big
	else listf=user.big,user.empty,trusted.t,security.s; fi

	cat >"$T_TMP/script" <<EOF
create /f 0644 => ok
setx /f user.a hello => ok
getx /f user.a => ok 5 hello
getx /f user.a => ok 5 hello
setx /f user.a x create => EEXIST
setx /f user.nope x replace => ENODATA
getx /f user.nope => ENODATA
setx /f user.big @600:b => ok
getx /f user.big => ok 600 sum=58800
listx /f => ok user.a,user.big
setx /f user.a @30:q replace => ok
getx /f user.a => ok 30 qqqqqqqqqqqqqqqqqqqqqqqqqqqqqq
setx /f user.empty @0:x => ok
getx /f user.empty => ok 0 
setx /f os2.x v => EOPNOTSUPP
setx /f system.foo v => EOPNOTSUPP
setx /f user. v => EINVAL
setx /f user.huge @65537:c => E2BIG
setx /f user.blk @1100:c => ENOSPC
rmx /f user.a => ok
rmx /f user.a => ENODATA
getx /f user.a => ENODATA
setx /f trusted.t tv => ok
setx /f security.s sv => ok
listx /f => ok $listf
getx /s1 user.shared => ok 400 sum=48400
getx /s2 user.shared => ok 400 sum=48400
setx /s2 user.more @100:z => ok
getx /s2 user.more => ok 100 sum=12200
getx /s2 user.shared => ok 400 sum=48400
getx /s1 user.shared => ok 400 sum=48400
mkdir /d 0755 => ok
setx /d user.dir dv => ok
create /d/big1 0644 => ok
setx /d/big1 user.v @700:v => ok
create /d/big2 0644 => ok
setx /d/big2 user.v @700:w => ok
unlink /d/big1 => ok
unlink /s1 => ok
create /acl 0640 => ok
setacl /acl access $acl_r => ok
getacl /acl access => ok $acl_r
stat /acl => ok 100640
listx /acl => ok system.posix_acl_access
create /acl2 0640 => ok
setacl /acl2 access u::rw-,g::r--,o::r-- => ok
stat /acl2 => ok 100644
getacl /acl2 access => ENODATA
setacl /acl2 default $dacl => EACCES
setacl /acl2 access u::rw-,g::r--,u:5:r--,m::r--,o::--- => EINVAL
setacl /acl2 access u::rw-,u:5:r--,g::r--,o::--- => EINVAL
setacl /acl2 access empty => ok
create /acl3 0666 => ok
setacl /acl3 access u::rwx,u:1000:rwx,g::r--,m::rwx,o::r-- => ok
chmod /acl3 0640 => ok
getacl /acl3 access => ok u::rw-,u:1000:rwx,g::r--,m::r--,o::---
mkdir /dd 0755 => ok
setacl /dd default $dacl => ok
getacl /dd default => ok $dacl
umask 022 => ok
create /dd/nf 0666 => ok
stat /dd/nf => ok 100660
getacl /dd/nf access => ok u::rw-,u:1000:rwx,g::r-x,m::rw-,o::---
getacl /dd/nf default => ENODATA
mkdir /dd/sub 0777 => ok
stat /dd/sub => ok 40770
getacl /dd/sub default => ok $dacl
getacl /dd/sub access => ok u::rwx,u:1000:rwx,g::r-x,m::rwx,o::---
umask 027 => ok
create /plain 0666 => ok
stat /plain => ok 100640
create /plain2 0644 => ok
chmod /plain2 0644 => ok
rmx /plain system.posix_acl_access => ok
ctime /plain user.c v1 => ok moved
ctime /plain user.c => ok moved
umask 0 => ok
mkdir /st 01777 => ok
mkdir /sgd 0777 => ok
chmod /sgd 02777 => ok
setacl /sgd default u::rwx,g::rw-,m::rw-,o::rwx => ok
EOF
	check "root: set, get, list, remove, ACLs ($isize)"
	# The CLI's commands.
	"$T_EXT3D" --instance $n setfattr /plain user.cli clival
	t_ok $? "ext3d setfattr ($isize)"
	t_is "$("$T_EXT3D" --instance $n getfattr /plain user.cli)" "clival" "ext3d getfattr NAME ($isize)"
	t_is "$("$T_EXT3D" --instance $n getfattr /plain | tr '\n' ' ')" "user.cli " \
		"ext3d getfattr lists ($isize)"
	t_is "$("$T_EXT3D" --instance $n rmfattr /plain user.cli 2>&1; \
		"$T_EXT3D" --instance $n rmfattr /plain user.cli 2>&1)" \
		"ext3d: user.cli: No data available" "ext3d rmfattr, twice ($isize)"
	# Both users of a shared block change it at once, from two sessions:
	# the first gets a copy, the second a copy or, the last user by then,
	# the block itself.
	pids=
	for f in s3 s4; do
		echo "setx /$f user.$f @200:$f" | "$xops" --instance $n >"$T_TMP/race-$f" 2>&1 &
		pids="$pids $!"
	done
	wait $pids
	t_is "$(cat "$T_TMP/race-s3" "$T_TMP/race-s4" | tr '\n' ' ')" "ok ok " \
		"two sessions change both users of a shared block ($isize)"
	if [ -n "$can_drop" ]; then
		cat >"$T_TMP/script" <<EOF
open /acl r => ok
open /acl w => EACCES
open /acl2 r => ok
open /plain r => EACCES
getx /f trusted.t => ENODATA
getx /f security.s => ok 2 sv
listx /f => ok $(echo "$listf" | sed 's/trusted.t,//')
getacl /acl access => ok $acl_r
setx /acl user.x v => EACCES
setx /f trusted.x v => EPERM
setx /f security.x v => EPERM
setacl /acl access u::rwx,g::rwx,o::rwx => EPERM
setx /plain2 user.x v => EACCES
open /dd/nf w => ok
setx /dd/nf user.mine yes => ok
setx /st user.x v => EPERM
setx /f user.x v => EACCES
rmx /f user.big => EACCES
umask 0 => ok
create /sgd/f 02775 => ok
stat /sgd/f => ok 100765
EOF
		check "uid 1000: ACL-granted and -denied access, namespace rules ($isize)" as_user
	else
		t_skip "not root or no setpriv" "uid 1000 checks ($isize)"
	fi
	if [ $isize = 128 ]; then
		# Attribute blocks allocated, copied and freed while inode-svc
		# and alloc-svc are killed: every change whole or absent.
		printf 'create /k%s 0644\n' 0 1 2 3 | "$xops" --instance $n >/dev/null 2>&1
		"$T_EXT3D" --instance $n sync # what came before stays
		rm -f "$T_TMP/kstop"
		(i=0; while [ ! -e "$T_TMP/kstop" ]; do
			i=$((i + 1)); f=/k$((i % 4))
			echo "setx $f user.v @$((200 + i % 700)):k"
			[ $((i % 3)) = 0 ] && echo "rmx $f user.v"
		done) | "$xops" --instance $n >"$T_TMP/kill.out" 2>&1 &
		kpid=$!
		for svc in inode-svc alloc-svc inode-svc; do
			sleep 1
			"$T_EXT3D" --instance $n kill $svc >/dev/null 2>&1
			t_instance_wait_ready $n
			t_ok $? "ready again after a SIGKILL of $svc ($isize)"
		done
		touch "$T_TMP/kstop"
		wait $kpid
		t_ok $([ "$(grep -c '^ok' "$T_TMP/kill.out")" -gt 10 ] && echo 0 || echo 1) \
			"changes went through between the kills: $(grep -c '^ok' "$T_TMP/kill.out") ($isize)"
		t_is "$(grep -v '^ok\|^EIO\|^ENODATA\|^ETIMEDOUT' "$T_TMP/kill.out" | sort -u | tr '\n' ' ')" "" \
			"no answer but ok, EIO, ETIMEDOUT or ENODATA ($isize)"
	fi
	t_instance_stop $n
	fsck_clean "after shutdown, blocks freed with their files ($isize)"
	# The second change may find itself the block's last user and keep it.
	b3=$(dbg "stat /s3" | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
	b4=$(dbg "stat /s4" | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
	t_ok $({ dbg "testb $sb" | grep -q 'not in use' || [ "$sb" = "$b3" ] ||
		[ "$sb" = "$b4" ]; } && [ "$b3" != "$b4" ] && echo 0 || echo 1) \
		"s3 and s4 have blocks of their own; the shared one is free or one of them ($isize)"
	t_is "$(ea /s3 user.s3 | head -c 2)$(ea /s4 user.s4 | head -c 2)$(ea /s4 user.shared | head -c 1)" \
		"ssssy" "both values there, and the shared one ($isize)"
	t_is "$(ea /f user.big | head -c 5)" "bbbbb" "debugfs reads user.big ($isize)"
	t_is "$(ea /f trusted.t)" "tv" "debugfs reads trusted.t ($isize)"
	t_is "$(ea /s2 user.more | head -c 3)" "zzz" "debugfs reads s2's new value ($isize)"
	b2=$(dbg "stat /s2" | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
	t_ok $([ -n "$b2" ] && [ "$b2" != "$blk" ] && echo 0 || echo 1) \
		"s2 has its own block now ($b2, shared $blk) ($isize)"
	if [ "$isize" = 256 ]; then
		t_is "$(dbg 'stat /acl2' | grep -c 'File ACL: 0')" 1 \
			"small attributes stay in the inode: no block ($isize)"
	fi
	if [ -n "$kernel" ]; then
		mnt=$T_TMP/mnt-$isize
		mkdir -p "$mnt"
		if mount -t ext3 -o loop,ro "$img" "$mnt" 2>/dev/null; then
			t_at_exit "umount '$mnt' 2>/dev/null"
			t_is "$(getfattr --only-values -n user.big "$mnt/f" 2>/dev/null | head -c 3)" \
				"bbb" "kernel getfattr user.big ($isize)"
			t_is "$(getfattr --absolute-names -d -m - "$mnt/f" 2>/dev/null | grep -c '=')" 4 \
				"kernel getfattr -d: the four names ($isize)"
			t_is "$(facl "$mnt/acl")" \
				"user::rw- user:1000:r-- group::--- mask::r-- other::--- " \
				"kernel getfacl /acl ($isize)"
			t_is "$(getfacl -cn "$mnt/dd/sub" 2>/dev/null | grep -c '^default:')" 5 \
				"kernel getfacl: the inherited default ACL ($isize)"
			t_is "$(facl "$mnt/acl3")" \
				"user::rw- user:1000:rwx #effective:r-- group::r-- mask::r-- other::--- " \
				"kernel getfacl: chmod moved the mask ($isize)"
			t_is "$(getfattr -n user.mine --only-values "$mnt/dd/nf" 2>/dev/null)" \
				"$([ -n "$can_drop" ] && echo yes)" "kernel getfattr user.mine ($isize)"
			umount "$mnt"
		else
			t_skip "no loop ext3 mount" "kernel getfattr/getfacl ($isize)"
		fi
	else
		t_skip "not root or no getfacl" "kernel getfattr/getfacl ($isize)"
	fi
done
t_done
