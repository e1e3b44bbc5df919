#!/bin/sh
# debpkg.t - the Debian package (issue 22): dpkg-buildpackage -us -uc -b
# builds ext3d's .deb from a copy of the tree; dpkg -i installs it on this
# machine (root only, and only when no ext3d package is installed already),
# postinst makes the system user ext3d, and from the installed package
# alone: `mount -t fuse.ext3d IMAGE DIR` and an fstab line mount an image
# through /sbin/mount.fuse.ext3d, what is written there is on the image
# after umount (debugfs), umount stops the instance (e2fsck clean,
# needs_recovery clear), `man ext3d` shows the page, a program compiles
# against the package's libext3d with pkg-config and runs, and
# systemd-analyze verifies ext3d@.service; then dpkg --purge removes it
# all.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/imgcheck.sh"

t_need_root "dpkg -i of the package on this machine, mounts"
command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
	t_skip_all "no dpkg-buildpackage or debhelper (compose/install-deps installs them)"
# One package test on the machine at a time: dpkg's database is the
# machine's, and a soak and a CI run may both be at this test (dpkg -i
# failed once on the other's frontend lock). The lock goes with the test.
exec 8>/tmp/ext3d-debpkg.lock
flock -w 900 8 || t_skip_all "another debpkg.t held /tmp/ext3d-debpkg.lock for 15 minutes"
if dpkg-query -W -f='${Status}' ext3d 2>/dev/null | grep -q 'install ok installed'; then
	t_skip_all "an ext3d package is installed already: not replaced by a test"
fi

src=$T_TMP/src/ext3d
mkdir -p "$src"
(cd "$T_TOP" && git ls-files -co --exclude-standard 2>/dev/null | tar -T - -cf - 2>/dev/null) |
	tar -xf - -C "$src"
[ -f "$src/debian/control" ]
t_ok $? "a copy of the tree with debian/"
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$T_TMP/build.log" 2>&1
t_ok $? "dpkg-buildpackage -us -uc -b"
tail -15 "$T_TMP/build.log" | grep -i -e error -e fail | sed 's/^/#   /'
deb=$(ls "$T_TMP"/src/ext3d_*_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { t_done; exit; }
rm -rf "$src" # its tests/ would pass for sanitizer reports in T_TMP

t_at_exit "dpkg --purge ext3d >/dev/null 2>&1"
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$T_TMP/dpkg.log" 2>&1
t_ok $? "dpkg -i $(basename "$deb")"
sed 's/^/#   /' "$T_TMP/dpkg.log" | grep -i error | head -5
getent passwd ext3d >/dev/null
t_ok $? "the system user ext3d exists"
for f in /usr/bin/ext3d /usr/bin/ext3d-fuse /usr/libexec/ext3d/ext3d-supervisor \
	/usr/libexec/ext3d/inode-svc /sbin/mount.fuse.ext3d /lib/systemd/system/ext3d@.service \
	/usr/include/ext3d.h /usr/share/ext3d/ext3d.compose; do
	[ -e "$f" ] || t_diag "missing: $f"
done
dpkg -L ext3d | grep -q "/libext3d.so.0$" && [ -x /sbin/mount.fuse.ext3d ]
t_ok $? "the package holds libext3d.so.0 and /sbin/mount.fuse.ext3d"

img=$T_TMP/p.img mnt=$T_TMP/mnt
mkdir -p "$mnt"
mke2fs -q -F -t ext3 "$img" 64M >/dev/null
inst=mnt$(printf '%s' "$img" | tr -c 'A-Za-z0-9_.\n-' '-' | tail -c 60)
t_at_exit "umount -l '$mnt' 2>/dev/null; ext3d --instance $inst shutdown >/dev/null 2>&1; rm -f /var/log/ext3d/$inst.log"
# umount returns at once; the instance stops a moment later.
wait_gone() {
	i=0
	while pgrep -f -- "--instance $inst " >/dev/null && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	! pgrep -f -- "--instance $inst " >/dev/null
}
mount -t fuse.ext3d -o data=journal "$img" "$mnt" >"$T_TMP/mount.out" 2>&1
t_ok $? "mount -t fuse.ext3d -o data=journal IMAGE DIR, from the package"
[ -s "$T_TMP/mount.out" ] && sed "s/^/#   /" "$T_TMP/mount.out"
t_is "$(findmnt -n -o SOURCE,FSTYPE "$mnt")" "$img fuse.ext3d" "findmnt shows the image"
echo "through the package's mount" >"$mnt/a" && mkdir "$mnt/d"
t_ok $? "a file and a directory written through it"
umount "$mnt" && wait_gone
t_ok $? "umount DIR, and the instance is gone"
printf '%s %s fuse.ext3d defaults,nofail,commit=1 0 0\n' "$img" "$mnt" >"$T_TMP/fstab"
mount --fstab "$T_TMP/fstab" "$mnt" && echo "and from fstab" >"$mnt/d/b" && umount "$mnt" && wait_gone
t_ok $? "an fstab line: mount DIR, write, umount"
t_img_stopped_clean "$img" "after the umounts"
t_is "$(t_img_cat "$img" /a /d/b)" "through the package's mount and from fstab" "debugfs reads both files"

man ext3d 2>/dev/null | grep -q "mount.fuse.ext3d\|start"
t_ok $? "man ext3d"
cp "$T_TOP/tests/data/outside.c" "$T_TMP/"
cc -Wall -Werror "$T_TMP/outside.c" $(pkg-config --cflags --libs ext3d) -o "$T_TMP/outside" \
	>"$T_TMP/cc.log" 2>&1
t_ok $? "cc outside.c \$(pkg-config --cflags --libs ext3d) against the package"
ext3d --instance t-deb start "$img" >/dev/null 2>&1 &&
	"$T_TMP/outside" t-deb /lib-write "from outside" >"$T_TMP/out" 2>&1
t_ok $? "it runs against an instance the package's ext3d start runs"
ext3d --instance t-deb shutdown >/dev/null 2>&1
rm -f /var/log/ext3d/t-deb.log
if command -v systemd-analyze >/dev/null; then
	systemd-analyze verify ext3d@t.service >"$T_TMP/verify" 2>&1
	t_ok $? "systemd-analyze verify ext3d@t.service"
	sed 's/^/#   /' "$T_TMP/verify" | head -5
	grep -q "EnvironmentFile=/etc/ext3d/%i.conf" /lib/systemd/system/ext3d@.service
	t_ok $? "the unit reads /etc/ext3d/NAME.conf"
else
	t_skip "no systemd-analyze" "systemd-analyze verify ext3d@t.service"
	t_skip "no systemd-analyze" "the unit reads /etc/ext3d/NAME.conf"
fi
dpkg --purge ext3d >"$T_TMP/purge.log" 2>&1 && [ ! -e /usr/bin/ext3d ] && [ ! -e /sbin/mount.fuse.ext3d ]
t_ok $? "dpkg --purge ext3d removes it"
t_done
