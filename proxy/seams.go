package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Interceptor is consulted before the core relays a COM_QUERY,
// COM_STMT_PREPARE or COM_STMT_EXECUTE. See the package documentation for
// the contract. Embed BaseInterceptor to implement only what you need.
type Interceptor interface {
	// Query sees a COM_QUERY's text (valid only during the call). It may
	// answer itself (Write*), relay other text (RelayQuery), or return
	// handled=false to have the original relayed unchanged.
	Query(ctx context.Context, s *Session, sql []byte) (handled bool, err error)
	// Prepare sees a COM_STMT_PREPARE's text; RelayPrepare relays a
	// rewritten one and reports the backend's statement id.
	Prepare(ctx context.Context, s *Session, sql []byte) (handled bool, err error)
	// Execute sees a COM_STMT_EXECUTE: the whole payload, command byte
	// first (pkt[1:5] is stmtID), valid only during the call.
	Execute(ctx context.Context, s *Session, stmtID uint32, pkt []byte) (handled bool, err error)
	// StmtClosed runs before a COM_STMT_CLOSE is relayed.
	StmtClosed(s *Session, stmtID uint32)
	// SessionReset runs after a successful COM_RESET_CONNECTION: every
	// prepared statement and user variable of the session is gone.
	SessionReset(s *Session)
	// SessionClosed runs once when a session whose backend was connected ends.
	SessionClosed(s *Session)
}

// BaseInterceptor relays everything; embed it and override what you need.
type BaseInterceptor struct{}

func (BaseInterceptor) Query(context.Context, *Session, []byte) (bool, error)   { return false, nil }
func (BaseInterceptor) Prepare(context.Context, *Session, []byte) (bool, error) { return false, nil }
func (BaseInterceptor) Execute(context.Context, *Session, uint32, []byte) (bool, error) {
	return false, nil
}
func (BaseInterceptor) StmtClosed(*Session, uint32) {}
func (BaseInterceptor) SessionReset(*Session)       {}
func (BaseInterceptor) SessionClosed(*Session)      {}

// SQLError is an error that carries MySQL's error code and SQLSTATE; an
// interceptor returning one (or a *mysql.MyError from go-mysql) sends it to
// the client as that ERR packet. Other errors become ERR 1105 (HY000).
type SQLError interface {
	error
	Code() uint16
	SQLState() string
}

// PrepareResult is what the backend answered to a relayed prepare. OK is
// false when it answered ERR (already relayed to the client).
type PrepareResult struct {
	OK      bool
	StmtID  uint32
	Params  uint16
	Columns uint16
}

// ID is the proxy's session id (the "session" attribute in logs).
func (s *Session) ID() uint64 { return s.id }

// User is the account the client logged in with.
func (s *Session) User() string { return s.user }

// Logger is the session's logger (carries the session id).
func (s *Session) Logger() *slog.Logger { return s.log }

// Capabilities are the client's capability flags (mysql.CLIENT_*).
func (s *Session) Capabilities() uint32 { return s.caps }

// Value returns the interceptor's per-session state (nil at first).
func (s *Session) Value() any { return s.value }

// SetValue stores the interceptor's per-session state.
func (s *Session) SetValue(v any) { s.value = v }

// Status is the backend's last reported status flags (SERVER_STATUS_*).
func (s *Session) Status() uint16 { return s.status }

// InTransaction reports the backend's last reported in-transaction flag.
func (s *Session) InTransaction() bool { return s.status&mysql.SERVER_STATUS_IN_TRANS != 0 }

// DB is the session's current database ("" if none): from the handshake,
// COM_INIT_DB and successful `USE x`. After a multi-statement query it is
// re-read from the backend (SELECT DATABASE()) on the next call.
func (s *Session) DB() string {
	db, _ := s.CurrentDB(s.ctx)
	return db
}

// CurrentDB is DB with the error of the re-read: a caller that resolves
// table names must not plan against a database it could not confirm.
func (s *Session) CurrentDB(ctx context.Context) (string, error) {
	if !s.dbOK && s.b != nil && s.fatal == nil {
		rows, err := s.BackendQuery(ctx, "SELECT DATABASE()")
		if err != nil {
			return s.db, fmt.Errorf("read the current database: %w", err)
		}
		if len(rows) == 1 && len(rows[0]) == 1 {
			s.db, s.dbOK = "", true
			if rows[0][0] != nil {
				s.db = *rows[0][0]
			}
		}
	}
	return s.db, nil
}

