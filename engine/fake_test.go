package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/raw"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/proxy/wire"
	"github.com/leafproxy/leafproxy/rewriter"
)

// fakeSession is a Session without a proxy or a backend: it records what
// the engine relays and answers, and serves information_schema lookups
// from columns (table -> column name -> DATA_TYPE).
type fakeSession struct {
	value    any
	db       string
	columns  map[string][][2]string
	relayed  []string
	wrote    [][][]*int64
	typed    [][][]wire.Value // WriteRows / WriteBinaryRows
	cols     [][]wire.Column
	prepared []string // texts prepared on the backend (statement id = index+1)
	backend  []string
	answers  int // WriteOK, WriteError and RelayExecute calls
	// The event loop's rules (loopfake_test.go): set by onLoop.
	loop *loopCheck
}

var (
	_ Session               = (*fakeSession)(nil)
	_ proxy.BlockingSession = (*fakeSession)(nil)
)

func (f *fakeSession) Value() any          { return f.value }
func (f *fakeSession) SetValue(v any)      { f.value = v }
func (f *fakeSession) Admin() bool         { return false }
func (f *fakeSession) CommandStart() int64 { return time.Now().UnixNano() }
func (f *fakeSession) CurrentDB(ctx context.Context) (string, error) {
	if err := f.loop.reread(ctx, "CurrentDB"); err != nil {
		return "", err
	}
	return f.db, nil
}
func (f *fakeSession) SQLMode(ctx context.Context) (string, error) {
	if err := f.loop.reread(ctx, "SQLMode"); err != nil {
		return "", err
	}
	return "STRICT_TRANS_TABLES", nil
}
func (f *fakeSession) Blocking(ctx context.Context) (proxy.BlockingSession, error) {
	if err := f.loop.refuse(ctx); err != nil {
		return nil, err
	}
	return f, nil
}
func (f *fakeSession) RelayQuery(sql []byte) error {
	f.relayed = append(f.relayed, string(sql))
	return nil
}
func (f *fakeSession) RelayQueryRetry(sql []byte, _ func(uint16, string) bool) (bool, error) {
	f.loop.waited("RelayQueryRetry")
	return false, f.RelayQuery(sql)
}
func (f *fakeSession) RelayQueryOr(sql []byte, _ proxy.AnswerWatcher) error { return f.RelayQuery(sql) }
func (f *fakeSession) RelayQueryPacket(pkt []byte) error                    { return f.RelayQuery(pkt[1:]) }
func (f *fakeSession) RelayQueryPacketOr(pkt []byte, _ proxy.AnswerWatcher) error {
	return f.RelayQuery(pkt[1:])
}
func (f *fakeSession) RelayQueryWriter(n int, src io.WriterTo) error {
	f.loop.waited("RelayQueryWriter")
	var b bytes.Buffer
	if _, err := src.WriteTo(&b); err != nil {
		return err
	}
	if b.Len() != n {
		return fmt.Errorf("RelayQueryWriter: %d bytes written, %d announced", b.Len(), n)
	}
	return f.RelayQuery(b.Bytes())
}
func (f *fakeSession) BackendExec(_ context.Context, sql string) (uint64, uint64, error) {
	f.loop.waited("BackendExec")
	f.backend = append(f.backend, sql)
	return 0, 0, nil
}
func (f *fakeSession) RelayExecute([]byte) error {
	f.answers++
	return nil
}
func (f *fakeSession) RelayExecuteOr(pkt []byte, _ proxy.AnswerWatcher) error {
	return f.RelayExecute(pkt)
}
func (f *fakeSession) RelayQueryInsertID(sql []byte, _ uint64) error {
	f.loop.waited("RelayQueryInsertID")
	return f.RelayQuery(sql)
}
func (f *fakeSession) RelayExecuteInsertID(pkt []byte, _ uint64) error {
	f.loop.waited("RelayExecuteInsertID")
	return f.RelayExecute(pkt)
}
func (f *fakeSession) RelayQueryInsertIDs(pkt []byte, _ []uint64) error {
	f.loop.waited("RelayQueryInsertIDs")
	return f.RelayQuery(pkt[1:])
}
func (f *fakeSession) BackendPrepare(context.Context, string) (proxy.PrepareResult, error) {
	f.loop.waited("BackendPrepare")
	return proxy.PrepareResult{}, nil
}
func (f *fakeSession) BackendCloseStmt(uint32) error {
	f.loop.waited("BackendCloseStmt")
	return nil
}
func (f *fakeSession) RelayExecuteRetry([]byte, func(uint16, string) bool) (bool, error) {
	f.loop.waited("RelayExecuteRetry")
	return false, nil
}
func (f *fakeSession) RelayQueryInfile(sql []byte, t proxy.InfileTransformer) (uint64, bool, error) {
	f.loop.waited("RelayQueryInfile")
	f.relayed = append(f.relayed, string(sql))
	return 1, true, nil
}
func (f *fakeSession) WriteOK(uint64, uint64, uint16) error {
	f.answers++
	return nil
}
func (f *fakeSession) WriteError(uint16, string, string) error {
	f.answers++
	return nil
}
func (f *fakeSession) ExecuteResult([]byte) (proxy.ExecResult, error) {
	f.loop.waited("ExecuteResult")
	return proxy.ExecResult{}, nil
}
func (f *fakeSession) RelayPrepare(sql []byte) (proxy.PrepareResult, error) {
	f.loop.waited("RelayPrepare")
	f.prepared = append(f.prepared, string(sql))
	return proxy.PrepareResult{OK: true, StmtID: uint32(len(f.prepared))}, nil
}
func (f *fakeSession) RelayPrepareHidden([]byte, []int, int) (proxy.PrepareResult, error) {
	f.loop.waited("RelayPrepareHidden")
	f.prepared = append(f.prepared, "hidden")
	return proxy.PrepareResult{OK: true, StmtID: uint32(len(f.prepared))}, nil
}
func (f *fakeSession) WriteResultSet(_ []string, rows [][]*int64) error {
	f.wrote = append(f.wrote, rows)
	return nil
}
func (f *fakeSession) WriteBinaryResultSet(cols []string, rows [][]*int64) error {
	return f.WriteResultSet(cols, rows)
}
func (f *fakeSession) WriteRows(cols []wire.Column, rows [][]wire.Value) error {
	var copied [][]wire.Value
	for _, r := range rows {
		copied = append(copied, append([]wire.Value(nil), r...))
	}
	f.typed = append(f.typed, copied)
	f.cols = append(f.cols, cols)
	return nil
}
func (f *fakeSession) WriteBinaryRows(cols []wire.Column, rows [][]wire.Value) error {
	return f.WriteRows(cols, rows)
}
func (f *fakeSession) BackendQuery(_ context.Context, sql string) ([][]*string, error) {
	f.loop.waited("BackendQuery")
	f.backend = append(f.backend, sql)
	var rows [][]*string
	for table, cols := range f.columns {
		if !strings.Contains(sql, "TABLE_NAME = '"+table+"'") {
			continue
		}
		for _, c := range cols {
			name, typ, empty := c[0], c[1], ""
			rows = append(rows, []*string{&name, &typ, &typ, &empty, &empty, &empty})
		}
	}
	return rows, nil
}

