#!/usr/bin/env bash
# Runs Sequelize's integration suite (github.com/sequelize/sequelize, branch
# v6, MariaDB dialect) directly against a throwaway MariaDB and through
# leafproxy with one per_table pattern over its database, and reports the
# tests that fail only through the proxy (issue 39).
#
#   git clone -b v6 https://github.com/sequelize/sequelize /tmp/seq
#   LEAFPROXY_SEQUELIZE_SRC=/tmp/seq scripts/sequelize-suite.sh
#
# Installs the suite's npm dependencies when node_modules is missing
# (without their install scripts: the other dialects' native drivers are
# not needed) and builds it (node build.js). Needs node, npm and mariadbd.
# Not part of scripts/test.sh: scripts/test-long.sh runs it (before a
# release).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/sbin"
: "${LEAFPROXY_SEQUELIZE_SRC:?set LEAFPROXY_SEQUELIZE_SRC to a checkout of github.com/sequelize/sequelize (branch v6)}"
if [ ! -d "$LEAFPROXY_SEQUELIZE_SRC/node_modules" ]; then
  (cd "$LEAFPROXY_SEQUELIZE_SRC" && npm install --ignore-scripts --no-audit --no-fund --legacy-peer-deps)
fi
if [ ! -d "$LEAFPROXY_SEQUELIZE_SRC/lib" ]; then
  (cd "$LEAFPROXY_SEQUELIZE_SRC" && node build.js)
fi
exec go test -count=1 -timeout 90m -v -run '^TestSequelizeSuite$' ./internal/testkit/ormsuite/ "$@"
