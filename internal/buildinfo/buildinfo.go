// Package buildinfo says which build of leafproxy is running: the version,
// and the commit and commit time the Go toolchain stamps into binaries
// built from a git checkout (runtime/debug.ReadBuildInfo, vcs.* settings;
// `go build` and `go run` stamp them unless -buildvcs=false).
package buildinfo

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
)

// Release is the newest released version of leafproxy: the newest
// version heading of CHANGELOG.md (a test keeps the two equal). A release
// raises it in the commit that moves CHANGELOG's Unreleased section under
// the new version. A binary built from a later commit names this release
// and its own commit.
const Release = "0.4.0"

// Info describes the running binary.
type Info struct {
	Version  string // -ldflags "-X main.version=..." if set, else the module version, else Release
	Commit   string // vcs.revision: the full commit hash; "" when not stamped (go test, -buildvcs=false)
	Time     string // vcs.time: the commit's time, RFC 3339
	Modified bool   // vcs.modified: built from a tree with uncommitted changes
	Go       string // the Go toolchain that built it
	Platform string // GOOS/GOARCH
}

// pseudo matches a Go pseudo-version's time-and-commit suffix
// (v0.0.0-20261125172212-e2b6a9da023d, v1.2.1-0.2026...-abc...).
var pseudo = regexp.MustCompile(`\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// Read returns the running binary's build information. version is the
// value stamped with -ldflags "-X main.version=..." ("" or a *-dev value
// defers to the module version when that is a real one, and "" then to
// Release).
func Read(version string) Info {
	in := Info{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		// A release the module was installed at (go install ...@v1.2.0)
		// names itself; a pseudo-version only repeats the commit.
		if v := bi.Main.Version; v != "" && v != "(devel)" && !pseudo.MatchString(v) && (in.Version == "" || strings.HasSuffix(in.Version, "-dev")) {
			in.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Commit = s.Value
			case "vcs.time":
				in.Time = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if in.Version == "" {
		in.Version = Release
	}
	return in
}

// String is the one line `leafproxy version` prints, e.g.
// "leafproxy 1.2.0 (commit 0123456789ab, 2026-11-22T10:00:00Z, go1.26.8 linux/amd64)".
func (in Info) String() string {
	var parts []string
	if in.Commit != "" {
		c := in.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if in.Modified {
			c += " with uncommitted changes"
		}
		parts = append(parts, "commit "+c)
		if in.Time != "" {
			parts = append(parts, "committed "+in.Time)
		}
	} else {
		parts = append(parts, "commit unknown (built without VCS information)")
	}
	parts = append(parts, in.Go+" "+in.Platform)
	return fmt.Sprintf("leafproxy %s (%s)", in.Version, strings.Join(parts, ", "))
}

// ShortCommit is the first 12 characters of the commit ("" if unknown).
func (in Info) ShortCommit() string {
	if len(in.Commit) > 12 {
		return in.Commit[:12]
	}
	return in.Commit
}
