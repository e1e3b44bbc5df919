#!/bin/sh
# grants.t - inode numbers are capabilities: an unprivileged session may
# name an inode only once a lookup (or a readdir that returns attributes)
# granted it, whatever the number. Every by-inode call (getattr, read_ino,
# readdir_ino, readlink_ino, access_ino) on an inode the session was not
# granted gets EACCES; after a permitted lookup the same calls work, and a
# forget takes the grant back. Root may name any inode.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

t_need_root "runs clients as uid 65534"
command -v setpriv >/dev/null || t_skip_all "needs setpriv"
xp=$EXT3D_BUILD/tests/tools/x3-probe
chmod 755 "$T_TMP" # other uids reach the run directory through it
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

tree=$T_TMP/tree
mkdir -p "$tree/private/sub" "$tree/pub/sub" "$tree/noexec"
echo secret >"$tree/private/secret"
ln -s secret "$tree/private/link"
echo pub >"$tree/pub/file"
echo f >"$tree/noexec/f"
chmod 700 "$tree/private"
chmod 744 "$tree/noexec"
img=$T_TMP/img
mke2fs -q -F -t ext3 -d "$tree" "$img" 16M >"$T_TMP/mkfs.log" 2>&1
t_ok $? "mke2fs -t ext3 -d TREE"
ino() { debugfs -R "stat $1" "$img" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p'; }
n=t-grants
t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$img" --set BLOCKDEV_ARGS=
t_ok $? "instance ready"

# Inside a 0700 directory, by number: nothing, for every call.
for p in /private/secret /private /private/sub /private/link /noexec/f /pub/file; do
	i=$(ino $p)
	t_is "$(as_nobody "$xp" --instance $n byino "$i")" \
		"$i getattr=EACCES read=EACCES readdir=EACCES readlink=EACCES access=EACCES" \
		"uid 65534, never granted $p (ino $i): every by-inode call EACCES"
done
as_nobody "$T_EXT3D" --instance $n cat /private/secret >"$T_TMP/o" 2>&1
grep -q "Permission denied" "$T_TMP/o"
t_ok $? "by path the same read is refused"

# Root may name any inode.
i=$(ino /private/secret) l=$(ino /private/link) d=$(ino /private/sub)
t_is "$("$xp" --instance $n byino "$i" "$l" "$d")" \
	"$i getattr=ok read=ok readdir=ENOTDIR readlink=EINVAL access=ok
$l getattr=ok read=EINVAL readdir=ENOTDIR readlink=ok access=ok
$d getattr=ok read=EISDIR readdir=ok readlink=EINVAL access=ok" \
	"root names any inode by number"

# After a permitted lookup, the same calls work; a forget takes it back.
f=$(ino /pub/file)
t_is "$(as_nobody "$xp" --instance $n walk /pub/file)" "lookup=ok
$f getattr=ok read=ok readdir=ENOTDIR readlink=EINVAL access=ok
forget=ok
after-forget getattr=EACCES" "uid 65534: after a lookup every call works, after a forget none does"

# readdir_ino grants the entries it returns with attributes (not "."), and
# only where the caller may search the directory.
t_is "$(as_nobody "$xp" --instance $n children /pub)" "readdir=ok
child getattr=ok
child forget=ok
child after-forget getattr=EACCES
dir forget=ok
dir forget again=ENOENT" "readdir_ino grants each entry once, not its \".\""
t_is "$(as_nobody "$xp" --instance $n children /noexec)" "readdir=ok
child getattr=EACCES
child forget=ENOENT
child after-forget getattr=EACCES
dir forget=ok
dir forget again=ENOENT" "a directory readable but not searchable grants nothing"

# The path calls work with grants: a whole walk, and the CLI.
as_nobody "$EXT3D_BUILD/tests/tools/x3-tree" --instance $n ext3d /pub >"$T_TMP/walk" 2>&1
t_ok $? "uid 65534 walks /pub through libext3d"
t_is "$(cut -f1 "$T_TMP/walk" | tr '\n' ' ')" "/file /sub " "and sees each entry"
t_is "$(as_nobody "$T_EXT3D" --instance $n cat /pub/file /pub/file)" "pub
pub" "uid 65534 cats the same file twice in one session"
t_is "$(as_nobody "$T_EXT3D" --instance $n ls -aR /pub | tr '\n' ' ')" \
	"/pub: . .. file sub  /pub/sub: . .. " "uid 65534 lists a tree by path"
t_is "$(as_nobody "$T_EXT3D" --instance $n stat /private/secret 2>&1)" \
	"ext3d: /private/secret: Permission denied" "stat inside a 0700 directory: EACCES"
grep -q "refused\|error" "$T_TMP/$n.log"
t_ok "$([ $? -ne 0 ]; echo $?)" "inode-svc logged no error"
t_done
