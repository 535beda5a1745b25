package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/pingcap/tidb/pkg/parser/charset"
)

// Session is one client connection and its pinned backend connection. Its
// methods are meant for an Interceptor, which runs on the session's own
// goroutine; none of them is safe for use from other goroutines.
type Session struct {
	srv       *Server
	id        uint64
	log       *slog.Logger
	user      string
	caps      uint32 // client capability flags
	collation uint8

	c *leg // client
	b *leg // backend, nil until connected

	mu      sync.Mutex // guards bconn against forceClose
	bconn   net.Conn
	closing atomic.Bool
	idle    atomic.Bool

	ctx    context.Context
	db     string
	dbOK   bool // false: db must be re-read (after a multi-statement)
	status uint16
	mode   string
	modeOK bool
	value  any
	fatal  error

	cmd     []byte // reused command buffer
	out     []byte // reused outgoing command buffer
	scratch []byte // reused buffer for proxy-originated responses
	head    [headLen]byte
}

const (
	clientReadBuf  = 4 << 10
	clientWriteBuf = 32 << 10
	backReadBuf    = 32 << 10
	backWriteBuf   = 4 << 10
	keepBuf        = 1 << 20 // larger reused buffers are dropped after use
)

func newSession(srv *Server, id uint64, log *slog.Logger, c net.Conn, caps uint32, collation uint8, user, db string) *Session {
	return &Session{
		srv: srv, id: id, log: log, user: user, caps: caps, collation: collation,
		c:      newLeg("client", c, clientReadBuf, clientWriteBuf),
		db:     db,
		dbOK:   true,
		status: mysql.SERVER_STATUS_AUTOCOMMIT,
	}
}

var errQuit = errors.New("client quit")

// Error codes the proxy sends for its own failures. They must be server
// codes: libmariadb (the mariadb CLI) turns a server-sent code in the client
// range 2000-2999 (2003, 2013) into 2027 "Received malformed packet".
const (
	// errBackendUnreachable is ER_CONNECT_TO_FOREIGN_DATA_SOURCE.
	errBackendUnreachable = 1429
	// errBackendLost is ER_NET_READ_ERROR ("Got an error reading
	// communication packets").
	errBackendLost = 1158
)

// serve connects the backend and runs the command loop until the client
// quits, a leg fails or the server shuts the session down.
func (s *Session) serve(base context.Context) {
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	s.ctx = ctx
	defer s.closeConns()
	// A bug that panics while serving one client must cost that client its
	// connection, not every session of the proxy.
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("session closed: internal error", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	start := time.Now()
	if err := s.connectBackend(ctx); err != nil {
		s.refuseAfterLogin(err)
		return
	}
	s.log.Debug("session started", "db", s.db, "backend_connect", time.Since(start))
	if ic := s.srv.ic; ic != nil {
		defer ic.SessionClosed(s)
	}
	idleTimeout := s.srv.cfg.Limits.IdleTimeout.D()
	for {
		if idleTimeout > 0 {
			_ = s.c.conn.SetReadDeadline(time.Now().Add(idleTimeout))
		}
		// Order matters against Server.Shutdown: mark idle, then look at
		// draining; Shutdown sets draining, then pokes idle sessions.
		s.idle.Store(true)
		if s.srv.draining.Load() {
			s.log.Debug("session closed: proxy shutting down")
			return
		}
		s.c.seq = 0
		pkt, err := s.c.readPacket(s.cmd, s.srv.maxPacket)
		s.idle.Store(false)
		if err != nil {
			s.endOnClientError(err)
			return
		}
		if len(pkt) == 0 {
			s.log.Info("session closed: empty command packet")
			return
		}
		err = s.dispatch(ctx, pkt)
		if cap(pkt) <= keepBuf {
			s.cmd = pkt[:0]
		} else {
			s.cmd = nil
		}
		if err != nil {
			s.endOnError(err)
			return
		}
	}
}

func (s *Session) endOnClientError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		s.log.Debug("session closed by client")
	case errors.Is(err, os.ErrDeadlineExceeded) && s.srv.draining.Load():
		s.log.Debug("session closed: proxy shutting down")
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.log.Info("session closed: idle timeout")
	default:
		s.log.Info("session closed: bad packet from client", "err", err)
	}
}

