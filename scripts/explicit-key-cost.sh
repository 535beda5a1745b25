#!/usr/bin/env bash
# What MariaDB itself charges for an explicit key, with no proxy in between:
# the ceiling of issue 38's speed goal (a filled INSERT against haproxy
# relaying an AUTO_INCREMENT INSERT; BENCHMARKS.md, "Issue 38: the text
# path's scans, and the explicit key's ceiling").
#
#   scripts/explicit-key-cost.sh [ROUNDS]
#
# A throwaway MariaDB (the test suite's flags: 256 MB buffer pool, 512 MB
# redo log, innodb_flush_log_at_trx_commit=2, no binlog) on a free loopback
# port; leafbench drives it directly over LEAFPROXY_EK_CONNS connections (32)
# for LEAFPROXY_EK_SECONDS (5) after a 1 s warm-up, with
#   AUTO_INCREMENT  INSERT INTO orders_ai (v) VALUES (?)
#   explicit key    INSERT INTO orders (`id`, v) VALUES (?, ?), keys from one
#                   counter shared by every connection, as a key generator
#                   (leafproxy, Leaf, Vitess, ShardingSphere) hands them out
# in turns, ROUNDS (6) pairs, the order swapped every round, each table
# emptied before its turn. Printed per turn: QPS and MariaDB's CPU per
# request; per pair the QPS ratio; the median ratio last.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
secs=${LEAFPROXY_EK_SECONDS:-5}
conns=${LEAFPROXY_EK_CONNS:-32}
. scripts/lib/throwaway.sh
need mariadbd mariadb-install-db mariadb python3
throwaway_init ek

go build -o "$work/leafbench" ./cmd/leafbench
start_mariadb
sql -e 'CREATE DATABASE shop;
	CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, v VARCHAR(32));
	CREATE TABLE shop.orders_ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(32))'
dsn="root@tcp(127.0.0.1:$mport)/shop"

# turn NAME TABLE leafbench-args...: one measured turn; prints "NAME QPS CPU".
turn() {
	local name=$1 table=$2
	shift 2
	sql -e "TRUNCATE shop.$table"
	"$work/leafbench" -dsn "$dsn" -c "$conns" -d 1s -mode exec "$@" >/dev/null
	local c0 c1
	c0=$(awk '{print $14+$15}' "/proc/$mdb_pid/stat")
	"$work/leafbench" -dsn "$dsn" -c "$conns" -d "${secs}s" -mode exec -json "$@" >"$work/lb.json"
	c1=$(awk '{print $14+$15}' "/proc/$mdb_pid/stat")
	python3 - "$work/lb.json" "$name" "$c0" "$c1" "$(getconf CLK_TCK)" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
cpu = (int(sys.argv[4]) - int(sys.argv[3])) / int(sys.argv[5]) * 1e6 / d["requests"]
print(sys.argv[2], round(d["qps"]), round(cpu, 1))
EOF
}
ai() { turn AUTO_INCREMENT orders_ai -q 'INSERT INTO orders_ai (v) VALUES (?)' -arg seq:1; }
ek() { turn explicit orders -q 'INSERT INTO orders (`id`, v) VALUES (?, ?)' -arg seq:1 -arg seq:1; }
: >"$work/turns"
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		a=$(ai) && e=$(ek)
	else
		e=$(ek) && a=$(ai)
	fi
	echo "$a" >>"$work/turns"
	echo "$e" >>"$work/turns"
	set -- $a $e
	printf 'round %d: AUTO_INCREMENT %6d QPS, MariaDB %5.1f us/req; explicit key %6d QPS, %5.1f us/req; explicit / AUTO_INCREMENT QPS %.2fx\n' \
		"$r" "$2" "$3" "$5" "$6" "$(python3 -c "print($5/$2)")"
done
python3 - "$work/turns" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
ai = [int(r[1]) for r in rows if r[0] == "AUTO_INCREMENT"]
ek = [int(r[1]) for r in rows if r[0] == "explicit"]
print("median explicit key / AUTO_INCREMENT QPS: %.2fx" % statistics.median(e / a for a, e in zip(ai, ek)))
EOF
