package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sequences.store takes one DSN or a list; a list is checked entry by
// entry (each a DSN naming the same database on another server), and
// store_password_file gives its password to every entry.
func TestStoreList(t *testing.T) {
	one, err := Parse([]byte("sequences:\n  store: \"leaf:pw@tcp(10.0.0.1:3306)/leafproxy\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := one.StoreDSNs(); !slices.Equal(got, []string{"leaf:pw@tcp(10.0.0.1:3306)/leafproxy"}) || one.StoreDSN() != got[0] {
		t.Fatalf("one DSN: %q, StoreDSN %q", got, one.StoreDSN())
	}
	list, err := Parse([]byte("sequences:\n  store:\n    - \"leaf@tcp(10.0.0.1:3306)/leafproxy\"\n    - \"leaf@tcp(10.0.0.2:3306)/leafproxy\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := list.StoreDSNs(); len(got) != 2 || !strings.Contains(got[1], "10.0.0.2") || list.StoreDSN() != got[0] {
		t.Fatalf("list: %q, StoreDSN %q", got, list.StoreDSN())
	}
	if got := Default().StoreDSNs(); len(got) != 1 || !strings.Contains(got[0], "/leafproxy") {
		t.Fatalf("no store: %q, want the backend's", got)
	}

	for _, c := range []struct{ yaml, want string }{
		{"[\"leaf@tcp(10.0.0.1:3306)/leafproxy\", \"leaf@tcp(10.0.0.1:3306)/leafproxy\"]", "sequences.store[1]: 10.0.0.1:3306 is listed already"},
		{"[\"leaf@tcp(10.0.0.1:3306)/leafproxy\", \"leaf@tcp(10.0.0.2:3306)/other\"]", `sequences.store[1]: names database "other"`},
		{"[\"leaf@tcp(10.0.0.1:3306)/leafproxy\", \"leaf@tcp(10.0.0.2:3306)/\"]", "sequences.store[1]: names no database"},
		{"[\"leaf@tcp(10.0.0.1:3306)/leafproxy\", \"\"]", "sequences.store[1]: empty"},
		{"{a: b}", "sequences.store"},
	} {
		_, err := Parse([]byte("sequences:\n  store: " + c.yaml + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("store %s: %v, want %q", c.yaml, err, c.want)
		}
	}

	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withPW, err := Parse([]byte("sequences:\n  store_password_file: " + pw + "\n  store:\n    - \"leaf@tcp(10.0.0.1:3306)/leafproxy\"\n    - \"leaf@tcp(10.0.0.2:3306)/leafproxy\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	list = withPW
	for i, dsn := range list.StoreDSNs() {
		if !strings.Contains(dsn, "leaf:s3cret@") {
			t.Errorf("entry %d after store_password_file: %q", i, dsn)
		}
	}
}

// snowflake.identity needs a leased worker id and a state file, and a
// name that fits the store's owner column.
func TestSnowflakeIdentity(t *testing.T) {
	ok := "snowflake:\n  identity: auto\n  state_file: /tmp/x\n"
	if _, err := Parse([]byte(ok)); err != nil {
		t.Fatalf("identity auto with a state file: %v", err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"snowflake:\n  identity: auto\n", "snowflake.identity: needs snowflake.state_file"},
		{"snowflake:\n  identity: p1\n  state_file: /tmp/x\n  worker_id: \"7\"\n", "snowflake.identity: binds a leased worker id"},
		{"snowflake:\n  identity: \"a|b\"\n  state_file: /tmp/x\n", `snowflake.identity: "a|b"`},
		{"snowflake:\n  identity: " + strings.Repeat("x", 33) + "\n  state_file: /tmp/x\n", "snowflake.identity:"},
	} {
		if _, err := Parse([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
}