// endOnError reports a fatal error: a lost backend gets the client an ERR
// packet (1158) before its connection closes.
func (s *Session) endOnError(err error) {
	if errors.Is(err, errQuit) {
		s.log.Debug("session closed: client quit")
		return
	}
	var ie *ioError
	if errors.As(err, &ie) && ie.leg == "backend" && !s.closing.Load() {
		s.log.Warn("backend connection lost", "backend", s.srv.cfg.Backend.Addr, "err", err)
		_ = s.c.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_ = s.c.writePacket(errPacket(errBackendLost, "08S01", fmt.Sprintf("leafproxy: lost connection to backend MySQL server at '%s' during query", s.srv.cfg.Backend.Addr)))
		_ = s.c.flush()
		return
	}
	if s.closing.Load() {
		s.log.Info("session closed by proxy shutdown")
		return
	}
	s.log.Info("session closed", "err", err)
}

// connectBackend opens the pinned backend connection with the session's
// database, collation and the capability flags that keep both legs framed
// alike.
func (s *Session) connectBackend(ctx context.Context) error {
	cfg := s.srv.cfg
	u := s.srv.users[s.user]
	timeout := cfg.Backend.ConnectTimeout.D()
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(timeout)) // bounds the backend handshake too
		}
		return c, err
	}
	opt := func(c *client.Conn) error {
		c.BufferSize = 4 << 10 // go-mysql's reader is dropped after the handshake
		if err := c.SetCollation(collationName(s.collation)); err != nil {
			return err
		}
		for _, f := range []uint32{mysql.CLIENT_MULTI_STATEMENTS, mysql.CLIENT_MULTI_RESULTS,
			mysql.CLIENT_PS_MULTI_RESULTS, mysql.CLIENT_FOUND_ROWS, mysql.CLIENT_IGNORE_SPACE} {
			if s.caps&f != 0 {
				c.SetCapability(f)
			} else {
				c.UnsetCapability(f)
			}
		}
		c.UnsetCapability(mysql.CLIENT_QUERY_ATTRIBUTES)
		c.UnsetCapability(mysql.CLIENT_LOCAL_FILES)
		c.UnsetCapability(mysql.CLIENT_DEPRECATE_EOF)
		if s.srv.backendTLS != nil {
			c.SetTLSConfig(s.srv.backendTLS.Clone())
		}
		c.SetAttributes(map[string]string{"_client_name": "leafproxy", "program_name": "leafproxy"})
		return nil
	}
	bc, err := client.ConnectWithDialer(ctx, "tcp", cfg.Backend.Addr, u.BackendUser, u.BackendPassword, s.db, dial, opt)
	if err != nil {
		return err
	}
	nc := bc.Conn.Conn // the TLS connection when backend.tls is on
	_ = nc.SetDeadline(time.Time{})
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		nc.Close()
		return errors.New("proxy shutting down")
	}
	s.bconn = nc
	s.mu.Unlock()
	s.b = newLeg("backend", nc, backReadBuf, backWriteBuf)
	s.srv.noteBackendVersion(bc.GetServerVersion())
	return nil
}

// collationName maps the client's handshake collation id to a name
// go-mysql's client accepts, falling back to utf8mb4_general_ci (which both
// MySQL and MariaDB know) for ids it does not.
func collationName(id uint8) string {
	if c, err := charset.GetCollationByID(int(id)); err == nil && c.Name != "" {
		return c.Name
	}
	return "utf8mb4_general_ci"
}

// refuseAfterLogin: go-mysql has already told the client its login
// succeeded when the backend turns out to be unreachable, so the reason goes
// back as the answer to the client's commands (ERR 1429 naming the backend
// address, or the backend's own ERR such as 1049 or 1045).
func (s *Session) refuseAfterLogin(err error) {
	code, state, msg := uint16(errBackendUnreachable), "HY000", fmt.Sprintf("leafproxy: can't connect to backend MySQL server on '%s': %v", s.srv.cfg.Backend.Addr, rootCause(err))
	var me *mysql.MyError
	if errors.As(err, &me) {
		code, state, msg = me.Code, me.State, me.Message
	}
	s.log.Warn("backend connect failed", "backend", s.srv.cfg.Backend.Addr, "code", code, "err", msg)
	s.refuse(&mysql.MyError{Code: code, State: state, Message: msg})
}

