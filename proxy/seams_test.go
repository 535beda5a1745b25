package proxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// testInterceptor exercises every seam the way the ID-filling code will.
type testInterceptor struct {
	BaseInterceptor
	mu       sync.Mutex
	next     int64
	seen     map[string]string // observation -> value
	closed   int
	stmtGone []uint32
}

type stmtKinds map[uint32]string // per-session state kept in Session.Value

func (ti *testInterceptor) note(k, v string) {
	ti.mu.Lock()
	ti.seen[k] = v
	ti.mu.Unlock()
}

func (ti *testInterceptor) get(k string) string {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	return ti.seen[k]
}

func (ti *testInterceptor) Query(ctx context.Context, s *Session, sql []byte) (bool, error) {
	switch string(sql) {
	case "SELECT NEXTVAL('t')":
		ti.mu.Lock()
		ti.next++
		v := ti.next
		ti.mu.Unlock()
		return true, s.WriteResultSet([]string{"nextval('t')"}, [][]*int64{{&v}})
	case "SELECT 'rewrite me'":
		return true, s.RelayQuery([]byte("SELECT 'rewritten'"))
	case "SELECT 'fail'":
		return false, &gomysql.MyError{Code: 4091, State: "42S02", Message: "Unknown SEQUENCE: 'x'"}
	case "SELECT 'plain error'":
		return false, errors.New("something broke")
	case "SELECT 'observe'":
		mode, err := s.SQLMode(ctx)
		if err != nil {
			return false, err
		}
		ti.note("db", s.DB())
		ti.note("mode", mode)
		ti.note("intx", strconv.FormatBool(s.InTransaction()))
		rows, err := s.blocking().BackendQuery(ctx, "SELECT 40 + 2, NULL")
		if err != nil {
			return false, err
		}
		if len(rows) != 1 || rows[0][0] == nil || rows[0][1] != nil {
			return false, fmt.Errorf("BackendQuery rows %v", rows)
		}
		n, _ := strconv.ParseInt(*rows[0][0], 10, 64)
		if _, _, err := s.blocking().BackendExec(ctx, "SET @seen = 1"); err != nil {
			return false, err
		}
		if _, _, err := s.blocking().BackendExec(ctx, "SELECT * FROM no_such_table"); err == nil {
			return false, errors.New("BackendExec hid an error")
		}
		return true, s.WriteResultSet([]string{"n", "nothing"}, [][]*int64{{&n, nil}})
	}
	return false, nil
}

func (ti *testInterceptor) Prepare(ctx context.Context, s *Session, sql []byte) (bool, error) {
	kinds, _ := s.Value().(stmtKinds)
	if kinds == nil {
		kinds = stmtKinds{}
		s.SetValue(kinds)
	}
	switch string(sql) {
	case "SELECT NEXTVAL('b')":
		pr, err := s.blocking().RelayPrepare([]byte("SELECT CAST(0 AS SIGNED) AS v"))
		if err == nil && pr.OK {
			kinds[pr.StmtID] = "answer"
		}
		return true, err
	case "SELECT LAST_INSERT_ID(@__leaf_0) AS id, ?":
		pr, err := s.blocking().RelayPrepare(sql)
		if err == nil && pr.OK {
			if pr.Params != 1 || pr.Columns != 2 {
				return true, fmt.Errorf("prepare result %+v", pr)
			}
			kinds[pr.StmtID] = "pipeline"
		}
		return true, err
	}
	return false, nil
}

func (ti *testInterceptor) Execute(ctx context.Context, s *Session, id uint32, pkt []byte) (bool, error) {
	kinds, _ := s.Value().(stmtKinds)
	switch kinds[id] {
	case "answer":
		v := int64(77)
		return true, s.WriteBinaryResultSet([]string{"v"}, [][]*int64{{&v}})
	case "pipeline":
		ti.mu.Lock()
		ti.next++
		v := 1000 + ti.next
		ti.mu.Unlock()
		return true, s.RelayExecuteAfter(fmt.Appendf(nil, "SET @__leaf_0 = %d", v), pkt)
	}
	return false, nil
}

func (ti *testInterceptor) StmtClosed(s *Session, id uint32) {
	ti.mu.Lock()
	ti.stmtGone = append(ti.stmtGone, id)
	ti.mu.Unlock()
}

