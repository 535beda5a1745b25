package integration

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/leafproc"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// lineReader generates n lines of width bytes ("<i>\t<padding>\n") without
// holding them.
type lineReader struct {
	n, i, width int
	cur         []byte
}

func (r *lineReader) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		if len(r.cur) == 0 {
			if r.i == r.n {
				break
			}
			r.i++
			r.cur = fmt.Appendf(r.cur[:0], "%d\t", r.i)
			for len(r.cur) < r.width-1 {
				r.cur = append(r.cur, byte('a'+r.i%26))
			}
			r.cur = append(r.cur, '\n')
		}
		k := copy(p[w:], r.cur)
		r.cur, w = r.cur[k:], w+k
	}
	if w == 0 {
		return 0, io.EOF
	}
	return w, nil
}

// A 64 MB file streams through the proxy into a rule table while the
// proxy's resident set grows by a few MB: it keeps one piece of the file
// and what it becomes, the transformer a terminator's worth of bytes. The
// proxy is the leafproxy binary in a child process (internal/testkit/leafproc), so
// what is measured is the proxy alone, not go-sql-driver reading the file
// in this process.
func TestLoadDataMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 64 MB through MariaDB")
	}
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE IF NOT EXISTS app",
		"CREATE TABLE app.big (id BIGINT PRIMARY KEY, n INT, pad VARCHAR(1024)) ENGINE=InnoDB")
	p := leafproc.Start(t, `backend:
  addr: `+backend.Addr+`
  user: root
users:
  - name: app
    password: secret
sequences:
  wait_timeout: 1s
  tags:
    big: {generator: segment, step: 10000}
tables:
  - {table: app.big, column: id, tag: big}
log:
  level: warn
`)
	lf := &leaf{addr: p.Addr}
	const lines, width = 64 << 10, 1 << 10
	mysql.RegisterReaderHandler("leafbig", func() io.Reader { return &lineReader{n: lines, width: width} })
	defer mysql.DeregisterReaderHandler("leafbig")
	db := lf.open(t, "app", nil)
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	m := p.Measure(t)
	start := time.Now()
	res, err := db.Exec("LOAD DATA LOCAL INFILE 'Reader::leafbig' INTO TABLE big (n, pad)")
	growth := m.Growth(t)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := res.RowsAffected()
	t.Logf("%d MB, %d rows in %v; the proxy's peak RSS growth %.1f MiB over %.1f MiB", lines*width>>20, n, time.Since(start).Round(time.Millisecond), float64(growth)/(1<<20), float64(m.Base)/(1<<20))
	var rows, distinct, minN, maxN int
	if err := backend.Open(t, "app").QueryRow("SELECT COUNT(*), COUNT(DISTINCT id), MIN(n), MAX(n) FROM big").Scan(&rows, &distinct, &minN, &maxN); err != nil {
		t.Fatal(err)
	}
	if n != lines || rows != lines || distinct != lines || minN != 1 || maxN != lines {
		t.Fatalf("%d rows affected, %d rows, %d distinct keys, n %d..%d; want %d of each", n, rows, distinct, minN, maxN, lines)
	}
	if growth > 16<<20 {
		t.Fatalf("the proxy's RSS grew by %.1f MiB streaming %d MB (bound 16 MiB)", float64(growth)/(1<<20), lines*width>>20)
	}
}