// refuse answers every command with e until the client quits.
func (s *Session) refuse(e *mysql.MyError) {
	code, state, msg := e.Code, e.State, e.Message
	// Answer every command with the error until the client gives up (or a
	// short idle limit), like a server refusing each statement.
	for i := 0; i < 16 && !s.srv.draining.Load(); i++ {
		_ = s.c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		s.c.seq = 0
		pkt, rerr := s.c.readPacket(s.cmd, 1<<20)
		if rerr != nil || len(pkt) == 0 || pkt[0] == mysql.COM_QUIT {
			return
		}
		s.cmd = pkt[:0]
		_ = s.c.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if s.c.writePacket(errPacket(code, state, msg)) != nil || s.c.flush() != nil {
			return
		}
	}
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

func (s *Session) pokeIfIdle() {
	if s.idle.Load() {
		_ = s.c.conn.SetReadDeadline(time.Unix(1, 0))
	}
}

// forceClose cuts both connections; the session goroutine then ends.
func (s *Session) forceClose() {
	s.closing.Store(true)
	s.c.conn.Close()
	s.mu.Lock()
	if s.bconn != nil {
		s.bconn.Close()
	}
	s.mu.Unlock()
}

func (s *Session) closeConns() {
	s.c.conn.Close()
	s.mu.Lock()
	if s.bconn != nil {
		s.bconn.Close()
	}
	s.mu.Unlock()
}

// response kinds
const (
	respResult    = iota // OK | ERR | result sets, repeated while MORE_RESULTS
	respExecute          // as respResult, and a cursor may end it after the columns
	respPrepare          // OK -> params+EOF -> columns+EOF, or ERR
	respSimple           // one OK/EOF/ERR packet
	respRaw              // one packet of any shape (COM_STATISTICS)
	respFieldList        // column definitions until EOF, or ERR
	respFetch            // rows until EOF, or ERR
	respNone             // STMT_CLOSE, SEND_LONG_DATA
)

// dispatch handles one client command. A non-nil error ends the session.
func (s *Session) dispatch(ctx context.Context, pkt []byte) error {
	ic := s.srv.ic
	switch pkt[0] {
	case mysql.COM_QUIT:
		return errQuit
	case mysql.COM_QUERY:
		if ic != nil {
			if done, err := s.intercepted(ic.Query(ctx, s, pkt[1:])); done {
				return err
			}
		}
		return s.relayQuery(pkt)
	case mysql.COM_STMT_PREPARE:
		if ic != nil {
			if done, err := s.intercepted(ic.Prepare(ctx, s, pkt[1:])); done {
				return err
			}
		}
		_, err := s.relayPrepare(pkt)
		return err
	case mysql.COM_STMT_EXECUTE:
		if ic != nil {
			var id uint32
			if len(pkt) >= 5 {
				id = binary.LittleEndian.Uint32(pkt[1:5])
			}
			if done, err := s.intercepted(ic.Execute(ctx, s, id, pkt)); done {
				return err
			}
		}
		_, err := s.relay(pkt, respExecute)
		return err
	case mysql.COM_STMT_CLOSE:
		if ic != nil && len(pkt) >= 5 {
			ic.StmtClosed(s, binary.LittleEndian.Uint32(pkt[1:5]))
		}
		_, err := s.relay(pkt, respNone)
		return err
	case mysql.COM_STMT_SEND_LONG_DATA:
		_, err := s.relay(pkt, respNone)
		return err
	case mysql.COM_INIT_DB:
		ok, err := s.relay(pkt, respSimple)
		if ok {
			s.db, s.dbOK = string(pkt[1:]), true
		}
		return err
	case mysql.COM_RESET_CONNECTION:
		ok, err := s.relay(pkt, respSimple)
		if ok {
			s.modeOK = false
			if ic != nil {
				ic.SessionReset(s)
			}
		}
		return err
	case mysql.COM_PING, mysql.COM_SET_OPTION, mysql.COM_STMT_RESET, mysql.COM_REFRESH,
		mysql.COM_PROCESS_KILL, mysql.COM_DEBUG:
		_, err := s.relay(pkt, respSimple)
		return err
	case mysql.COM_STATISTICS:
		_, err := s.relay(pkt, respRaw)
		return err
	case mysql.COM_PROCESS_INFO:
		_, err := s.relay(pkt, respResult)
		return err
	case mysql.COM_FIELD_LIST:
		_, err := s.relay(pkt, respFieldList)
		return err
	case mysql.COM_STMT_FETCH:
		_, err := s.relay(pkt, respFetch)
		return err
	case mysql.COM_CHANGE_USER:
		// Supporting it would mean re-authenticating both legs; refusing
		// leaves the session exactly as it was.
		return s.writeErrFlush(mysql.ER_NOT_SUPPORTED_YET, "42000",
			"leafproxy does not support COM_CHANGE_USER; open a new connection as the other user")
	default:
		return s.writeErrFlush(mysql.ER_UNKNOWN_COM_ERROR, "08S01", "Unknown command")
	}
}

// intercepted turns an interceptor's answer into the loop's: done means the
// command has been answered (or the session must end, err != nil).
func (s *Session) intercepted(handled bool, err error) (bool, error) {
	if s.fatal != nil {
		return true, s.fatal
	}
	if err != nil {
		code, state, msg := errorFields(err)
		return true, s.writeErrFlush(code, state, msg)
	}
	return handled, nil
}

// errorFields extracts MySQL's (code, SQLSTATE, message) from err.
func errorFields(err error) (uint16, string, string) {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me.Code, me.State, me.Message
	}
	var se SQLError
	if errors.As(err, &se) {
		return se.Code(), se.SQLState(), se.Error()
	}
	return mysql.ER_UNKNOWN_ERROR, "HY000", err.Error()
}

