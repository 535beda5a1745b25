#!/usr/bin/env bash
# Runs a selection of MariaDB's own test suite (the `main` suite of Debian's
# mariadb-test package, mariadb-test-run --extern) against a throwaway
# MariaDB started as mtr starts it (mtr's own my.cnf and bootstrap), once
# directly and once through leafproxy in front of it (a pure relay: no rule
# tables, its allocation store on a second throwaway server so the tested
# server holds nothing of the proxy's), in the text protocol and with
# --ps-protocol. Every batch of tests starts from a pristine copy of mtr's
# bootstrapped data directory, directly and through the proxy alike.
#
# Prints the tests that pass directly and fail only through the proxy, per
# protocol, and a summary. Exits non-zero when such a test is not listed as
# inherent in docs/PROTOCOL.md ("MariaDB's test suite through the proxy").
#
#   scripts/mtr.sh                          # scripts/mtr-selection.txt, text and --ps-protocol
#   scripts/mtr.sh main.sp-row main.signal  # these tests only
#   LEAFPROXY_MTR_PROTOCOLS=ps scripts/mtr.sh
#   LEAFPROXY_MTR_SELECTION=all scripts/mtr.sh   # the whole main suite (hours on two cores)
#
# Environment: LEAFPROXY_MTR_WORK (work directory; default a new one under
# $TMPDIR, removed at the end unless LEAFPROXY_MTR_KEEP=1), LEAFPROXY_MTR_BATCH
# (tests per pristine server, default 20), LEAFPROXY_MTR_OUT (a copy of the
# report), LEAFPROXY_MTR_BUILD_THREAD (mtr's port block, default 311: ports
# 19330-19359), LEAFPROXY_MTR_BINARY (a leafproxy binary to test instead of
# building this checkout's). Needs mariadb-test (apt-get install mariadb-test), mariadbd,
# perl and Go. Must not run as two copies with the same build thread.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export PATH="$PATH:/usr/sbin"

