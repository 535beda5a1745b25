package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// TestHelp: every way of asking for help exits 0 and prints, on stdout, the
// usage of the command asked about with exactly the flags it takes.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		want, avoid []string
	}{
		{[]string{"serve", "--help"}, []string{"usage: leafproxy serve [--config FILE] [--listen ADDR] [--backend ADDR]", "--config FILE", "--listen ADDR", "--backend ADDR", "SIGTERM"}, nil},
		{[]string{"serve", "-h"}, []string{"usage: leafproxy serve"}, nil},
		{[]string{"init", "--help"}, []string{"usage: leafproxy init [--config FILE] [--backend ADDR]", "--config FILE", "--backend ADDR", "leaf_alloc"}, []string{"--listen"}},
		{[]string{"init", "-help"}, []string{"usage: leafproxy init"}, nil},
		{[]string{"demo", "--help"}, []string{"usage: leafproxy demo [ARGS...]", "cmd/leafproxy-demo", "go-mysql-server"}, []string{"--config", "--backend "}},
		{[]string{"version", "--help"}, []string{"usage: leafproxy version", "no flags"}, []string{"--config"}},
		{[]string{"help", "serve"}, []string{"usage: leafproxy serve"}, nil},
		{[]string{"help", "init"}, []string{"usage: leafproxy init"}, []string{"--listen"}},
		{[]string{"--help"}, []string{"leafproxy serve [--config FILE] [--listen ADDR] [--backend ADDR]", "leafproxy init [--config FILE] [--backend ADDR]", "leafproxy demo [ARGS...]", "leafproxy version"}, nil},
		{[]string{"help"}, []string{"usage:"}, nil},
		{[]string{"-h"}, []string{"usage:"}, nil},
	} {
		var out, errOut bytes.Buffer
		code := run(tc.args, &out, &errOut)
		if code != 0 || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut.String())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out.String())
			}
		}
		for _, a := range tc.avoid {
			if strings.Contains(out.String(), a) {
				t.Errorf("%v: output mentions %q, a flag the command does not take:\n%s", tc.args, a, out.String())
			}
		}
	}
}

// TestUsageErrors: mistakes on the command line exit 2 with a message and
// the command's usage on stderr.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("listen: 127.0.0.1:3307\ntabels: []\nbackend:\n  pasword: x\n"), 0o600)
	broken := filepath.Join(dir, "broken.yaml")
	os.WriteFile(broken, []byte("listen: 127.0.0.1:3307\nbackend:\n  addr: 127.0.0.1:3306\n password: x\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"usage:"}},
		{[]string{"bogus"}, []string{`unknown command "bogus"`, "usage:"}},
		{[]string{"help", "bogus"}, []string{`unknown command "bogus"`}},
		{[]string{"serve", "--bogus"}, []string{"leafproxy serve: flag provided but not defined", "usage: leafproxy serve"}},
		{[]string{"init", "--listen", "127.0.0.1:1"}, []string{"leafproxy init: flag provided but not defined: -listen", "usage: leafproxy init"}},
		{[]string{"serve", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"serve", "--config", "/nonexistent.yaml"}, []string{"nonexistent.yaml", "no such file"}},
		{[]string{"serve", "--config", bad}, []string{bad + " has 2 problems:", `  line 2: unknown key "tabels" (did you mean "tables"?)`,
			`  line 4: backend: unknown key "pasword" (did you mean "password"?)`}},
		{[]string{"init", "--config", broken}, []string{broken + `: line 4: invalid YAML`, `" password: x"`}},
		{[]string{"serve", "--listen", "nope"}, []string{`--listen: "nope" is neither host:port nor a Unix socket path`}},
		{[]string{"init", "--backend", "nope"}, []string{`--backend: "nope" is neither host:port nor a Unix socket path`}},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, errOut.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, errOut.String())
			}
		}
	}
}

// TestInitCustomStore: a sequences.store naming its own database gets it
// created, like the default `leafproxy` database.
func TestInitCustomStore(t *testing.T) {
	backend := testdb.Start(t)
	store := testdb.Start(t)
	path := filepath.Join(t.TempDir(), "leafproxy.yaml")
	os.WriteFile(path, []byte("backend: {addr: "+backend.Addr+"}\nsequences:\n  store: \""+store.DSN("ids")+"\"\n  tags: {order: {step: 10}}\n"), 0o600)
	var out, errOut bytes.Buffer
	if code := run([]string{"init", "--config", path}, &out, &errOut); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "allocation store ready on "+store.Addr+"/ids") {
		t.Errorf("init output %q", out.String())
	}
	var step int
	if err := store.Open(t, "").QueryRow("SELECT step FROM ids.leaf_alloc WHERE biz_tag = 'order'").Scan(&step); err != nil || step != 10 {
		t.Fatalf("ids.leaf_alloc: step %d, %v", step, err)
	}
	var n int
	backend.Open(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ('ids', 'leafproxy')").Scan(&n)
	if n != 0 {
		t.Errorf("init created %d store databases on the backend", n)
	}
}

