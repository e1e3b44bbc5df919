# journaled.sh - t_journaled IMAGE: a 64 MiB ext3 image of 1 KiB blocks
# whose 16 MiB journal holds 50 transactions of 100 random blocks each
# (debugfs jo/jw/jc: 5100 log blocks), homed in the data area of group 4
# (no superblock backup there), none of it replayed: the image needs
# recovery.
t_journaled() {
	mke2fs -q -F -t ext3 -b 1024 -J size=16 "$1" 64M >/dev/null 2>&1 || return 1
	head -c $((100 * 1024)) /dev/urandom >"$1.data"
	{
		echo jo
		for i in $(seq 50); do
			echo "jw -b $((34000 + i * 100))-$((34099 + i * 100)) $1.data"
		done
		echo jc
	} >"$1.cmds"
	debugfs -w -f "$1.cmds" "$1" >/dev/null 2>&1
}