// SQLMode returns the session's @@sql_mode, read from the backend on first
// use and again after any statement starting with SET (also inside a leading executable comment, as mysqldump writes it), a multi-statement
// query or COM_RESET_CONNECTION. (A prepared SET executed via
// COM_STMT_EXECUTE is not noticed.)
func (s *Session) SQLMode(ctx context.Context) (string, error) {
	if s.modeOK {
		return s.mode, nil
	}
	rows, err := s.BackendQuery(ctx, "SELECT @@SESSION.sql_mode")
	if err != nil {
		return "", err
	}
	s.mode = ""
	if len(rows) == 1 && len(rows[0]) == 1 && rows[0][0] != nil {
		s.mode = *rows[0][0]
	}
	s.modeOK = true
	return s.mode, nil
}

// RelayQuery sends sql as a COM_QUERY to the backend and streams the
// response to the client. USE/SET tracking applies to sql.
func (s *Session) RelayQuery(sql []byte) error {
	s.out = append(append(s.out[:0], mysql.COM_QUERY), sql...)
	err := s.relayQuery(s.out)
	s.trimOut()
	return err
}

// RelayPrepare sends sql as a COM_STMT_PREPARE and streams the prepare
// response to the client; the result says which statement id and how many
// parameters the backend gave it.
func (s *Session) RelayPrepare(sql []byte) (PrepareResult, error) {
	s.out = append(append(s.out[:0], mysql.COM_STMT_PREPARE), sql...)
	pr, err := s.relayPrepare(s.out)
	s.trimOut()
	return pr, err
}

// RelayExecute sends pkt (a COM_STMT_EXECUTE payload, command byte first,
// possibly rewritten) and streams the response to the client.
func (s *Session) RelayExecute(pkt []byte) error {
	_, err := s.relay(pkt, respExecute)
	return err
}

// RelayExecuteAfter pipelines the text statement pre (e.g. SET @x=1) and
// the execute packet pkt in one write: pre's response is consumed silently
// and pkt's streamed to the client, so pre costs no extra round trip. If pre
// fails, the backend has still run the execute, with stale values: the
// client gets an ERR saying so and the session ends (the returned error is
// fatal).
func (s *Session) RelayExecuteAfter(pre string, pkt []byte) error {
	if s.fatal != nil {
		return s.fatal
	}
	s.out = append(append(s.out[:0], mysql.COM_QUERY), pre...)
	if err := s.b.writeCommand(s.out); err != nil {
		return s.setFatal(err)
	}
	preSeq := s.b.seq
	if err := s.b.writeCommand(pkt); err != nil {
		return s.setFatal(err)
	}
	execSeq := s.b.seq
	s.trimOut()
	if err := s.b.flush(); err != nil {
		return s.setFatal(err)
	}
	s.b.seq = preSeq
	_, _, _, perr := s.readBackendResult(false)
	if s.fatal != nil {
		return s.fatal
	}
	s.b.seq = execSeq
	if perr != nil {
		// The execute has run with whatever the variables held before, so
		// its outcome is unknown to us and must not look like a clean
		// failure: the client gets an ERR naming the problem and the
		// connection closes, as when a connection drops mid-statement.
		if _, _, _, err := s.readBackendResult(false); s.fatal != nil {
			return err
		}
		s.log.Error("statement prepared by the proxy ran without its generated values; closing the session", "err", perr)
		_ = s.c.writePacket(errPacket(mysql.ER_UNKNOWN_ERROR, "HY000",
			"leafproxy: could not set the generated IDs before EXECUTE ("+perr.Error()+"); the statement may have run with stale values; closing the connection"))
		_ = s.c.flush()
		return s.setFatal(errQuit)
	}
	ok, err := s.relayResult(true)
	_ = ok
	if err != nil {
		return s.setFatal(err)
	}
	return s.setFatal(s.c.flush())
}

