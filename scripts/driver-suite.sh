#!/usr/bin/env bash
# Runs go-sql-driver/mysql's own test suite (v1.9.3 and v1.10.1 by default)
# directly against a throwaway MariaDB and through leafproxy in front of the
# same server, and reports the tests that fail only through the proxy.
# Exits non-zero when one fails only through the proxy and is not listed as
# expected in internal/testkit/driversuite/driversuite_test.go.
#
#   scripts/driver-suite.sh
#   LEAFPROXY_DRIVER_VERSIONS="v1.10.1" scripts/driver-suite.sh
#   LEAFPROXY_DRIVER_SUITE_OUT=report.txt scripts/driver-suite.sh
#
# Needs mariadbd (scripts/test.sh installs it) and the Go module proxy for
# the driver's source. Takes about 2 minutes on two cores; scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/sbin"
export LEAFPROXY_DRIVER_SUITE=1
exec go test -count=1 -timeout 60m -v -run '^TestDriverSuite$' ./internal/testkit/driversuite/ "$@"
