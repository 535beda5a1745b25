package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
)

// Debian's libmariadb-java puts Connector/J here.
const connectorJJar = "/usr/share/java/mariadb-java-client.jar"

// connectorJBatchRows is the size of the executeBatch measured direct and
// through the proxy.
const connectorJBatchRows = 5000

// MariaDB Connector/J through a whole leafproxy (testdata/connectorj/
// LeafCheck.java, compiled with javac at test time): plain and prepared
// queries, compression, Statement.cancel() on a long query stopping it and only it, a
// 5,000-row executeBatch with useBulkStmts=true into a plain table
// (COM_STMT_BULK_EXECUTE relayed: all rows arrive, the backend runs one
// bulk statement rather than 5,000), and batches into a rule table whose
// key the proxy fills.
func TestConnectorJ(t *testing.T) {
	if _, err := os.Stat(connectorJJar); err != nil {
		t.Skipf("%s not found: apt-get install libmariadb-java (scripts/test.sh does, as root)", connectorJJar)
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Skipf("javac not found: apt-get install default-jdk-headless (scripts/test.sh does, as root)")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skipf("java not found: apt-get install default-jdk-headless")
	}
	cp := startClientProxy(t, "jdb", func(cfg *config.Config) {
		cfg.Sequences.Tags = map[string]config.Tag{"r": {Generator: "segment"}}
		cfg.Tables = []config.Table{{Table: "r_plain", Column: "id", Tag: "r"},
			{Table: "r_bulkkeys", Column: "id", Tag: "r"}, {Table: "r_bulk", Column: "id", Tag: "r"}}
	})
	cp.b.Exec(t,
		"CREATE TABLE jdb.b_direct (id INT PRIMARY KEY, v VARCHAR(40))",
		"CREATE TABLE jdb.b_proxy (id INT PRIMARY KEY, v VARCHAR(40))",
		"CREATE TABLE jdb.r_plain (id BIGINT PRIMARY KEY, v VARCHAR(40))",
		"CREATE TABLE jdb.r_bulkkeys (id BIGINT PRIMARY KEY, v VARCHAR(40))",
		"CREATE TABLE jdb.r_bulk (id BIGINT PRIMARY KEY, v VARCHAR(40))")

	classes := t.TempDir()
	src, err := filepath.Abs("testdata/connectorj/LeafCheck.java")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if out, err := exec.Command(javac, "-nowarn", "-cp", connectorJJar, "-d", classes, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	t.Logf("javac took %v", time.Since(start).Round(time.Millisecond))

	var got map[string]any
	runJSON(t, 120*time.Second, &got, "", nil, java, "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		"-cp", connectorJJar+string(os.PathListSeparator)+classes, "LeafCheck",
		cp.lf.addr, cp.b.Addr, strconv.Itoa(connectorJBatchRows))
	brief := map[string]any{}
	for k, v := range got {
		if s, ok := v.(string); ok && len(s) > 200 {
			v = shorten(s, 60)
		}
		brief[k] = v
	}
	seen, _ := json.MarshalIndent(brief, "", "  ")
	t.Logf("Connector/J observed:\n%s", seen)
	str := func(k string) string { s, _ := got[k].(string); return s }
	num := func(k string) int64 { f, _ := got[k].(float64); return int64(f) }

	t.Run("queries", func(t *testing.T) {
		if s := str("basicText"); s != "jdb|ab|2" {
			t.Errorf("text query: %q, want jdb|ab|2", s)
		}
		if s := str("basicPrepared"); s != "42|hi!" {
			t.Errorf("client-side prepared: %q, want 42|hi!", s)
		}
		if s := str("compressed"); s != "100000|end" {
			t.Errorf("useCompression=true: %q, want 100000|end", s)
		}
		if s := str("basicServerPrepared"); s != "42|hi!" {
			t.Errorf("server-side prepared: %q, want 42|hi!", s)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		// The cancelled SLEEP(30) answers 1 or ERR 1317, soon.
		c := str("cancelled")
		var ms int
		if f := strings.Fields(c); len(f) == 4 {
			ms, _ = strconv.Atoi(f[3])
		}
		if !(strings.HasPrefix(c, "value 1 ") || strings.HasPrefix(c, "error 1317 ")) || ms > 20000 {
			t.Errorf("Statement.cancel() on SELECT SLEEP(30): %q, want value 1 or error 1317 within 20 s", c)
		}
		if num("afterCancel") != 7 {
			t.Errorf("the connection after cancel() answered %v, want 7", got["afterCancel"])
		}
		for _, k := range []string{"bystanderProxy", "bystanderDirect"} {
			b := str(k)
			f := strings.Fields(b)
			if len(f) != 4 || f[0] != "value" || f[1] != "0" {
				t.Errorf("%s's SLEEP(3) was disturbed by the cancel: %q, want value 0", k, b)
				continue
			}
			if ms, _ := strconv.Atoi(f[3]); ms < 2500 {
				t.Errorf("%s's SLEEP(3) ended after %d ms", k, ms)
			}
		}
	})

	t.Run("bulk batch", func(t *testing.T) {
		n := int64(connectorJBatchRows)
		for _, table := range []string{"b_direct", "b_proxy"} {
			if num(table+"Rows") != n || num(table+"IdSum") != n*(n+1)/2 || num(table+"Matching") != n || num(table+"Counts") != n {
				t.Errorf("%s: %d rows (id sum %d, %d matching), %d update counts; want %d rows with ids 1..%d",
					table, num(table+"Rows"), num(table+"IdSum"), num(table+"Matching"), num(table+"Counts"), n, n)
			}
		}
		// COM_STMT_BULK_EXECUTE runs as one statement on the backend; a
		// fallback to one statement per row shows as thousands.
		for _, table := range []string{"b_direct", "b_proxy"} {
			st := statusDeltas(str(table + "Status"))
			if st["Com_insert"] > 10 || st["Com_stmt_execute"] > 10 {
				t.Errorf("%s: the backend counted %v for one batch: not sent as a bulk execute", table, st)
			}
		}
		t.Logf("executeBatch of %d rows (useBulkStmts=true): direct %d ms, through the proxy %d ms",
			n, num("b_directMs"), num("b_proxyMs"))
	})

	// A batch into a rule table, the key left to the proxy: with
	// useBulkStmts=false, and with useBulkStmts=true but generated keys
	// requested (Connector/J 2.x then sends one execute per row), every row
	// gets its own key and getGeneratedKeys() returns them in order.
	t.Run("rule table batch", func(t *testing.T) {
		checkRuleBatch(t, "r_plain", got, true)
	})
	t.Run("rule table batch with bulk and keys", func(t *testing.T) {
		checkRuleBatch(t, "r_bulkkeys", got, true)
	})
	// useBulkStmts=true without generated keys: a real COM_STMT_BULK_EXECUTE
	// on a rule table, which needs a fresh key per row.
	t.Run("rule table bulk batch", func(t *testing.T) {
		if e := str("r_bulkError"); strings.HasPrefix(e, "1235 ") {
			t.Skipf("bulk execute on a rule table is refused for now (per-row keys for COM_STMT_BULK_EXECUTE are being added in engine/): %s", e)
		}
		checkRuleBatch(t, "r_bulk", got, false)
		if st := statusDeltas(str("r_bulkStatus")); st["Com_insert"] > 10 {
			t.Logf("r_bulk: the backend counted %v: the proxy ran the bulk execute row by row", st)
		}
	})
}

// checkRuleBatch checks a batch into a rule table: every row got a key
// from the proxy, all distinct, and (withKeys) getGeneratedKeys() returned
// them in row order.
func checkRuleBatch(t *testing.T, table string, got map[string]any, withKeys bool) {
	t.Helper()
	if e, _ := got[table+"Error"].(string); e != "" {
		t.Fatalf("executeBatch into rule table %s: %s", table, e)
	}
	ids := parseLongs(got[table+"Ids"])
	keys := parseLongs(got[table+"Keys"])
	seen := map[int64]bool{}
	for _, id := range ids {
		if id <= 0 || seen[id] {
			t.Fatalf("%s: ids %v: want positive distinct generated keys", table, shorten(got[table+"Ids"].(string), 300))
		}
		seen[id] = true
	}
	if len(ids) != 200 {
		t.Fatalf("%s: %d rows, want 200", table, len(ids))
	}
	if !withKeys {
		return
	}
	if len(keys) != len(ids) {
		t.Fatalf("%s: getGeneratedKeys() gave %d keys for %d rows", table, len(keys), len(ids))
	}
	for i := range ids {
		if keys[i] != ids[i] {
			t.Fatalf("%s: generated key %d is %d, the row has id %d", table, i, keys[i], ids[i])
		}
	}
}

// parseLongs reads Java's List.toString(): "[1, 2, 3]".
func parseLongs(v any) []int64 {
	s, _ := v.(string)
	s = strings.Trim(s, "[]")
	if s == "" {
		return nil
	}
	var out []int64
	for _, f := range strings.Split(s, ", ") {
		n, _ := strconv.ParseInt(f, 10, 64)
		out = append(out, n)
	}
	return out
}

// statusDeltas reads "Com_insert=1 Questions=3".
func statusDeltas(s string) map[string]int64 {
	m := map[string]int64{}
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		m[k], _ = strconv.ParseInt(v, 10, 64)
	}
	return m
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
