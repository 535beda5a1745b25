package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// npmPackages is a set of npm packages the tests install once into a
// cache under $HOME (or the temp directory) and reuse afterwards: the
// node clients (mysql2, Sequelize with the MariaDB connector).
type npmPackages struct {
	once sync.Once
	dir  string
	skip string
}

// need returns a directory whose node_modules holds pkgs ("name@version";
// the first one's package.json marks a finished install), installing them
// into cache/leafproxy-test/name the first time. It skips the test when
// node or npm is missing or the registry cannot be reached.
func (p *npmPackages) need(t *testing.T, name string, pkgs ...string) string {
	t.Helper()
	p.once.Do(func() { p.dir, p.skip = npmInstall(name, pkgs) })
	if p.skip != "" {
		t.Skip(p.skip)
	}
	return p.dir
}

func npmInstall(name string, pkgs []string) (dir, skip string) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", tool + " not found: install nodejs and npm (scripts/test.sh does, as root)"
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir = filepath.Join(cache, "leafproxy-test", name)
	first := pkgs[0]
	if i := lastAt(first); i > 0 {
		first = first[:i]
	}
	marker := filepath.Join(dir, "node_modules", first, "package.json")
	if _, err := os.Stat(marker); err == nil {
		return dir, ""
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", "cannot create npm cache directory: " + err.Error()
	}
	// Install into a fresh directory, then rename: concurrent test
	// binaries never see a half-installed package.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		return "", err.Error()
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private":true}`), 0o644); err != nil {
		return "", err.Error()
	}
	cmd := exec.Command("npm", append([]string{"install", "--no-audit", "--no-fund", "--no-progress"}, pkgs...)...)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", "npm install " + name + " failed (no network to the npm registry?): " + err.Error() + "\n" + string(out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(marker); serr != nil {
			return "", "install " + name + ": " + err.Error()
		}
	}
	return dir, ""
}

// lastAt is the index of a package spec's version '@' (not a scope's).
func lastAt(spec string) int {
	for i := len(spec) - 1; i > 0; i-- {
		if spec[i] == '@' {
			return i
		}
	}
	return -1
}
