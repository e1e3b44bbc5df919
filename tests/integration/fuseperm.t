#!/bin/sh
# fuseperm.t - permissions through the ext3d FUSE mount against the
# kernel's ext3: one scenario, run as root and as uids 1000 (groups 1000,
# 100), 1001 (groups 1001, 100) and 1002 (group 1002) in a kernel loop
# mount and in an ext3d-fuse mount of an identical image, prints every
# command's exit status and error; the two transcripts must be equal. It
# covers owner/group/other bits on files and directories (read, write,
# create, remove, search), set-gid directories (group and set-gid bit
# inherited; the bit dropped by chmod from a non-member and by a write from
# a non-owner), sticky directories, and POSIX ACLs: a named user, a named
# group, mask changes through setfacl and chmod, default ACLs inherited by
# new files and directories. A few lines are also checked against what the
# kernel answers by the book, so the scenario is known to test something.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/fusemnt.sh"
. "$T_TOP/tests/lib/imgcheck.sh"

t_need_root "other uids, kernel loop mounts"
command -v setpriv >/dev/null && command -v setfacl >/dev/null || t_skip_all "needs setpriv and setfacl"
t_need_kmount
chmod 755 "$T_TMP"
why=$(t_fuse_missing)

# as UID CMD...: CMD as UID with its groups (see above).
as() {
	u=$1; shift
	case $u in
	0) "$@" ;;
	1000) setpriv --reuid=1000 --regid=1000 --groups=1000,100 "$@" ;;
	1001) setpriv --reuid=1001 --regid=1001 --groups=1001,100 "$@" ;;
	*) setpriv --reuid="$u" --regid="$u" --groups="$u" "$@" ;;
	esac
}
# r UID CMD...: one transcript line: who, the command, its status and the
# end of its first error line (the path-free part).
r() {
	u=$1; shift
	as "$u" "$@" >"$T_TMP/r.out" 2>"$T_TMP/r.err"
	st=$?
	echo "u$u $* -> $st $(sed -n '1s/.*: //p' "$T_TMP/r.err")"
}
# st PATH...: mode, owner and group.
st() { for p in "$@"; do echo "stat $p $(stat -c '%A %u %g' "$p")"; done; }

scenario() {
	umask 022
	chmod 777 .
	# owner, group, other on files (owner 1000, group 100)
	for m in 600 640 604 460 000 070 066; do
		echo data >f$m && chown 1000:100 f$m && chmod $m f$m
		for u in 0 1000 1001 1002; do
			r $u cat f$m
			r $u sh -c ": >>f$m"
			r $u test -x f$m
		done
	done
	# directories: list, create, remove, search (owner 1000, group 100)
	for m in 755 775 730 703 333 555; do
		mkdir d$m && touch d$m/pre0 d$m/pre1 d$m/pre2 d$m/pre3 && chown 1000:100 d$m && chmod $m d$m
		for u in 0 1000 1001 1002; do
			r $u ls d$m
			r $u touch d$m/new$u
			r $u rm -f d$m/pre$((u % 4))
			r $u stat -c %s d$m/pre0
		done
	done
	# set-gid directory owned by root:100
	mkdir sg && chgrp 100 sg && chmod 2775 sg
	r 1001 touch sg/f1001
	r 1001 mkdir sg/d1001
	r 1002 touch sg/f1002
	r 0 touch sg/f0
	r 0 mkdir -m 0700 sg/d0
	st sg/f1001 sg/d1001 sg/f0 sg/d0
	r 1001 touch sg/d1001/nested
	st sg/d1001/nested
	# chmod g+s by a non-member of the file's group drops the bit
	r 1000 touch own && chgrp 1001 own
	r 1000 chmod 2755 own
	r 1000 chmod 4755 own
	st own
	# a write by a non-owner clears set-uid and set-gid (group-executable)
	echo x >sx && chown 1000:100 sx && chmod 6777 sx
	r 1001 sh -c "echo y >>sx"
	echo x >sy && chown 1000:100 sy && chmod 6767 sy
	r 1001 sh -c "echo y >>sy"
	r 1000 chown 1000:1001 sx
	r 1000 chown 1000:100 sx
	r 1000 chown 1001 sx
	st sx sy
	# sticky directory
	mkdir st && chmod 1777 st
	r 1000 touch st/a1000
	r 1001 rm -f st/a1000
	r 1001 mv st/a1000 st/b1001
	r 1001 touch st/a1001
	r 1000 mv st/a1000 st/b1000
	r 0 rm -f st/a1001
	r 1000 mkdir st/d1000
	r 1001 rmdir st/d1000
	st st st/b1000 st/d1000
	# ACLs: a named user, a named group, the mask
	echo acl >acl && chmod 640 acl
	r 1000 cat acl
	r 0 setfacl -m u:1000:rw acl
	r 1000 sh -c "echo w >>acl"
	r 1001 cat acl
	r 0 setfacl -m m::r acl
	r 1000 sh -c "echo w >>acl"
	r 1000 cat acl
	r 0 setfacl -m g:100:r acl
	r 1001 cat acl
	r 0 chmod 600 acl
	r 1000 cat acl
	r 1001 cat acl
	r 0 chmod 660 acl
	r 1000 sh -c "echo w >>acl"
	st acl
	getfacl -n acl 2>&1
	r 1002 getfacl -n acl
	r 1000 setfacl -m u:1000:rwx acl
	r 0 setfacl -x u:1000 acl
	r 1000 cat acl
	r 0 setfacl -b acl
	st acl
	getfacl -n acl 2>&1
	# default ACLs on a directory: inherited, the umask ignored
	mkdir dacl && chmod 777 dacl
	r 0 setfacl -d -m u:1001:rwx,g:100:rx,m::rwx dacl
	r 1000 touch dacl/f
	r 1000 mkdir dacl/d
	r 1001 sh -c "echo w >>dacl/f"
	r 1002 sh -c "echo w >>dacl/f"
	st dacl/f dacl/d
	getfacl -n dacl dacl/f dacl/d 2>&1
	r 1000 chmod 600 dacl/f
	r 1001 sh -c "echo w >>dacl/f"
	getfacl -n dacl/f 2>&1
	r 1002 ls dacl
}

