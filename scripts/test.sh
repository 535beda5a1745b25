#!/usr/bin/env bash
# The one test command: every test, vet, and the race detector on the
# packages with concurrency. Tests start their own throwaway MariaDB servers
# on loopback (internal/testdb) and stop them at the end; nothing here uses a
# database someone else started.
#
#   scripts/test.sh            # everything
#   scripts/test.sh -short     # skip the long load tests (extra args go to go test)
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

export PATH="$PATH:/usr/sbin"
export TMPDIR="${TMPDIR:-/tmp}"

echo "== go vet ./..."
go vet ./...

# Packages with concurrency run under the race detector; the rest (and the
# long end-to-end tests) run without it, which keeps the suite inside CI's
# time on two cores.
race_pkgs=$(go list ./allocator/... ./proxy/... ./config/... 2>/dev/null | tr '\n' ' ')
echo "== go test -race ${race_pkgs}"
go test -race -count=1 -timeout 30m "$@" $race_pkgs

other_pkgs=$(go list ./... | grep -v -x -F -f <(printf '%s\n' $race_pkgs) | tr '\n' ' ')
echo "== go test ${other_pkgs}"
go test -count=1 -timeout 45m "$@" $other_pkgs
