#!/usr/bin/env bash
# Prints the engine's sections of BENCHMARKS.md, headings included, as
# markdown to paste over them: "The engine's table", each figure the
# median of COUNT runs (default 5) of the same binary, every ratio
# measured inside its own benchmark against raw proto.Unmarshal of the
# same bytes in the same run; and "Against the targets", the performance
# targets against those medians. The other sections of BENCHMARKS.md
# (the store, the relay, other packages) say which go test command
# gives their figures.
#
#   scripts/bench-table.sh            # all engine benchmarks
#   COUNT=9 scripts/bench-table.sh    # more runs
#   FROM=bench.txt scripts/bench-table.sh
#                                     # the sections of benchmark output
#                                     # saved before (go test -bench)
#   SAVE=bench.txt scripts/bench-table.sh
#                                     # also keep the runs' output, for
#                                     # FROM later
#   scripts/bench-table.sh check      # runs nothing: checks that
#                                     # BENCHMARKS.md has the headings, the
#                                     # table's columns and the target rows
#                                     # this script prints
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = check ]; then
	# The sections' skeleton, as printed from no runs: headings, header
	# rows and every target's row, "not measured".
	skeleton="$(FROM=/dev/null "$0")"
	# The target rows BENCHMARKS.md has, from its own section.
	documented="$(awk '/^## /{on = ($0 == "## Against the targets")} on && /^\| / && !/^\|---/' BENCHMARKS.md)"
	status=0
	while IFS= read -r line; do
		case "$line" in
		'## '* | '| benchmark |'* | '| target |'*)
			if ! grep -qxF -- "$line" BENCHMARKS.md; then
				echo "BENCHMARKS.md lacks this line, which scripts/bench-table.sh prints: $line" >&2
				status=1
			fi
			;;
		'|---'*) ;;
		'| '*)
			target="${line%% | *} | "
			if ! grep -qF -- "$target" <<<"$documented"; then
				echo "BENCHMARKS.md's targets lack this one: ${target% | }" >&2
				status=1
			fi
			;;
		esac
	done <<<"$skeleton"
	while IFS= read -r line; do
		target="${line%% | *} | "
		if [ "$line" != "| target | measured | bound | met |" ] && ! grep -qF -- "$target" <<<"$skeleton"; then
			echo "BENCHMARKS.md has a target scripts/bench-table.sh does not print: ${target% | }" >&2
			status=1
		fi
	done <<<"$documented"
	exit "$status"
fi
count="${COUNT:-5}"
# The latency benchmarks report percentiles of their calls: they run
# enough calls for a 99th percentile (of 20, it would be the slowest).
latency='Benchmark(SotW|Delta)Watch(DuringPush|ToRequest)$'
# Watch-to-delivery waits for a push to be applied: fewer calls.
delivery='BenchmarkSotWWatchToDeliveryDuringPush$'
machine=""
command="${FROM:+FROM=$FROM }$0"
if [ -z "${FROM:-}" ]; then
	bin="$(mktemp)"
	trap 'rm -f "$bin"' EXIT
	go test -c -o "$bin" ./engine
	machine="$(go env GOOS)/$(go env GOARCH), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3)"
	command="COUNT=$count $0"