# runs the scenario in DIR, the transcript in OUT
run() { (cd "$1" && scenario) >"$2" 2>&1; }

t_mkimg "$T_TMP/k.img" 4096 && t_kmount "$T_TMP/k.img" "$T_TMP/mk" && mkdir -m 755 "$T_TMP/mk/p"
t_ok $? "kernel mount of a fresh image"
run "$T_TMP/mk/p" "$T_TMP/k.out"
t_diag "$(grep -c '' "$T_TMP/k.out") transcript lines on the kernel's mount"
# by the book: the kernel's answers to a few of the lines
want() { grep -qxF -- "$1" "$T_TMP/k.out"; t_ok $? "the kernel says: $1"; }
want "u1002 cat f604 -> 0 "
want "u1000 cat f066 -> 1 Permission denied"
want "stat sg/f1001 -rw-r--r-- 1001 100"
want "stat sg/d1001 drwxr-sr-x 1001 100"
want "u1002 touch sg/f1002 -> 1 Permission denied"
want "stat own -rwsr-xr-x 1000 1001"
want "stat sx -rwxrwxrwx 1000 100"
want "stat sy -rwxrwSrwx 1000 100"
want "u1001 rm -f st/a1000 -> 1 Operation not permitted"
want "u1000 sh -c echo w >>acl -> 2 Permission denied"
want "u1001 sh -c echo w >>dacl/f -> 0 "
t_umount "$T_TMP/mk"
e2fsck -fn "$T_TMP/k.img" >/dev/null 2>&1
t_ok $? "e2fsck -fn clean on the kernel's image"

if [ -n "$why" ]; then
	t_skip "$why" "the scenario on ext3d-fuse"
	t_done
	exit
fi
t_mkimg "$T_TMP/x.img" 4096 && t_instance_start t-fperm "$T_TOP/compose/ext3d.compose" \
	--set "IMAGE=$T_TMP/x.img" --set BLOCKDEV_ARGS= >/dev/null && t_fuse_mount t-fperm "$T_TMP/mx" &&
	mkdir -m 755 "$T_TMP/mx/p"
t_ok $? "ext3d instance up and mounted with ext3d-fuse"
run "$T_TMP/mx/p" "$T_TMP/x.out"
diff "$T_TMP/k.out" "$T_TMP/x.out" >"$T_TMP/diff"
t_ok $? "every status, error, mode, owner and ACL on ext3d-fuse as on the kernel"
head -60 "$T_TMP/diff" | sed 's/^/#   /'
t_umount "$T_TMP/mx"
t_instance_stop t-fperm
t_img_fsck "$T_TMP/x.img" "e2fsck -fn clean on the image ext3d wrote"
t_done