// The allocation store goes away while a file streams: the keys run out
// mid-file. The statement fails as a whole (the row keyed "0" the proxy
// sends makes the server refuse it, and InnoDB undoes the rows before
// it), the client gets an error naming the tag, and the session goes on.
func TestLoadDataKeysRunOutMidFile(t *testing.T) {
	store := testdb.Start(t)
	backend, lf := loadEnv(t, func(cfg *config.Config, b *testdb.Server) {
		store.Exec(t, "CREATE DATABASE IF NOT EXISTS leafstore")
		cfg.Sequences.Store = config.StoreList{store.DSN("leafstore")}
		cfg.Sequences.Tags["order"] = config.Tag{Generator: "segment", Step: 100}
	})
	db := lf.open(t, "app", nil)
	db.SetMaxOpenConns(1)
	var first int64
	if err := db.QueryRow("SELECT NEXTVAL('order')").Scan(&first); err != nil { // a segment in the buffer
		t.Fatal(err)
	}
	store.Stop(t)
	started := time.Now()
	_, err := db.Exec("LOAD DATA LOCAL INFILE '" + registerReader(t, []byte(strings.Repeat("x\t1\n", 5000))) + "' INTO TABLE orders (item, qty)")
	t.Logf("after %v: %v", time.Since(started).Round(time.Millisecond), err)
	if err == nil || !strings.Contains(err.Error(), `no keys from tag "order"`) || !strings.Contains(err.Error(), "app.orders") {
		t.Fatalf("LOAD DATA with the store down: %v, want an error naming app.orders and the tag", err)
	}
	if rows, _, _ := keyCounts(t, backend.Open(t, "app"), "orders"); rows != 0 {
		t.Fatalf("%d rows written by a refused load", rows)
	}
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the session after the refused load: %v", err)
	}
}

// Random files and formats loaded through the proxy into a rule table end
// as the same rows, with the same warnings, as loaded directly into an
// AUTO_INCREMENT table; the first generated key is LAST_INSERT_ID().
func TestLoadDataThroughProxyMatchesMariaDB(t *testing.T) {
	backend, lf := loadEnv(t, func(cfg *config.Config, b *testdb.Server) {
		b.Exec(t,
			"CREATE TABLE app.ai3 (id BIGINT AUTO_INCREMENT PRIMARY KEY, c1 VARBINARY(100), c2 VARBINARY(100), c3 VARBINARY(100))",
			"CREATE TABLE app.kt (id BIGINT PRIMARY KEY, c1 VARBINARY(100), c2 VARBINARY(100), c3 VARBINARY(100))")
		cfg.Sequences.Tags["kt"] = config.Tag{Generator: "segment", Step: 1000}
		cfg.Tables = append(cfg.Tables, config.Table{Table: "app.kt", Column: "id", Tag: "kt"})
	})
	ctx := context.Background()
	direct, err := backend.Open(t, "app").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	proxied, err := lf.open(t, "app", nil).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer proxied.Close()
	r := rand.New(rand.NewPCG(23, 29))
	cases := 150
	if testing.Short() {
		cases = 40
	}
	for done := 0; done < cases; {
		f := randomLoadFormat(r)
		if f.Check() != "" {
			continue
		}
		done++
		data := randomLoadData(r, r.IntN(80))
		cols := strings.Join([]string{"c1", "c2", "c3"}[:f.Fields], ", ")
		if _, err := direct.ExecContext(ctx, "TRUNCATE ai3"); err != nil {
			t.Fatal(err)
		}
		if _, err := direct.ExecContext(ctx, "TRUNCATE kt"); err != nil {
			t.Fatal(err)
		}
		stmt := func(table string) string {
			return fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE %s %s (%s)", registerReader(t, data), table, loadClauses(f), cols)
		}
		resA, errA := direct.ExecContext(ctx, stmt("ai3"))
		warnA := warningsOf(t, direct)
		resB, errB := proxied.ExecContext(ctx, stmt("kt"))
		warnB := warningsOf(t, proxied)
		if errA != nil || errB != nil {
			t.Fatalf("format %s, file %q: direct %v, through the proxy %v", describeFormat(f), data, errA, errB)
		}
		_, rowsA := rowsOf(t, direct, "ai3")
		idsB, rowsB := rowsOf(t, direct, "kt")
		nA, _ := resA.RowsAffected()
		nB, _ := resB.RowsAffected()
		var last int64
		if err := proxied.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil {
			t.Fatal(err)
		}
		if nA != nB || strings.Join(rowsA, "\n") != strings.Join(rowsB, "\n") || warnA != strings.ReplaceAll(warnB, "`app`.`kt`", "`app`.`ai3`") ||
			len(idsB) > 0 && last != idsB[0] {
			t.Fatalf("format %s, file %q:\ndirect %d rows %v\n%s\nthrough the proxy %d rows %v (keys %v, LAST_INSERT_ID %d)\n%s",
				describeFormat(f), data, nA, rowsA, warnA, nB, rowsB, idsB, last, warnB)
		}
	}
}
