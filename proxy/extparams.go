package proxy

import (
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Statements with parameters the client does not know about: an
// interceptor may prepare a text with extra ? markers (generated values it
// binds itself at every execute) and rewrite each COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA
// and COM_STMT_BULK_EXECUTE to carry them.

// StmtDataInterceptor is an optional extension of Interceptor for such
// statements: when the installed Interceptor implements it, the core
// consults it before relaying the two statement commands that have no
// response. Neither may write to the client.
type StmtDataInterceptor interface {
	// SendLongData sees a COM_STMT_SEND_LONG_DATA payload (command byte
	// first; pkt[1:5] statement id, pkt[5:7] parameter index), valid only
	// during the call, and may rewrite it in place (the parameter index)
	// before it is relayed.
	SendLongData(s *Session, stmtID uint32, pkt []byte)
	// StmtReset runs before a COM_STMT_RESET is relayed (the server drops
	// the statement's long data).
	StmtReset(s *Session, stmtID uint32)
}

// ParamCountError is what RelayPrepareHidden returns when the backend's
// statement has another parameter count than the caller expected: nothing
// was relayed and the backend statement is closed. It goes to the client as
// ERR 1235; the session stays usable.
type ParamCountError struct{ Got, Want int }

func (e *ParamCountError) Error() string {
	return fmt.Sprintf("leafproxy: the server counts %d parameters in the rewritten statement, the proxy %d; this statement cannot get generated values as parameters", e.Got, e.Want)
}
func (e *ParamCountError) Code() uint16     { return mysql.ER_NOT_SUPPORTED_YET }
func (e *ParamCountError) SQLState() string { return "42000" }

// RelayPrepareHidden is RelayPrepare for a text whose parameters include
// ones the client must not see: hidden lists their indexes among the
// backend statement's parameters, ascending, and want is the backend
// statement's parameter count. The client gets the prepare OK with the
// count lowered by len(hidden) and without their definitions (and without
// the parameters' EOF when none is left). The result's Params is the count
// the client sees. When the backend counts other than want parameters the
// statement is closed on the backend, nothing reaches the client and a
// *ParamCountError is returned.
func (s blocking) RelayPrepareHidden(sql []byte, hidden []int, want int) (PrepareResult, error) {
	if err := s.exec.mayWait(); err != nil {
		return PrepareResult{}, err // the caller needs the answer now
	}
	if s.fatal != nil {
		return PrepareResult{}, s.fatal
	}
	p, err := s.sendHiddenPrepare(sql)
	if err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	if wire.IsErr(p) {
		s.forgetPrepared()
		if err := s.c.WritePacket(p); err != nil {
			return PrepareResult{}, s.setFatal(err)
		}
		return PrepareResult{}, s.setFatal(s.c.Flush())
	}
	if !wire.IsOK(p, len(p)) || len(p) < 9 {
		return PrepareResult{}, s.setFatal(protocolError("bad prepare response"))
	}
	pr := PrepareResult{
		OK:      true,
		StmtID:  binary.LittleEndian.Uint32(p[1:5]),
		Columns: binary.LittleEndian.Uint16(p[5:7]),
		Params:  binary.LittleEndian.Uint16(p[7:9]),
	}
	if int(pr.Params) != want || len(hidden) > want {
		if err := s.dropHiddenPrepare(pr); err != nil {
			return PrepareResult{}, s.setFatal(err)
		}
		s.forgetPrepared()
		return PrepareResult{}, &ParamCountError{Got: int(pr.Params), Want: want}
	}
	visible := int(pr.Params) - len(hidden)
	binary.LittleEndian.PutUint16(p[7:9], uint16(visible))
	if err := s.c.WritePacket(p); err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	s.setPrepared(pr.StmtID)
	if err := s.relayHiddenDefs(pr, hidden, visible); err != nil {
		return PrepareResult{}, s.setFatal(err)
	}
	s.trimScratch()
	pr.Params = uint16(visible)
	return pr, s.setFatal(s.c.Flush())
}

// sendHiddenPrepare sends COM_STMT_PREPARE of sql to the backend and reads
// the first packet of its answer (into s.scratch).
func (s blocking) sendHiddenPrepare(sql []byte) ([]byte, error) {
	s.out = append(append(s.out[:0], mysql.COM_STMT_PREPARE), sql...)
	err := s.b.WriteCommand(s.out)
	s.trimOut()
	if err == nil {
		err = s.b.FlushForResponse()
	}
	if err != nil {
		return nil, err
	}
	p, err := s.b.ReadPacket(s.scratch, 1<<24)
	s.scratch = p
	return p, err
}

// dropHiddenPrepare reads the rest of the backend's prepare OK for pr (its
// definitions) and closes the statement (no response), none of it
// relayed.
func (s blocking) dropHiddenPrepare(pr PrepareResult) error {
	var err error
	for _, cnt := range []int{int(pr.Params), int(pr.Columns)} {
		for i := 0; cnt > 0 && i <= cnt; i++ {
			if s.scratch, err = s.b.ReadPacket(s.scratch, 1<<24); err != nil {
				return err
			}
		}
	}
	var cl [5]byte
	cl[0] = mysql.COM_STMT_CLOSE
	binary.LittleEndian.PutUint32(cl[1:], pr.StmtID)
	if err := s.b.WriteCommand(cl[:]); err != nil {
		return err
	}
	return s.b.Flush()
}

// relayHiddenDefs relays the definitions after the prepare OK for pr: the
// parameters' without the hidden ones (and without their EOF when no
// parameter is left visible), then the columns'.
func (s blocking) relayHiddenDefs(pr PrepareResult, hidden []int, visible int) error {
	var err error
	if pr.Params > 0 {
		h := 0
		for i := 0; i <= int(pr.Params); i++ { // definitions, then EOF
			drop := (h < len(hidden) && hidden[h] == i) || (i == int(pr.Params) && visible == 0)
			if !drop {
				if _, _, err := s.relayPacket(); err != nil {
					return err
				}
				continue
			}
			if h < len(hidden) && hidden[h] == i {
				h++
			}
			if s.scratch, err = s.b.ReadPacket(s.scratch, 1<<24); err != nil {
				return err
			}
		}
	}
	if pr.Columns > 0 {
		for i := 0; i <= int(pr.Columns); i++ {
			if _, _, err := s.relayPacket(); err != nil {
				return err
			}
		}
	}
	return nil
}

// ExecuteResult sends pkt (an execute or bulk execute payload) to the
// backend and consumes its response without relaying it, returning the
// outcome (OK fields or the backend's ERR) for the caller to answer with,
// e.g. an OK with another insert id. A result set in the answer is dropped.
func (s blocking) ExecuteResult(pkt []byte) (ExecResult, error) {
	if err := s.exec.mayWait(); err != nil {
		return ExecResult{}, err
	}
	if s.fatal != nil {
		return ExecResult{}, s.fatal
	}
	if err := s.b.WriteCommand(pkt); err != nil {
		return ExecResult{}, s.setFatal(err)
	}
	if err := s.b.FlushForResponse(); err != nil {
		return ExecResult{}, s.setFatal(err)
	}
	r := s.readBackendResult(walkDiscard)
	if s.fatal != nil {
		return ExecResult{}, s.fatal
	}
	return ExecResult{Affected: r.affected, InsertID: r.insertID, Warnings: r.warnings, Err: r.err}, nil
}