// BackendExec runs a proxy-originated statement on the session's backend
// connection; nothing reaches the client. A backend ERR comes back as a
// *mysql.MyError and leaves the session usable. ctx's deadline bounds it.
func (s *Session) BackendExec(ctx context.Context, sql string) (affected, insertID uint64, err error) {
	if err := s.sendBackend(ctx, sql); err != nil {
		return 0, 0, err
	}
	defer s.clearDeadline(ctx)
	_, affected, insertID, err = s.readBackendResult(false)
	return affected, insertID, err
}

// BackendQuery runs a proxy-originated query and returns the first result
// set's rows as text (nil = SQL NULL). Meant for small results.
func (s *Session) BackendQuery(ctx context.Context, sql string) ([][]*string, error) {
	if err := s.sendBackend(ctx, sql); err != nil {
		return nil, err
	}
	defer s.clearDeadline(ctx)
	rows, _, _, err := s.readBackendResult(true)
	return rows, err
}

func (s *Session) sendBackend(ctx context.Context, sql string) error {
	if s.fatal != nil {
		return s.fatal
	}
	if s.b == nil {
		return errorf("no backend connection")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = s.b.conn.SetDeadline(dl)
	}
	s.out = append(append(s.out[:0], mysql.COM_QUERY), sql...)
	err := s.b.writeCommand(s.out)
	s.trimOut()
	if err == nil {
		err = s.b.flush()
	}
	return s.setFatal(err)
}

func (s *Session) clearDeadline(ctx context.Context) {
	if _, ok := ctx.Deadline(); ok && s.fatal == nil {
		_ = s.b.conn.SetDeadline(time.Time{})
	}
}

func (s *Session) trimOut() {
	if cap(s.out) > keepBuf {
		s.out = nil
	}
}

// readBackendResult consumes a whole response from the backend without
// relaying it. I/O and protocol failures are fatal (s.fatal set); a backend
// ERR is returned as *mysql.MyError.
func (s *Session) readBackendResult(collect bool) (rows [][]*string, affected, insertID uint64, err error) {
	defer func() {
		if cap(s.scratch) > keepBuf {
			s.scratch = nil
		}
	}()
	var myErr error
	for first := true; ; first = false {
		p, rerr := s.b.readPacket(s.scratch, 1<<30)
		s.scratch = p
		if rerr != nil {
			return nil, 0, 0, s.setFatal(rerr)
		}
		switch {
		case isErr(p):
			return rows, affected, insertID, parseErr(p)
		case isOK(p, len(p)):
			a, id, st, _ := okInfo(p)
			if first {
				affected, insertID = a, id
			}
			s.setStatus(st)
			if st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
				return rows, affected, insertID, myErr
			}
			continue
		case len(p) > 0 && p[0] == 0xFB:
			return nil, 0, 0, s.setFatal(protocolError("LOCAL INFILE request"))
		}
		cols, k := lenenc(p)
		if k == 0 || cols == 0 {
			return nil, 0, 0, s.setFatal(protocolError("bad column count packet"))
		}
		for i := uint64(0); i <= cols; i++ { // definitions, then EOF
			if p, rerr = s.b.readPacket(s.scratch, 1<<30); rerr != nil {
				return nil, 0, 0, s.setFatal(rerr)
			}
			s.scratch = p
		}
		var st uint16
		for {
			if p, rerr = s.b.readPacket(s.scratch, 1<<30); rerr != nil {
				return nil, 0, 0, s.setFatal(rerr)
			}
			s.scratch = p
			if isEOF(p, len(p)) {
				st = eofStatus(p)
				break
			}
			if isErr(p) {
				return rows, 0, 0, parseErr(p)
			}
			if collect && first {
				row := make([]*string, 0, cols)
				for pos := 0; pos < len(p) && len(row) < int(cols); {
					if p[pos] == 0xFB {
						row = append(row, nil)
						pos++
						continue
					}
					l, n := lenenc(p[pos:])
					if n == 0 || pos+n+int(l) > len(p) {
						return nil, 0, 0, s.setFatal(protocolError("bad text row"))
					}
					v := string(p[pos+n : pos+n+int(l)])
					row = append(row, &v)
					pos += n + int(l)
				}
				rows = append(rows, row)
			}
		}
		s.setStatus(st)
		if st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
			return rows, affected, insertID, myErr
		}
	}
}

