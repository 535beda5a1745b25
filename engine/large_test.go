package engine

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// A many-row INSERT planned Large (rows as offsets) is written in pieces
// (RelayQueryWriter) with the IDs a smaller one gets: one batch, in row
// order, the first row's in LAST_INSERT_ID(...), LASTVAL the last. On an
// event loop it is handed back before any ID is drawn.
func TestLargeInsertWrittenInPieces(t *testing.T) {
	rules, err := rewriter.NewRules([]rewriter.Rule{{Table: "orders", Column: "id", Tag: "order"}})
	if err != nil {
		t.Fatal(err)
	}
	src := &counter{next: 1000}
	e := New(src, rules)
	s := &fakeSession{db: "shop", columns: map[string][][2]string{"orders": {{"id", "bigint"}, {"v", "varchar"}}}}
	const rows = 50_000
	sql := "INSERT INTO orders (v) VALUES ('x')" + strings.Repeat(", ('x')", rows-1)
	if len(sql) <= rewriter.LargeRows {
		t.Fatalf("%d bytes: not Large", len(sql))
	}
	// The columns cached (as after an earlier statement), so that the loop
	// hands it back for being Large, not for a column read.
	if _, err := e.columns.get(context.Background(), s, "shop", "orders"); err != nil {
		t.Fatal(err)
	}
	s.backend = nil
	handled, err := onLoop(t, s, nil, false, func(ctx context.Context) (bool, error) { return e.queryText(ctx, s, []byte(sql)) })
	if !errors.Is(err, proxy.ErrWouldBlock) || handled || src.next != 1000 || len(s.relayed) != 0 {
		t.Fatalf("on a loop: handled=%v err=%v, %d IDs drawn, %d relayed", handled, err, src.next-1000, len(s.relayed))
	}
	if handled, err := e.queryText(context.Background(), s, []byte(sql)); !handled || err != nil {
		t.Fatalf("handled=%v err=%v", handled, err)
	}
	if len(s.relayed) != 1 {
		t.Fatalf("%d statements relayed", len(s.relayed))
	}
	got := s.relayed[0]
	if !strings.HasPrefix(got, "INSERT INTO orders (`id`, v) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'x'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, 'x')") {
		t.Fatalf("relayed %.100q", got)
	}
	ids := regexp.MustCompile(`\((?:LAST_INSERT_ID\(0\*\(@__leaf_l:=LAST_INSERT_ID\(\)\)\+|0\*\(@__leaf_m:=LAST_INSERT_ID\(\)\)\+)?(\d+)\)?, 'x'\)`).FindAllStringSubmatch(got, -1)
	if len(ids) != rows {
		t.Fatalf("%d IDs in the text, want %d", len(ids), rows)
	}
	for i, m := range ids {
		if v, _ := strconv.ParseInt(m[1], 10, 64); v != int64(1001+i) {
			t.Fatalf("row %d: ID %d, want %d", i, v, 1001+i)
		}
	}
	st := s.Value().(*state)
	if v := st.last["order"]; v == nil || *v != 1000+rows {
		t.Fatalf("LASTVAL %v, want %d", v, 1000+rows)
	}
	if st.slotIDs != nil {
		t.Fatal("the drawn batch is still the session's slot IDs")
	}
	// The next statement draws into fresh memory.
	if handled, err := e.queryText(context.Background(), s, []byte("INSERT INTO orders (v) VALUES ('a'), ('b')")); !handled || err != nil {
		t.Fatalf("handled=%v err=%v", handled, err)
	}
	if want := "INSERT INTO orders (`id`, v) VALUES ((@__leaf_k:=51001), 'a'), (IF((@__leaf_m:=@__leaf_k)<=>0.5,NULL,51002), 'b')"; s.relayed[1] != want {
		t.Fatalf("relayed %q, want %q", s.relayed[1], want)
	}
}

// A Large plan has no slots for the 1062 retry to copy: it is never armed,
// because a text the retry takes is never Large.
func TestLargeNeverRetried(t *testing.T) {
	if rewriter.LargeRows < maxRetryText {
		t.Fatalf("rewriter.LargeRows %d < maxRetryText %d: a Large plan could be armed for a retry", rewriter.LargeRows, maxRetryText)
	}
}
