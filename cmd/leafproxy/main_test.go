package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func writeConfig(t *testing.T, backend *testdb.Server, listen string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "leafproxy.yaml")
	cfg := fmt.Sprintf(`listen: %s
backend: {addr: %s, user: root}
users: [{name: app, password: secret}]
sequences:
  tags: {order: {generator: segment, step: 50}, msg: {generator: snowflake}, audit: {}}
tables: [{table: orders, column: id, tag: order}, {table: events, column: id, tag: audit}]
snowflake: {worker_id: "5"}
log: {level: info}
`, listen, backend.Addr)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInitIsIdempotent: `leafproxy init` creates the schema and every
// configured segment tag, and a second
// run changes nothing.
func TestInitIsIdempotent(t *testing.T) {
	backend := testdb.Start(t)
	path := writeConfig(t, backend, "127.0.0.1:0")
	for round := range 2 {
		var out, errOut bytes.Buffer
		if code := run([]string{"init", "--config", path}, &out, &errOut); code != 0 {
			t.Fatalf("init round %d: exit %d: %s", round, code, errOut.String())
		}
		want := `created tag "order"`
		if round == 1 {
			want = `tag "order" exists`
		}
		if !strings.Contains(out.String(), want) {
			t.Fatalf("init round %d output %q, want %q", round, out.String(), want)
		}
	}
	db := backend.Open(t, "leafproxy")
	rows, err := db.Query("SELECT biz_tag, step, max_id FROM leaf_alloc ORDER BY biz_tag")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var tag string
		var step, maxID int64
		rows.Scan(&tag, &step, &maxID)
		got = append(got, fmt.Sprintf("%s/%d/%d", tag, step, maxID))
	}
	if strings.Join(got, " ") != "audit/1000/1 order/50/1" {
		t.Fatalf("leaf_alloc rows %v", got)
	}
	if _, err := db.Exec("SELECT 1 FROM leaf_worker LIMIT 1"); err != nil {
		t.Fatalf("leaf_worker: %v", err)
	}
}

// TestServeCommand runs the README's command path: `leafproxy serve
// --config FILE` answers NEXTVAL and fills keys, and exits 0 on SIGTERM.
func TestServeCommand(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE app", "CREATE TABLE app.orders (id BIGINT PRIMARY KEY, v INT)")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	path := writeConfig(t, backend, addr)
	done := make(chan int, 1)
	var errOut bytes.Buffer
	go func() { done <- run([]string{"serve", "--config", path}, &bytes.Buffer{}, &errOut) }()

	db, err := sql.Open("mysql", "app:secret@tcp("+addr+")/app")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int64
	testwait.For(t, "NEXTVAL through leafproxy serve", func() bool {
		err = db.QueryRow("SELECT NEXTVAL('order')").Scan(&id)
		return err == nil
	}, testwait.Detail(func() string { return fmt.Sprintf("%v (%s)", err, errOut.String()) }))
	if err != nil || id <= 0 {
		t.Fatalf("NEXTVAL through leafproxy serve: %d, %v (%s)", id, err, errOut.String())
	}
	res, err := db.Exec("INSERT INTO orders (v) VALUES (1)")
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := res.LastInsertId(); last <= id {
		t.Fatalf("filled key %d, want above the NEXTVAL %d of the same tag", last, id)
	}
	db.Close()
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, errOut.String())
		}
		// The signal is logged when it arrives, before the shutdown.
		logs := errOut.String()
		i, j := strings.Index(logs, "received SIGTERM, shutting down"), strings.Index(logs, "leafproxy stopped")
		if i < 0 || j < i || !strings.Contains(logs[i:], "grace=10s") {
			t.Fatalf("SIGTERM not logged before the shutdown:\n%s", logs)
		}
		if strings.Contains(logs, "goroutine ") {
			t.Fatalf("a Go stack trace in the log:\n%s", logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}

func TestVersionAndUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "leafproxy ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	if code := run([]string{"bogus"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "unknown command") {
		t.Fatalf("bogus: %d %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"serve", "--config", "/nonexistent.yaml"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "nonexistent") {
		t.Fatalf("missing config: %d %q", code, errOut.String())
	}
}

// TestInitAdoptsExistingRows: `leafproxy init` over a rule table that
// already holds keys creates its tag above them, and a later init raises
// the tag above keys written around the proxy since (never lowers it).
func TestInitAdoptsExistingRows(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE app", "CREATE TABLE app.orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)",
		"INSERT INTO app.orders (id, v) SELECT seq, 0 FROM app.seq_1_to_3000")
	path := writeConfig(t, backend, "127.0.0.1:0")
	initOut := func() string {
		var out, errOut bytes.Buffer
		if code := run([]string{"init", "--config", path}, &out, &errOut); code != 0 {
			t.Fatalf("init: exit %d: %s", code, errOut.String())
		}
		return out.String()
	}
	if out := initOut(); !strings.Contains(out, `created tag "order" (step 50), first ID 3001: above the largest key 3000 (app.orders.id on `) {
		t.Fatalf("init output %q, want the tag created above key 3000", out)
	}
	backend.Exec(t, "INSERT INTO app.orders (id, v) VALUES (9000, 1)")
	if out := initOut(); !strings.Contains(out, `raised tag "order": max_id 3001 -> 9001`) {
		t.Fatalf("second init output %q, want the tag raised to 9001", out)
	}
	backend.Exec(t, "DELETE FROM app.orders WHERE id = 9000")
	if out := initOut(); !strings.Contains(out, `tag "order" exists (max_id 9001`) {
		t.Fatalf("third init output %q, want the tag left at 9001", out)
	}
}

