# bench/lib.sh - shell helpers the write and FUSE benchmark scripts share;
# source it from bash.

# bench_medians FILE: writebench's "result" lines in FILE, as
# "KEY BACKEND MEDIAN" lines (KEY is workload:threads), sorted.
bench_medians() {
	awk '/^result / {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		print f["workload"] ":" f["threads"], f["backend"], f["rate"]
	}' "$1" | sort -k1,1 -k2,2 -k3,3g | awk '
	function flush() {
		if (n) print key, be, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2)
		n = 0
	}
	$1 != key || $2 != be { flush(); key = $1; be = $2 }
	{ v[++n] = $3 }
	END { flush() }'
}

