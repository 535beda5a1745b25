package proxy

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// classCounter records, at each Query and Prepare, how many times the
// session classified a text since the last call, and relays the text
// itself (as an interceptor that leaves it unchanged does), which must not
// classify it again.
type classCounter struct {
	BaseInterceptor
	mu     sync.Mutex
	last   map[*Session]int
	bad    []string
	handed []int // for "SELECT 'handed'": the classifications before each Query call
}

func (cc *classCounter) check(s *Session, sql []byte) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	n := s.classified - cc.last[s]
	if string(sql) == "SELECT 'handed'" {
		cc.handed = append(cc.handed, n)
	} else if n != 1 {
		cc.bad = append(cc.bad, fmt.Sprintf("%q classified %d times before the interceptor", sql, n))
	}
	if s.Class() != sqltext.Classify(sql) {
		cc.bad = append(cc.bad, fmt.Sprintf("%q: Session.Class is not the text's", sql))
	}
	cc.last[s] = s.classified
}

func (cc *classCounter) Query(ctx context.Context, s *Session, sql []byte) (bool, error) {
	cc.check(s, sql)
	if string(sql) == "SELECT 'handed'" && MustNotBlock(ctx) {
		return false, ErrWouldBlock // run again on the session's goroutine
	}
	err := s.RelayQuery(sql) // the command's own text: its class is reused
	cc.mu.Lock()
	if s.classified != cc.last[s] {
		cc.bad = append(cc.bad, fmt.Sprintf("%q classified again when relayed unchanged", sql))
		cc.last[s] = s.classified
	}
	cc.mu.Unlock()
	return true, err
}

func (cc *classCounter) Prepare(_ context.Context, s *Session, sql []byte) (bool, error) {
	cc.check(s, sql)
	return false, nil
}

// TestClassifiedOncePerCommand: each COM_QUERY and COM_STMT_PREPARE is
// classified once (issue 31), before KILL's reading and the interceptor,
// and the relay's USE/SET tracking reuses that class, on a session's
// goroutine and on an event loop; a command the loop hands back to the
// goroutine keeps the class the loop read.
func TestClassifiedOncePerCommand(t *testing.T) {
	needsMariaDB(t, "statements go-mysql-server does not parse (DO, ...)")
	for _, loops := range []int{-1, 1} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			ensureDB(t, sharedDB(t), "classify")
			cc := &classCounter{last: map[*Session]int{}}
			e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) { c.EventLoops = loops }, WithInterceptor(cc))
			db := e.open(t, "classify", "")
			ctx := context.Background()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range []string{"SELECT 1", "SET sql_mode = ''", "USE classify", "/*!40101 SET @a = 1 */", "SELECT 'a;b'", "DO 1", "SELECT 'handed'", "SELECT 2"} {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			stmt, err := conn.PrepareContext(ctx, "SELECT ?")
			if err != nil {
				t.Fatal(err)
			}
			stmt.Close()
			cc.mu.Lock()
			defer cc.mu.Unlock()
			for _, b := range cc.bad {
				t.Error(b)
			}
			want := []int{1}          // on the goroutine: one call
			if loops > 0 && loopsOn { // LEAFPROXY_LOOP=0 turns the loops off whatever the config says
				want = []int{1, 0} // on the loop, then again on the goroutine without a second pass
			}
			if fmt.Sprint(cc.handed) != fmt.Sprint(want) {
				t.Errorf("the handed-back command was classified %v times before its Query calls, want %v", cc.handed, want)
			}
		})
	}
}