// WriteOK answers the client's command with an OK packet carrying the
// backend's last status flags.
func (s *Session) WriteOK(affected, insertID uint64, warnings uint16) error {
	if err := s.c.writePacket(okPacket(affected, insertID, s.status, warnings)); err != nil {
		return s.setFatal(err)
	}
	return s.setFatal(s.c.flush())
}

// WriteError answers the client's command with an ERR packet; the session
// stays usable.
func (s *Session) WriteError(code uint16, sqlState, msg string) error {
	return s.writeErrFlush(code, sqlState, msg)
}

// WriteResultSet answers with a text-protocol result of BIGINT columns
// (nil = NULL), for a COM_QUERY the proxy answers itself.
func (s *Session) WriteResultSet(cols []string, rows [][]*int64) error {
	return s.writeInt64Result(cols, rows, false)
}

// WriteBinaryResultSet is WriteResultSet in the binary protocol, for a
// COM_STMT_EXECUTE the proxy answers itself (the statement must have been
// prepared on the backend with the same number of columns, so the client's
// statement metadata matches).
func (s *Session) WriteBinaryResultSet(cols []string, rows [][]*int64) error {
	return s.writeInt64Result(cols, rows, true)
}

func (s *Session) writeInt64Result(cols []string, rows [][]*int64, binaryRows bool) error {
	// Every packet is built in the session's reusable buffer: a NEXTVAL
	// answer costs no allocation.
	w := func(p []byte) error {
		s.out = p[:0]
		if err := s.c.writePacket(p); err != nil {
			return s.setFatal(err)
		}
		return nil
	}
	if err := w(mysql.AppendLengthEncodedInteger(s.out[:0], uint64(len(cols)))); err != nil {
		return err
	}
	for _, c := range cols {
		if err := w(appendBigintColumnDef(s.out[:0], c)); err != nil {
			return err
		}
	}
	if err := w(appendEOF(s.out[:0], s.status)); err != nil {
		return err
	}
	for _, row := range rows {
		p := s.out[:0]
		if binaryRows {
			bitmap := (len(cols) + 7 + 2) / 8
			p = append(p, 0x00)
			start := len(p)
			for range bitmap {
				p = append(p, 0)
			}
			for i, v := range row {
				if v == nil {
					bit := i + 2
					p[start+bit/8] |= 1 << (bit % 8)
					continue
				}
				u := uint64(*v)
				p = append(p, byte(u), byte(u>>8), byte(u>>16), byte(u>>24), byte(u>>32), byte(u>>40), byte(u>>48), byte(u>>56))
			}
		} else {
			for _, v := range row {
				if v == nil {
					p = append(p, 0xFB)
					continue
				}
				var num [20]byte
				txt := strconv.AppendInt(num[:0], *v, 10)
				p = append(p, byte(len(txt)))
				p = append(p, txt...)
			}
		}
		if err := w(p); err != nil {
			return err
		}
	}
	if err := w(appendEOF(s.out[:0], s.status)); err != nil {
		return err
	}
	s.trimOut()
	return s.setFatal(s.c.flush())
}

func appendEOF(p []byte, status uint16) []byte {
	return append(p, 0xFE, 0, 0, byte(status), byte(status>>8))
}

// appendBigintColumnDef appends a Protocol::ColumnDefinition41 for a
// signed BIGINT.
func appendBigintColumnDef(p []byte, name string) []byte {
	lstr := func(v string) {
		p = mysql.AppendLengthEncodedInteger(p, uint64(len(v)))
		p = append(p, v...)
	}
	lstr("def")
	lstr("")
	lstr("")
	lstr("")
	lstr(name)
	lstr("")
	p = append(p, 0x0c,
		63, 0, // charset: binary
		20, 0, 0, 0, // display length
		mysql.MYSQL_TYPE_LONGLONG,
		byte(mysql.BINARY_FLAG), byte(mysql.BINARY_FLAG>>8),
		0,    // decimals
		0, 0) // filler
	return p
}

type proxyError string

func (e proxyError) Error() string { return string(e) }

func errorf(msg string) error { return proxyError("leafproxy: " + msg) }
