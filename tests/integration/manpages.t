#!/bin/sh
# manpages.t - the man pages in man/: each one exists, is installed by
# man/meson.build, and formats without a single roff warning (groff -man
# -ww, and man --warnings where man is installed; skipped without groff);
# ext3d(1) documents every command that ext3d --help lists, each as an
# item of its own (a tagged paragraph whose tag starts with the command's
# name); libext3d(3) declares every ext3d_ function of client/ext3d.h in its
# synopsis and speaks of it again after the synopsis; no page names a
# path of the build machine.
set -u
. "$(dirname "$0")/../lib/tap.sh"

man=$T_TOP/man
pages="ext3d.1 ext3d-fuse.8 libext3d.3 ext3d.compose.5"

# plain PAGE: the page's roff source with escapes, fonts and quotes taken
# out, so that words can be matched as they read.
plain() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' -e 's/\\(dq/"/g' -e 's/"//g' "$1"
}

for p in $pages; do
	f=$man/$p
	if [ ! -f "$f" ]; then
		t_ok 1 "$p exists"
		continue
	fi
	grep -q "'$p'" "$man/meson.build" 2>/dev/null
	t_ok $? "$p is installed by man/meson.build"
	if ! command -v groff >/dev/null 2>&1; then
		t_skip "groff is not installed" "$p formats without roff warnings"
	else
		# groff says nothing on stdout with -z, and exits 0 even when it
		# warns: any line on stderr is a warning.
		out=$( { groff -man -ww -z "$f"; groff -man -ww -z -Tutf8 "$f"; } 2>&1)
		if command -v man >/dev/null 2>&1; then
			out=$(printf '%s\n%s' "$out" "$(man --warnings -l -E UTF-8 "$f" 2>&1 >/dev/null)" |
				sed '/^$/d')
		fi
		[ -z "$out" ]
		t_ok $? "$p formats without roff warnings"
		[ -n "$out" ] && echo "$out" | head -20 | sed 's/^/#   /'
	fi
	bad=$(grep -nE '/work/|\.\./shared|/build/' "$f")
	[ -z "$bad" ]
	t_ok $? "$p names no path of the build machine"
	[ -n "$bad" ] && echo "$bad" | sed 's/^/#   /'
done

# The commands of ext3d --help (usage on stderr, exit status 2): the first
# word of each indented line.
cli=$EXT3D_BUILD/client/ext3d
if [ ! -x "$cli" ]; then
	t_skip "$cli is not built" "ext3d(1) documents every command of ext3d --help"
elif [ -f "$man/ext3d.1" ]; then
	cmds=$("$cli" --help 2>&1 | awk '/^  [a-z]/ { print $1 }' | sort -u)
	[ -n "$cmds" ]
	t_ok $? "ext3d --help lists commands"
	# The first word of each .TP tag.
	tags=$(plain "$man/ext3d.1" | awk 'tp { sub(/^\.[A-Z]+ */, ""); print $1 } { tp = /^\.TP/ }' |
		sort -u)
	missing=
	for c in $cmds; do
		echo "$tags" | grep -qx "$c" || missing="$missing $c"
	done
	[ -z "$missing" ]
	t_ok $? "ext3d(1) has an item for each of the $(echo $cmds | wc -w) commands of ext3d --help"
	[ -n "$missing" ] && t_diag "no item for:$missing"
fi

# The functions of client/ext3d.h: declarations start at the line's start.
hdr=$T_TOP/client/ext3d.h
if [ -f "$man/libext3d.3" ]; then
	funcs=$(grep -E '^[a-z]' "$hdr" | grep -oE '\bext3d_[a-z0-9_]+\(' | tr -d '(' | sort -u)
	[ -n "$funcs" ]
	t_ok $? "client/ext3d.h declares ext3d_ functions"
	txt=$(plain "$man/libext3d.3")
	synopsis=$(echo "$txt" | sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p')
	body=$(echo "$txt" | sed -n '/^\.SH DESCRIPTION/,$p')
	nosyn= nobody=
	for fn in $funcs; do
		echo "$synopsis" | grep -qE "[ *]$fn\(" || nosyn="$nosyn $fn"
		echo "$body" | grep -qw "$fn" || nobody="$nobody $fn"
	done
	[ -z "$nosyn" ]
	t_ok $? "libext3d(3)'s synopsis declares each of the $(echo $funcs | wc -w) functions of ext3d.h"
	[ -n "$nosyn" ] && t_diag "not in the synopsis:$nosyn"
	[ -z "$nobody" ]
	t_ok $? "libext3d(3) describes each function of ext3d.h after its synopsis"
	[ -n "$nobody" ] && t_diag "not described:$nobody"
fi
t_done
