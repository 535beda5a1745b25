package integration

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/rewriter/loadfile"
)

// readerSeq names go-sql-driver reader handlers uniquely.
var readerSeq atomic.Int64

// registerReader makes data loadable as LOCAL INFILE 'Reader::<name>'.
func registerReader(t testing.TB, data []byte) string {
	name := fmt.Sprintf("leaf%d", readerSeq.Add(1))
	mysql.RegisterReaderHandler(name, func() io.Reader { return bytes.NewReader(data) })
	t.Cleanup(func() { mysql.DeregisterReaderHandler(name) })
	return "Reader::" + name
}

// hexLit is s as a hex string literal (s may be empty).
func hexLit(s string) string { return fmt.Sprintf("X'%x'", s) }

func byteLit(b int) string {
	if b < 0 {
		return "''"
	}
	return hexLit(string(rune(b)))
}

// loadClauses renders f as LOAD DATA's CHARACTER SET ... IGNORE n LINES.
func loadClauses(f loadfile.Format) string {
	cs := [...]string{"latin1", "utf8mb3", "utf8mb4"}[f.Charset]
	return fmt.Sprintf("CHARACTER SET %s FIELDS TERMINATED BY %s ENCLOSED BY %s ESCAPED BY %s LINES STARTING BY %s TERMINATED BY %s IGNORE %d LINES",
		cs, hexLit(f.FieldTerm), byteLit(f.Enclosed), byteLit(f.Escaped), hexLit(f.LineStart), hexLit(f.LineTerm), f.Ignore)
}

func randomLoadFormat(r *rand.Rand) loadfile.Format {
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	return loadfile.Format{
		FieldTerm: pick(",", "\t", "ab", ",,", "\"", "||"),
		LineTerm:  pick("\n", "\r\n", "", "nn", ",", "\n\n"),
		LineStart: pick("", "", "x", "xy"),
		Enclosed:  []int{-1, '"', '\''}[r.IntN(3)],
		Escaped:   []int{-1, '\\', '"'}[r.IntN(3)],
		Ignore:    uint64(r.IntN(3)),
		Fields:    1 + r.IntN(3),
		Charset:   loadfile.Charset(r.IntN(3)),
	}
}

func randomLoadData(r *rand.Rand, n int) []byte {
	alphabet := []string{"a", "b", ",", "\t", "\n", "\r", "\"", "'", "\\", "x", "y", "n", "|", "N",
		"\xc3", "\xa9", "\xe2", "\x82", "\xf0", "\x9f", "\x80", "\xff", "é"}
	var b []byte
	for len(b) < n {
		b = append(b, alphabet[r.IntN(len(alphabet))]...)
	}
	return b
}

type seqKeys struct{ next int64 }

func (s *seqKeys) Next() (int64, error) { s.next++; return s.next, nil }

// rowsOf reads the c columns of table in key order.
func rowsOf(t *testing.T, conn *sql.Conn, table string) ([]int64, []string) {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "SELECT id, HEX(c1), HEX(c2), HEX(c3) FROM "+table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	var out []string
	for rows.Next() {
		var id int64
		var c [3]sql.NullString
		if err := rows.Scan(&id, &c[0], &c[1], &c[2]); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		out = append(out, fmt.Sprintf("%v|%v|%v", c[0], c[1], c[2]))
	}
	return ids, out
}

func warningsOf(t *testing.T, conn *sql.Conn) string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "SHOW WARNINGS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var level, msg string
		var code int
		if err := rows.Scan(&level, &code, &msg); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d %s\n", code, msg)
	}
	return b.String()
}

// The line transformer finds records exactly where MariaDB's LOAD DATA
// reader does: random formats and files (separators, enclosures, escapes,
// line prefixes, IGNORE, invalid UTF-8) are loaded as they are into an
// AUTO_INCREMENT table and, transformed, into a table whose key is the
// prepended field. Same rows, same warnings, keys in file order.
func TestLoadDataReaderMatchesMariaDB(t *testing.T) {
	b := newBackend(t)
	db := b.Open(t, "app")
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE ai (id INT AUTO_INCREMENT PRIMARY KEY, c1 VARBINARY(100), c2 VARBINARY(100), c3 VARBINARY(100))")
	exec("CREATE TABLE kt (id BIGINT PRIMARY KEY, c1 VARBINARY(100), c2 VARBINARY(100), c3 VARBINARY(100))")
	seed, cases := uint64(11), 400
	if testing.Short() {
		cases = 100
	}
	// LEAFPROXY_LOADDATA_CASES=n[,seed] runs more (a soak).
	if v := os.Getenv("LEAFPROXY_LOADDATA_CASES"); v != "" {
		n, s, _ := strings.Cut(v, ",")
		cases, _ = strconv.Atoi(n)
		if s != "" {
			seed, _ = strconv.ParseUint(s, 10, 64)
		}
	}
	r := rand.New(rand.NewPCG(seed, 19))
	for done := 0; done < cases; {
		f := randomLoadFormat(r)
		if f.Check() != "" {
			continue
		}
		done++
		data := randomLoadData(r, r.IntN(80))
		cols := []string{"c1", "c2", "c3"}[:f.Fields]
		exec("TRUNCATE ai")
		exec("TRUNCATE kt")
		clauses := loadClauses(f)
		q := fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE ai %s (%s)", registerReader(t, data), clauses, strings.Join(cols, ", "))
		resA, errA := conn.ExecContext(context.Background(), q)
		warnA := warningsOf(t, conn)

		keys := &seqKeys{}
		tr := loadfile.New(f, keys)
		out, err := tr.Transform(nil, data)
		if err == nil {
			out, err = tr.Finish(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		q2 := fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE kt %s (@k, %s) SET id = @k", registerReader(t, out), clauses, strings.Join(cols, ", "))
		resB, errB := conn.ExecContext(context.Background(), q2)
		warnB := warningsOf(t, conn)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("format %s, file %q: direct %v, transformed %v", describeFormat(f), data, errA, errB)
		}
		if errA != nil {
			continue
		}
		idsA, rowsA := rowsOf(t, conn, "ai")
		idsB, rowsB := rowsOf(t, conn, "kt")
		nA, _ := resA.RowsAffected()
		nB, _ := resB.RowsAffected()
		same := nA == nB && int64(len(idsB)) == tr.Rows() && strings.Join(rowsA, "\n") == strings.Join(rowsB, "\n")
		for i, id := range idsB {
			same = same && id == int64(i+1)
		}
		if !same || warnA != warnB {
			t.Fatalf("format %s, file %q, transformed %q:\ndirect %d rows %v\n%s\ntransformed %d rows (%d keys) %v %v\n%s",
				describeFormat(f), data, out, nA, rowsA, warnA, nB, tr.Rows(), idsB, rowsB, warnB)
		}
		_ = idsA
	}
}

func describeFormat(f loadfile.Format) string {
	return fmt.Sprintf("{%s fields %d}", loadClauses(f), f.Fields)
}
