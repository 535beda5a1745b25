package engine

import (
	"context"
	"fmt"
	"testing"
)

// The engine counts statements by kind, the IDs drawn per tag and the
// NEXTVAL answers' times, per session; Stats adds up live and ended
// sessions, and counting adds no allocation to a NEXTVAL or a filled
// INSERT.
func TestStatsCount(t *testing.T) {
	e := fakeEngine(t)
	ctx := context.Background()
	cols := map[string][][2]string{"orders": {{"id", "bigint"}, {"item", "varchar"}}}
	a := &discardSession{fakeSession{db: "shop", columns: cols}}
	b := &discardSession{fakeSession{db: "shop", columns: cols}}
	run := func(s *discardSession, q string) {
		t.Helper()
		s.wrote = s.wrote[:0]
		if handled, err := e.queryText(ctx, s, []byte(q)); err != nil || !handled {
			t.Fatalf("%s: handled=%v err=%v", q, handled, err)
		}
	}
	run(a, "INSERT INTO orders (item) VALUES ('a'), ('b'), ('c')") // 3 IDs of order
	run(a, "SELECT NEXTVAL('order')")
	run(a, "SELECT NEXTVAL('other'), NEXTVAL('other')")
	run(b, "SELECT NEXTVAL('order')")
	run(b, "SELECT LASTVAL('order')")

	st := e.Stats()
	want := [StmtKinds]uint64{StmtNextval: 4, StmtFilled: 1}
	if st.Statements != want {
		t.Errorf("statements %v, want %v", st.Statements, want)
	}
	if st.IDs["order"] != 5 || st.IDs["other"] != 2 || len(st.IDs) != 2 {
		t.Errorf("IDs %v, want order 5, other 2", st.IDs)
	}
	if n := st.Nextval.Count(); n != 4 {
		t.Errorf("%d NEXTVAL times, want 4", n)
	}

	// A session that ends leaves its counts in the totals.
	e.sessionClosed(a)
	e.sessionClosed(b)
	if after := e.Stats(); after.Statements != st.Statements || fmt.Sprint(after.IDs) != fmt.Sprint(st.IDs) || after.Nextval.Count() != 4 {
		t.Errorf("after the sessions ended: %+v, want %+v", after, st)
	}
	if len(e.stats.counting) != 0 {
		t.Errorf("%d sessions still registered", len(e.stats.counting))
	}

	// Counting costs no allocation on the hot paths.
	c := &discardSession{fakeSession{db: "shop", columns: cols}}
	run(c, "INSERT INTO orders (item) VALUES ('x')")
	run(c, "SELECT NEXTVAL('order')")
	for _, q := range []string{"INSERT INTO orders (item) VALUES ('x')", "SELECT NEXTVAL('order')"} {
		sql := []byte(q)
		if n := testing.AllocsPerRun(200, func() {
			c.wrote = c.wrote[:0]
			if _, err := e.queryText(ctx, c, sql); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per statement", q, n)
		}
	}
}

// A session that uses more distinct tags than it keeps names for does not
// lose their counts when its table starts over.
func TestStatsOwnedTableStartsOver(t *testing.T) {
	e := New(&counter{next: 1000}, nil)
	s := &discardSession{fakeSession{db: "shop"}}
	ctx := context.Background()
	for i := range maxOwnedTags + 10 {
		s.wrote = s.wrote[:0]
		if _, err := e.queryText(ctx, s, fmt.Appendf(nil, "SELECT NEXTVAL('t%d')", i)); err != nil {
			t.Fatal(err)
		}
	}
	st := e.Stats()
	var total uint64
	for _, n := range st.IDs {
		total += n
	}
	if total != maxOwnedTags+10 || len(st.IDs) != maxOwnedTags+10 {
		t.Fatalf("%d IDs over %d tags, want %d over as many", total, len(st.IDs), maxOwnedTags+10)
	}
}

func TestStatsOff(t *testing.T) {
	e := fakeEngine(t)
	e.DisableStats()
	s := &discardSession{fakeSession{db: "shop"}}
	if _, err := e.queryText(context.Background(), s, []byte("SELECT NEXTVAL('order')")); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Statements != [StmtKinds]uint64{} || len(st.IDs) != 0 || st.Nextval.Count() != 0 {
		t.Fatalf("counted with stats off: %+v", st)
	}
}
