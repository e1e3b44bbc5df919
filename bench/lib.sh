# bench/lib.sh - shell helpers the write and FUSE benchmark scripts share;
# source it from bash.

# bench_medians FILE: writebench's "result" lines in FILE, as
# "KEY BACKEND MEDIAN UNIT" lines (KEY is workload:threads), sorted.
bench_medians() {
	awk '/^result / {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		print f["workload"] ":" f["threads"], f["backend"], f["rate"], f["unit"]
	}' "$1" | sort -k1,1 -k2,2 -k3,3g | awk '
	function flush() {
		if (n) print key, be, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2), unit
		n = 0
	}
	$1 != key || $2 != be { flush(); key = $1; be = $2 }
	{ v[++n] = $3; unit = $4 }
	END { flush() }'
}

# bench_tsv FILE: the medians of FILE's "result" lines as tab-separated
# "workload threads backend value unit" lines, the form of bench/run's
# results.tsv (bench/README.md).
bench_tsv() {
	bench_medians "$1" | awk -v OFS='\t' '{ split($1, k, ":"); print k[1], k[2], $2, $3, $4 }'
}
