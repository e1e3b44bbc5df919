# imgcheck.sh - checks of an image no instance has open any more.
#   t_img_fsck IMAGE MSG: one TAP check, e2fsck -fn finds nothing (what it
#     found, if anything, as comments).
#   t_img_stopped_clean IMAGE WHEN: two TAP checks, e2fsck -fn finds
#     nothing and needs_recovery is clear (the journal was emptied on the
#     way down); WHEN ends each description.
#   t_img_cat IMAGE PATH...: the files' contents as debugfs reads them,
#     joined by spaces.
t_img_fsck() {
	local rc
	e2fsck -fn "$1" >"$T_TMP/imgcheck.fsck" 2>&1
	rc=$?
	t_ok $rc "$2"
	[ $rc -eq 0 ] || sed 's/^/#   /' "$T_TMP/imgcheck.fsck" | head -20
}

t_img_stopped_clean() {
	t_img_fsck "$1" "e2fsck -fn clean $2"
	dumpe2fs -h "$1" 2>/dev/null | grep -q '^Filesystem features:.*needs_recovery'
	t_ok $((! $?)) "needs_recovery clear $2"
}

t_img_cat() {
	local img=$1 p out=
	shift
	for p; do
		out="$out $(debugfs -R "cat $p" "$img" 2>/dev/null)"
	done
	echo $out
}
