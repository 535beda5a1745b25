package intercept

import (
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Statements with parameters the client does not know about: an
// interceptor may prepare a text with extra ? markers (generated values it
// binds itself at every execute) and rewrite each COM_STMT_EXECUTE,
// COM_STMT_SEND_LONG_DATA and COM_STMT_BULK_EXECUTE to carry them.

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
func RelayPrepareHidden(s Session, sql []byte, hidden []int, want int) (wire.PrepareInfo, error) {
	if err := s.Ready(); err != nil {
		return wire.PrepareInfo{}, err // the caller needs the answer now
	}
	c, _ := s.Legs()
	p, err := sendHiddenPrepare(s, sql)
	if err != nil {
		return wire.PrepareInfo{}, s.SetFatal(err)
	}
	if wire.IsErr(p) {
		s.ForgetPrepared()
		if err := c.WritePacket(p); err != nil {
			return wire.PrepareInfo{}, s.SetFatal(err)
		}
		return wire.PrepareInfo{}, s.SetFatal(c.Flush())
	}
	if !wire.IsOK(p, len(p)) || len(p) < 9 {
		return wire.PrepareInfo{}, s.SetFatal(&wire.IOError{Leg: "backend", Err: fmt.Errorf("protocol: bad prepare response")})
	}
	pr := wire.PrepareInfo{
		OK:      true,
		StmtID:  binary.LittleEndian.Uint32(p[1:5]),
		Columns: binary.LittleEndian.Uint16(p[5:7]),
		Params:  binary.LittleEndian.Uint16(p[7:9]),
	}
	if int(pr.Params) != want || len(hidden) > want {
		if err := dropHiddenPrepare(s, pr); err != nil {
			return wire.PrepareInfo{}, s.SetFatal(err)
		}
		s.ForgetPrepared()
		return wire.PrepareInfo{}, &ParamCountError{Got: int(pr.Params), Want: want}
	}
	visible := int(pr.Params) - len(hidden)
	binary.LittleEndian.PutUint16(p[7:9], uint16(visible))
	if err := c.WritePacket(p); err != nil {
		return wire.PrepareInfo{}, s.SetFatal(err)
	}
	s.SetPrepared(pr.StmtID)
	if err := relayHiddenDefs(s, pr, hidden, visible); err != nil {
		return wire.PrepareInfo{}, s.SetFatal(err)
	}
	s.TrimScratch()
	pr.Params = uint16(visible)
	return pr, s.SetFatal(c.Flush())
}

// sendHiddenPrepare sends COM_STMT_PREPARE of sql to the backend and reads
// the first packet of its answer (into the scratch buffer).
func sendHiddenPrepare(s Session, sql []byte) ([]byte, error) {
	_, b := s.Legs()
	if err := writePrepare(s, b, sql); err != nil {
		return nil, err
	}
	scratch := s.Scratch()
	p, err := b.ReadPacket(*scratch, 1<<24)
	*scratch = p
	return p, err
}

// dropHiddenPrepare reads the rest of the backend's prepare OK for pr (its
// definitions) and closes the statement (no response), none of it
// relayed.
func dropHiddenPrepare(s Session, pr wire.PrepareInfo) error {
	_, b := s.Legs()
	scratch := s.Scratch()
	var err error
	for _, cnt := range []int{int(pr.Params), int(pr.Columns)} {
		for i := 0; cnt > 0 && i <= cnt; i++ {
			if *scratch, err = b.ReadPacket(*scratch, 1<<24); err != nil {
				return err
			}
		}
	}
	return closeStmt(b, pr.StmtID)
}

// relayHiddenDefs relays the definitions after the prepare OK for pr: the
// parameters' without the hidden ones (and without their EOF when no
// parameter is left visible), then the columns'.
func relayHiddenDefs(s Session, pr wire.PrepareInfo, hidden []int, visible int) error {
	_, b := s.Legs()
	scratch := s.Scratch()
	var err error
	if pr.Params > 0 {
		h := 0
		for i := 0; i <= int(pr.Params); i++ { // definitions, then EOF
			drop := (h < len(hidden) && hidden[h] == i) || (i == int(pr.Params) && visible == 0)
			if !drop {
				if err := s.RelayPacket(); err != nil {
					return err
				}
				continue
			}
			if h < len(hidden) && hidden[h] == i {
				h++
			}
			if *scratch, err = b.ReadPacket(*scratch, 1<<24); err != nil {
				return err
			}
		}
	}
	if pr.Columns > 0 {
		for i := 0; i <= int(pr.Columns); i++ {
			if err := s.RelayPacket(); err != nil {
				return err
			}
		}
	}
	return nil
}
