package proxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/errstyle"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// COM_STMT_BULK_EXECUTE is MariaDB's array-binding execute (Connector/J's
// batches); only sent by clients that negotiated MARIADB_CLIENT_STMT_BULK_OPERATIONS.
const comStmtBulkExecute = 0xFA

// lastPreparedStmt is the statement id MariaDB reads as "the statement this
// connection prepared last" (mariadb_stmt_execute_direct, pipelined
// prepare+execute).
const lastPreparedStmt = 0xFFFFFFFF

// stmtID reads a statement command's id, resolving MariaDB's "last
// prepared" alias, so interceptors key their state on real ids.
func (bf *backendFacts) stmtID(pkt []byte) uint32 {
	if len(pkt) < 5 {
		return 0
	}
	id := binary.LittleEndian.Uint32(pkt[1:5])
	if id == lastPreparedStmt && bf.lastPrepOK {
		return bf.lastPrep
	}
	return id
}

// dispatch handles one client command: one call per command kind, each
// with its own contract below. A non-nil error ends the session.
func (s *Session) dispatch(ctx context.Context, pkt []byte) error {
	s.receivedOK = false
	if err := s.exec.mayWait(); err != nil && !loopCommand(pkt[0]) {
		return err // for the session's goroutine (see lane)
	}
	switch pkt[0] {
	case mysql.COM_QUIT:
		return errQuit
	case mysql.COM_QUERY:
		return s.comQuery(ctx, pkt)
	case mysql.COM_STMT_PREPARE:
		return s.comPrepare(ctx, pkt)
	case mysql.COM_STMT_EXECUTE:
		return s.comExecute(ctx, pkt)
	case comStmtBulkExecute:
		return s.comBulkExecute(ctx, pkt)
	case mysql.COM_STMT_CLOSE:
		return s.comStmtClose(pkt)
	case mysql.COM_STMT_SEND_LONG_DATA:
		return s.comSendLongData(pkt)
	case mysql.COM_STMT_RESET:
		return s.comStmtReset(pkt)
	case mysql.COM_INIT_DB:
		return s.relayAfter(pkt, respSimple, afterAction{kind: afterInitDB, db: string(pkt[1:])})
	case mysql.COM_RESET_CONNECTION:
		return s.relayAfter(pkt, respSimple, afterAction{kind: afterReset})
	case mysql.COM_PROCESS_KILL:
		return s.comProcessKill(ctx, pkt)
	case mysql.COM_CHANGE_USER:
		return s.changeUser(ctx, pkt[1:])
	}
	return s.comRelayed(pkt)
}

// comQuery runs a COM_QUERY: its text classified once (the class lives
// until the command returns), a KILL carried out as decideKill says (a
// multi-statement text's KILLs mapped in place, the mapped text going
// on), then the interceptor, and the backend for what the interceptor
// leaves.
func (s *Session) comQuery(ctx context.Context, pkt []byte) error {
	c := s.commandClass(pkt[1:])
	defer s.endClass()
	if d := s.decideKill(pkt, c, nil); !d.None() {
		var done bool
		var err error
		if pkt, done, err = s.runKill(ctx, pkt, d); done {
			return err
		}
	}
	if ic := s.srv.ic; ic != nil {
		if done, err := s.intercepted(ic.Query(ctx, s, pkt[1:])); done {
			return err
		}
	}
	return s.relayQuery(pkt)
}

// comPrepare runs a COM_STMT_PREPARE: its text classified once (a SET
// naming sql_mode marks the session's executes as mode-changing), a KILL
// prepared as decideKill says, then the interceptor, and the backend for
// what the interceptor leaves.
func (s *Session) comPrepare(ctx context.Context, pkt []byte) error {
	c := s.commandClass(pkt[1:])
	defer s.endClass()
	if c.SetsSQLMode() {
		s.modeStmts = true // its EXECUTEs may change the mode
	}
	if d := s.decideKill(pkt, c, nil); !d.None() {
		_, _, err := s.runKill(ctx, pkt, d)
		return err
	}
	if ic := s.srv.ic; ic != nil {
		if done, err := s.intercepted(ic.Prepare(ctx, s, pkt[1:])); done {
			return err
		}
	}
	_, err := s.relayPrepare(pkt)
	return err
}

