package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// The ID load of the no-duplicates tests (noduplicates_test.go,
// galera_test.go): many connections through several proxies insert
// NEXTVAL into nodup.ids, a table without a unique key, and the
// duplicates are counted in the database. Phases end on counts of
// successful inserts, never on time.

// loadDeadline bounds how long a phase may take to reach its count of
// inserts: far more than it needs, so that only a load that stopped
// making progress fails on it.
const loadDeadline = 2 * time.Minute

// idTable creates nodup.ids on backend (duplicates allowed, so they can be
// counted).
func idTable(t *testing.T, backend *testdb.Server) {
	t.Helper()
	backend.Exec(t, "CREATE DATABASE IF NOT EXISTS nodup",
		"CREATE TABLE IF NOT EXISTS nodup.ids (id BIGINT NOT NULL, p INT NOT NULL, KEY (id))")
}

// countIDs returns the rows stored and how many of them repeat an id.
func countIDs(t *testing.T, backend *testdb.Server) (rows, dups int64) {
	t.Helper()
	db := backend.Open(t, "nodup")
	if err := db.QueryRow("SELECT COUNT(*), COUNT(*) - COUNT(DISTINCT id) FROM ids").Scan(&rows, &dups); err != nil {
		t.Fatal(err)
	}
	return rows, dups
}

// loadResult is what an idLoad did.
type loadResult struct {
	ok, failed atomic.Int64
	start      time.Time
	lastOK     atomic.Int64 // unix ns of the latest success
	gap        atomic.Int64 // longest time between two successes, ns
	mu         sync.Mutex
	errs       map[string]int // error text -> count
}

func (r *loadResult) success() {
	r.ok.Add(1)
	now := time.Now().UnixNano()
	if d := now - r.lastOK.Swap(now); d > r.gap.Load() {
		r.gap.Store(d) // racy max, good enough for a measurement
	}
}

// maxGap is the longest time no statement succeeded.
func (r *loadResult) maxGap() time.Duration {
	return time.Duration(r.gap.Load()).Round(time.Millisecond)
}

func (r *loadResult) fail(err error) {
	r.failed.Add(1)
	msg := err.Error()
	if len(msg) > 160 {
		msg = msg[:160]
	}
	r.mu.Lock()
	if r.errs == nil {
		r.errs = map[string]int{}
	}
	r.errs[msg]++
	r.mu.Unlock()
}

func (r *loadResult) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := fmt.Sprintf("%d inserted, %d failed", r.ok.Load(), r.failed.Load())
	n := 0
	for e, c := range r.errs {
		if n++; n > 5 {
			break
		}
		s += fmt.Sprintf("\n    %dx %s", c, e)
	}
	return s
}

// idLoad runs conns connections spread over the proxies, each inserting
// NEXTVAL(tag) into nodup.ids, until stop is called (at the latest when
// the test ends); stop returns once every connection has stopped. Failed
// statements are counted and the connection goes on (outages are
// expected).
func idLoad(t *testing.T, leaves []*leaf, tag string, conns int) (res *loadResult, stop func()) {
	t.Helper()
	quit := make(chan struct{})
	res = &loadResult{start: time.Now()}
	res.lastOK.Store(res.start.UnixNano())
	var wg sync.WaitGroup
	for c := range conns {
		p := c % len(leaves)
		db := leaves[p].open(t, "nodup", nil)
		db.SetMaxOpenConns(1)
		q := fmt.Sprintf("INSERT INTO ids (id, p) VALUES (NEXTVAL('%s'), %d)", tag, p)
		wg.Go(func() {
			for {
				select {
				case <-quit:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := db.ExecContext(ctx, q)
				cancel()
				if err != nil {
					res.fail(err)
					time.Sleep(5 * time.Millisecond) // back off after a failed insert: the load's pace, not a wait
					continue
				}
				res.success()
			}
		})
	}
	var once sync.Once
	stop = func() { once.Do(func() { close(quit); wg.Wait() }) }
	t.Cleanup(stop)
	return res, stop
}

// runLoad runs idLoad until n inserts succeeded and stops it.
func runLoad(t *testing.T, leaves []*leaf, tag string, conns int, n int64) *loadResult {
	t.Helper()
	res, stop := idLoad(t, leaves, tag, conns)
	defer stop()
	waitInserts(t, res, n)
	return res
}

// waitInserts waits until the load has made n inserts in all, failing
// the test after loadDeadline.
func waitInserts(t *testing.T, res *loadResult, n int64) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("%d inserts", n), func() bool { return res.ok.Load() >= n }, testwait.Within(loadDeadline), loadsDetail(res))
}

// loadsDetail adds the loads' state to a wait's failure.
func loadsDetail(loads ...*loadResult) testwait.Option {
	return testwait.Detail(func() string { return fmt.Sprint(loads) })
}

// assertNoDuplicates counts the stored ids: at least min rows, no repeat.
func assertNoDuplicates(t *testing.T, backend *testdb.Server, min int64) {
	t.Helper()
	rows, dups := countIDs(t, backend)
	t.Logf("nodup.ids: %d rows, %d duplicates", rows, dups)
	if dups != 0 {
		t.Errorf("%d duplicate ids stored (of %d rows); first ones (id: proxies that stored it): %s", dups, rows, firstDuplicates(t, backend))
	}
	if rows < min {
		t.Errorf("only %d rows stored, want at least %d", rows, min)
	}
}

// firstDuplicates lists the lowest ids stored more than once, each with
// the proxies (column p) that stored it: which proxies' ranges overlapped.
func firstDuplicates(t *testing.T, backend *testdb.Server) string {
	t.Helper()
	db := backend.Open(t, "nodup")
	rows, err := db.Query("SELECT id, GROUP_CONCAT(p ORDER BY p) FROM ids GROUP BY id HAVING COUNT(*) > 1 ORDER BY id LIMIT 10")
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id int64
		var proxies string
		if err := rows.Scan(&id, &proxies); err != nil {
			return err.Error()
		}
		out = append(out, fmt.Sprintf("%d: %s", id, proxies))
	}
	return strings.Join(out, ", ")
}
