#!/usr/bin/env bash
# Two builds of leafproxy loaded at the same time, for a change too small to
# see in QPS on a shared machine: both proxies serve one throwaway MariaDB,
# each gets half of the connections in the same window, so both meet the
# same neighbours, and the CPU each spends per request is compared round by
# round (BENCHMARKS.md, "Issue 38: the text path's scans, and the explicit
# key's ceiling").
#
#   scripts/ab-cpu-per-request.sh BIN_A BIN_B [ROUNDS]
#
# BIN_A and BIN_B are leafproxy binaries (build one with `go build -o
# /tmp/lp-before ./cmd/leafproxy` at the commit before). ROUNDS (5) windows
# of LEAFPROXY_AB_SECONDS (8) after a 1 s warm-up, LEAFPROXY_AB_CONNS (16)
# connections per proxy, running LEAFPROXY_AB_QUERY (a filled 1-row INSERT,
# text; add LEAFPROXY_AB_ARGS="-prepare" for its prepared form) against one
# rule table; the table is emptied before each round. Printed per round:
# each proxy's QPS and CPU per request (utime + stime from /proc) and B/A of
# the CPU; the median B/A last.
set -euo pipefail
cd "$(dirname "$0")/.."
binA=${1:?usage: scripts/ab-cpu-per-request.sh BIN_A BIN_B [ROUNDS]}
binB=${2:?usage: scripts/ab-cpu-per-request.sh BIN_A BIN_B [ROUNDS]}
rounds=${3:-5}
secs=${LEAFPROXY_AB_SECONDS:-8}
conns=${LEAFPROXY_AB_CONNS:-16}
query=${LEAFPROXY_AB_QUERY:-INSERT INTO orders (v) VALUES (?)}
read -r -a extra <<<"${LEAFPROXY_AB_ARGS:-}"
. scripts/lib/throwaway.sh
need mariadbd mariadb-install-db mariadb python3
throwaway_init ab

go build -o "$work/leafbench" ./cmd/leafbench
start_mariadb
sql -e 'CREATE DATABASE shop; CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, v VARCHAR(32)); CREATE DATABASE leaf'

# start NAME BIN: a proxy on a free port; sets port_NAME and pid_NAME.
start() {
	local name=$1 bin=$2 port
	port=$(free_port)
	cat >"$work/$name.yaml" <<EOF
listen: 127.0.0.1:$port
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
log:
  level: warn
EOF
	"$bin" init --config "$work/$name.yaml" >/dev/null
	"$bin" serve --config "$work/$name.yaml" >"$work/$name.log" 2>&1 &
	started+=($!)
	printf -v "pid_$name" %s "$!"
	printf -v "port_$name" %s "$port"
	for _ in $(seq 60); do
		mariadb --no-defaults -h127.0.0.1 -P"$port" -uapp -psecret -e 'SELECT 1' >/dev/null 2>&1 && return
		sleep 0.5
	done
	echo "$name ($bin) did not start: $(tail -3 "$work/$name.log")" >&2
	exit 1
}
start A "$binA"
start B "$binB"
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
load() { # load PORT SECONDS [-json]
	"$work/leafbench" -dsn "app:secret@tcp(127.0.0.1:$1)/shop" -c "$conns" -d "$2" -mode exec -q "$query" -arg seq:1 "${extra[@]}" "${@:3}"
}
: >"$work/ratios"
for r in $(seq "$rounds"); do
	sql -e 'TRUNCATE shop.orders'
	load "$port_A" 1s >/dev/null &
	w=$!
	load "$port_B" 1s >/dev/null
	wait "$w"
	a0=$(cpu "$pid_A") b0=$(cpu "$pid_B")
	load "$port_A" "${secs}s" -json >"$work/a.json" &
	w=$!
	load "$port_B" "${secs}s" -json >"$work/b.json"
	wait "$w"
	a1=$(cpu "$pid_A") b1=$(cpu "$pid_B")
	python3 - "$work" "$r" "$a0" "$a1" "$b0" "$b1" "$(getconf CLK_TCK)" <<'EOF' | tee -a "$work/ratios"
import json, sys
w, r, a0, a1, b0, b1, tck = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
a, b = json.load(open(w + "/a.json")), json.load(open(w + "/b.json"))
ca, cb = (a1 - a0) / tck * 1e6 / a["requests"], (b1 - b0) / tck * 1e6 / b["requests"]
print("round %s: A %6d QPS %5.1f us/req; B %6d QPS %5.1f us/req; B/A CPU per request %.3f" % (r, a["qps"], ca, b["qps"], cb, cb / ca))
EOF
done
python3 - "$work/ratios" <<'EOF'
import statistics, sys
v = [float(l.rsplit(" ", 1)[1]) for l in open(sys.argv[1])]
print("median B/A CPU per request: %.3f" % statistics.median(v))
EOF