fi
{
	if [ -n "${FROM:-}" ]; then
		cat "$FROM"
	else
		"$bin" -test.run '^$' -test.bench 'BenchmarkSotW|BenchmarkDelta|BenchmarkEngineEDSResponse|BenchmarkGRPC' -test.skip "$latency|$delivery" -test.benchmem -test.count "$count"
		"$bin" -test.run '^$' -test.bench "$latency" -test.benchmem -test.count "$count" -test.benchtime 3000x
		"$bin" -test.run '^$' -test.bench "$delivery" -test.benchmem -test.count "$count" -test.benchtime 300x
	fi
} |
	tee "${SAVE:-/dev/null}" |
	awk -v machine="$machine" -v command="$command" '
	# Saved output names its machine in go test'"'"'s header lines.
	/^goos: / { goos = $2 }
	/^goarch: / { goarch = $2 }
	/^cpu: / { cpu = $0; sub(/^cpu: /, "", cpu) }
	/^Benchmark/ {
		name = $1; if (match(name, /-[0-9]+$/)) procs = substr(name, RSTART + 1); sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
		if (!(name in seen)) { seen[name] = 1; order[++n] = name }
		if (++runs[name] > maxruns) maxruns = runs[name]
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
		print "## The engine'"'"'s table"
		print ""
		if (machine == "" && goos != "") machine = goos "/" goarch ", " procs " CPUs (GOMAXPROCS), " cpu
		if (machine != "") print "Machine: " machine "."
		print "Each figure is the median of " maxruns + 0 " runs of one test binary (`" command "`)."
		print ""
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
				else if (col[c] == "requests/op") line = line sprintf(" %.1f |", v)
				else line = line sprintf(" %.0f |", v)
			}
			print line
		}
		targets()
	}
	# m is the median of a metric of a benchmark, or "" if it did not run.
	function m(name, unit) { return median(vals[name, unit]) }
	function target(what, value, bound, met) {
		if (value == "") { value = "not measured"; met = "" }
		print "| " what " | " value " | " bound " | " met " |"
	}
	function yes(ok) { return ok ? "yes" : "no" }
	# The targets, from the medians above. A ratio between two benchmarks
	# (the cold start against all/1k, 100k against 1k) is a ratio of
	# their medians.
	function targets(   v, w, c, r, cold, base) {
		print ""
		print "## Against the targets"
		print ""
		print "| target | measured | bound | met |"
		print "|---|---|---|---|"
		v = m("SotWClusters/all/1k", "x-raw-cpu"); w = m("SotWClusters/all/1k", "x-raw")
		target("(a) all/1k, CPU and wall against raw", (v == "" ? "" : sprintf("%.2f ×, %.2f ×", v, w)), "1.6 ×, 1.0 ×", yes(v <= 1.6 && w <= 1.0))
		v = m("SotWEDS/changed", "x-raw")
		target("(b) SotWEDS/changed against raw", (v == "" ? "" : sprintf("%.2f ×", v)), "1.1 ×", yes(v <= 1.1))
		v = m("SotWClusters/one/1k", "x-envelope-cpu")
		target("(c) one/1k, CPU against the envelope", (v == "" ? "" : sprintf("%.2f ×", v)), "1.5 ×", yes(v <= 1.5))
		cold = m("SotWColdStart", "cpu-ns/op"); base = m("SotWClusters/all/1k", "cpu-ns/resource"); r = m("SotWColdStart", "requests/op")
		c = (cold == "" || base == "") ? "" : cold / (base * 1000)
		target("cold start, CPU against that of all/1k", (c == "" ? "" : sprintf("%.2f ×, %.1f requests", c, r)), "1.3 ×", yes(c <= 1.3))
		cold = m("GRPCColdStart", "cpu-ns/op"); base = m("GRPCClusters/all/1k", "cpu-ns/resource"); r = m("GRPCColdStart", "requests/op")
		c = (cold == "" || base == "") ? "" : cold / (base * 1000)
		target("cold start over gRPC, against that of GRPCClusters/all/1k", (c == "" ? "" : sprintf("%.2f ×, %.1f requests", c, r)), "1.3 ×", yes(c <= 1.3))
		v = m("SotWClusters/all/100k", "cpu-ns/resource"); base = m("SotWClusters/all/1k", "cpu-ns/resource")
		c = (v == "" || base == "") ? "" : 100 * (v / base - 1)
		target("CPU per resource, 100k against 1k", (c == "" ? "" : sprintf("%+.1f %%", c)), "+15 %", yes(c <= 15))
		v = m("SotWHeapPerCluster/10k", "B/cluster"); w = m("SotWHeapPerCluster/100k", "B/cluster")
		target("heap per cached Cluster, 10,000 and 100,000", (v == "" ? "" : sprintf("%.0f B, %.0f B", v, w)), "850 B", yes(v <= 850 && w <= 850))
		v = m("SotWWatchDuringPush", "p99-ns")
		target("Watch during a push, p99", (v == "" ? "" : sprintf("%.3f ms", v / 1e6)), "0.05 ms", yes(v <= 5e4))
		v = m("SotWWatchToDeliveryDuringPush/other-server", "p99-ns")
		target("Watch to delivery during a push, another server, p99", (v == "" ? "" : sprintf("%.2f ms", v / 1e6)), "1 ms", yes(v <= 1e6))
		v = m("SotWWatchToDeliveryDuringPush/same-server", "p99-ns")
		target("Watch to delivery during a push, the pushing server, p99", (v == "" ? "" : sprintf("%.2f ms", v / 1e6)), "1 ms (the push is the floor, below)", yes(v <= 1e6))
		v = m("DeltaOneChanged", "x-sotw-cpu"); w = m("DeltaOneChanged", "x-sotw-bytes")
		target("incremental xDS, one of 10,000 changed: CPU and bytes against SotW", (v == "" ? "" : sprintf("%.3f ×, %.5f ×", v, w)), "0.05 ×", yes(v <= 0.05 && w <= 0.05))
	}'
