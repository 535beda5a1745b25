//go:build linux

package proxy

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Loop tests of commands handed to the session's goroutine and back.

// wouldBlock answers `SELECT 'wait'` only where it may wait.
type wouldBlock struct {
	BaseInterceptor
	onLoop, onGoroutine atomic.Int32
}

func (w *wouldBlock) Query(ctx context.Context, s *Session, sql []byte) (bool, error) {
	if string(sql) != "SELECT 'wait'" {
		return false, nil
	}
	if MustNotBlock(ctx) {
		w.onLoop.Add(1)
		return false, fmt.Errorf("fetch: %w", ErrWouldBlock)
	}
	w.onGoroutine.Add(1) // here it could wait
	return true, s.WriteOK(0, 42, 0)
}

func testLoopInterceptorWouldBlock(t *testing.T, runners int) {
	needLoops(t)
	w := &wouldBlock{}
	e := startLoopProxy(t, runners, nil, WithInterceptor(w))
	db := e.open(t, "", "")
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, err := db.Exec("SELECT 'wait'")
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := res.LastInsertId(); id != 42 {
			t.Fatalf("insert id %d", id)
		}
		for j := range loopBackoff + 1 { // back to the loop
			var v int
			if err := db.QueryRow("SELECT " + strconv.Itoa(j)).Scan(&v); err != nil || v != j {
				t.Fatalf("round %d: %d, %v", i, v, err)
			}
		}
	}
	if w.onLoop.Load() != 3 || w.onGoroutine.Load() != 3 {
		t.Fatalf("calls on the loop %d, on the goroutine %d: want 3 and 3", w.onLoop.Load(), w.onGoroutine.Load())
	}
}

// A pipelined burst larger than the goroutine's read buffer, whose first
// command goes to the goroutine: what the loop had read ahead reaches the
// goroutine first, and when the session moves back, what the goroutine had
// not read yet goes back with it.
func testLoopReadAheadSurvivesMoves(t *testing.T, runners int) {
	needsMariaDB(t, "COM_STATISTICS (go-mysql-server: command handling not implemented yet: 9)")
	e := startLoopProxy(t, runners, nil)
	c := loggedIn(t, e.addr, "")
	pad := strings.Repeat("x", 200)
	cmds := [][]byte{{gomysql.COM_STATISTICS}}
	const n = 3 * loopBackoff
	for i := range n {
		cmds = append(cmds, queryPkt(fmt.Sprintf("SELECT %d /* %s */", i, pad)))
	}
	sendCommands(t, c, cmds...)
	if p := readAnswer(c); !bytes.HasPrefix(p, []byte("Uptime")) {
		t.Fatalf("statistics: %q", p)
	}
	for i := range n {
		if rows := readResult(t, c); len(rows) != 1 || textValue(rows[0]) != strconv.Itoa(i) {
			t.Fatalf("answer %d: %q", i, rows)
		}
	}
}

type panicky struct{ BaseInterceptor }

func (panicky) Query(ctx context.Context, s *Session, sql []byte) (bool, error) {
	if string(sql) == "SELECT 'panic'" {
		panic("interceptor bug")
	}
	return false, nil
}

// An interceptor's panic costs its session only, also when the command was
// read ahead by the goroutine and runs as the session moves onto its loop.
func testLoopPanicCostsOneSession(t *testing.T, runners int) {
	e := startLoopProxy(t, runners, nil, WithInterceptor(panicky{}))
	other := e.open(t, "", "")
	if err := other.Ping(); err != nil {
		t.Fatal(err)
	}
	for _, lead := range []int{0, loopBackoff} { // on the loop; right at the move back
		c := loggedIn(t, e.addr, "")
		cmds := [][]byte{{gomysql.COM_STATISTICS}}
		for range lead {
			cmds = append(cmds, queryPkt("SELECT 1"))
		}
		sendCommands(t, c, append(cmds, queryPkt("SELECT 'panic'"))...)
		readAnswer(c)
		for range lead {
			readResult(t, c)
		}
		c.l.Seq = 1
		if _, err := c.l.ReadPacket(nil, 1<<20); err == nil {
			t.Fatal("the session that panicked answered")
		}
	}
	var v int
	if err := other.QueryRow("SELECT 7").Scan(&v); err != nil || v != 7 {
		t.Fatalf("another session after the panics: %d, %v", v, err)
	}
}

// waitsAfterWriting is a buggy interceptor: it answers, then says it would
// block. Running the command again would answer twice: the session ends.
type waitsAfterWriting struct{ BaseInterceptor }

func (waitsAfterWriting) Query(ctx context.Context, s *Session, sql []byte) (bool, error) {
	if string(sql) != "SELECT 'twice'" {
		return false, nil
	}
	if err := s.WriteOK(0, 1, 0); err != nil {
		return true, err
	}
	if MustNotBlock(ctx) {
		return false, ErrWouldBlock
	}
	return true, nil
}

func testLoopWouldBlockAfterWriting(t *testing.T, runners int) {
	needLoops(t)
	e := startLoopProxy(t, runners, nil, WithInterceptor(waitsAfterWriting{}))
	c := loggedIn(t, e.addr, "")
	sendCommands(t, c, queryPkt("SELECT 'twice'"))
	if p := readAnswer(c); p[0] != 0x00 {
		t.Fatalf("first answer: %q", p)
	}
	if _, err := c.l.ReadPacket(nil, 1<<20); err == nil {
		t.Fatal("a second answer came: the command ran twice")
	}
}
