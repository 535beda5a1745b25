#!/usr/bin/env bash
# The one test command: every test, vet, and the race detector on the
# packages with concurrency. Tests start their own throwaway MariaDB servers
# on loopback (internal/testkit/testdb) and stop them at the end; nothing here uses a
# database someone else started.
#
#   scripts/test.sh            # everything, then go-sql-driver's own suite through the proxy
#   scripts/test.sh -short     # skip the long load tests (extra args go to go test)
#
# The long suites are not here: scripts/test-long.sh runs them, before a
# release (README, Tests).
#
# With arguments (-short, -run ...) or LEAFPROXY_SKIP_DRIVER_SUITE=1 the
# driver suite (scripts/driver-suite.sh, about 2 minutes on 2 cores) is left out.
set -euo pipefail
cd "$(dirname "$0")/.."

find_mariadbd() {
	command -v mariadbd || command -v mysqld || ls /usr/sbin/mariadbd /usr/sbin/mysqld 2>/dev/null | head -n1 || true
}

if [ -z "$(find_mariadbd)" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "== mariadbd not found: installing Debian's mariadb-server"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		# The package's own service is not needed: tests start their own servers.
		apt-get install -y -qq --no-install-recommends mariadb-server mariadb-client >/dev/null
	else
		echo "mariadbd not found. Install MariaDB's server and client, then run again:" >&2
		echo "    sudo apt-get install -y mariadb-server mariadb-client" >&2
		exit 1
	fi
fi
if ! command -v mariadb >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mariadb-client >/dev/null
fi
# Galera (the synchronously replicated store of TestGaleraStoreFailover and
# internal/testkit/testdb's cluster test); those tests skip, saying why, without it.
have_galera() {
	for f in /usr/lib/galera/libgalera_smm.so /usr/lib/galera-4/libgalera_smm.so /usr/lib64/galera-4/libgalera_smm.so /usr/lib64/galera/libgalera_smm.so; do
		[ -f "$f" ] && return 0
	done
	return 1
}
if ! have_galera; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "== galera-4 not found: installing Debian's galera-4"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq || true
		apt-get install -y -qq --no-install-recommends galera-4 >/dev/null || echo "galera-4 not installable: Galera tests will skip" >&2
	else
		echo "galera-4 not found and not root: Galera tests will skip (sudo apt-get install -y galera-4)" >&2
	fi
fi

# The status page's browser test (service/browser_test.go) loads the page in
# headless Chromium; without it that test skips, saying so.
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "== chromium not found: installing Debian's chromium for the status page's browser test"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null ||
			echo "== chromium could not be installed: the browser test will skip" >&2
	else
		echo "== chromium not found (not root, not installing): the status page's browser test will skip" >&2
	fi
fi

export PATH="$PATH:/usr/sbin"
export TMPDIR="${TMPDIR:-/tmp}"

# The clients users run, driven by integration/clients_*_test.go: PyMySQL
# (with PyNaCl for ed25519 accounts),
# MariaDB Connector/J (with a JDK to compile the test program), node with
# npm (the tests npm-install mysql2 themselves), script(1) for a pty.
# Installed only as root with apt-get; elsewhere those tests skip and say
# what to install.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	missing=()
	installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
	installed python3-pymysql || missing+=(python3-pymysql)
	# PyNaCl: PyMySQL's ed25519 login (backend-account mode's test)
	installed python3-nacl || missing+=(python3-nacl)
	installed libmariadb-java || missing+=(libmariadb-java)
	command -v javac >/dev/null || missing+=(default-jdk-headless)
	command -v node >/dev/null || missing+=(nodejs)
	command -v npm >/dev/null || missing+=(npm)
	command -v script >/dev/null || missing+=(bsdutils)
	# promtool (Debian's prometheus package): checks and unit-tests deploy/prometheus's alert rules
	command -v promtool >/dev/null || missing+=(prometheus)
	if [ ${#missing[@]} -gt 0 ]; then
		echo "== installing client test dependencies: ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq || true
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
			echo "warning: could not install ${missing[*]}; the tests needing them skip" >&2
	fi
fi

# Every step runs even when an earlier one failed (so one failing package
# does not hide the others); the last line sums them up, and the exit
# status is non-zero when any failed.
passed=0
failed=()
step() { # step LABEL COMMAND...: run COMMAND, count it under LABEL
	local label=$1
	shift
	echo "== $label"
	if "$@"; then
		passed=$((passed + 1))
	else
		echo "== FAILED: $label" >&2
		failed+=("$label")
	fi
}

step "go vet ./..." go vet ./...
# bench/ is a module of its own (its baselines, bwmarrin/snowflake and
# sonyflake, stay out of the product's go.mod); it uses this checkout
# through a replace directive.
step "(cd bench && go vet ./...)" bash -c 'cd bench && go vet ./...'
# staticcheck, pinned, fetched through the Go module proxy (kept out of
# go.mod: a tool, not a dependency of the product).
step "staticcheck ./..." go run honnef.co/go/tools/cmd/staticcheck@v0.6.1 ./...

# deploy/: the alert rules, checked and unit-tested by promtool where it is
# installed (root installs Debian's prometheus package above); the container
# image built (scripts/build-image.sh) where podman or a running docker is.
if command -v promtool >/dev/null; then
	step "promtool check rules / test rules (deploy/prometheus)" bash -c 'cd deploy/prometheus && promtool check rules leafproxy-alerts.yml && promtool test rules leafproxy-alerts.test.yml'
else
	echo "== promtool not found: alert rules not checked (skipped; apt-get install prometheus)" >&2
fi
if command -v podman >/dev/null || { command -v docker >/dev/null && docker info >/dev/null 2>&1; }; then
	step "container image (scripts/build-image.sh, LEAFPROXY_IMAGE_SMOKE=1)" env LEAFPROXY_IMAGE_SMOKE=1 scripts/build-image.sh localhost/leafproxy:test
else
	echo "== neither podman nor a running docker found: container image not built (skipped; apt-get install podman)" >&2
fi

# Packages with concurrency run under the race detector; the rest (and the
# long end-to-end tests) run without it, which keeps the suite inside CI's
# time on two cores. (engine, rewriter, admin and service under -race: 20 s
# of wall time against 10 s without, on two cores.)
race_pkgs=$(go list ./allocator/... ./proxy/... ./config/... ./engine/... ./service/... ./idapi/... ./rewriter/... ./admin/... ./internal/metric/... ./internal/edge/... ./internal/raw/... 2>/dev/null | tr '\n' ' ')
# shellcheck disable=SC2086 # word splitting of the package lists is meant
step "go test -race ${race_pkgs}" go test -race -count=1 -timeout 30m "$@" $race_pkgs

# The proxy's socket I/O (internal/raw, race-annotated) is the same code
# under -race as in release builds. Two more runs of proxy's
# tests without -race (about 40 s each): with the event loops (as deployed,
# at release-build speed), and with every session on its own goroutine
# (LEAFPROXY_LOOP=0; TLS and compressed sessions, and commands a loop hands
# back, take that path, so it is tested whole too).
step "go test ./proxy (raw socket I/O, event loops)" go test -count=1 -timeout 30m "$@" ./proxy
step "LEAFPROXY_LOOP=0 go test ./proxy (raw socket I/O, a goroutine per session)" env LEAFPROXY_LOOP=0 go test -count=1 -timeout 30m "$@" ./proxy

other_pkgs=$(go list ./... | grep -v -x -F -f <(printf '%s\n' $race_pkgs) | tr '\n' ' ')
# shellcheck disable=SC2086
step "go test ${other_pkgs}" go test -count=1 -timeout 45m "$@" $other_pkgs
step "(cd bench && go test ./...)  (the suites skip without LEAFPROXY_BENCH=1)" bash -c 'cd bench && go test -count=1 -timeout 45m "$@" ./...' bench "$@"

if [ "$#" -eq 0 ] && [ -z "${LEAFPROXY_SKIP_DRIVER_SUITE:-}" ]; then
	step "go-sql-driver's own suite, directly and through the proxy (scripts/driver-suite.sh)" scripts/driver-suite.sh
fi

# The long suites (MariaDB's own main suite, GORM's and Sequelize's, the
# long differential run, the store outage at full length, floods and
# bench/'s comparisons) are scripts/test-long.sh's, run before a release:
# this command stays under 15 minutes on a quiet 2-core machine.
if [ -n "${LEAFPROXY_MTR:-}" ]; then
	echo "== LEAFPROXY_MTR is set: MariaDB's suite is run by scripts/test-long.sh mtr (or scripts/mtr.sh) now, not here" >&2
fi

if [ ${#failed[@]} -gt 0 ]; then
	printf '== failed steps:\n' >&2
	printf '   %s\n' "${failed[@]}" >&2
fi
echo "summary: ${passed} passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
