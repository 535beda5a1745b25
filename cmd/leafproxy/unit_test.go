package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
)

// TestSystemdUnit: docs/leafproxy.service runs a command line this binary
// accepts, waits longer than the default shutdown grace on stop, and (where
// systemd-analyze exists) is a valid unit.
func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("../../docs/leafproxy.service")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	var reload []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			keys[k] = v
			if k == "ExecReload" {
				reload = append(reload, v)
			}
		}
	}
	// systemctl reload runs check on the same file first (a refused file
	// fails the reload), then SIGHUP.
	if len(reload) != 2 || !strings.HasSuffix(reload[1], "kill -HUP $MAINPID") {
		t.Fatalf("ExecReload lines %q: want check, then kill -HUP", reload)
	}
	check := strings.Fields(reload[0])
	if len(check) < 2 || check[0] != strings.Fields(keys["ExecStart"])[0] || check[1] != "check" ||
		strings.Join(check[2:], " ") != strings.Join(strings.Fields(keys["ExecStart"])[2:], " ") {
		t.Errorf("ExecReload %q must run check with ExecStart's arguments (%q)", reload[0], keys["ExecStart"])
	}
	exec := strings.Fields(keys["ExecStart"])
	if len(exec) < 2 || filepath.Base(exec[0]) != "leafproxy" {
		t.Fatalf("ExecStart %q", keys["ExecStart"])
	}
	cmd := findCommand(exec[1])
	if cmd == nil || cmd.name != "serve" {
		t.Fatalf("ExecStart runs %q, want serve", exec[1])
	}
	for _, a := range exec[2:] {
		if name, ok := strings.CutPrefix(a, "--"); ok && !contains(cmd.flags, name) {
			t.Errorf("ExecStart passes --%s, which serve does not take", name)
		}
	}
	// The arguments parse (with --help added, so nothing starts).
	var out, errOut bytes.Buffer
	if code := run(append(exec[1:], "--help"), &out, &errOut); code != 0 {
		t.Errorf("ExecStart's arguments: exit %d: %s", code, errOut.String())
	}
	stop, err := time.ParseDuration(keys["TimeoutStopSec"])
	if err != nil || stop <= config.Default().Shutdown.Grace.D() {
		t.Errorf("TimeoutStopSec=%s must exceed the default shutdown.grace %v", keys["TimeoutStopSec"], config.Default().Shutdown.Grace.D())
	}
	if keys["KillSignal"] != "SIGTERM" || keys["RestartPreventExitStatus"] != "2" {
		t.Errorf("KillSignal=%s RestartPreventExitStatus=%s", keys["KillSignal"], keys["RestartPreventExitStatus"])
	}
	verifyUnit(t, b, exec[0])
}

func verifyUnit(t *testing.T, unit []byte, binary string) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not found: unit syntax not verified")
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// systemd-analyze checks that the binary exists: point it at this test binary.
	dir := t.TempDir()
	path := filepath.Join(dir, "leafproxy.service")
	os.WriteFile(path, bytes.ReplaceAll(unit, []byte(binary), []byte(self)), 0o644)
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	// It exits 0 on ignored settings, but names the file when it warns.
	if err != nil || bytes.Contains(out, []byte(path)) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
