#!/bin/sh
# difftest.t - the write path against the kernel: tests/tools/difftest runs
# one seeded random sequence of creates, mkdirs, writes (sparse, appends,
# O_TRUNC), truncates, renames, links, unlinks, rmdirs, symlinks, chmods,
# chowns, fsyncs, stats and reads against ext3d and against a kernel loop
# mount of an identical image, comparing every return value and errno,
# then both trees; a third of the steps run as uid 1000 (permissions,
# ownership, the sticky bit). For each data mode (ordered, journal, writeback) and
# block size (1 KiB, 4 KiB): e2fsck -fn is clean on both images; the
# kernel mounts the image ext3d wrote and shows the tree ext3d showed;
# debugfs reads back a file ext3d wrote as the kernel reads it.
# Default: 300 operations per configuration; EXT3D_LONG=1: 3000. The
# seeds are printed; EXT3D_SEED=N reruns with base seed N (configuration K
# gets seed N+K); EXT3D_DIFF_MODES and EXT3D_DIFF_BS narrow the runs.
# Seeds that once found a difference run every time too, at the end.
set -u
. "$(dirname "$0")/../lib/tap.sh"
. "$T_TOP/tests/lib/instance.sh"

t_need_root "kernel loop mounts of ext3 images"
chmod 755 "$T_TMP" # uid 1000's session reaches the run directory through it
dt=$EXT3D_BUILD/tests/tools/difftest
xt=$EXT3D_BUILD/tests/tools/x3-tree
nops=300
[ -n "${EXT3D_LONG:-}" ] && nops=3000
base=${EXT3D_SEED:-$(date +%s)}
t_diag "base seed $base, $nops operations per configuration"
mkdir -p "$T_TMP/mk" "$T_TMP/ma"
probe=$T_TMP/probe.img
mke2fs -q -F -t ext3 "$probe" 4M >/dev/null 2>&1
mount -o loop -t ext3 "$probe" "$T_TMP/mk" 2>/dev/null || t_skip_all "no kernel ext3 loop mount here"
umount "$T_TMP/mk"

# config K MODE BS SEED NOPS: one configuration, the kernel's twin and
# ext3d run the same NOPS steps of seed SEED.
config() {
	k=$1 mode=$2 bs=$3 seed=$4 nops=$5 cfg="$2, $3-byte blocks, seed $4"
	a=$T_TMP/a.img b=$T_TMP/b.img n=t-diff-$k
	mke2fs -q -F -t ext3 -b $bs -N 2048 "$a" 48M >/dev/null 2>&1 && cp "$a" "$b"
	t_ok $? "two identical images ($cfg)"
	t_instance_start $n "$T_TOP/compose/ext3d.compose" --set "IMAGE=$a" \
		--set BLOCKDEV_ARGS= --set "DATA=$mode" >/dev/null
	t_ok $? "instance ready ($cfg)"
	mount -o loop -t ext3 "$b" "$T_TMP/mk" && chmod 1777 "$T_TMP/mk" &&
		"$T_EXT3D" --instance $n chmod 1777 /
	t_ok $? "kernel mount of the twin, both roots sticky and writable by all ($cfg)"

	"$dt" --instance $n "$T_TMP/mk" $seed $nops >"$T_TMP/dt.out" 2>&1
	t_ok $? "every return value and errno and both trees alike ($cfg, $nops operations run)"
	head -30 "$T_TMP/dt.out" | sed 's/^/#   /'
	"$xt" --instance $n ext3d / 2>&1 | grep -v '^/lost+found' >"$T_TMP/x.tree"
	"$xt" host "$T_TMP/mk" 2>&1 | grep -v '^/lost+found' >"$T_TMP/k.tree"
	diff "$T_TMP/k.tree" "$T_TMP/x.tree" >"$T_TMP/diff" 2>&1
	t_ok $? "x3-tree manifests alike, hard-link groups included ($cfg, $(grep -c '' "$T_TMP/x.tree") entries)"
	head -10 "$T_TMP/diff" | sed 's/^/#   /'

	umount "$T_TMP/mk"
	t_instance_stop $n
	e2fsck -fn "$a" >"$T_TMP/fsck.out" 2>&1
	t_ok $? "e2fsck -fn clean on the image ext3d wrote ($cfg)"
	[ -n "$(tail -c 1 "$T_TMP/fsck.out")" ] && sed 's/^/#   /' "$T_TMP/fsck.out" | head -20
	e2fsck -fn "$b" >/dev/null 2>&1
	t_ok $? "e2fsck -fn clean on the kernel's twin ($cfg)"

	if mount -o loop -t ext3 "$a" "$T_TMP/ma"; then
		"$xt" host "$T_TMP/ma" 2>&1 | grep -v '^/lost+found' >"$T_TMP/a.tree"
		diff "$T_TMP/x.tree" "$T_TMP/a.tree" >"$T_TMP/diff" 2>&1
		t_ok $? "the kernel mounts ext3d's image and sees the tree ext3d showed ($cfg)"
		head -10 "$T_TMP/diff" | sed 's/^/#   /'
		f=$(awk -F'\t' '$2 == 10 && $7 > 0 {print $1; exit}' "$T_TMP/x.tree")
		if [ -n "$f" ]; then
			debugfs -R "cat $f" "$a" 2>/dev/null >"$T_TMP/dbg.out"
			cmp -s "$T_TMP/dbg.out" "$T_TMP/ma$f"
			t_ok $? "debugfs reads back $f as the kernel reads it ($cfg)"
		else
			t_skip "no non-empty file in the tree" "debugfs reads back a file ($cfg)"
		fi
		[ -n "${EXT3D_DIFF_KEEP:-}" ] && cp "$a" "$EXT3D_DIFF_KEEP.a.img" && cp "$b" "$EXT3D_DIFF_KEEP.b.img"
		umount "$T_TMP/ma"
	else
		t_ok 1 "the kernel mounts the image ext3d wrote ($cfg)"
		t_skip "no mount" "debugfs reads back a file ($cfg)"
	fi
}

k=0
for mode in ordered journal writeback; do
	for bs in 1024 4096; do
		k=$((k + 1))
		case " ${EXT3D_DIFF_MODES:-$mode} " in *" $mode "*) ;; *) continue ;; esac
		case " ${EXT3D_DIFF_BS:-$bs} " in *" $bs "*) ;; *) continue ;; esac
		config $k $mode $bs $((base + k)) $nops
	done
done
# Seeds that found a difference once, each rerun every time: a directory
# moved across parents without write permission on it, onto a non-empty
# directory (step 1926: EACCES in the kernel, ENOTEMPTY in ext3d).
config 7 ordered 4096 1796525617 2000
t_done