func (ti *testInterceptor) SessionClosed(s *Session) {
	ti.mu.Lock()
	ti.closed++
	ti.mu.Unlock()
}

func TestInterceptorSeams(t *testing.T) {
	ensureDB(t, sharedDB(t), "seams")
	ensureDB(t, sharedDB(t), "seams2")
	ti := &testInterceptor{seen: map[string]string{}}
	e := startProxy(t, sharedDB(t).Addr, nil, WithInterceptor(ti))
	db := e.open(t, "seams", "")
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}

	for want := int64(1); want <= 2; want++ {
		var got int64
		if err := conn.QueryRowContext(ctx, "SELECT NEXTVAL('t')").Scan(&got); err != nil || got != want {
			t.Fatalf("answered NEXTVAL = %d (%v), want %d", got, err, want)
		}
	}
	var s string
	if err := conn.QueryRowContext(ctx, "SELECT 'rewrite me'").Scan(&s); err != nil || s != "rewritten" {
		t.Fatalf("rewritten query returned %q (%v)", s, err)
	}
	var me *mysql.MySQLError
	if err := conn.QueryRowContext(ctx, "SELECT 'fail'").Scan(&s); !errors.As(err, &me) || me.Number != 4091 || string(me.SQLState[:]) != "42S02" {
		t.Fatalf("interceptor error: %v, want 4091/42S02", err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT 'plain error'").Scan(&s); !errors.As(err, &me) || me.Number != 1105 {
		t.Fatalf("plain interceptor error: %v, want 1105", err)
	}

	// Session state the interceptor sees.
	if _, err := conn.ExecContext(ctx, "USE seams2"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SET sql_mode = 'ANSI_QUOTES,NO_AUTO_VALUE_ON_ZERO'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var n int64
	var null *int64
	if err := conn.QueryRowContext(ctx, "SELECT 'observe'").Scan(&n, &null); err != nil || n != 42 || null != nil {
		t.Fatalf("BackendQuery answer %d %v (%v)", n, null, err)
	}
	if got := ti.get("db"); got != "seams2" {
		t.Fatalf("DB() = %q after USE, want seams2", got)
	}
	if got := ti.get("mode"); got != "ANSI_QUOTES,NO_AUTO_VALUE_ON_ZERO" {
		t.Fatalf("SQLMode() = %q", got)
	}
	if got := ti.get("intx"); got != "true" {
		t.Fatalf("InTransaction() = %s after BEGIN", got)
	}
	var seen int
	if err := conn.QueryRowContext(ctx, "SELECT @seen").Scan(&seen); err != nil || seen != 1 {
		t.Fatalf("BackendExec's SET not on the pinned connection: %d %v", seen, err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}

	// Prepared: answered by the proxy in the binary protocol.
	st, err := conn.PrepareContext(ctx, "SELECT NEXTVAL('b')")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		var v int64
		if err := st.QueryRowContext(ctx).Scan(&v); err != nil || v != 77 {
			t.Fatalf("binary answer %d (%v)", v, err)
		}
	}
	st.Close()
	// Prepared: SET pipelined before each execute, LAST_INSERT_ID follows.
	st, err = conn.PrepareContext(ctx, "SELECT LAST_INSERT_ID(@__leaf_0) AS id, ?")
	if err != nil {
		t.Fatal(err)
	}
	var prev int64
	for i := 0; i < 3; i++ {
		var id, echo int64
		if err := st.QueryRowContext(ctx, i).Scan(&id, &echo); err != nil {
			t.Fatal(err)
		}
		if id <= 1000 || id == prev || echo != int64(i) {
			t.Fatalf("execute %d: id %d (previous %d), echo %d", i, id, prev, echo)
		}
		prev = id
		var last int64
		if err := conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil || last != id {
			t.Fatalf("LAST_INSERT_ID() = %d, want %d (%v)", last, id, err)
		}
	}
	st.Close()
	conn.Close()
	db.Close()
	_ = e.stop()
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if len(ti.stmtGone) < 1 {
		t.Fatalf("StmtClosed called %d times (%v), want at least 1", len(ti.stmtGone), ti.stmtGone)
	}
	if ti.closed < 1 {
		t.Fatal("SessionClosed not called")
	}
}