// counter is an IDSource handing out 1001, 1002, ... from segment tags.
type counter struct{ next int64 }

func (c *counter) NextN(_ context.Context, _ string, n int, dst []int64) ([]int64, error) {
	for range n {
		c.next++
		dst = append(dst, c.next)
	}
	return dst, nil
}
func (c *counter) Generator(string) string { return "segment" }

func fakeEngine(t *testing.T) *Engine {
	t.Helper()
	rules, err := rewriter.NewRules([]rewriter.Rule{{Table: "orders", Column: "id", Tag: "order"}})
	if err != nil {
		t.Fatal(err)
	}
	return New(&counter{next: 1000}, rules)
}

// TestQueryThroughFakeSession drives the engine's COM_QUERY path with no
// proxy: a filled INSERT is relayed with the ID spliced in, NEXTVAL is
// answered from the ID source, other text is left to the proxy, and the
// key column's type is checked once per table.
func TestQueryThroughFakeSession(t *testing.T) {
	e := fakeEngine(t)
	s := &fakeSession{db: "shop", columns: map[string][][2]string{"orders": {{"id", "bigint"}, {"item", "varchar"}}}}
	ctx := context.Background()

	handled, err := e.queryText(ctx, s, []byte("INSERT INTO orders (item) VALUES ('book')"))
	if err != nil || !handled {
		t.Fatalf("INSERT: handled=%v err=%v", handled, err)
	}
	if want := "INSERT INTO orders (`id`, item) VALUES (1001, 'book')"; len(s.relayed) != 1 || s.relayed[0] != want {
		t.Fatalf("relayed %q, want %q", s.relayed, want)
	}
	if len(s.backend) != 1 {
		t.Errorf("backend queries %q: want one column lookup", s.backend)
	}

	if handled, err = e.queryText(ctx, s, []byte("SELECT NEXTVAL('order')")); err != nil || !handled {
		t.Fatalf("NEXTVAL: handled=%v err=%v", handled, err)
	}
	if len(s.wrote) != 1 || len(s.wrote[0]) != 1 || *s.wrote[0][0][0] != 1002 {
		t.Fatalf("NEXTVAL answered %v", s.wrote)
	}

	if handled, err = e.queryText(ctx, s, []byte("SELECT 1")); err != nil || handled {
		t.Fatalf("SELECT 1: handled=%v err=%v, want it left to the proxy", handled, err)
	}

	// DDL after a comment drops the column cache.
	if handled, err = e.queryText(ctx, s, []byte("-- c\nALTER TABLE orders ADD note TEXT")); err != nil || !handled {
		t.Fatalf("ALTER: handled=%v err=%v", handled, err)
	}
	if _, err = e.queryText(ctx, s, []byte("INSERT INTO orders (item) VALUES ('pen')")); err != nil {
		t.Fatal(err)
	}
	if len(s.backend) != 2 {
		t.Errorf("backend queries %q: want the columns read again after the ALTER", s.backend)
	}

	s.columns["orders"][0][1] = "varchar"
	e.columns.invalidate()
	if _, err = e.queryText(ctx, s, []byte("INSERT INTO orders (item) VALUES ('cup')")); err == nil || !strings.Contains(err.Error(), "cannot fill shop.orders.id") {
		t.Errorf("INSERT into a VARCHAR key: %v", err)
	}
}

