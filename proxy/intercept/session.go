package intercept

import (
	"log/slog"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Session is what this package needs of a session (package proxy's
// *Session, through proxy/interceptglue.go): its two legs and reusable
// buffers, its fatal error, and the response walker's reads of a whole
// response and relay of one packet.
type Session interface {
	// Legs are the client's and the backend's (nil before a backend login).
	Legs() (client, backend *wire.Leg)
	// Out and Scratch are the session's reusable command and read buffers;
	// TrimOut and TrimScratch drop them once they grew too large.
	Out() *[]byte
	Scratch() *[]byte
	TrimOut()
	TrimScratch()
	// Ready is ErrWouldBlock on an event loop, else the session's fatal
	// error (nil: a statement may be sent).
	Ready() error
	// Fatal is the error that ends the session, if any; SetFatal records
	// err (when not nil and none is yet) and returns it.
	Fatal() error
	SetFatal(err error) error
	// Walk reads a whole response of kind (wire.RespResult, ...) from the
	// backend without relaying it; collect: keeping the first result
	// set's rows as text. A backend ERR is in the result's Err.
	Walk(kind int, collect bool) (Result, error)
	// RelayPacket streams one backend packet to the client;
	// RelayResponse, a whole response to an execute (cursor: one that
	// opened a cursor); AwaitQuery, the response to a COM_QUERY sent,
	// following the backend session as a relayed query does.
	RelayPacket() error
	RelayResponse(cursor bool) error
	AwaitQuery() error
	// Logger is the session's; Quit answers the client's command with an
	// ERR (counted) and ends the session.
	Logger() *slog.Logger
	Quit(code uint16, state, msg string) error
	// SetPrepared and ForgetPrepared record the statement the client last
	// prepared.
	SetPrepared(id uint32)
	ForgetPrepared()
}

// Result is what a walked response said.
type Result struct {
	OK                 bool // the first packet was OK
	Affected, InsertID uint64
	Warnings           uint16
	Rows               [][]*string
	Err                *mysql.MyError   // the backend answered ERR
	Prep               wire.PrepareInfo // a prepare's answer
}

// readResult consumes a whole response from the backend without relaying
// it. I/O and protocol failures are fatal; a backend ERR is in the
// result's Err.
func readResult(s Session, kind int, collect bool) Result {
	r, err := s.Walk(kind, collect)
	if err != nil {
		s.SetFatal(err)
	}
	return r
}