func (s *Session) writeErrFlush(code uint16, state, msg string) error {
	if err := s.c.writePacket(errPacket(code, state, msg)); err != nil {
		return s.setFatal(err)
	}
	return s.setFatal(s.c.flush())
}

func (s *Session) setFatal(err error) error {
	if err != nil && s.fatal == nil {
		s.fatal = err
	}
	return err
}

// relayQuery relays a COM_QUERY packet, tracking USE and SET statements.
func (s *Session) relayQuery(pkt []byte) error {
	q := skipSpace(pkt[1:])
	useDB, isUse := "", false
	switch {
	case hasKeyword(q, "USE"):
		isUse = true
		useDB, _ = parseUse(q[3:])
	case startsSet(pkt[1:]) && containsFold(q, "sql_mode"):
		// Only a SET naming sql_mode changes it (SET autocommit, SET NAMES
		// per transaction must not cost a re-read). Also SET STATEMENT
		// sql_mode=... FOR, which changes nothing for the session: a
		// needless re-read, cheap.
		s.modeOK = false
	}
	multi := s.caps&mysql.CLIENT_MULTI_STATEMENTS != 0 && bytes.IndexByte(q, ';') >= 0
	ok, err := s.relay(pkt, respResult)
	if multi {
		// Cheap and conservative: a later statement may have changed either.
		s.dbOK, s.modeOK = false, false
	}
	if ok && isUse {
		if useDB != "" && !multi {
			s.db, s.dbOK = useDB, true
		} else {
			s.dbOK = false
		}
	}
	return err
}

// relay sends one client command to the backend and streams the response
// back, flushed once. ok reports that the response began with OK.
func (s *Session) relay(pkt []byte, kind int) (ok bool, err error) {
	if s.fatal != nil {
		return false, s.fatal
	}
	if err := s.b.writeCommand(pkt); err != nil {
		return false, s.setFatal(err)
	}
	if err := s.b.flush(); err != nil {
		return false, s.setFatal(err)
	}
	switch kind {
	case respNone:
		return true, nil
	case respResult, respExecute:
		ok, err = s.relayResult(kind == respExecute)
	case respPrepare:
		var pr PrepareResult
		pr, err = s.relayPrepareResponse()
		ok = pr.OK
	case respSimple, respRaw:
		var head []byte
		var n int
		head, n, err = s.relayPacket()
		if err == nil && kind == respSimple {
			if isOK(head, n) {
				_, _, st, _ := okInfo(head)
				s.setStatus(st)
				ok = true
			} else if isEOF(head, n) {
				s.setStatus(eofStatus(head))
				ok = true
			}
		}
	case respFieldList, respFetch:
		for err == nil {
			var head []byte
			var n int
			head, n, err = s.relayPacket()
			if err != nil || isErr(head) {
				break
			}
			if isEOF(head, n) {
				if kind == respFetch {
					s.setStatus(eofStatus(head))
				}
				ok = true
				break
			}
		}
	}
	if err != nil {
		return false, s.setFatal(err)
	}
	return ok, s.setFatal(s.c.flush())
}

