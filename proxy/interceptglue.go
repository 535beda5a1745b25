package proxy

import (
	"context"
	"io"
	"log/slog"

	"github.com/leafproxy/leafproxy/proxy/intercept"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// What a session offers an interceptor besides relaying is package
// proxy/intercept's: the statements the proxy runs on the backend for it,
// prepares with parameters the client does not see, the result sets the
// proxy writes itself and a LOCAL INFILE file through a transformer. This
// file is what it needs of a session (interceptSession, intercept.Session)
// and the Session methods that hand it the work.

type (
	ExecResult        = intercept.ExecResult
	ParamCountError   = intercept.ParamCountError
	InfileTransformer = intercept.InfileTransformer
)

// interceptSession is the session as package intercept sees it; its
// methods are intercept.Session's, kept off *Session.
type interceptSession Session

func (s *Session) svc() *interceptSession { return (*interceptSession)(s) }

func (k *interceptSession) Legs() (client, backend *wire.Leg) { return k.c, k.b }
func (k *interceptSession) Out() *[]byte                      { return &k.out }
func (k *interceptSession) Scratch() *[]byte                  { return &k.scratch }
func (k *interceptSession) TrimOut()                          { k.trimOut() }
func (k *interceptSession) TrimScratch()                      { k.trimScratch() }
func (k *interceptSession) Fatal() error                      { return k.fatal }
func (k *interceptSession) SetFatal(err error) error          { return k.setFatal(err) }
func (k *interceptSession) SetPrepared(id uint32)             { k.setPrepared(id) }
func (k *interceptSession) ForgetPrepared()                   { k.forgetPrepared() }

func (k *interceptSession) Ready() error {
	if err := k.exec.mayWait(); err != nil {
		return err
	}
	return k.fatal
}

func (k *interceptSession) RelayPacket() error {
	_, _, err := (*Session)(k).relayPacket()
	return err
}

func (k *interceptSession) RelayResponse(cursor bool) error {
	_, err := (*Session)(k).walk(walkRelay, cursor)
	return err
}

func (k *interceptSession) AwaitQuery() error {
	ok, err := (*Session)(k).awaitResponse(respResult, false)
	(*Session)(k).applyAfter(afterAction{kind: afterQuery}, ok)
	return err
}

func (k *interceptSession) Logger() *slog.Logger { return k.log }

func (k *interceptSession) Quit(code uint16, state, msg string) error {
	(*Session)(k).countErr(code)
	_ = k.c.WritePacket(wire.ErrPacket(code, state, msg))
	_ = k.c.Flush()
	return k.setFatal(errQuit)
}

func (k *interceptSession) Walk(kind int, collect bool) (intercept.Result, error) {
	var t respTracker
	t.Start(kind, false)
	mode := walkDiscard
	if collect {
		mode = walkCollect
	}
	r, err := (*Session)(k).walkFrom(&t, mode)
	return intercept.Result{OK: r.OK, Affected: r.Affected, InsertID: r.InsertID, Warnings: r.Warnings,
		Rows: r.Rows, Err: r.Err, Prep: t.Prep}, err
}

// client is the session's client side for the answers the proxy makes.
func (s *Session) client() intercept.Client {
	return intercept.Client{Leg: s.c, Status: s.status, Caps: s.caps, ExtCaps: s.extCaps, Out: &s.out}
}

// WriteOK answers the client's command with an OK packet carrying the
// backend's last status flags.
func (s *Session) WriteOK(affected, insertID uint64, warnings uint16) error {
	return s.setFatal(s.client().WriteOK(affected, insertID, warnings))
}

// WriteError answers the client's command with an ERR packet; the session
// stays usable.
func (s *Session) WriteError(code uint16, sqlState, msg string) error {
	return s.writeErrFlush(code, sqlState, msg)
}

// WriteResultSet answers with a text-protocol result of BIGINT columns
// (nil = NULL), for a COM_QUERY the proxy answers itself.
func (s *Session) WriteResultSet(cols []string, rows [][]*int64) error {
	defer s.trimOut()
	return s.setFatal(s.client().WriteInt64Result(cols, rows, false))
}

// WriteBinaryResultSet is WriteResultSet in the binary protocol, for a
// COM_STMT_EXECUTE the proxy answers itself (the statement must have been
// prepared on the backend with the same number of columns, so the client's
// statement metadata matches).
func (s *Session) WriteBinaryResultSet(cols []string, rows [][]*int64) error {
	defer s.trimOut()
	return s.setFatal(s.client().WriteInt64Result(cols, rows, true))
}

// WriteTextResultSet answers with a text-protocol result of VARCHAR
// (utf8mb4) columns, nil = NULL: for the proxy's own SHOW statements.
func (s *Session) WriteTextResultSet(cols []string, rows [][]*string) error {
	return s.setFatal(s.client().WriteTextResultSet(cols, rows))
}

// WriteRows answers the client's COM_QUERY with a text-protocol result set
// of typed columns (with their real MySQL types in the column definitions)
// and rows of Values, NULLs included. A value that does not match its
// column's type is a caller bug: nothing is written and an error says so.
func (s *Session) WriteRows(cols []wire.Column, rows [][]wire.Value) error {
	return s.writeRows(cols, rows, false)
}

// WriteBinaryRows is WriteRows in the binary protocol, for a
// COM_STMT_EXECUTE the proxy answers itself (the statement must have been
// prepared on the backend with columns of the same number and types, so
// the client's statement metadata matches).
func (s *Session) WriteBinaryRows(cols []wire.Column, rows [][]wire.Value) error {
	return s.writeRows(cols, rows, true)
}

func (s *Session) writeRows(cols []wire.Column, rows [][]wire.Value, binaryRows bool) error {
	if err := wire.CheckRows(cols, rows); err != nil {
		return err
	}
	defer s.trimOut()
	return s.setFatal(s.client().WriteRows(cols, rows, binaryRows))
}

// BackendExec runs a proxy-originated statement on the session's backend
// connection; nothing reaches the client. A backend ERR comes back as a
// *mysql.MyError and leaves the session usable. ctx's deadline bounds it.
func (s blocking) BackendExec(ctx context.Context, sql string) (affected, insertID uint64, err error) {
	return intercept.BackendExec(s.svc(), ctx, sql)
}

// BackendQuery runs a proxy-originated query and returns the first result
// set's rows as text (nil = SQL NULL). Meant for small results.
func (s blocking) BackendQuery(ctx context.Context, sql string) ([][]*string, error) {
	return intercept.BackendQuery(s.svc(), ctx, sql)
}

// BackendPrepare prepares sql on the session's backend connection for the
// interceptor's own use (a statement the client never sees); nothing
// reaches the client. A backend ERR comes back as a *mysql.MyError. Close
// it with BackendCloseStmt.
func (s blocking) BackendPrepare(ctx context.Context, sql string) (PrepareResult, error) {
	pr, err := intercept.BackendPrepare(s.svc(), ctx, sql)
	return PrepareResult(pr), err
}

// BackendCloseStmt closes a statement of the interceptor's own on the
// backend (COM_STMT_CLOSE has no response).
func (s blocking) BackendCloseStmt(id uint32) error { return intercept.BackendCloseStmt(s.svc(), id) }

// ExecuteResult sends pkt (an execute or bulk execute payload) to the
// backend and consumes its response without relaying it (intercept.ExecuteResult).
func (s blocking) ExecuteResult(pkt []byte) (ExecResult, error) {
	return intercept.ExecuteResult(s.svc(), pkt)
}

// RelayPrepareHidden is RelayPrepare for a text whose parameters include
// ones the client must not see (intercept.RelayPrepareHidden).
func (s blocking) RelayPrepareHidden(sql []byte, hidden []int, want int) (PrepareResult, error) {
	pr, err := intercept.RelayPrepareHidden(s.svc(), sql, hidden, want)
	return PrepareResult(pr), err
}

// RelayExecuteAfter pipelines the text statement pre and the execute pkt
// (intercept.RelayExecuteAfter).
func (s *Session) RelayExecuteAfter(pre, pkt []byte) error {
	return intercept.RelayExecuteAfter(s.svc(), pre, pkt)
}

// RelayQueryWriter is RelayQuery for a text of n bytes that src writes
// into the backend connection (intercept.RelayQueryWriter).
func (s blocking) RelayQueryWriter(n int, src io.WriterTo) error {
	return intercept.RelayQueryWriter(s.svc(), n, src)
}

// relayLocalFileVia streams the client's file to the backend through t
// (see RelayQueryInfile). The backend's request has gone to the client.
// A transformer's error is kept in s.infile.err; the returned error is the
// session's (a leg failed).
func (s *Session) relayLocalFileVia(t InfileTransformer) error {
	done, terr, err := intercept.RelayFile(s.c, s.b, t, &s.cmdSeq)
	if done {
		s.infile.fail(terr)
	}
	return err
}