// TestSnowflakeLayoutMismatchExits2: `leafproxy init`
// records the snowflake layout in the store (and checks it the next time);
// init and serve with another layout exit 2, the configuration error
// status that systemd does not restart, naming both layouts.
func TestSnowflakeLayoutMismatchExits2(t *testing.T) {
	backend := testdb.Start(t)
	path := writeConfig(t, backend, "127.0.0.1:0")
	for _, want := range []string{
		"recorded snowflake layout 41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z in leaf_snowflake_layout",
		"snowflake layout 41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z matches the store's (recorded by ",
	} {
		var out, errOut bytes.Buffer
		if code := run([]string{"init", "--config", path}, &out, &errOut); code != 0 || !strings.Contains(out.String(), want) {
			t.Fatalf("init: exit %d, output %q, want %q (%s)", code, out.String(), want, errOut.String())
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(t.TempDir(), "js.yaml")
	os.WriteFile(js, []byte(strings.Replace(string(b), `snowflake: {worker_id: "5"}`,
		`snowflake: {worker_id: "5", time_bits: 41, worker_bits: 5, sequence_bits: 7}`, 1)), 0o600)
	for _, cmd := range []string{"init", "serve"} {
		var out, errOut bytes.Buffer
		done := make(chan int, 1)
		go func() { done <- run([]string{cmd, "--config", js}, &out, &errOut) }()
		var code int
		select {
		case code = <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(os.Getpid(), syscall.SIGTERM) // a serve that started
			<-done
			t.Fatalf("%s with 41/5/7 is still running after 30 s", cmd)
		}
		msg := errOut.String()
		if code != 2 || !strings.Contains(msg, "snowflake layout 41/5/7 x 1ms, epoch 2020-01-01T00:00:00Z (this proxy's snowflake config) differs from "+
			"41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z recorded in the store") || !strings.Contains(msg, "leafproxy "+cmd+": ") {
			t.Fatalf("%s with 41/5/7: exit %d:\n%s", cmd, code, msg)
		}
		t.Logf("%s: exit %d: %s", cmd, code, msg)
	}
	var wb int
	backend.Open(t, "leafproxy").QueryRow("SELECT worker_bits FROM leaf_snowflake_layout WHERE name = 'default'").Scan(&wb)
	if wb != 10 {
		t.Fatalf("recorded worker_bits %d after the refusals", wb)
	}
}

// TestTagLayoutMismatchExits2: a snowflake tag's own
// layout is recorded in the store like the global one; init and serve with
// another layout for the tag exit 2, naming the tag and both layouts.
func TestTagLayoutMismatchExits2(t *testing.T) {
	backend := testdb.Start(t)
	path := writeConfig(t, backend, "127.0.0.1:0")
	var out, errOut bytes.Buffer
	if code := run([]string{"init", "--config", path}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), `recorded snowflake layout 41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z of tag "msg" in leaf_snowflake_layout`) {
		t.Fatalf("init: exit %d, output %q (%s)", code, out.String(), errOut.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(t.TempDir(), "js.yaml")
	os.WriteFile(js, []byte(strings.Replace(string(b), `msg: {generator: snowflake}`, `msg: {generator: snowflake, layout: js_safe}`, 1)), 0o600)
	for _, cmd := range []string{"init", "serve"} {
		var out, errOut bytes.Buffer
		done := make(chan int, 1)
		go func() { done <- run([]string{cmd, "--config", js}, &out, &errOut) }()
		var code int
		select {
		case code = <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
			<-done
			t.Fatalf("%s with msg js_safe is still running after 30 s", cmd)
		}
		msg := errOut.String()
		if code != 2 || !strings.Contains(msg, "tag 'msg': snowflake layout 41/5/7 x 1ms, epoch 2020-01-01T00:00:00Z (this proxy's sequences.tags.msg) differs from "+
			"41/10/12 x 1ms, epoch 2020-01-01T00:00:00Z recorded in the store (leaf_snowflake_layout 'tag:msg'") {
			t.Fatalf("%s with msg js_safe: exit %d:\n%s", cmd, code, msg)
		}
		t.Logf("%s: exit %d: %s", cmd, code, msg)
	}
}