// comExecute runs a COM_STMT_EXECUTE: the sql_mode is re-read after it
// when the client prepared a SET naming it; an execute of a prepared KILL
// is carried out by the proxy; the rest goes to the interceptor, then the
// backend.
func (s *Session) comExecute(ctx context.Context, pkt []byte) error {
	if s.modeStmts {
		s.forgetMode()
	}
	if d := s.decideKill(pkt, sqltext.Class{}, s.killStmtFor(pkt)); !d.None() {
		_, _, err := s.runKill(ctx, pkt, d)
		return err
	}
	if ic := s.srv.ic; ic != nil {
		if done, err := s.intercepted(ic.Execute(ctx, s, s.stmtID(pkt), pkt)); done {
			return err
		}
	}
	_, err := s.relay(pkt, respExecute)
	return err
}

// comBulkExecute runs MariaDB's COM_STMT_BULK_EXECUTE: unknown to a client
// that did not negotiate it, refused for a prepared KILL, else the
// interceptor's, then the backend's.
func (s *Session) comBulkExecute(ctx context.Context, pkt []byte) error {
	if s.extCaps&wire.MariaDBStmtBulk == 0 {
		return s.writeErrFlush(mysql.ER_UNKNOWN_COM_ERROR, "08S01", "Unknown command")
	}
	if d := s.decideKill(pkt, sqltext.Class{}, s.killStmtFor(pkt)); !d.None() {
		_, _, err := s.runKill(ctx, pkt, d)
		return err
	}
	if ic := s.srv.ic; ic != nil {
		if done, err := s.intercepted(ic.BulkExecute(ctx, s, s.stmtID(pkt), pkt)); done {
			return err
		}
	}
	_, err := s.relay(pkt, respResult)
	return err
}

// comStmtClose relays a COM_STMT_CLOSE (no response) after the proxy and
// the interceptor have forgotten the statement.
func (s *Session) comStmtClose(pkt []byte) error {
	if s.kills.Has() && len(pkt) >= 5 {
		s.kills.Forget(s.stmtID(pkt))
	}
	if ic := s.srv.ic; ic != nil && len(pkt) >= 5 {
		ic.StmtClosed(s, s.stmtID(pkt))
	}
	_, err := s.relay(pkt, respNone)
	return err
}

// comSendLongData relays a COM_STMT_SEND_LONG_DATA (no response), noted
// first by a prepared KILL (which refuses its id as long data) and shown
// to a StmtDataInterceptor.
func (s *Session) comSendLongData(pkt []byte) error {
	if ks := s.killStmtFor(pkt); ks != nil {
		ks.NoteLongData()
	}
	if ic := s.srv.ic; ic != nil && len(pkt) >= 7 {
		if sd, ok := ic.(StmtDataInterceptor); ok {
			sd.SendLongData(s, s.stmtID(pkt), pkt)
		}
	}
	_, err := s.relay(pkt, respNone)
	return err
}

// comStmtReset relays a COM_STMT_RESET, which drops a statement's long
// data: a prepared KILL's and a StmtDataInterceptor's too.
func (s *Session) comStmtReset(pkt []byte) error {
	if ks := s.killStmtFor(pkt); ks != nil {
		ks.Reset()
	}
	if ic := s.srv.ic; ic != nil && len(pkt) >= 5 {
		if sd, ok := ic.(StmtDataInterceptor); ok {
			sd.StmtReset(s, s.stmtID(pkt))
		}
	}
	_, err := s.relay(pkt, respSimple)
	return err
}

// comProcessKill runs COM_PROCESS_KILL as decideKill says (relayed in
// backend-account mode, mapped with users; malformed: 1835).
func (s *Session) comProcessKill(ctx context.Context, pkt []byte) error {
	_, _, err := s.runKill(ctx, pkt, s.decideKill(pkt, sqltext.Class{}, nil))
	return err
}

// comRelayed relays a command the proxy only passes on, with the shape of
// its response; any other command is answered 1047 Unknown command and
// the session goes on.
func (s *Session) comRelayed(pkt []byte) error {
	kind, ok := relayedKind(pkt[0])
	if !ok {
		return s.writeErrFlush(mysql.ER_UNKNOWN_COM_ERROR, "08S01", "Unknown command")
	}
	_, err := s.relay(pkt, kind)
	return err
}

// relayedKind is the response kind of a command relayed as it is, or
// false for a command the proxy does not know.
func relayedKind(c byte) (int, bool) {
	switch c {
	case mysql.COM_PING, mysql.COM_SET_OPTION, mysql.COM_REFRESH, mysql.COM_DEBUG:
		return respSimple, true
	case mysql.COM_STATISTICS:
		return respRaw, true
	case mysql.COM_PROCESS_INFO:
		return respResult, true
	case mysql.COM_FIELD_LIST:
		return respFieldList, true
	case mysql.COM_STMT_FETCH:
		return respFetch, true
	}
	return 0, false
}