func (s *Session) setStatus(st uint16) {
	s.status = st &^ mysql.SERVER_MORE_RESULTS_EXISTS
}

// relayPacket streams one logical backend packet to the client, renumbered
// for the client leg, and returns its first bytes (valid until the next
// call) and its length. Nothing beyond headLen bytes is held.
func (s *Session) relayPacket() (head []byte, total int, err error) {
	for first := true; ; first = false {
		n, err := s.b.readHeader()
		if err != nil {
			return nil, 0, err
		}
		if first {
			p, err := s.b.r.Peek(min(n, headLen))
			if err != nil {
				return nil, 0, s.b.fail(err)
			}
			head = s.head[:copy(s.head[:], p)]
		}
		if err := writeHeader(s.c.w, n, s.c.seq); err != nil {
			return nil, 0, s.c.fail(err)
		}
		s.c.seq++
		if err := s.b.copyTo(s.c, n); err != nil {
			return nil, 0, err
		}
		total += n
		if n < maxPayload {
			return head, total, nil
		}
	}
}

func protocolError(format string, a ...any) error {
	return &ioError{leg: "backend", err: fmt.Errorf("protocol: "+format, a...)}
}

// relayResult follows a text or binary result: OK | ERR | column count ->
// definitions -> EOF -> rows -> EOF/ERR, repeated while the backend says
// more results exist. ok reports that the first packet was OK.
func (s *Session) relayResult(cursor bool) (ok bool, err error) {
	for first := true; ; first = false {
		head, n, err := s.relayPacket()
		if err != nil {
			return false, err
		}
		switch {
		case isErr(head):
			return ok, nil
		case isOK(head, n):
			_, _, st, _ := okInfo(head)
			s.setStatus(st)
			if first {
				ok = true
			}
			if st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
				return ok, nil
			}
			continue
		case len(head) > 0 && head[0] == 0xFB:
			return false, protocolError("LOCAL INFILE request although CLIENT_LOCAL_FILES is off")
		}
		cols, k := lenenc(head)
		if k == 0 || cols == 0 {
			return false, protocolError("bad column count packet")
		}
		for i := uint64(0); i < cols; i++ {
			if _, _, err := s.relayPacket(); err != nil {
				return false, err
			}
		}
		head, n, err = s.relayPacket()
		if err != nil {
			return false, err
		}
		if !isEOF(head, n) {
			return false, protocolError("no EOF after column definitions")
		}
		st := eofStatus(head)
		if !(cursor && st&mysql.SERVER_STATUS_CURSOR_EXISTS != 0) {
			for {
				head, n, err = s.relayPacket()
				if err != nil {
					return false, err
				}
				if isEOF(head, n) {
					st = eofStatus(head)
					break
				}
				if isErr(head) {
					return ok, nil
				}
			}
		}
		s.setStatus(st)
		if st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
			return ok, nil
		}
	}
}

// relayPrepare relays a COM_STMT_PREPARE packet.
func (s *Session) relayPrepare(pkt []byte) (PrepareResult, error) {
	if s.fatal != nil {
		return PrepareResult{}, s.fatal
	}
	if err := s.b.writeCommand(pkt); err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	if err := s.b.flush(); err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	pr, err := s.relayPrepareResponse()
	if err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	return pr, s.setFatal(s.c.flush())
}

