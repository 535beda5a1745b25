package buildinfo

import (
	"os"
	"regexp"
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

// Release is CHANGELOG.md's newest version heading ("## [x.y.z] - date",
// after Unreleased), and every version heading is a semantic version
// with a date, newest first.
func TestReleaseIsChangelogs(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`(?m)^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$`)
	var versions []string
	lastDate := "9999"
	for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
		if m[1] == "Unreleased" {
			if len(versions) > 0 {
				t.Errorf("Unreleased comes after version %s: it goes first", versions[len(versions)-1])
			}
			continue
		}
		if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(m[1]) || m[2] == "" {
			t.Errorf("heading %q: want ## [x.y.z] - YYYY-MM-DD", m[0])
		}
		if m[2] > lastDate {
			t.Errorf("version %s (%s) is listed after a later one: newest first", m[1], m[2])
		}
		lastDate = m[2]
		versions = append(versions, m[1])
	}
	if len(versions) == 0 {
		t.Fatal("CHANGELOG.md has no version heading")
	}
	if versions[0] != Release {
		t.Errorf("buildinfo.Release is %q, CHANGELOG.md's newest version %q: raise Release with each release", Release, versions[0])
	}
	if got := Read("").Version; got != Release {
		t.Errorf("Read(\"\").Version = %q, want the release %q", got, Release)
	}
	if got := Read("1.2.3-rc1").Version; got != "1.2.3-rc1" {
		t.Errorf("a stamped version: %q", got)
	}
}
