#!/usr/bin/env bash
# Runs GORM's own test suite (the tests module of github.com/go-gorm/gorm,
# MySQL dialect) directly against a throwaway MariaDB and through leafproxy
# with one per_table pattern over the test database, and reports the tests
# that fail only through the proxy (issue 39). Exits non-zero when one
# does and internal/testkit/ormsuite/ormsuite_test.go does not expect it.
#
#   git clone https://github.com/go-gorm/gorm /tmp/gorm
#   LEAFPROXY_GORM_SRC=/tmp/gorm scripts/gorm-suite.sh
#   LEAFPROXY_ORM_SUITE_OUT=report.txt LEAFPROXY_GORM_SRC=/tmp/gorm scripts/gorm-suite.sh
#
# Needs mariadbd (scripts/test.sh installs it) and the Go module proxy for
# the suite's dependencies (its go.mod also names the other dialects'
# drivers). Not part of scripts/test.sh: scripts/test-long.sh runs it
# (before a release).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/sbin"
: "${LEAFPROXY_GORM_SRC:?set LEAFPROXY_GORM_SRC to a checkout of github.com/go-gorm/gorm}"
exec go test -count=1 -timeout 60m -v -run '^TestGORMSuite$' ./internal/testkit/ormsuite/ "$@"
