package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/loadgen"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// TestSmoke drives a real MariaDB briefly in each mode the later
// benchmarks use: text and prepared point selects, exec-mode INSERTs into
// per-connection tables, and JSON output.
func TestSmoke(t *testing.T) {
	srv := testdb.Start(t)
	srv.Exec(t,
		"CREATE DATABASE bench",
		"CREATE TABLE bench.t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO bench.t SELECT seq, CONCAT('v', seq) FROM bench.seq_1_to_1000",
		"CREATE TABLE bench.ins_0 (id BIGINT AUTO_INCREMENT PRIMARY KEY, v BIGINT)",
		"CREATE TABLE bench.ins_1 LIKE bench.ins_0",
	)
	dsn := srv.DSN("bench")
	ctx := context.Background()

	runJSON := func(t *testing.T, args ...string) loadgen.Result {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(ctx, append([]string{"-dsn", dsn, "-d", "300ms", "-json"}, args...), &out, &errOut); err != nil {
			t.Fatalf("leafbench %q: %v\n%s", args, err, errOut.String())
		}
		var r loadgen.Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("decode %q: %v", out.String(), err)
		}
		if r.Errors != 0 || r.Requests == 0 || r.QPS <= 0 {
			t.Fatalf("leafbench %q: %d requests, %d errors (%s), %.0f QPS", args, r.Requests, r.Errors, r.FirstError, r.QPS)
		}
		if r.Latency.P50 <= 0 || r.Latency.P50 > r.Latency.P99 || r.Latency.P99 > r.Latency.Max {
			t.Fatalf("latency percentiles out of order: %+v", r.Latency)
		}
		return r
	}

	status := srv.Open(t, "")
	// stmtExecutes tells the protocols apart: text mode must not prepare
	// behind our back (the driver does when interpolateParams is off).
	stmtExecutes := func(t *testing.T) uint64 {
		var name string
		var n uint64
		if err := status.QueryRow("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("text", func(t *testing.T) {
		before := stmtExecutes(t)
		r := runJSON(t, "-c", "2", "-warmup", "100ms", "-q", "SELECT v FROM t WHERE id=?", "-arg", "rand:1:1000")
		if r.Rows != r.Requests {
			t.Errorf("point select: %d rows for %d requests", r.Rows, r.Requests)
		}
		if n := stmtExecutes(t) - before; n != 0 {
			t.Errorf("text mode sent %d COM_STMT_EXECUTE", n)
		}
	})
	t.Run("prepared", func(t *testing.T) {
		before := stmtExecutes(t)
		r := runJSON(t, "-c", "2", "-prepare", "-q", "SELECT v FROM t WHERE id=?", "-arg", "rand:1:1000")
		if r.Rows != r.Requests || !r.Prepare {
			t.Errorf("prepared point select: %d rows for %d requests, prepare=%v", r.Rows, r.Requests, r.Prepare)
		}
		if n := stmtExecutes(t) - before; n < r.Requests {
			t.Errorf("prepared mode: %d COM_STMT_EXECUTE for %d requests", n, r.Requests)
		}
	})
	t.Run("scan", func(t *testing.T) {
		r := runJSON(t, "-q", "SELECT * FROM t")
		if r.Rows != 1000*r.Requests {
			t.Errorf("full scan: %d rows for %d requests", r.Rows, r.Requests)
		}
	})
	t.Run("exec", func(t *testing.T) {
		r := runJSON(t, "-c", "2", "-mode", "exec", "-q", "INSERT INTO ins_{conn} (v) VALUES (?)", "-arg", "seq")
		if r.Rows != r.Requests {
			t.Errorf("inserts: %d rows affected for %d requests", r.Rows, r.Requests)
		}
		db := srv.Open(t, "bench")
		var n, distinct uint64
		if err := db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT v) FROM (SELECT v FROM ins_0 UNION ALL SELECT v FROM ins_1) u").Scan(&n, &distinct); err != nil {
			t.Fatal(err)
		}
		// Inserts that finished after the deadline are stored but not counted.
		if n < r.Requests || distinct != n {
			t.Errorf("%d rows stored (%d distinct seq values), %d inserts counted", n, distinct, r.Requests)
		}
	})
	t.Run("text output and errors", func(t *testing.T) {
		var out bytes.Buffer
		if err := run(ctx, []string{"-dsn", dsn, "-d", "200ms", "-q", "SELECT * FROM missing"}, &out, &out); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		for _, want := range []string{"QPS", "p99", "p999", "errors", "first error", "1146"} {
			if !strings.Contains(s, want) {
				t.Errorf("output lacks %q:\n%s", want, s)
			}
		}
		if strings.Contains(s, "errors 0") {
			t.Errorf("unknown table counted no errors:\n%s", s)
		}
	})
	t.Run("killed connections are replaced", func(t *testing.T) {
		var out bytes.Buffer
		if err := run(ctx, []string{"-dsn", dsn, "-d", "300ms", "-c", "2", "-json", "-q", "KILL CONNECTION_ID()"}, &out, &out); err != nil {
			t.Fatal(err)
		}
		var r loadgen.Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("decode %q: %v", out.String(), err)
		}
		// Every request kills its own connection: the run only gets past
		// the first one per worker if broken connections are replaced.
		if r.Requests < 4 || r.Errors != r.Requests {
			t.Errorf("%d requests, %d errors (%s): want many, all failing", r.Requests, r.Errors, r.FirstError)
		}
	})
	t.Run("bad flags", func(t *testing.T) {
		var out bytes.Buffer
		if err := run(ctx, []string{"-arg", "zipf:1"}, &out, &out); err == nil {
			t.Error("unknown generator accepted")
		}
		if err := run(ctx, []string{"-dsn", dsn, "-mode", "bulk"}, &out, &out); err == nil {
			t.Error("unknown mode accepted")
		}
	})
}
