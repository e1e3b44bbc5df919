#!/bin/sh
# install.t - ext3d installed and run as a filesystem of the system (issue
# 22). The tree is configured with a prefix of its own, built without its
# tests and installed with meson install; then, from the installed files
# alone (the mounts run with the source and build trees hidden): every program, the library with its soname, the header, ext3d.pc,
# the compose file, the man pages, the systemd unit and the mount helper
# are where they belong, and none names the source or build tree. A
# program outside the tree compiles with pkg-config (shared and static) and
# writes through a running instance. ext3d start runs an instance on an
# image and mounts it, and the mount shows the image as its source. In a
# mount namespace of its own, whose /sbin holds the helper,
# `mount -t fuse.ext3d` and an fstab line mount an image and umount stops
# the instance: nothing left running, e2fsck clean, needs_recovery clear,
# the file written there read back by debugfs. ext3d start --foreground
# tells a service manager (a socket at NOTIFY_SOCKET) READY=1 with its own
# pid, and stops cleanly on SIGTERM; on a terminal it draws the progress
# of a journal's replay. systemd-analyze verifies the unit
# (its man pages found); where systemd runs, ext3d@.service starts, serves
# and stops an instance.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/imgcheck.sh"

t_need_root "sandboxed services, mounts and a mount namespace"
unset EXT3D_PROGRESS
p=$T_TMP/prefix b=$T_TMP/build
img=$T_TMP/i.img mnt=$T_TMP/mnt
mkdir -p "$mnt"

meson setup "$b" "$T_TOP" --prefix="$p" -Dtests=false -Dmount_helper_dir="$p/sbin" \
	--buildtype=release -Dlockdep=false >"$T_TMP/setup.log" 2>&1 &&
	ninja -C "$b" >"$T_TMP/ninja.log" 2>&1 &&
	meson install -C "$b" --no-rebuild >"$T_TMP/install.log" 2>&1
