#!/bin/sh
# hardlinks.t - fs.protected_hardlinks holds on every link path: uid 65534
# may link a file it does not own only if it is a regular file, neither
# set-uid nor set-gid with group execution, that it may read and write
# (the kernel's may_linkat), whether it links by path (ext3d_link), by
# inode after a lookup (ext3d_link_ino) or through a root session acting
# for it (ext3d_act_as). A name already taken is EEXIST before that, an
# unwritable directory EACCES after it, as the kernel orders them. The
# kernel's answers on a loop mount of a twin image are the reference;
# afterwards e2fsck -fn is clean and the refused sources kept one link.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"
. "$T_TOP/tests/lib/twin.sh"

t_twin_need
[ "$(cat /proc/sys/fs/protected_hardlinks 2>/dev/null)" = 1 ] ||
	t_skip_all "fs.protected_hardlinks is not 1 on this machine"
wops=$EXT3D_BUILD/tests/tools/wops

tree=$T_TMP/tree
mkdir -p "$tree/mine" "$tree/rootdir" "$tree/dir"
for f in root600:600 pub666:666 suid:4777 sgidx:2777 sgid:2767 exec:777 ro644:644; do
	echo x >"$tree/${f%:*}" && chmod "${f#*:}" "$tree/${f%:*}"
done
mkfifo -m 666 "$tree/fifo"
echo x >"$tree/mine/own"
chmod 600 "$tree/mine/own"
chmod 777 "$tree/dir"
chown -R 65534:65534 "$tree/mine"
img=$T_TMP/img
n=t-hardlinks
t_twin_start $n "with root's files and uid 65534's /mine"

# SOURCE NEW: each link uid 65534 tries, and the kernel's answer.
cat >"$T_TMP/links" <<'EOF'
/root600 /mine/L root600 EPERM
/pub666 /mine/L pub666 ok
/suid /mine/L suid EPERM
/sgidx /mine/L sgidx EPERM
/sgid /mine/L sgid ok
/exec /mine/L exec ok
/ro644 /mine/L ro644 EPERM
/fifo /mine/L fifo EPERM
/dir /mine/L dir EPERM
/mine/own /mine/L own ok
/root600 /mine/own - EEXIST
/root600 /rootdir/L root600 EPERM
/pub666 /rootdir/L pub666 EACCES
EOF
want=$(awk '{print $4}' "$T_TMP/links" | paste -sd' ')
# ops PREFIX VERB: the wops lines of one variant (new names PREFIX-*).
ops() { awk -v p="$1" -v v="$2" '{ n = $2; if ($3 != "-") sub(/L$/, p "-" $3, n); print v, $1, n }' \
	"$T_TMP/links"; }
answers() { cut -d' ' -f1 | paste -sd' '; }

t_is "$(ops p plink | as_nobody "$wops" --instance $n 2>&1 | answers)" "$want" \
	"by path (ext3d_link): may_linkat's answers"
t_is "$(ops i link | as_nobody "$wops" --instance $n 2>&1 | answers)" "$want" \
	"by inode after a lookup (ext3d_link_ino): the same"
t_is "$({ echo 'actas 65534 65534'; ops a link; } | "$wops" --instance $n 2>&1 | sed 1d | answers)" \
	"$want" "a root session acting for uid 65534: the same"
t_is "$(printf '%s\n' 'plink /root600 /rootdir/r' 'link /suid /mine/r' | "$wops" --instance $n 2>&1 |
	answers)" "ok ok" "root links anything"

ops k - | cut -d' ' -f2- | t_twin_kernel link | answers >"$T_TMP/kgot"
if [ -s "$T_TMP/kgot" ]; then
	t_is "$(cat "$T_TMP/kgot")" "$want" "the kernel gives uid 65534 the same answers"
else
	t_skip "no kernel ext3 loop mount here" "the kernel gives uid 65534 the same answers"
fi

t_instance_stop $n
e2fsck -fn "$img" >"$T_TMP/fsck" 2>&1
t_ok $? "e2fsck -fn clean"
[ -n "$(tail -c 1 "$T_TMP/fsck")" ] && sed 's/^/# /' "$T_TMP/fsck" | head -20
links() { debugfs -R "stat $1" "$img" 2>/dev/null | sed -n 's/.*Links: \([0-9]*\).*/\1/p'; }
t_is "$(links /root600) $(links /fifo) $(links /pub666)" "2 1 4" \
	"debugfs: /root600 linked by root only, /fifo never, /pub666 by each path"
t_done