// loopCommand reports whether an event loop runs a command itself: those
// an interceptor sees or that carry one command and its response. The rest
// (KILL, change user, field lists, cursors' fetches, bulk executes,
// statistics, ...) go to the session's goroutine.
func loopCommand(c byte) bool {
	switch c {
	case mysql.COM_QUERY, mysql.COM_STMT_PREPARE, mysql.COM_STMT_EXECUTE, mysql.COM_STMT_CLOSE,
		mysql.COM_STMT_RESET, mysql.COM_STMT_SEND_LONG_DATA, mysql.COM_PING, mysql.COM_INIT_DB,
		mysql.COM_RESET_CONNECTION, mysql.COM_SET_OPTION, mysql.COM_QUIT:
		return true
	}
	return false
}

// intercepted turns an interceptor's answer into the loop's: done means the
// command has been answered (or the session must end, err != nil).
func (s *Session) intercepted(handled bool, err error) (bool, error) {
	if s.fatal != nil {
		return true, s.fatal
	}
	if err != nil && errors.Is(err, ErrWouldBlock) && s.exec.mayWait() != nil {
		return true, ErrWouldBlock // nothing was written: the goroutine runs it again
	}
	if err != nil {
		code, state, msg := errorFields(err)
		return true, s.writeErrFlush(code, state, msg)
	}
	return handled, nil
}

// errorFields extracts MySQL's (code, SQLSTATE, message) from err. A
// *mysql.MyError's text is sent as it is (it may be the backend's); the
// text of the proxy's own errors (an SQLError, any other error: 1105)
// follows errstyle's rule: MariaDB's words for its code, or "leafproxy: "
// first.
func errorFields(err error) (uint16, string, string) {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me.Code, me.State, me.Message
	}
	var se SQLError
	if errors.As(err, &se) {
		return se.Code(), se.SQLState(), errstyle.Styled(se.Code(), se.Error())
	}
	return mysql.ER_UNKNOWN_ERROR, "HY000", errstyle.Styled(mysql.ER_UNKNOWN_ERROR, err.Error())
}

func (s *Session) writeErrFlush(code uint16, state, msg string) error {
	s.countErr(code)
	if err := s.c.WritePacket(wire.ErrPacket(code, state, msg)); err != nil {
		return s.setFatal(err)
	}
	return s.setFatal(s.c.Flush())
}

func (c *commandState) setFatal(err error) error {
	if err != nil && c.fatal == nil {
		c.fatal = err
	}
	return err
}

