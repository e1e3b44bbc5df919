#!/bin/sh
# xattrfuse.t - extended attributes and ACLs through ext3d-fuse against the
# kernel: one shell script of setfattr, getfattr, setfacl, getfacl, creates
# under default ACLs with a umask, chmod and accesses as uid 1000, run on a
# kernel loop mount of an ext3 image and on an ext3d-fuse mount of an
# identical one (-I 256 and -I 128); every command's output and exit status
# must be the same. Then e2fsck -fn is clean on both images, and the
# kernel, mounting the image ext3d wrote, prints the same getfattr -d and
# getfacl -R dump as on its own.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/fusemnt.sh"

t_need_root "FUSE and loop mounts"
why=$(t_fuse_missing)
[ -z "$why" ] || t_skip_all "$why"
for c in setfattr getfattr setfacl getfacl setpriv fusermount3; do
	command -v $c >/dev/null || t_skip_all "no $c"
done
t_need_kmount
chmod 755 "$T_TMP" # uid 1000 reaches the mounts through it

# The script, run in the mount's root; each command's output and status.
cat >"$T_TMP/script.sh" <<'EOF'
u() { setpriv --reuid=1000 --regid=1000 --clear-groups "$@"; }
run() { out=$("$@" 2>&1); echo "$* => $? $out" | sed "s|$PWD|MNT|g"; }
umask 022
run touch f
run setfattr -n user.a -v hello f
run getfattr -n user.a --only-values f
run setfattr -n user.big -v "$(printf '%0600d' 7)" f
run getfattr -d --absolute-names f
run setfattr -x user.a f
run setfattr -x user.a f
run getfattr -n user.nope f
run setfattr -n os2.x -v y f
run setfattr -n user.huge -v "$(printf '%01100d' 7)" f
run setfattr -n trusted.t -v tv f
run setfattr -n security.s -v sv f
run getfattr -d -m - --absolute-names f
run touch g
run setfacl -m u:1000:r,m::r g
run getfacl -c g
run stat -c %A g
run setfacl -m g::rwx g
run chmod 640 g
run getfacl -c g
run touch h
run setfacl --set u::rw-,g::r--,o::r-- h
run getfacl -c h
run stat -c %A h
run setfacl -d -m u::rwx h
run mkdir d
run setfacl -d -m u::rwx,u:1000:rwx,g::r-x,m::rwx,o::--- d
run getfacl -c d
run setfacl -m u:1000:rwx d
run getfacl -c d
run touch d/nf
run stat -c %A d/nf
run getfacl -c d/nf
run mkdir d/sub
run stat -c %A d/sub
run getfacl -c d/sub
umask 027
run touch plain
run stat -c %A plain
run mkdir -m 0777 pd
run stat -c %A pd
run chmod 1777 pd
run mkdir sgd
run chmod 2777 sgd
run setfacl -d -m u::rwx,g::rw-,m::rw-,o::rwx sgd
run u /usr/bin/python3 -c "import os; os.umask(0); os.close(os.open('sgd/f', os.O_CREAT | os.O_WRONLY, 0o2775))"
run stat -c %a sgd/f
run chmod 0600 g
run u cat g
run setfacl -m u:1000:rw g
run u cat g
run u sh -c 'echo x >> g'
run u cat plain
run u getfattr -n trusted.t f
run u getfattr -n security.s --only-values f
run u setfattr -n user.x -v v f
run u setfattr -n user.x -v v pd
run u setfattr -n security.x -v v d/nf
run u setfacl -m u:1000:rwx f
run u touch d/mine
run u setfattr -n user.mine -v yes d/mine
run u getfacl -c d/mine
run u getfattr -d d/mine
run touch sgf
run chown 1000:0 sgf
run chmod 2770 sgf
run u setfacl -m u:5:r sgf
run stat -c %A sgf
run getfacl -c sgf
run setfattr -x user.big f
run getfattr -d f
run setfacl -b g
run getfacl -c g
run ln -s f sl
run getfattr -h -n user.x sl
run setfattr -h -n user.x -v v sl
run setfattr -h -n trusted.big -v "$(printf '%0600d' 5)" sl
run readlink sl
run cat sl
run getfattr -h -d -m trusted --absolute-names sl
run ln -s "$(printf '%0200d' 9)" slow
run setfattr -h -n trusted.s -v sv slow
run readlink slow
run getfattr -h -n trusted.s --only-values slow
EOF

for isize in 256 128; do
	n=t-xfuse-$isize kimg=$T_TMP/k-$isize img=$T_TMP/e-$isize
	km=$T_TMP/km-$isize em=$T_TMP/em-$isize
	mke2fs -q -F -t ext3 -b 1024 -I $isize -E root_owner=0:0 "$kimg" 32M >/dev/null 2>&1
	cp "$kimg" "$img"
	t_kmount "$kimg" "$km"
	t_ok $? "kernel mount ($isize)"
	chmod 755 "$km"
	(cd "$km" && sh "$T_TMP/script.sh") >"$T_TMP/k.out" 2>&1
	t_umount "$km"
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" \
		--set BLOCKDEV_ARGS= --set DATA=ordered
	t_ok $? "instance ready ($isize)"
	EXT3D_FUSE_ARGS="-o allow_other" t_fuse_mount $n "$em"
	t_ok $? "ext3d-fuse mounts ($isize)"
	chmod 755 "$em"
	(cd "$em" && sh "$T_TMP/script.sh") >"$T_TMP/e.out" 2>&1
	diff "$T_TMP/k.out" "$T_TMP/e.out" >"$T_TMP/diff"
	t_ok $? "the script's outputs agree, kernel and ext3d-fuse ($isize)"
	[ -s "$T_TMP/diff" ] && sed 's/^/# /' "$T_TMP/diff" | head -40
	t_umount "$em"
	t_instance_stop $n
	for i in "$kimg" "$img"; do
		e2fsck -fn "$i" >"$T_TMP/fsck" 2>&1
		rc=$?
		t_ok $rc "e2fsck -fn clean: $(basename "$i")"
		[ $rc -ne 0 ] && grep -v '^Pass\|^e2fsck' "$T_TMP/fsck" | head -10 | sed 's/^/# /'
	done
	for i in "$kimg" "$img"; do
		t_kmount "$i" "$km"
		(cd "$km" && getfattr -R -d -m - . 2>&1 && getfacl -R . 2>&1) >"$T_TMP/dump-$(basename "$i")"
		t_umount "$km"
	done
	diff "$T_TMP/dump-$(basename "$kimg")" "$T_TMP/dump-$(basename "$img")" >"$T_TMP/diff"
	t_ok $? "the kernel dumps the same attributes and ACLs from both images ($isize)"
	[ -s "$T_TMP/diff" ] && sed 's/^/# /' "$T_TMP/diff" | head -20
done
t_done
