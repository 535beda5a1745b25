# Sourced by the measuring scripts (callgrind-per-request.sh,
# ab-cpu-per-request.sh, explicit-key-cost.sh): a work directory, a
# throwaway MariaDB on a free loopback port with the test suite's flags
# (internal/testkit/testdb: innodb_flush_log_at_trx_commit=2, no binlog;
# a 256 MB buffer pool and a 512 MB redo log, as bench/'s harness), and
# the clean-up of everything started, whatever way the script ends.

# need TOOL...: exits 2 naming the first tool missing.
need() {
	for tool; do
		command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install mariadb-server valgrind python3)" >&2; exit 2; }
	done
}

# throwaway_init NAME: $work, and the EXIT trap that stops $started.
throwaway_init() {
	work=$(mktemp -d "/tmp/leafproxy-$1.XXXXXX")
	started=()
	trap throwaway_cleanup EXIT
}

throwaway_cleanup() {
	for p in "${started[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$work"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_mariadb: a server in $work/data; sets $mport and $mdb_pid.
start_mariadb() {
	mport=$(free_port)
	mariadb-install-db --no-defaults --datadir="$work/data" --user="$(id -un)" \
		--auth-root-authentication-method=normal >"$work/install.log" 2>&1
	mariadbd --no-defaults --datadir="$work/data" --port="$mport" --bind-address=127.0.0.1 \
		--socket="$work/mdb.sock" --user="$(id -un)" --innodb-buffer-pool-size=256M \
		--innodb-log-file-size=512M --innodb-flush-log-at-trx-commit=2 --skip-log-bin \
		--max-connections=2000 >"$work/mariadbd.log" 2>&1 &
	mdb_pid=$!
	started+=("$mdb_pid")
	for _ in $(seq 60); do
		sql -e 'SELECT 1' >/dev/null 2>&1 && return
		sleep 1
	done
	echo "mariadbd did not start: $(tail -3 "$work/mariadbd.log")" >&2
	exit 1
}

# sql ARGS...: the mariadb client on the throwaway server, as root.
sql() { mariadb --no-defaults -h127.0.0.1 -P"$mport" -uroot "$@"; }