// TestRefusedLoginNamesTheKey: init and serve against a backend or store
// that refuses the configured account say which key to fix.
func TestRefusedLoginNamesTheKey(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE USER 'leaf'@'%' IDENTIFIED BY 'right'", "GRANT ALL ON *.* TO 'leaf'@'%'")
	dir := t.TempDir()
	wrongBackend := filepath.Join(dir, "backend.yaml")
	os.WriteFile(wrongBackend, []byte("listen: 127.0.0.1:0\nbackend: {addr: "+backend.Addr+", user: leaf, password: wrong}\n"+
		"sequences: {tags: {msg: {generator: snowflake}}}\n"), 0o600)
	mc, _ := mysql.ParseDSN(backend.DSN("ids"))
	mc.User, mc.Passwd = "leaf", "wrong"
	wrongStore := filepath.Join(dir, "store.yaml")
	os.WriteFile(wrongStore, []byte("listen: 127.0.0.1:0\nbackend: {addr: "+backend.Addr+"}\n"+
		"sequences: {store: \""+mc.FormatDSN()+"\", tags: {msg: {generator: snowflake}}}\n"), 0o600)
	for _, tc := range []struct {
		cmd, path, want string
	}{
		{"init", wrongBackend, "leafproxy init: backend.password: the backend " + backend.Addr + ` refused login as "leaf"`},
		{"serve", wrongBackend, "leafproxy serve: backend.password: the backend " + backend.Addr + ` refused login as "leaf"`},
		{"init", wrongStore, "leafproxy init: sequences.store: the allocation store " + backend.Addr + ` refused login as "leaf"`},
		{"serve", wrongStore, "leafproxy serve: sequences.store: the allocation store " + backend.Addr + ` refused login as "leaf"`},
	} {
		var out, errOut bytes.Buffer
		code := run([]string{tc.cmd, "--config", tc.path}, &out, &errOut)
		// serve refuses a configuration whose login is refused before it
		// starts anything, with 2 (restarting cannot fix it).
		wantCode := 1
		if tc.cmd == "serve" {
			wantCode = 2
		}
		if code != wantCode || !strings.Contains(errOut.String(), tc.want) || !strings.Contains(errOut.String(), "Error 1045") {
			t.Errorf("%s %s: exit %d, stderr:\n%s\nwant it to contain %q", tc.cmd, filepath.Base(tc.path), code, errOut.String(), tc.want)
		}
	}
}

// TestNoStackTraces: a stack in a record above debug level is kept out of
// the log; at log.level debug it follows as its own debug record.
func TestNoStackTraces(t *testing.T) {
	for _, tc := range []struct {
		level, format string
		stack         bool
	}{{"info", "text", false}, {"error", "json", false}, {"debug", "text", true}, {"debug", "json", true}} {
		cfg := config.Default()
		cfg.Log.Level, cfg.Log.Format = tc.level, tc.format
		var buf bytes.Buffer
		log := newLogger(cfg, &buf).With("session", 3)
		log.Error("session closed: internal error", "panic", "boom", "stack", string(debug.Stack()))
		log.Error("other", "trace", "goroutine 7 [running]:\nmain.main()")
		out := buf.String()
		if !strings.Contains(out, "session closed: internal error") || !strings.Contains(out, "boom") || !strings.Contains(out, "session=3") && !strings.Contains(out, `"session":3`) {
			t.Errorf("%s/%s: the record itself is lost:\n%s", tc.level, tc.format, out)
		}
		if got := strings.Contains(out, "goroutine "); got != tc.stack {
			t.Errorf("%s/%s: stack in log = %v, want %v:\n%s", tc.level, tc.format, got, tc.stack, out)
		}
	}
	// A debug record with a stack is written as it is.
	cfg := config.Default()
	cfg.Log.Level = "debug"
	var buf bytes.Buffer
	newLogger(cfg, &buf).Log(context.Background(), slog.LevelDebug, "recovered", "stack", "goroutine 1 [running]:")
	if !strings.Contains(buf.String(), "goroutine 1") {
		t.Errorf("debug record: %s", buf.String())
	}
}
