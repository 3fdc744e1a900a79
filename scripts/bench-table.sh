#!/usr/bin/env bash
# Prints the engine's benchmark table (BENCHMARKS.md) as markdown: each
# figure is the median of COUNT runs (default 5) of the same binary, and
# every ratio is measured inside its own benchmark, against raw
# proto.Unmarshal of the same bytes in the same run.
#
#   scripts/bench-table.sh            # all engine benchmarks
#   COUNT=9 scripts/bench-table.sh    # more runs
set -euo pipefail
cd "$(dirname "$0")/.."
count="${COUNT:-5}"
bin="$(mktemp)"
trap 'rm -f "$bin"' EXIT
go test -c -o "$bin" ./engine
echo "machine: $(go env GOOS)/$(go env GOARCH), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3)"
echo "command: $0 (go test -bench 'BenchmarkSotW|BenchmarkDelta|BenchmarkEngineEDSResponse|BenchmarkGRPC' -benchmem, median of $count)"
echo
# The latency benchmarks report percentiles of their calls: they run
# enough calls for a 99th percentile (of 20, it would be the slowest).
latency='Benchmark(SotW|Delta)Watch(DuringPush|ToRequest)$'
{
	"$bin" -test.run '^$' -test.bench 'BenchmarkSotW|BenchmarkDelta|BenchmarkEngineEDSResponse|BenchmarkGRPC' -test.skip "$latency" -test.benchmem -test.count "$count"
	"$bin" -test.run '^$' -test.bench "$latency" -test.benchmem -test.count "$count" -test.benchtime 3000x
} |
	awk '
	/^Benchmark/ {
		name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
		if (!(name in seen)) { seen[name] = 1; order[++n] = name }
		for (i = 3; i < NF; i += 2) {
			unit = $(i + 1); key = name SUBSEP unit
			vals[key] = vals[key] " " $i
			units[unit] = 1
		}
	}
	function median(list,   a, k, i, j, t) {
		k = split(list, a, " ")
		if (k == 0) return ""
		for (i = 2; i <= k; i++)  # insertion sort: POSIX awk has no asort
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		cols = "ns/op x-raw x-raw-cpu x-envelope x-envelope-cpu ns/resource cpu-ns/resource cpu-ns/op requests/op watch-ns/op watch-cpu-ns/op request-ns/op request-cpu-ns/op deliver-ns/op deliver-cpu-ns/op B/cluster p50-ns p99-ns push-busy delta-ns sotw-ns x-sotw-cpu x-sotw-bytes B/op allocs/op"
		ncol = split(cols, col, " ")
		header = "| benchmark |"; sep = "|---|"
		for (c = 1; c <= ncol; c++) { header = header " " col[c] " |"; sep = sep "---:|" }
		print header; print sep
		for (r = 1; r <= n; r++) {
			line = "| " order[r] " |"
			for (c = 1; c <= ncol; c++) {
				v = median(vals[order[r], col[c]])
				if (v == "") line = line " |"
				else if (col[c] ~ /^x-/ && v < 0.1) line = line sprintf(" %.2g |", v)
				else if (col[c] ~ /^x-|-busy$/) line = line sprintf(" %.2f |", v)
				else line = line sprintf(" %.0f |", v)
			}
			print line
		}
	}'