t_ok $? "meson setup --prefix, build without tests, meson install"
[ -x "$p/bin/ext3d" ] || { tail -20 "$T_TMP"/*.log | sed 's/^/#   /'; t_done; exit; }

libdir=$(dirname "$(find "$p" -name libext3d.so.0 | head -1)")
missing=
for f in bin/ext3d bin/ext3d-fuse bin/ext3d-recover libexec/ext3d/ext3d-supervisor \
	libexec/ext3d/blockdev-svc libexec/ext3d/journald-svc libexec/ext3d/alloc-svc \
	libexec/ext3d/inode-svc include/ext3d.h share/ext3d/ext3d.compose \
	share/ext3d/example.conf sbin/mount.fuse.ext3d lib/systemd/system/ext3d@.service \
	share/man/man1/ext3d.1 share/man/man8/ext3d-fuse.8 share/man/man3/libext3d.3 \
	share/man/man5/ext3d.compose.5; do
	[ -e "$p/$f" ] || missing="$missing $f"
done
for f in libext3d.so libext3d.so.0 libext3d.a pkgconfig/ext3d.pc; do
	[ -e "$libdir/$f" ] || missing="$missing LIBDIR/$f"
done
t_ok $([ -z "$missing" ]; echo $?) "every file installed${missing:+ (missing:$missing)}"
soname=$(readelf -d "$libdir/libext3d.so.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
t_is "$soname" libext3d.so.0 "libext3d's soname"
others=$(nm -D --defined-only "$libdir/libext3d.so.0" | awk '$2 == "T" && $3 !~ /^ext3d_/' | wc -l)
t_is "$others" 0 "libext3d exports its ext3d_ calls and no other function"
# No installed text file names the tree it came from (the programs run
# with that tree hidden, below).
leaks=$(grep -rIl -F -e "$T_TOP" -e "$b" "$p" | sed "s|^$p/||" | tr '\n' ' ')
t_ok $([ -z "$leaks" ]; echo $?) "no installed text file names the source or build tree${leaks:+ ($leaks)}"
grep -q '[$]{BUILD}' "$p/share/ext3d/ext3d.compose"
t_ok $((! $?)) "the installed compose file names installed programs, not \${BUILD}'s"

# A program outside the tree, with pkg-config alone.
export PKG_CONFIG_PATH=$libdir/pkgconfig
mkdir -p "$T_TMP/outside" && cp "$T_TOP/tests/data/outside.c" "$T_TMP/outside/"
(cd "$T_TMP/outside" && cc -Wall -Werror outside.c $(pkg-config --cflags --libs ext3d) -o dyn) \
	>"$T_TMP/cc.log" 2>&1
t_ok $? "cc outside.c \$(pkg-config --cflags --libs ext3d)"
(cd "$T_TMP/outside" && cc -Wall -Werror outside.c $(pkg-config --cflags ext3d) \
	"$libdir/libext3d.a" $(pkg-config --static --libs ext3d | sed 's/-lext3d//') -o static) \
	>>"$T_TMP/cc.log" 2>&1
t_ok $? "the same against libext3d.a with pkg-config --static"
sed 's/^/#   /' "$T_TMP/cc.log" | head -10
readelf -d "$T_TMP/outside/dyn" | grep -q 'NEEDED.*\[libext3d.so.0\]'
t_ok $? "the shared build needs libext3d.so.0, by its soname"

# ext3d start from the installed tree, mounted; the outside program writes.
mke2fs -q -F -t ext3 "$img" 64M >/dev/null
"$p/bin/ext3d" --instance t-inst start --log "$T_TMP/start.log" --mount "$mnt" "$img" \
	>"$T_TMP/start.out" 2>&1
t_ok $? "installed ext3d start --mount runs an instance from libexec/ext3d"
t_at_exit "'$p/bin/ext3d' --instance t-inst shutdown >/dev/null 2>&1"
spid=$(cat /run/ext3d/t-inst/supervisor.pid 2>/dev/null || echo 0)
tr '\0' ' ' </proc/$spid/cmdline 2>/dev/null | grep -q "^$p/libexec/ext3d/ext3d-supervisor --compose $p/share/ext3d/ext3d.compose "
t_ok $? "its supervisor and compose file are the installed ones"
src=$(findmnt -n -o SOURCE,FSTYPE "$mnt")
t_is "$src" "$img fuse.ext3d" "findmnt shows the image as the mount's source"
LD_LIBRARY_PATH=$libdir "$T_TMP/outside/dyn" t-inst /from-outside "written by a program outside the tree" \
	>"$T_TMP/dyn.out" 2>&1
t_ok $? "the outside program (shared) writes, fsyncs and reads back"
"$T_TMP/outside/static" t-inst /static "static too" >"$T_TMP/st.out" 2>&1
t_ok $? "the outside program (static) does the same"
t_is "$(cat "$mnt/from-outside" 2>&1)" "written by a program outside the tree" \
	"the mount shows what the library wrote"
"$p/bin/ext3d" --instance t-inst shutdown >/dev/null 2>&1
t_ok $? "ext3d shutdown stops it"
findmnt "$mnt" >/dev/null 2>&1
t_ok $((! $?)) "and unmounted it"
e2fsck -fn "$img" >"$T_TMP/fsck1" 2>&1
t_ok $? "e2fsck -fn clean after shutdown"

# The instance mount.fuse.ext3d names after the image; its log goes.
mi=mnt$(printf '%s' "$img" | tr -c 'A-Za-z0-9_.\n-' '-' | tail -c 60)
t_at_exit "rm -f /var/log/ext3d/$mi.log /var/log/ext3d/t-inst.log; rmdir /run/ext3d/$mi /run/ext3d/t-inst /run/ext3d/t-fg /run/ext3d/t-rec 2>/dev/null"

# mount -t fuse.ext3d, fstab, umount: in a mount namespace whose /usr/sbin
# (where /sbin points) is a copy of links that holds the helper.
cat >"$T_TMP/ns.sh" <<EOF
set -u
mount --make-rprivate /
d=\$(mktemp -d) o=\$(mktemp -d)
mount --bind /usr/sbin "\$o" # the links point at the real files, not at themselves
for f in "\$o"/*; do ln -s "\$f" "\$d/"; done
ln -s "$p/sbin/mount.fuse.ext3d" "\$d/"
mount --bind "\$d" /usr/sbin
# The installed programs alone: the source and build trees are empty here.
case "$T_TMP" in "$T_TOP"/*) ;; *) mount -t tmpfs none "$T_TOP" && echo "ns: tree hidden" ;; esac
mount -t tmpfs none "$b"
echo "ns: ready"
mount -t fuse.ext3d -o data=journal,commit=1 "$img" "$mnt" && echo "ns: mount -t ok"
findmnt -n -o SOURCE,FSTYPE "$mnt" | sed 's/^/ns: findmnt /'
echo "via mount -t" >"$mnt/mt" && echo "ns: wrote"
# the instance whose run directory says it is mounted at DIR
run=\$(dirname "\$(grep -lx "$mnt" /run/ext3d/*/mount)")
inst=\$(basename "\$run")
pid=\$(cat "\$run/supervisor.pid")
umount "$mnt" && echo "ns: umount ok"
i=0; while [ -e /proc/\$pid ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
[ -e /proc/\$pid ] || echo "ns: instance stopped"
pgrep -f -- "--instance \$inst " >/dev/null || echo "ns: nothing left running"
echo "$img $mnt fuse.ext3d defaults,data=ordered 0 0" >"$T_TMP/fstab"
mount --fstab "$T_TMP/fstab" "$mnt" && echo "ns: fstab mount ok"
echo "via fstab" >"$mnt/fs" && echo "ns: wrote again"
pid=\$(cat "\$run/supervisor.pid")
umount "$mnt" && echo "ns: umount 2 ok"
i=0; while [ -e /proc/\$pid ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
[ -e /proc/\$pid ] || echo "ns: instance 2 stopped"
EOF
unshare -m sh "$T_TMP/ns.sh" >"$T_TMP/ns.out" 2>&1
if ! grep -q "ns: ready" "$T_TMP/ns.out"; then
	t_skip "no private mount namespace here ($(head -1 "$T_TMP/ns.out"))" "mount -t fuse.ext3d, fstab, umount"
else
	grep -q "ns: mount -t ok" "$T_TMP/ns.out"
	t_ok $? "mount -t fuse.ext3d -o data=journal,commit=1 IMAGE DIR$(grep -q 'ns: tree hidden' "$T_TMP/ns.out" && echo ', the source and build trees hidden')"
	grep -q "ns: findmnt $img fuse.ext3d" "$T_TMP/ns.out"
	t_ok $? "/proc/mounts shows the image as the source"
	grep -q "ns: instance stopped" "$T_TMP/ns.out" && grep -q "ns: nothing left running" "$T_TMP/ns.out"
	t_ok $? "umount DIR stops the instance: nothing of it left running"
	grep -q "ns: fstab mount ok" "$T_TMP/ns.out" && grep -q "ns: instance 2 stopped" "$T_TMP/ns.out"
	t_ok $? "an fstab line mounts it (mount DIR) and umount stops it again"
	sed 's/^/#   /' "$T_TMP/ns.out" | grep -v "ns: " | head -10
	t_img_stopped_clean "$img" "after the umounts"
	t_is "$(t_img_cat "$img" /mt /fs)" "via mount -t via fstab" "debugfs reads what was written through both mounts"
fi

# --foreground under a service manager: READY=1 from the main pid, then
# SIGTERM stops it cleanly.
sock=$T_TMP/notify.sock
python3 "$T_TOP/tests/data/notify-listen.py" "$sock" "$T_TMP/notify.out" 60 &
lpid=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
NOTIFY_SOCKET=$sock "$p/bin/ext3d" --instance t-fg start --foreground "$img" 2>"$T_TMP/fg.log" &
fpid=$!
for _ in $(seq 300); do grep -q READY=1 "$T_TMP/notify.out" 2>/dev/null && break; sleep 0.1; done
grep -q "READY=1.*MAINPID=$fpid" "$T_TMP/notify.out"
t_ok $? "ext3d start --foreground tells NOTIFY_SOCKET READY=1 with its own pid"
"$p/bin/ext3d" --instance t-fg status >/dev/null 2>&1
t_ok $? "the instance is ready when it says so"
kill -TERM $fpid
wait $fpid
t_ok $? "SIGTERM stops it, exit status 0"
wait $lpid
grep -q "STOPPING=1" "$T_TMP/notify.out"
t_ok $? "it says STOPPING=1 first"
e2fsck -fn "$img" >"$T_TMP/fsck3" 2>&1
t_ok $? "e2fsck -fn clean after the SIGTERM"

# ext3d start on a terminal draws journald-svc's replay of a journal that
# needs one, and the instance comes up on the replayed image.
. "$T_TOP/tests/lib/journaled.sh"
t_journaled "$T_TMP/j.img"
t_on_tty "$T_TMP/rec.tty" "'$p/bin/ext3d' --instance t-rec start --log '$T_TMP/rec.log' '$T_TMP/j.img'"
t_check $? "ext3d start on an image whose journal needs a replay" "$T_TMP/rec.tty"
grep -q "recovering: replay 5100/5100 blocks  100%" "$T_TMP/rec.tty"
t_check $? "on a terminal it draws the replay's progress to 100%" "$T_TMP/rec.tty"
"$p/bin/ext3d" --instance t-rec status | grep -q "recovered: 5100 log blocks replayed"
t_ok $? "status says what the replay did"
"$p/bin/ext3d" --instance t-rec shutdown >/dev/null 2>&1
e2fsck -fn "$T_TMP/j.img" >/dev/null 2>&1
t_ok $? "e2fsck -fn clean on the replayed image"

# The unit: verified, and run where systemd runs.
unit=$p/lib/systemd/system/ext3d@.service
if command -v systemd-analyze >/dev/null; then
	cp "$unit" "$T_TMP/ext3d@verify.service"
	MANPATH=$p/share/man systemd-analyze verify "$T_TMP/ext3d@verify.service" >"$T_TMP/verify" 2>&1
	t_ok $? "systemd-analyze verify ext3d@.service (its man pages found)"
	sed 's/^/#   /' "$T_TMP/verify" | head -5
else
	t_skip "no systemd-analyze" "systemd-analyze verify ext3d@.service"
fi
if [ "$(ps -p 1 -o comm= 2>/dev/null)" = systemd ] && command -v systemctl >/dev/null; then
	mkdir -p "$p/etc/ext3d"
	printf 'IMAGE=%s\nOPTIONS=--data=ordered\n' "$img" >"$p/etc/ext3d/t-unit.conf"
	cp "$unit" /run/systemd/system/ext3d@.service && systemctl daemon-reload &&
		systemctl start ext3d@t-unit && "$p/bin/ext3d" --instance t-unit status >/dev/null
	t_ok $? "systemctl start ext3d@t-unit: ready"
	systemctl stop ext3d@t-unit; rm -f /run/systemd/system/ext3d@.service; systemctl daemon-reload
	e2fsck -fn "$img" >/dev/null 2>&1
	t_ok $? "systemctl stop: e2fsck clean"
else
	t_skip "systemd is not PID 1 here ($(ps -p 1 -o comm=))" "ext3d@.service under systemd"
fi

# man ext3d from the installed pages.
MANPATH=$p/share/man man ext3d 2>/dev/null | grep -q "start"
t_ok $? "man ext3d shows the installed page"
t_done
