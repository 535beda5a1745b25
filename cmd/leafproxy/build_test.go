package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/buildinfo"
)

// TestLeanBinary: the binary people deploy does not link the demo's
// embedded server (go-mysql-server, cmd/leafproxy-demo's): it stays under
// 40 MB (86 MB with it, 29 MB without, measured with go1.26 on
// linux/amd64), and `leafproxy version` prints the commit it was built
// from (when built from a git clone; a git worktree gets no VCS stamp from
// the Go toolchain).
func TestLeanBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	deps, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range strings.Fields(string(deps)) {
		if strings.HasPrefix(d, "github.com/dolthub/") || d == "github.com/leafproxy/leafproxy/demo" {
			t.Errorf("cmd/leafproxy links %s: the demo's server belongs in cmd/leafproxy-demo", d)
		}
	}
	bin := filepath.Join(t.TempDir(), "leafproxy")
	// -buildvcs=true overrides a GOFLAGS=-buildvcs=false in the environment.
	if out, err := exec.Command(goTool, "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		// Not a git checkout (a source archive): build without the stamp.
		t.Logf("go build -buildvcs=true: %v: %s", err, out)
		if out, err := exec.Command(goTool, "build", "-buildvcs=false", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v: %s", err, out)
		}
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cmd/leafproxy: %.1f MB", float64(st.Size())/1e6)
	if st.Size() > 40e6 {
		t.Errorf("cmd/leafproxy is %.1f MB, over 40 MB: what made it grow?", float64(st.Size())/1e6)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leafproxy version: %s", out)
	if !bytes.HasPrefix(out, []byte("leafproxy "+buildinfo.Release+" (")) || !bytes.Contains(out, []byte("linux/")) && !bytes.Contains(out, []byte("darwin/")) {
		t.Errorf("version output %q", out)
	}
	meta, _ := exec.Command(goTool, "version", "-m", bin).Output()
	if !bytes.Contains(meta, []byte("vcs.revision=")) {
		t.Logf("no VCS stamp (a git worktree, or no git): commit not checked")
		return
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(head))[:12]
	if !bytes.Contains(out, []byte("commit "+commit)) || !bytes.Contains(out, []byte("committed 20")) {
		t.Errorf("version output %q, want commit %s and its date", out, commit)
	}
}

// TestDemoPointsToItsProgram: `leafproxy demo` (the README's command before
// the demo became a program of its own) says how to run the demo, with
// the arguments it was given.
func TestDemoPointsToItsProgram(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"demo", "--listen", "3307"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if w := "go run ./cmd/leafproxy-demo --listen 3307"; !strings.Contains(out.String(), w) {
		t.Errorf("output lacks %q:\n%s", w, out.String())
	}
	// No module path that no registry serves (the module is not published).
	if strings.Contains(out.String(), "@latest") || strings.Contains(out.String(), "github.com/") {
		t.Errorf("output suggests a module path:\n%s", out.String())
	}
	if _, err := os.Stat("../leafproxy-demo/main.go"); err != nil {
		t.Errorf("the program it names: %v", err)
	}
}
