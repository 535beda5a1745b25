package integration

import (
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/leafproc"
)

// A 1,000,000-row result (~95 MB) streamed through the proxy while the
// proxy's resident set grows by less than 32 MiB. The proxy is the
// leafproxy binary in a child process (internal/testkit/leafproc), so the figure is
// the proxy's alone, not go-sql-driver's reading the rows in this process.
func TestProxyStreamMillionRows(t *testing.T) {
	b := newBackend(t)
	b.Open(t, "app").Close()
	p := leafproc.Start(t, `backend:
  addr: `+b.Addr+`
  user: root
  connect_timeout: 20s
users:
  - name: app
    password: secret
log:
  level: warn
`)
	db := (&leaf{addr: p.Addr}).open(t, "app", nil)
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	m := p.Measure(t)
	start := time.Now()
	rows, err := db.Query("SELECT seq, REPEAT('x', 80) FROM seq_1_to_1000000")
	if err != nil {
		t.Fatal(err)
	}
	var n, sum int64
	var seq int64
	var pad []byte
	for rows.Next() {
		if err := rows.Scan(&seq, &pad); err != nil {
			t.Fatal(err)
		}
		if len(pad) != 80 {
			t.Fatalf("row %d: %d bytes of padding", seq, len(pad))
		}
		n++
		sum += seq
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	elapsed := time.Since(start)
	grew := m.Growth(t)

	if n != 1_000_000 || sum != 1_000_000*1_000_001/2 {
		t.Fatalf("streamed %d rows (sum %d), want 1000000", n, sum)
	}
	t.Logf("1,000,000 rows through the proxy in %v; the proxy's peak RSS growth %.1f MiB over %.1f MiB",
		elapsed.Round(time.Millisecond), float64(grew)/(1<<20), float64(m.Base)/(1<<20))
	if grew > 32<<20 {
		t.Fatalf("the proxy's RSS grew %.1f MiB, bound 32 MiB", float64(grew)/(1<<20))
	}
}