// readCommand reads the client's next command. Commands up to 1 MiB use the
// session's own buffer; larger ones (up to the backend's max_allowed_packet)
// take their size from the server-wide command memory budget first, so many
// clients sending huge statements at once cannot exhaust the proxy's memory.
func (s *Session) readCommand() ([]byte, error) {
	n, err := s.c.PeekPacketLen()
	if err != nil {
		return nil, err
	}
	if n < keepBuf {
		return s.c.ReadPacket(s.cmd, s.srv.maxPacket)
	}
	// Larger than one physical packet: the total is only known as it
	// arrives, so the budget is reserved piece by piece. Commands of 16 MiB
	// and more are read one at a time across the server: several of them
	// holding part of the budget while each waits for more would starve
	// one another (hold and wait) although each fits alone.
	multi := n == wire.MaxPayload
	if multi {
		ctx, cancel := context.WithTimeout(s.ctx, s.srv.mem.Wait)
		err := s.srv.mem.AcquireLarge(ctx)
		cancel()
		if err != nil {
			s.log.Warn("command refused: another command of 16 MiB or more is being read", "limit", s.srv.mem.Limit)
			_ = s.writeErrFlush(mysql.ER_OUT_OF_RESOURCES, "HY000",
				"Out of memory (leafproxy: it reads one statement of 16 MiB or more at a time and another is arriving; try again)")
			return nil, io.EOF
		}
		s.largeHeld = true
	}
	var held int64
	buf := []byte(nil)
	for {
		n, err := s.c.PeekPacketLen()
		if err != nil {
			s.srv.mem.Release(held)
			s.releaseLarge()
			return nil, err
		}
		if len(buf)+n > s.srv.maxPacket {
			s.srv.mem.Release(held)
			s.releaseLarge()
			s.log.Info("command larger than max_allowed_packet", "bytes", len(buf)+n, "max", s.srv.maxPacket)
			_ = s.writeErrFlush(mysql.ER_NET_PACKET_TOO_LARGE, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes")
			return nil, io.EOF
		}
		if lim := s.srv.mem.Limit; lim > 0 && held+int64(n) > lim {
			// The statement alone is larger than the whole budget: no
			// wait can make room (issue 40: it waited 10 s for a
			// "try again" that could never succeed). Its remaining bytes
			// are read and dropped, so the client, done sending, reads
			// the error in sequence.
			// The budget and the one large-command slot are kept until
			// the rest is dropped, and the bytes read so far (up to the
			// whole budget, and the copies the buffer grew through) are
			// collected before the next large command starts: without
			// that it stacked its buffers on them (4 x 256 MiB with a
			// 64 MiB budget: +260 MiB RSS, over the 4 x budget bound).
			// One collection per statement larger than the whole budget.
			got := len(buf)
			buf = nil
			err := s.refuseOverBudget(got)
			runtime.GC()
			s.srv.mem.Release(held)
			s.releaseLarge()
			return nil, err
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.srv.mem.Wait)
		err = s.srv.mem.Acquire(ctx, int64(n))
		cancel()
		if err != nil {
			s.srv.mem.Release(held)
			s.releaseLarge()
			s.log.Warn("command refused: proxy command memory exhausted", "bytes", n, "limit", s.srv.mem.Limit)
			_ = s.writeErrFlush(mysql.ER_OUT_OF_RESOURCES, "HY000",
				"Out of memory (leafproxy: its limits.command_memory is in use by other large statements; try again)")
			return nil, io.EOF
		}
		held += int64(n)
		// A sender that stalls mid-command must not hold the large-command
		// slot (or its memory) for ever.
		_ = s.c.Conn.SetReadDeadline(time.Now().Add(time.Minute))
		piece, err := s.c.ReadPacketPiece(buf)
		_ = s.c.Conn.SetReadDeadline(time.Time{})
		if err != nil {
			s.srv.mem.Release(held)
			s.releaseLarge()
			return nil, err
		}
		buf = piece
		if n < wire.MaxPayload {
			s.heldMem = held
			s.releaseLarge()
			return buf, nil
		}
	}
}

// refuseOverBudget answers a command larger than limits.command_memory
// (got bytes of it read so far) with 1041 naming the key, after reading
// and dropping the rest of it (each piece within a minute; no more than
// max_allowed_packet in all), and ends the session (io.EOF).
func (s *Session) refuseOverBudget(got int) error {
	total := got
	for {
		n, err := s.c.PeekPacketLen()
		if err != nil {
			return err
		}
		total += n
		if total > s.srv.maxPacket {
			s.log.Info("command larger than max_allowed_packet", "bytes", total, "max", s.srv.maxPacket)
			_ = s.writeErrFlush(mysql.ER_NET_PACKET_TOO_LARGE, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes")
			return io.EOF
		}
		_ = s.c.Conn.SetReadDeadline(time.Now().Add(time.Minute))
		err = s.c.DiscardPacketPiece()
		_ = s.c.Conn.SetReadDeadline(time.Time{})
		if err != nil {
			return err
		}
		if n < wire.MaxPayload {
			break
		}
	}
	s.log.Warn("command refused: larger than limits.command_memory", "bytes", total, "limit", s.srv.mem.Limit)
	_ = s.writeErrFlush(mysql.ER_OUT_OF_RESOURCES, "HY000", fmt.Sprintf(
		"Out of memory (leafproxy: the statement, %d bytes, is larger than limits.command_memory, %d bytes, the memory all large statements share; raise limits.command_memory or send it in smaller statements)",
		total, s.srv.mem.Limit))
	return io.EOF
}

// releaseLarge frees the server's one slot for reading a multi-piece
// command, once the whole command has arrived (or failed to).
func (s *Session) releaseLarge() {
	if s.takeLarge() {
		s.srv.mem.ReleaseLarge()
	}
}

// releaseCommand returns a command's buffer: small ones are kept for reuse,
// large ones give their memory back to the budget.
func (s *Session) releaseCommand(pkt []byte) {
	if held := s.takeHeldMem(); held > 0 {
		s.srv.mem.Release(held)
		return
	}
	s.keepCmd(pkt)
}
