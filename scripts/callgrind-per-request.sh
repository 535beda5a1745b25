#!/usr/bin/env bash
# The proxy's instructions per request, counted by valgrind's callgrind:
# a figure that does not depend on what else the machine is doing, for
# before/after comparisons that QPS on a shared machine cannot settle
# (BENCHMARKS.md, "Issue 42's split of proxy/").
#
#   scripts/callgrind-per-request.sh [BINARY...]
#
# Each BINARY (default: this tree's leafproxy, built here) serves through a
# throwaway MariaDB started on a free loopback port, with one rule table;
# leafbench drives it over one connection (LEAFPROXY_CG_CONNS) for
# LEAFPROXY_CG_SECONDS (12) after a 2 s warm-up, and callgrind counts only
# while the load runs (--instr-atstart=no, callgrind_control -i on/off).
# Printed: instructions of the proxy process per request for SELECT 1, a
# filled 1-row INSERT and its prepared form, LEAFPROXY_CG_REPEAT times (2).
# Needs valgrind, mariadbd and mariadb-install-db; Go programs need
# GODEBUG=asyncpreemptoff=1 under valgrind (set here).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${LEAFPROXY_CG_SECONDS:-12}
conns=${LEAFPROXY_CG_CONNS:-1}
repeat=${LEAFPROXY_CG_REPEAT:-2}
. scripts/lib/throwaway.sh
need valgrind callgrind_control mariadbd mariadb-install-db mariadb python3
throwaway_init cg

go build -o "$work/leafbench" ./cmd/leafbench
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
	go build -o "$work/leafproxy" ./cmd/leafproxy
	bins=("$work/leafproxy")
fi

start_mariadb
sql -e 'CREATE DATABASE shop; CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, v INT); CREATE DATABASE leaf'

pport=$(free_port)
cat >"$work/lp.yaml" <<EOF
listen: 127.0.0.1:$pport
backend:
  addr: 127.0.0.1:$mport
  user: root
users:
  - name: app
    password: secret
sequences:
  store: "root@tcp(127.0.0.1:$mport)/leaf"
  auto_create: true
tables:
  - table: shop.orders
    column: id
    tag: order
EOF
"${bins[0]}" init --config "$work/lp.yaml" >/dev/null

dsn="app:secret@tcp(127.0.0.1:$pport)/shop"
# measure BIN NAME leafbench-args...: prints NAME's instructions per request.
measure() {
	local bin=$1 name=$2
	shift 2
	GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --instr-atstart=no \
		--callgrind-out-file="$work/cg.out" "$bin" serve --config "$work/lp.yaml" >"$work/serve.log" 2>&1 &
	local vp=$!
	for _ in $(seq 120); do
		mariadb --no-defaults -h127.0.0.1 -P"$pport" -uapp -psecret -e 'SELECT 1' >/dev/null 2>&1 && break
		sleep 1
	done
	"$work/leafbench" -dsn "$dsn" -c "$conns" -d 2s -mode exec "$@" >/dev/null 2>&1
	callgrind_control -i on "$vp" >/dev/null 2>&1
	"$work/leafbench" -dsn "$dsn" -c "$conns" -d "${secs}s" -mode exec -json "$@" >"$work/lb.json"
	callgrind_control -i off "$vp" >/dev/null 2>&1
	callgrind_control -d "$vp" >/dev/null 2>&1
	kill "$vp"
	wait "$vp" 2>/dev/null || true
	local ir n
	ir=$(awk '/^totals:/ {print $2; exit}' "$work/cg.out.1")
	n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"])' "$work/lb.json")
	printf '%-28s %-16s %10d instructions/request (%d requests)\n' "$bin" "$name" $((ir / n)) "$n"
	rm -f "$work"/cg.out*
}
for r in $(seq "$repeat"); do
	for bin in "${bins[@]}"; do
		measure "$bin" "SELECT 1" -q 'SELECT 1'
		measure "$bin" "filled INSERT" -q 'INSERT INTO orders (v) VALUES (1)'
		measure "$bin" "prepared INSERT" -q 'INSERT INTO orders (v) VALUES (?)' -prepare -arg const:1
	done
done
