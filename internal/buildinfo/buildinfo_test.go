package buildinfo

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	in := Info{Version: "1.2.0", Commit: "e2b6a9da023d0123456789", Time: "2026-11-25T17:22:12Z", Go: "go1.26.8", Platform: "linux/amd64"}
	if got, want := in.String(), "leafproxy 1.2.0 (commit e2b6a9da023d, committed 2026-11-25T17:22:12Z, go1.26.8 linux/amd64)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	in.Modified = true
	if !strings.Contains(in.String(), "commit e2b6a9da023d with uncommitted changes") {
		t.Errorf("modified: %q", in.String())
	}
	if got := (Info{Version: "dev", Go: "go1", Platform: "x/y"}).String(); !strings.Contains(got, "commit unknown") {
		t.Errorf("no vcs: %q", got)
	}
	for v, want := range map[string]bool{"v0.0.0-20261125172212-e2b6a9da023d": true, "v1.2.1-0.20261125172212-e2b6a9da023d+dirty": true, "v1.2.0": false} {
		if pseudo.MatchString(v) != want {
			t.Errorf("pseudo(%q) = %v", v, !want)
		}
	}
}