// keeper is an IDSource that keeps every tag it is given, as an allocator
// that remembers tags would.
type keeper struct {
	counter
	tags []string
}

func (k *keeper) NextN(ctx context.Context, tag string, n int, dst []int64) ([]int64, error) {
	k.tags = append(k.tags, tag)
	return k.counter.NextN(ctx, tag, n, dst)
}

// TestTagsCrossTheBoundaryOwned: the engine reads the client's packet
// through raw.String (no copy) and the proxy reuses that buffer for the next
// command; a tag handed to the ID source (or kept for LASTVAL) must not
// change when the buffer does.
func TestTagsCrossTheBoundaryOwned(t *testing.T) {
	ids := &keeper{counter: counter{next: 1000}}
	e := New(ids, nil)
	s := &fakeSession{db: "shop"}
	ctx := context.Background()
	buf := []byte("SELECT NEXTVAL('order')")
	if _, err := e.queryText(ctx, s, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "SELECT NEXTVAL('xxxxx')") // the next command overwrites the buffer
	if len(ids.tags) != 1 || ids.tags[0] != "order" {
		t.Fatalf("the ID source was given %q, which changed with the packet buffer", ids.tags)
	}
	for k := range s.Value().(*state).last {
		if k != "order" {
			t.Fatalf("LASTVAL key %q changed with the packet buffer", k)
		}
	}
	// A name the session used before is not copied again.
	st := s.Value().(*state)
	first := st.own("order")
	if again := st.own(string([]byte("order"))); !raw.SameMemory(again, first) {
		t.Error("own copied a tag name the session already owns")
	}
}
