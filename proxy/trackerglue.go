package proxy

import (
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// The response state machine is package wire's (wire.RespTracker); the
// session is what it tells about the backend session (respFacts).

type respTracker = wire.RespTracker

func executeCursor(pkt []byte) bool { return wire.ExecuteCursor(pkt) }

// respFacts is the session as a response's tracker sees it: where the
// status flags and the statement prepared last are recorded.
type respFacts Session

func (s *Session) facts() *respFacts { return (*respFacts)(s) }

func (f *respFacts) SetStatus(st uint16)   { f.setStatus(st) }
func (f *respFacts) SetPrepared(id uint32) { f.setPrepared(id) }
func (f *respFacts) ForgetPrepared()       { f.forgetPrepared() }
func (f *respFacts) LocalFiles() bool      { return f.caps&mysql.CLIENT_LOCAL_FILES != 0 }
