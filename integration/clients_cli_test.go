package integration

import (
	"context"
	"database/sql"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Ctrl-C in the interactive mariadb CLI while SELECT SLEEP(30) runs
// through the proxy: the CLI opens a second connection and sends
// KILL QUERY <the id it was greeted with>. That must stop this query, and
// only it: a direct session and another proxy session sleeping meanwhile
// finish undisturbed. The CLI runs on a pseudo-terminal (script(1)) and
// gets a real ^C typed into it, so the terminal's line discipline sends
// the SIGINT, as when a user presses Ctrl-C.
func TestCLICtrlC(t *testing.T) {
	t.Parallel() // waits more than it works; own servers or own tables
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skipf("mariadb client not installed: apt-get install mariadb-client (scripts/test.sh does): %v", err)
	}
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skipf("script(1) not found, needed for a pseudo-terminal: apt-get install bsdutils: %v", err)
	}
	cp := startClientProxy(t, "clidb", nil)

	// Bystanders: a direct session and another proxy session, each in a
	// SLEEP that must run to its end (0, not 1) across the Ctrl-C.
	const bystanderSleep = "SELECT SLEEP(4)"
	bystanders := map[string]*sql.DB{
		"direct session": sqlOpen(t, cp.b.DSN("")),
		"proxy session":  sqlOpen(t, cp.lf.dsn("clidb", nil)),
	}
	type result struct {
		v       int
		err     error
		elapsed time.Duration
	}
	results := map[string]chan result{}
	for name, db := range bystanders {
		ch := make(chan result, 1)
		results[name] = ch
		go func() {
			start := time.Now()
			var v int
			err := db.QueryRow(bystanderSleep).Scan(&v)
			ch <- result{v, err, time.Since(start)}
		}()
	}

	// "exec": script(1) runs its command through sh -c; without exec the
	// shell stays in the terminal's foreground process group, the ^C's
	// SIGINT kills it, and script -e reports 130 although the CLI carried on.
	cmdline := strings.Join([]string{"exec", cli, "--no-defaults", "-h", cp.host, "-P", cp.port,
		"-u", "app", "-psecret", "-D", "clidb"}, " ")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, scriptBin, "-qfec", cmdline, "/dev/null")
	cmd.Env = append(os.Environ(), "TERM=dumb")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out testdb.LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	exited := false
	defer func() {
		cancel()
		if !exited {
			<-done
		}
	}()
	_, _ = io.WriteString(in, "SELECT SLEEP(30);\n")
	waitRunning(t, cp.b, "SELECT SLEEP(30)")
	waitRunning(t, cp.b, bystanderSleep)
	pressed := time.Now()
	_, _ = io.WriteString(in, "\x03") // Ctrl-C on the terminal

	// Within 20 s: SLEEP(30) ends by itself, uninterrupted, after 30.
	testwait.For(t, "Ctrl-C to stop SELECT SLEEP(30)", func() bool { return strings.Contains(out.String(), "Query execution was interrupted") },
		testwait.Within(20*time.Second), testwait.Detail(func() string { return "CLI output:\n" + out.String() }))
	stopped := time.Since(pressed)
	t.Logf("query interrupted %v after Ctrl-C", stopped.Round(time.Millisecond))
	// The CLI carries on with the same connection.
	_, _ = io.WriteString(in, "SELECT CONCAT('still', '-', 'here');\nexit\n")
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Errorf("mariadb CLI exited with %v; output:\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Errorf("mariadb CLI did not exit; output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "still-here") {
		t.Errorf("the CLI's session did not go on after Ctrl-C; output:\n%s", out.String())
	}
	for name, ch := range results {
		r := <-ch
		if r.err != nil || r.v != 0 || r.elapsed < 3500*time.Millisecond {
			t.Errorf("%s's %s was disturbed by the Ctrl-C: value %d, err %v, after %v (want 0 after 4s)",
				name, bystanderSleep, r.v, r.err, r.elapsed.Round(time.Millisecond))
		}
	}
}

// The mariadb CLI with --compress and --local-infile through the proxy: the
// client's own status says the protocol is compressed (so the proxy offered
// CLIENT_COMPRESS and speaks it), a result larger than one compressed
// packet arrives whole, and LOAD DATA LOCAL INFILE sends the client's file
// (relayed, not key-filled).
func TestCLICompressLocalInfile(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skipf("mariadb client not installed: apt-get install mariadb-client (scripts/test.sh does): %v", err)
	}
	cp := startClientProxy(t, "clidb", nil)
	cp.b.Exec(t, "CREATE TABLE clidb.li (id INT PRIMARY KEY, s VARCHAR(40))")
	file := writeScript(t, "rows.tsv", "1\tone\n2\ttwo é\n3\t\\N\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, cli, "--no-defaults", "-h", cp.host, "-P", cp.port, "-u", "app", "-psecret",
		"--compress", "--local-infile=1", "--default-character-set=utf8mb4", "-D", "clidb", "--batch", "--skip-column-names",
		"-e", `\s`,
		"-e", "LOAD DATA LOCAL INFILE '"+file+"' INTO TABLE li CHARACTER SET utf8mb4; SELECT LENGTH(REPEAT('y', 300000)), MD5(REPEAT('y', 300000)) = MD5(CONCAT(REPEAT('y', 299999), 'y'))").CombinedOutput()
	t.Logf("mariadb CLI ran %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("mariadb CLI: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Protocol:\t\tCompressed") {
		t.Errorf("the CLI's \\s does not say the protocol is compressed:\n%s", out)
	}
	if !strings.Contains(string(out), "300000\t1\n") {
		t.Errorf("300 kB result over compression: output\n%s", out)
	}
	var n int
	var s2 string
	if err := sqlOpen(t, cp.b.DSN("clidb")).QueryRow("SELECT COUNT(*), (SELECT s FROM li WHERE id = 2) FROM li").Scan(&n, &s2); err != nil || n != 3 || s2 != "two é" {
		t.Errorf("after LOAD DATA LOCAL INFILE the table has %d rows, row 2 %q (%v); want 3 and %q", n, s2, err, "two é")
	}
}