mtr_dir=${LEAFPROXY_MTR_DIR:-/usr/share/mysql/mysql-test}
if [ ! -x "$mtr_dir/mariadb-test-run.pl" ] && [ ! -f "$mtr_dir/mariadb-test-run.pl" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "== mariadb-test not found: installing Debian's mariadb-test"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mariadb-test >/dev/null
	else
		echo "mariadb-test-run not found in $mtr_dir: sudo apt-get install -y mariadb-test" >&2
		exit 1
	fi
fi

batch_size=${LEAFPROXY_MTR_BATCH:-20}
build_thread=${LEAFPROXY_MTR_BUILD_THREAD:-311}
protocols=${LEAFPROXY_MTR_PROTOCOLS:-text ps}
work=${LEAFPROXY_MTR_WORK:-}
if [ -z "$work" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/leafproxy-mtr.XXXXXX")
	[ -n "${LEAFPROXY_MTR_KEEP:-}" ] || trap_rm=$work
fi
mkdir -p "$work/logs" "$work/results"
var=$work/var # mtr's vardir: the server's files, and the extern runs' (paths in tests agree)

# --- the test list ----------------------------------------------------------
tests=()
if [ "$#" -gt 0 ]; then
	tests=("$@")
elif [ "${LEAFPROXY_MTR_SELECTION:-}" = all ]; then
	while read -r f; do tests+=("main.$(basename "$f" .test)"); done < <(ls "$mtr_dir"/main/*.test)
else
	sel=${LEAFPROXY_MTR_SELECTION:-scripts/mtr-selection.txt}
	while read -r line; do
		line=${line%%#*}
		for t in $line; do tests+=("$t"); done
	done <"$sel"
fi
echo "== ${#tests[@]} tests, protocols: $protocols, batches of $batch_size, work directory $work"

# --- processes this script starts, stopped at exit -----------------------------
server_pid="" store_pid="" proxy_pid=""
stop_pid() { # pid: TERM, wait for it to end
	local pid=$1
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
}
cleanup() {
	stop_pid "$proxy_pid"
	stop_pid "$server_pid"
	stop_pid "$store_pid"
	if [ -n "${trap_rm:-}" ]; then rm -rf "$trap_rm"; fi
}
trap cleanup EXIT

wait_port() { # port what pid: until something accepts on 127.0.0.1:port
	local port=$1 what=$2 pid=$3
	for _ in $(seq 1 600); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "$what exited before listening on $port" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "$what is not listening on $port after 60 s" >&2
	return 1
}

mtr() { (cd "$mtr_dir" && perl mariadb-test-run.pl "$@"); }

# --- the server, as mtr starts it ---------------------------------------------
# mtr --start-and-exit bootstraps var/install.db (system tables, the mtr
# schema with its check and warning procedures, the test database) and
# starts mysqld.1 from var/my.cnf; its command line is kept and the server
# stopped, so each batch can start it again on a fresh copy of install.db.
echo "== bootstrapping mtr's server (mariadb-test-run --start-and-exit)"
mtr --vardir="$var" --mtr-build-thread="$build_thread" --start-and-exit main.1st >"$work/logs/bootstrap.log" 2>&1 || {
	tail -n 30 "$work/logs/bootstrap.log" >&2
	exit 1
}
boot_pid=$(cat "$var/run/mysqld.1.pid")
cp "$var/my.cnf" "$work/server.cnf" # the extern runs overwrite var/my.cnf with their [client] section
mapfile -d '' server_cmd <"/proc/$boot_pid/cmdline"
for i in "${!server_cmd[@]}"; do
	case ${server_cmd[$i]} in --defaults-file=*) server_cmd[i]="--defaults-file=$work/server.cnf" ;; esac
done
# InnoDB and its information_schema tables, as mtr starts the server for a
# test that includes have_innodb.inc (mtr's my.cnf leaves the plugin off;
# with --extern no test's options reach the server).
while read -r opt; do server_cmd+=("$opt"); done <"$mtr_dir/include/have_innodb.opt"
port=$(sed -n '/^\[mysqld\.1\]/,/^\[/s/^port=//p' "$work/server.cnf" | head -n1)
server_pid=$boot_pid
stop_pid "$server_pid"
server_pid=""
datadir=$var/mysqld.1/data

start_server() {
	stop_pid "$server_pid"
	# As mtr does before it starts a server again: the server's directory
	# (data, general and slow logs) and var/tmp (files tests write) anew.
	rm -rf "$var/mysqld.1" "$var/tmp"
	mkdir -p "$var/mysqld.1" "$var/tmp/mysqld.1"
	cp -a "$var/install.db" "$datadir"
	chmod -R u+w "$datadir"
	"${server_cmd[@]}" >>"$work/logs/server.out" 2>&1 &
	server_pid=$!
	wait_port "$port" "mariadbd" "$server_pid"
}

# --- the proxy's allocation store: a second server ------------------------------
store_port=$((port + 25))
echo "== starting the proxy's allocation store on 127.0.0.1:$store_port"
cp -a "$var/install.db" "$work/store-data"
chmod -R u+w "$work/store-data"
user_flag=()
[ "$(id -u)" = 0 ] && user_flag=(--user=root)
mariadbd --no-defaults "${user_flag[@]}" --datadir="$work/store-data" --port="$store_port" --bind-address=127.0.0.1 \
	--socket="$work/store.sock" --pid-file="$work/store.pid" --skip-log-bin --innodb-buffer-pool-size=8M \
	--log-error="$work/logs/store.err" >/dev/null 2>&1 &
store_pid=$!
wait_port "$store_port" "the store's mariadbd" "$store_pid"

# --- leafproxy --------------------------------------------------------------
if [ -n "${LEAFPROXY_MTR_BINARY:-}" ]; then
	cp "$LEAFPROXY_MTR_BINARY" "$work/leafproxy"
else
	echo "== building leafproxy"
	go build -o "$work/leafproxy" ./cmd/leafproxy
fi
proxy_port=$((port + 26))
cat >"$work/leafproxy.yaml" <<EOF
listen: 127.0.0.1:$proxy_port
backend:
  addr: 127.0.0.1:$port
  user: root
  password: ""
sequences:
  store: "root@tcp(127.0.0.1:$store_port)/leafproxy"
tls: # the server's own certificate (mtr's), so clients that verify it do so as directly
  cert: $mtr_dir/std_data/server-cert.pem
  key: $mtr_dir/std_data/server-key.pem
limits:
  login_failures: 100000 # the tests log in with wrong passwords on purpose
shutdown:
  grace: 1s
log:
  level: warn
EOF
start_proxy() {
	"$work/leafproxy" serve --config "$work/leafproxy.yaml" >>"$work/logs/leafproxy.log" 2>&1 &
	proxy_pid=$!
	wait_port "$proxy_port" "leafproxy" "$proxy_pid"
}

# --- runs -------------------------------------------------------------------
# results/<protocol>-<target> holds "test status" lines (pass, fail, skipped).
# A test that fails may leave the server changed (a global variable, a lock,
# an account) and make the next ones fail: mtr restarts its own servers
# after a failure, --extern cannot, so a run stops at its first failure
# (--max-test-fail=1) and the tests after it start again on a pristine
# server, directly and through the proxy alike.
run_batch() { # protocol target n tests...
	local proto=$1 target=$2 n=$3
	shift 3
	local p=$port extra=() remaining=("$@") round=0 results="$work/results/$proto-$target"
	[ "$proto" = ps ] && extra=(--ps-protocol)
	[ "$target" = proxy ] && p=$proxy_port
	while [ ${#remaining[@]} -gt 0 ]; do
		start_server
		[ "$target" = proxy ] && start_proxy
		local log="$work/logs/$proto-$target-$n-$round.log"
		# protocol=tcp: every connection of a test ("localhost" too) goes
		# to the port, which is the proxy's in the proxy runs.
		mtr --vardir="$var" --mtr-build-thread="$((build_thread + 1))" --extern host=127.0.0.1 --extern port="$p" \
			--extern protocol=tcp --extern user=root --force --max-test-fail=1 --retry=0 --testcase-timeout=5 \
			--noreorder "${extra[@]}" "${remaining[@]}" >"$log" 2>&1 || true
		if [ "$target" = proxy ]; then
			stop_pid "$proxy_pid"
			proxy_pid=""
		fi
		local verdicts next=() progressed=""
		verdicts=$(sed -nE 's/^(main\.[^ ]+)( +'"'"'[^'"'"']*'"'"')? +\[ (pass|fail|skipped|disabled) \].*/\1 \3/p' "$log")
		[ -n "$verdicts" ] && echo "$verdicts" >>"$results"
		for t in "${remaining[@]}"; do
			if grep -q "^$t " <<<"$verdicts"; then progressed=1; else next+=("$t"); fi
		done
		if [ -z "$progressed" ]; then # mtr gave up before the first verdict
			echo "${next[0]} fail" >>"$results"
			next=("${next[@]:1}")
		fi
		remaining=("${next[@]}")
		round=$((round + 1))
	done
}

started=$(date +%s)
for proto in $protocols; do
	for target in direct proxy; do
		: >"$work/results/$proto-$target"
		for ((i = 0; i < ${#tests[@]}; i += batch_size)); do
			echo "-- $proto $target: tests $((i + 1))-$((i + batch_size < ${#tests[@]} ? i + batch_size : ${#tests[@]}))"
			run_batch "$proto" "$target" "$i" "${tests[@]:i:batch_size}"
		done
	done
done
stop_pid "$server_pid"
server_pid=""

# --- report -------------------------------------------------------------------
# Inherent proxy-only failures: the rows "| `main.x` | protocols | why |" of
# docs/PROTOCOL.md's section on this suite.
inherent() { # test proto -> prints the reason when listed (awk reads to the end: an early exit would kill sed with SIGPIPE, fatal under pipefail)
	sed -n '/^## MariaDB.s test suite through the proxy/,/^## /p' docs/PROTOCOL.md |
		awk -F'|' -v t="$1" -v p="$2" '{ n=$2; gsub(/[ `]/, "", n); q=$3; gsub(/ /, "", q) } !found && n==t && (q=="both" || q==p) { r=$4; sub(/^ +/, "", r); sub(/ +$/, "", r); print r; found=1 }'
}
report=$work/report.txt
unexpected=0
{
	echo "MariaDB main suite through leafproxy ($(date -u +%Y-%m-%dT%H:%MZ), $(($(date +%s) - started)) s, ${#tests[@]} tests)"
	for proto in $protocols; do
		d=$work/results/$proto-direct v=$work/results/$proto-proxy
		count() { awk -v s="$2" '$2==s' "$1" | wc -l; }
		echo "$proto: direct $(count "$d" pass) pass, $(count "$d" fail) fail, $(count "$d" skipped) skipped; through the proxy $(count "$v" pass) pass, $(count "$v" fail) fail, $(count "$v" skipped) skipped"
		only=$(join <(awk '$2=="pass"{print $1}' "$d" | sort -u) <(awk '$2=="fail"{print $1}' "$v" | sort -u))
		n_inherent=0 n_new=0
		for t in $only; do
			why=$(inherent "$t" "$proto")
			if [ -n "$why" ]; then
				echo "  fails only through the proxy, inherent: $t ($why)"
				n_inherent=$((n_inherent + 1))
			else
				echo "  FAILS ONLY THROUGH THE PROXY: $t"
				n_new=$((n_new + 1))
			fi
		done
		for t in $(join <(awk '$2=="fail"{print $1}' "$d" | sort -u) <(awk '$2=="pass"{print $1}' "$v" | sort -u)); do
			echo "  fails only directly: $t"
		done
		echo "$proto: $((n_inherent + n_new)) fail only through the proxy ($n_inherent inherent, $n_new not)"
		unexpected=$((unexpected + n_new))
	done
} | tee "$report"
unexpected=$(grep -c 'FAILS ONLY THROUGH THE PROXY' "$report" || true)
[ -n "${LEAFPROXY_MTR_OUT:-}" ] && cp "$report" "$LEAFPROXY_MTR_OUT"
echo "== logs: $work/logs (kept with LEAFPROXY_MTR_KEEP=1 or LEAFPROXY_MTR_WORK)"
[ "$unexpected" -eq 0 ]
