package intercept

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// ExecResult is what the backend answered to an execute the proxy ran on
// the client's behalf without relaying it (OK fields, or the backend's ERR).
type ExecResult struct {
	Affected, InsertID uint64
	Warnings           uint16
	Err                *mysql.MyError
}

type proxyError string

func (e proxyError) Error() string { return string(e) }

// BackendExec runs a proxy-originated statement on the session's backend
// connection; nothing reaches the client. A backend ERR comes back as a
// *mysql.MyError and leaves the session usable. ctx's deadline bounds it.
func BackendExec(s Session, ctx context.Context, sql string) (affected, insertID uint64, err error) {
	if err := sendBackend(s, ctx, sql); err != nil {
		return 0, 0, err
	}
	defer clearDeadline(s, ctx)
	r := readResult(s, wire.RespResult, false)
	if err := s.Fatal(); err != nil {
		return 0, 0, err
	}
	if r.Err != nil {
		return 0, 0, r.Err
	}
	return r.Affected, r.InsertID, nil
}

// BackendQuery runs a proxy-originated query and returns the first result
// set's rows as text (nil = SQL NULL). Meant for small results.
func BackendQuery(s Session, ctx context.Context, sql string) ([][]*string, error) {
	if err := sendBackend(s, ctx, sql); err != nil {
		return nil, err
	}
	defer clearDeadline(s, ctx)
	r := readResult(s, wire.RespResult, true)
	if err := s.Fatal(); err != nil {
		return nil, err
	}
	if r.Err != nil {
		return r.Rows, r.Err
	}
	return r.Rows, nil
}

func sendBackend(s Session, ctx context.Context, sql string) error {
	if err := s.Ready(); err != nil {
		return err
	}
	_, b := s.Legs()
	if b == nil {
		return proxyError("leafproxy: no backend connection")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = b.Conn.SetDeadline(dl)
	}
	out := s.Out()
	*out = append(append((*out)[:0], mysql.COM_QUERY), sql...)
	err := b.WriteCommand(*out)
	s.TrimOut()
	if err == nil {
		err = b.Flush()
	}
	return s.SetFatal(err)
}

func clearDeadline(s Session, ctx context.Context) {
	if _, ok := ctx.Deadline(); ok && s.Fatal() == nil {
		_, b := s.Legs()
		_ = b.Conn.SetDeadline(time.Time{})
	}
}

// BackendPrepare prepares sql on the session's backend connection for the
// interceptor's own use (a statement the client never sees); nothing
// reaches the client. A backend ERR comes back as a *mysql.MyError. Close
// it with BackendCloseStmt.
func BackendPrepare(s Session, ctx context.Context, sql string) (wire.PrepareInfo, error) {
	if err := s.Ready(); err != nil {
		return wire.PrepareInfo{}, err
	}
	_, b := s.Legs()
	if dl, ok := ctx.Deadline(); ok {
		_ = b.Conn.SetDeadline(dl)
	}
	defer clearDeadline(s, ctx)
	if err := writePrepare(s, b, sql); err != nil {
		return wire.PrepareInfo{}, s.SetFatal(err)
	}
	r, err := s.Walk(wire.RespPrepare, false)
	if err != nil {
		return wire.PrepareInfo{}, s.SetFatal(err)
	}
	if r.Err != nil {
		return wire.PrepareInfo{}, r.Err
	}
	return r.Prep, nil
}

// BackendCloseStmt closes a statement of the interceptor's own on the
// backend (COM_STMT_CLOSE has no response).
func BackendCloseStmt(s Session, id uint32) error {
	if err := s.Ready(); err != nil {
		return err
	}
	_, b := s.Legs()
	return s.SetFatal(closeStmt(b, id))
}

// closeStmt sends COM_STMT_CLOSE of id and flushes.
func closeStmt(b *wire.Leg, id uint32) error {
	var cl [5]byte
	cl[0] = mysql.COM_STMT_CLOSE
	binary.LittleEndian.PutUint32(cl[1:], id)
	if err := b.WriteCommand(cl[:]); err != nil {
		return err
	}
	return b.Flush()
}

// ExecuteResult sends pkt (an execute or bulk execute payload) to the
// backend and consumes its response without relaying it, returning the
// outcome (OK fields or the backend's ERR) for the caller to answer with,
// e.g. an OK with another insert id. A result set in the answer is dropped.
func ExecuteResult(s Session, pkt []byte) (ExecResult, error) {
	if err := s.Ready(); err != nil {
		return ExecResult{}, err
	}
	_, b := s.Legs()
	if err := b.WriteCommand(pkt); err != nil {
		return ExecResult{}, s.SetFatal(err)
	}
	if err := b.FlushForResponse(); err != nil {
		return ExecResult{}, s.SetFatal(err)
	}
	r := readResult(s, wire.RespResult, false)
	if err := s.Fatal(); err != nil {
		return ExecResult{}, err
	}
	return ExecResult{Affected: r.Affected, InsertID: r.InsertID, Warnings: r.Warnings, Err: r.Err}, nil
}

// writePrepare sends COM_STMT_PREPARE of sql on the backend leg b, built
// in the session's out buffer, and flushes it for the answer.
func writePrepare[T string | []byte](s Session, b *wire.Leg, sql T) error {
	out := s.Out()
	*out = append(append((*out)[:0], mysql.COM_STMT_PREPARE), sql...)
	err := b.WriteCommand(*out)
	s.TrimOut()
	if err == nil {
		err = b.FlushForResponse()
	}
	return err
}
