#!/usr/bin/env bash
# Before and after in one run: the end-to-end benchmarks of bench/ against an
# earlier commit, the two builds taking turns so that both meet the same
# neighbours on a shared machine.
#
#   scripts/bench-before-after.sh REV [ROUNDS] [TEST_REGEXP...]
#
#   REV          the "before" commit (for example 0b2009d)
#   ROUNDS       how many turns each (default 2); odd rounds run before then
#                after, even rounds after then before
#   TEST_REGEXP  the bench tests to run, each on its own (default: every
#                figure of BENCHMARKS.md that bench/ measures in-process);
#                an argument starting with ./ is a package instead, whose Go
#                benchmarks (LEAFPROXY_MICRO_BENCH, default .) run in both
#                trees in turn, compared with benchstat at the end
#
# The benchmark harness (bench/ and internal/testkit/testwait) is this tree's in both
# builds: REV's product code under today's instrument, so that only the
# product differs. It must compile against REV; if it does not, pick a REV
# closer to today. LEAFPROXY_BENCH_* settings pass through to every run
# (LEAFPROXY_BENCH=1 is set here). Logs go to $OUT (default
# /tmp/leafproxy-before-after-REV), one file per test, round and build; the
# last lines of each are printed as they finish. Reading the tables is left
# to you: every test prints its own, and ratios are taken round by round.
set -euo pipefail
cd "$(dirname "$0")/.."

rev=${1:?usage: scripts/bench-before-after.sh REV [ROUNDS] [TEST_REGEXP...]}
shift
rounds=2
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
	rounds=$1
	shift
fi
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	tests=(TestProxyOverhead TestProxyStreaming TestNextvalBench TestNextvalBlockBench
		TestIDAPIBench TestInsertBench TestInsertSelectBench TestIdleMemory TestLoginLatency)
fi

out=${OUT:-/tmp/leafproxy-before-after-$rev}
mkdir -p "$out"
before=$out/src-$rev
rm -rf "$before"
mkdir -p "$before"
git archive "$rev" | tar -x -C "$before"
# A REV from before the test harnesses moved under internal/testkit (issue
# 42) keeps them in internal/: put its own where today's bench/ imports them.
for h in testdb fakestore testwait leafproc driversuite ormsuite; do
	if [ -d "$before/internal/$h" ] && [ ! -e "$before/internal/testkit/$h" ]; then
		mkdir -p "$before/internal/testkit"
		mv "$before/internal/$h" "$before/internal/testkit/$h"
	fi
done
rm -rf "$before/bench" "$before/internal/testkit/testwait"
cp -r bench "$before/bench"
cp -r internal/testkit/testwait "$before/internal/testkit/testwait"

echo "== building the bench binaries: $rev (before) and $(git rev-parse --short HEAD) (after)"
(cd "$before/bench" && go test -c -o "$out/bench-before" .)
(cd bench && go test -c -o "$out/bench-after" .)

export LEAFPROXY_BENCH=1
run() { # which dir test round
	local log=$out/$2.r$4.$1.log
	echo "== $(date +%T) $2 round $4: $1 (load $(cut -d' ' -f1-3 /proc/loadavg))"
	# The test binary runs in its module's directory: tests that start
	# leafproxy as a process build it with `go build` from there.
	if (cd "$3" && "$out/bench-$1" -test.run "^$2\$" -test.v -test.count=1 -test.timeout 60m) >"$log" 2>&1; then
		tail -n 3 "$log" | sed 's/^/   /'
	else
		echo "   FAILED: $log"
		tail -n 20 "$log" | sed 's/^/   /'
	fi
}
micro() { # which dir pkg round
	local log=$out/micro-${3//[.\/]/_}.$1.txt
	echo "== $(date +%T) $3 round $4: $1 (load $(cut -d' ' -f1-3 /proc/loadavg))"
	(cd "$2" && go test -run '^$' -bench "${LEAFPROXY_MICRO_BENCH:-.}" -benchmem -count 3 "$3") >>"$log" 2>&1 ||
		echo "   FAILED: $log"
}
for r in $(seq 1 "$rounds"); do
	for t in "${tests[@]}"; do
		if [[ $t == ./* ]]; then
			if [ $((r % 2)) = 1 ]; then
				micro before "$before" "$t" "$r"
				micro after . "$t" "$r"
			else
				micro after . "$t" "$r"
				micro before "$before" "$t" "$r"
			fi
		elif [ $((r % 2)) = 1 ]; then
			run before "$t" "$before/bench" "$r"
			run after "$t" bench "$r"
		else
			run after "$t" bench "$r"
			run before "$t" "$before/bench" "$r"
		fi
	done
done
for t in "${tests[@]}"; do
	if [[ $t == ./* ]]; then
		f=micro-${t//[.\/]/_}
		echo "== $t: before ($rev) vs after"
		go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da \
			before="$out/$f.before.txt" after="$out/$f.after.txt" || true
	fi
done
echo "== logs in $out"
