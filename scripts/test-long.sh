#!/usr/bin/env bash
# The long suites, run before a release (scripts/test.sh, the command run
# before pushing, leaves them out so that it stays under 15 minutes on a
# quiet 2-core machine). Each runs in turn, every one even when one before
# it failed; the last lines list the failed suites and sum up as test.sh
# does (`summary: 7 passed, 0 failed`), and the exit status is non-zero when
# any failed. A suite that cannot run here (no checkout, no node, no
# mariadb-test) fails, saying why: a release is checked by all of them.
#
#   scripts/test-long.sh              # every suite below, in this order
#   scripts/test-long.sh diff mtr     # only these
#
# The suites (figures from README's Tests section, 2 cores; the whole run
# has not been timed, its parts put it at an hour or more):
#   diff       the long differential run: TestDifferential with
#              LEAFPROXY_DIFF_N statements (default here 5000, ~30 s of
#              workload; the default test command runs 600);
#              LEAFPROXY_DIFF_FROM and the other LEAFPROXY_DIFF_* settings
#              pass through
#   outage     the store outage at full length: TestLongStoreOutage with
#              LEAFPROXY_OUTAGE_MINUTES (default here 10)
#   gorm       GORM's own test suite, directly and through the proxy
#              (scripts/gorm-suite.sh, ~3 min; LEAFPROXY_GORM_SRC, else a
#              clone of github.com/go-gorm/gorm in the cache directory)
#   sequelize  Sequelize's own integration suite, likewise
#              (scripts/sequelize-suite.sh, npm install and build, then
#              ~4 min; LEAFPROXY_SEQUELIZE_SRC, else a clone of its v6
#              branch; needs node and npm)
#   mtr        MariaDB's own main suite, a selection, directly and through
#              the proxy (scripts/mtr.sh, ~12 min; needs mariadb-test,
#              which it installs as root)
#   flood      logins under a flood of silent connections
#              (TestFloodLoginLatency, LEAF_FLOOD_LATENCY=1; LEAF_FLOOD_*
#              pass through)
#   bench      bench/'s end-to-end comparison suites, the ID API flood
#              among them (LEAFPROXY_BENCH=1, LEAFPROXY_BENCH_* pass
#              through; figures and commands in BENCHMARKS.md)
#
# The clones go to $LEAFPROXY_TEST_CACHE (default ~/.cache/leafproxy-test)
# and are reused as they are on the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/sbin"
export TMPDIR="${TMPDIR:-/tmp}"

all=(diff outage gorm sequelize mtr flood bench)
if [ $# -gt 0 ]; then
	suites=("$@")
	for s in "${suites[@]}"; do
		if [[ ! " ${all[*]} " == *" $s "* ]]; then
			echo "unknown suite $s; the suites are: ${all[*]}" >&2
			exit 2
		fi
	done
else
	suites=("${all[@]}")
fi
cache=${LEAFPROXY_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/leafproxy-test}

# checkout DIR URL [GIT-CLONE-ARGS...]: clone URL into DIR unless it is
# there already.
checkout() {
	local dir=$1 url=$2
	shift 2
	if [ ! -d "$dir/.git" ]; then
		mkdir -p "$(dirname "$dir")"
		echo "== cloning $url into $dir"
		git clone --quiet "$@" "$url" "$dir"
	fi
}

suite_diff() {
	env LEAFPROXY_DIFF_N="${LEAFPROXY_DIFF_N:-5000}" \
		go test -count=1 -timeout 60m -v -run '^TestDifferential$' ./integration
}
suite_outage() {
	env LEAFPROXY_OUTAGE_MINUTES="${LEAFPROXY_OUTAGE_MINUTES:-10}" \
		go test -count=1 -timeout 60m -v -run '^TestLongStoreOutage$' ./service
}
suite_gorm() {
	local src=${LEAFPROXY_GORM_SRC:-$cache/gorm}
	[ -n "${LEAFPROXY_GORM_SRC:-}" ] || checkout "$src" https://github.com/go-gorm/gorm || return 1
	LEAFPROXY_GORM_SRC=$src scripts/gorm-suite.sh
}
suite_sequelize() {
	local src=${LEAFPROXY_SEQUELIZE_SRC:-$cache/sequelize}
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "node and npm are needed for Sequelize's suite (apt-get install nodejs npm)" >&2
		return 1
	fi
	[ -n "${LEAFPROXY_SEQUELIZE_SRC:-}" ] || checkout "$src" https://github.com/sequelize/sequelize -b v6 || return 1
	LEAFPROXY_SEQUELIZE_SRC=$src scripts/sequelize-suite.sh
}
suite_mtr() {
	scripts/mtr.sh
}
suite_flood() {
	env LEAF_FLOOD_LATENCY=1 go test -count=1 -timeout 60m -v -run '^TestFloodLoginLatency$' ./proxy
}
suite_bench() {
	(cd bench && LEAFPROXY_BENCH=1 go test -count=1 -timeout 4h -v ./...)
}

# As scripts/test.sh: every suite runs even when an earlier one failed.
passed=0
failed=()
for s in "${suites[@]}"; do
	echo "== $s ($(date -u +%H:%M:%S) UTC)"
	if "suite_$s"; then
		passed=$((passed + 1))
	else
		echo "== FAILED: $s" >&2
		failed+=("$s")
	fi
done

if [ ${#failed[@]} -gt 0 ]; then
	printf '== failed suites:\n' >&2
	printf '   %s\n' "${failed[@]}" >&2
fi
echo "summary: ${passed} passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
