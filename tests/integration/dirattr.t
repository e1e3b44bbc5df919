#!/bin/sh
# dirattr.t - ext3d-fuse answers the GETATTR of a directory that follows a
# create in it from the create's own reply (client/fuse/dirattr.c), and
# never with attributes older than a change made through the same mount.
# Mount A keeps attributes for 60 s; mount B, of the same instance, keeps
# none (attr_timeout=0), so B's stat is what inode-svc holds. After
# creates and mkdirs through A, A's stat of the directory equals B's in
# every field with nanoseconds; a change through B is not seen through A
# within the timeout (the create's or unlink's reply answered: one round
# trip fewer), but after each kind of change through A (unlink, rename,
# rmdir, symlink, link, mknod, setfattr, chmod, touch, listing) it is;
# after two writers' overlapping creates A still shows B's attributes;
# and mount C, with attr_timeout=1, shows a change through B once the
# timeout has passed.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/fusemnt.sh"
. "$T_TOP/tests/lib/imgcheck.sh"

t_need_root "FUSE mounts"
why=$(t_fuse_missing)
[ -z "$why" ] || t_skip_all "$why"
command -v setfattr >/dev/null || t_skip_all "no setfattr"

a=$T_TMP/a b=$T_TMP/b c=$T_TMP/c
t_mkimg "$T_TMP/x.img" 1024 && t_instance_start t-dattr "$T_TOP/compose/ext3d.compose" \
	--set "IMAGE=$T_TMP/x.img" --set BLOCKDEV_ARGS= >/dev/null &&
	EXT3D_FUSE_ARGS="-o attr_timeout=60" t_fuse_mount t-dattr "$a" &&
	EXT3D_FUSE_ARGS="-o attr_timeout=0,entry_timeout=0" t_fuse_mount t-dattr "$b" &&
	EXT3D_FUSE_ARGS="-o attr_timeout=1" t_fuse_mount t-dattr "$c"
t_ok $? "an instance mounted three times: attr_timeout 60, 0 and 1"

st() { stat -c '%F %a %u %g %s %b %h %x %y %z' "$1"; }
same() { # same DIR MSG: A's stat of DIR is B's
	t_is "$(st "$a/$1")" "$(st "$b/$1")" "$2"
}

mkdir -m 755 "$a/d"
for i in $(seq 40); do
	: >"$a/d/f$i" || break
	[ "$(st "$a/d")" = "$(st "$b/d")" ] || break
	mkdir "$a/d/s$i" || break
	[ "$(st "$a/d")" = "$(st "$b/d")" ] || break
done
t_is "$i" 40 "after each of 40 creates and 40 mkdirs through A, A's stat of the directory is B's"
same d "the last of them (nlink, size, times to the nanosecond)"

# A change A does not know of: A answers from the create's reply.
: >"$a/d/g0"
chmod 700 "$b/d"
t_is "$(stat -c %a "$a/d")" 755 "a chmod through B after a create through A: A still shows the create's reply"
chmod 755 "$b/d" && rm "$a/d/g0" && chmod 700 "$b/d"
t_is "$(stat -c %a "$a/d")" 755 "and after an unlink through A, the unlink's reply"
: >"$a/d/g0"

# Each change through A leaves nothing older than itself behind.
n=0
change() { # change MSG CMD...: a create through A, a chmod through B, CMD through A
	msg=$1 n=$((n + 1))
	shift
	: >"$a/d/c$n" && chmod $((700 + n % 2 * 11)) "$b/d" && "$@"
	t_ok $? "$msg: made"
	same d "after $msg through A, A's stat of the directory is B's"
}
change "unlink" rm "$a/d/f1"
change "rename" mv "$a/d/f2" "$a/d/f2b"
change "rename into another directory" mv "$a/d/f3" "$a/f3"
change "rmdir" rmdir "$a/d/s1"
change "symlink" ln -s f4 "$a/d/l4"
change "link" ln "$a/d/f5" "$a/d/h5"
change "mknod" mkfifo "$a/d/p6"
change "mkdir" mkdir "$a/d/m7"
change "setfattr on the directory" setfattr -n user.x -v 1 "$a/d"
change "chmod" chmod 751 "$a/d"
change "touch" touch -d @1700000000 "$a/d"
quiet() { "$@" >/dev/null; }
change "a listing" quiet ls -R "$a/d"
: >"$a/d/e0" && chmod 700 "$b/d" && rm "$b/d/e0" && rm "$a/d/g0"
same d "an unlink through A after one through B: B's attributes"

# Two writers' creates overlap; what is kept must be the last.
chmod 755 "$b/d"
bad=0
for r in $(seq 20); do
	pids=
	for w in 1 2 3 4; do
		(for i in $(seq 30); do : >"$a/d/w$w-$r-$i"; done) &
		pids="$pids $!"
	done
	wait $pids
	[ "$(st "$a/d")" = "$(st "$b/d")" ] || bad=$((bad + 1))
done
t_is "$bad" 0 "20 rounds of four writers' 30 creates each through A: A's stat is B's after every round"

: >"$c/d/t0" && chmod 711 "$b/d" && sleep 2.5
t_is "$(stat -c %a "$c/d")" 711 "with attr_timeout=1, a change through B shows through C after 2.5 s"

t_umount "$a"
t_umount "$b"
t_umount "$c"
t_instance_stop t-dattr
t_img_fsck "$T_TMP/x.img" "e2fsck -fn clean"
t_done
