package integration

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// The store moving back (a failover to a stale async replica, a restored
// backup) under the NEXTVAL load of several proxies: what the proxies
// protect is in the README's "Guarantees". TestNextvalStoreMovedBack is in
// noduplicates_test.go.

// movedBackEnv is proxies sharing tag t in a store whose max_id the test
// moves back by hand.
type movedBackEnv struct {
	t      *testing.T
	store  *sql.DB // leafstore on the store server
	leaves []*leaf
}

// movedBackConfig is a proxy of the move-back tests: tag t, table step 100
// (dynamic step from there), the default repair margin.
func movedBackConfig(t *testing.T, backend, store *testdb.Server, metrics bool) *config.Config {
	cfg := leafConfig(t, backend, store)
	cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 100}}
	if metrics {
		cfg.Metrics.Listen = "127.0.0.1:0"
	}
	return cfg
}

func (e *movedBackEnv) maxID() int64 {
	e.t.Helper()
	var v int64
	if err := e.store.QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = 't'").Scan(&v); err != nil {
		e.t.Fatal(err)
	}
	return v
}

// moveBack sets max_id at least by below its value and below every
// proxy's high-water mark (a replica that lags behind the last fetch of
// each of them), keeping it positive (Leaf's start is 1). It sets a value
// rather than subtracting: a fetch between the read and the UPDATE must
// not lift the stale value above a mark (marks only grow, so the value
// stays below all of them).
func (e *movedBackEnv) moveBack(what string, by int64) {
	e.t.Helper()
	before := e.maxID()
	stale := before - by
	for _, lf := range e.leaves {
		st, _ := lf.svc.Sequences.Segments().Stats("t")
		stale = min(stale, st.HighWater-1)
	}
	stale = max(stale, 1)
	if _, err := e.store.Exec("UPDATE leaf_alloc SET max_id = ? WHERE biz_tag = 't'", stale); err != nil {
		e.t.Fatal(err)
	}
	e.t.Logf("%s: max_id %d moved back to %d", what, before, stale)
}

// knowAbove: every proxy knows v was reached: its high-water mark or its
// last read-back of max_id is at or above v.
func (e *movedBackEnv) knowAbove(v int64) bool {
	for _, lf := range e.leaves {
		if st, _ := lf.svc.Sequences.Segments().Stats("t"); max(st.HighWater, st.Seen) < v {
			return false
		}
	}
	return true
}

// repaired: the store's max_id is at or above every proxy's high-water
// mark, as the proxies' repair leaves it after a move back.
func (e *movedBackEnv) repaired() bool {
	top := e.maxID()
	for _, lf := range e.leaves {
		if st, _ := lf.svc.Sequences.Segments().Stats("t"); st.HighWater > top {
			return false
		}
	}
	return true
}

// repairs is how many times the proxies repaired the store, in all.
func (e *movedBackEnv) repairs() (n uint64) {
	for _, lf := range e.leaves {
		st, _ := lf.svc.Sequences.Segments().Stats("t")
		n += st.Repairs
	}
	return n
}

// logMarks logs each proxy's high-water mark and counters and max_id.
func (e *movedBackEnv) logMarks() {
	e.t.Helper()
	for i, lf := range e.leaves {
		st, _ := lf.svc.Sequences.Segments().Stats("t")
		e.t.Logf("proxy %d: high-water %d, %d fetches, %d refused, %d repairs", i, st.HighWater, st.Fetches, st.Refused, st.Repairs)
	}
	e.t.Logf("max_id %d at the end", e.maxID())
}

// TestNextvalStoreMovedBackJustBelow: four proxies, 32 connections, the
// store moved back early (after 1,000 inserts, segments of a few hundred
// IDs) to just below the lowest high-water mark, three times. Every
// proxy's next fetch then finds max_id below its own mark. It used to give
// hundreds of duplicates in most runs (401, 579): a proxy's refused fetch
// still advanced max_id, by a step, into ranges the others had handed
// out, and a proxy with a lower mark accepted the next range before the
// repair landed. A fetch below the caller's mark now takes nothing: every
// proxy refuses and repairs, none serves a re-issued ID.
//
// Each move waits until the previous one is repaired and every proxy knows
// the repaired max_id (fetched above it or read it back): a proxy that
// knows nothing of a repair repairs a later move only to its own older
// mark plus the margin, which the earlier repair's jump already exceeds
// (README, Guarantees: more than the margin allocated unseen).
func TestNextvalStoreMovedBackJustBelow(t *testing.T) {
	t.Parallel() // waits more than it works; own servers or own tables
	backend := testdb.Start(t)
	store := testdb.Start(t)
	idTable(t, backend)
	e := &movedBackEnv{t: t}
	for range 4 {
		e.leaves = append(e.leaves, startLeaf(t, movedBackConfig(t, backend, store, false)))
	}
	e.store = store.Open(t, "leafstore")

	res, stop := idLoad(t, e.leaves, "t", 32)
	waitInserts(t, res, 1000)
	for round := range 3 {
		before := e.repairs()
		e.moveBack(fmt.Sprintf("round %d", round), 1)
		testwait.For(t, "repair of max_id past every proxy's high-water mark", func() bool {
			return e.repairs() > before && e.repaired()
		}, testwait.Within(loadDeadline), loadsDetail(res))
		top := e.maxID()
		testwait.For(t, "every proxy's fetch or read-back of the repaired max_id", func() bool { return e.knowAbove(top) }, testwait.Within(loadDeadline), loadsDetail(res))
		waitInserts(t, res, res.ok.Load()+1000)
	}
	stop()
	t.Logf("load: %v", res)
	if res.failed.Load() != 0 {
		t.Errorf("failed inserts: %v", res)
	}
	e.logMarks()
	assertNoDuplicates(t, backend, 4000)
}