// relayPrepareResponse: OK(stmt id, columns, params) -> params+EOF ->
// columns+EOF, or ERR.
func (s *Session) relayPrepareResponse() (PrepareResult, error) {
	head, n, err := s.relayPacket()
	if err != nil {
		return PrepareResult{}, err
	}
	if isErr(head) {
		return PrepareResult{}, nil
	}
	if !isOK(head, n) || len(head) < 9 {
		return PrepareResult{}, protocolError("bad prepare response")
	}
	pr := PrepareResult{
		OK:      true,
		StmtID:  binary.LittleEndian.Uint32(head[1:5]),
		Columns: binary.LittleEndian.Uint16(head[5:7]),
		Params:  binary.LittleEndian.Uint16(head[7:9]),
	}
	for _, cnt := range []uint16{pr.Params, pr.Columns} {
		if cnt == 0 {
			continue
		}
		for i := uint16(0); i <= cnt; i++ { // definitions, then EOF
			if _, _, err := s.relayPacket(); err != nil {
				return PrepareResult{}, err
			}
		}
	}
	return pr, nil
}

// Keyword helpers: cheap prefix checks, no parsing.

// skipSpace skips whitespace and leading comments (not /*! */ which MySQL
// executes).
func skipSpace(q []byte) []byte {
	for len(q) > 0 {
		switch c := q[0]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			q = q[1:]
		case c == '/' && len(q) > 2 && q[1] == '*' && q[2] != '!' && q[2] != 'M':
			end := bytes.Index(q[2:], []byte("*/"))
			if end < 0 {
				return nil
			}
			q = q[end+4:]
		case c == '#' || (c == '-' && len(q) > 2 && q[1] == '-' && (q[2] == ' ' || q[2] == '\t')):
			end := bytes.IndexByte(q, '\n')
			if end < 0 {
				return nil
			}
			q = q[end+1:]
		default:
			return q
		}
	}
	return q
}

// startsSet reports whether the statement's first word is SET, past
// whitespace, comments and executable-comment openers (/*!, /*!NNNNN,
// /*M!NNNNNN: their content is code the server may run, as mysqldump's
// /*!40101 SET SQL_MODE=... */). It does not ask whether the server runs
// a versioned comment: a false "yes" only costs a sql_mode re-read.
func startsSet(q []byte) bool {
	for {
		q = skipSpace(q)
		if len(q) < 3 || q[0] != '/' || q[1] != '*' {
			break
		}
		i := 2
		if q[i] == 'M' {
			i++
		}
		if i >= len(q) || q[i] != '!' {
			// A plain comment starting /*M: skipSpace leaves those.
			end := bytes.Index(q[2:], []byte("*/"))
			if end < 0 {
				return false
			}
			q = q[end+4:]
			continue
		}
		i++
		for i < len(q) && q[i] >= '0' && q[i] <= '9' {
			i++
		}
		q = q[i:]
	}
	return hasKeyword(q, "SET")
}

// hasKeyword reports whether q starts with kw (upper case) as a whole word.
func hasKeyword(q []byte, kw string) bool {
	if len(q) < len(kw) {
		return false
	}
	for i := 0; i < len(kw); i++ {
		if q[i]&^0x20 != kw[i] {
			return false
		}
	}
	if len(q) == len(kw) {
		return true
	}
	c := q[len(kw)]
	return !(c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80)
}

// parseUse reads the database name of `USE name` (rest after USE); ok is
// false when the statement has any other shape.
func parseUse(rest []byte) (string, bool) {
	rest = skipSpace(rest)
	var name []byte
	if len(rest) > 0 && rest[0] == '`' {
		i := 1
		for {
			j := bytes.IndexByte(rest[i:], '`')
			if j < 0 {
				return "", false
			}
			name = append(name, rest[i:i+j]...)
			i += j + 1
			if i < len(rest) && rest[i] == '`' { // `` is a literal backtick
				name = append(name, '`')
				i++
				continue
			}
			break
		}
		rest = rest[i:]
	} else {
		i := 0
		for i < len(rest) && rest[i] != ';' && rest[i] != ' ' && rest[i] != '\t' && rest[i] != '\n' && rest[i] != '\r' {
			i++
		}
		name, rest = rest[:i], rest[i:]
	}
	for _, c := range rest {
		if c != ';' && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return "", false
		}
	}
	return string(name), len(name) > 0
}

// containsFold reports whether b contains the lower-case ASCII word w in
// any case, without allocating.
func containsFold(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		j := 0
		for j < len(w) {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[j] {
				break
			}
			j++
		}
		if j == len(w) {
			return true
		}
	}
	return false
}
