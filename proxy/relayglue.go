package proxy

import (
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/relay"
)

// The response relay on the session's goroutine (the walker over a
// response's packets) and an AnswerWatcher's verdicts are package relay's;
// the session hands the walker its legs and buffers (walker) and hears of
// an ERR relayed and a LOCAL INFILE (relaySession).

// AnswerWatcher watches the backend's answer to a statement an
// interceptor relays (relay.AnswerWatcher).
type AnswerWatcher = relay.AnswerWatcher

// ErrVerdict is what an AnswerWatcher decides about an ERR.
type ErrVerdict = relay.ErrVerdict

// OKVerdict is what an AnswerWatcher decides about an OK.
type OKVerdict = relay.OKVerdict

// BaseAnswerWatcher relays the answer as it is; embed it and override
// what you need.
type BaseAnswerWatcher = relay.BaseAnswerWatcher

// maxRetryErr bounds the ERR packet a watcher is asked about.
const maxRetryErr = relay.MaxWatchedErr

// How walk treats the response's packets (relay.Relay, ...).
const (
	walkRelay   = relay.Relay
	walkDiscard = relay.Discard
	walkCollect = relay.Collect
)

// backendResult is what a response read and dropped said
// (readBackendResult).
type backendResult struct {
	ok  bool           // the first packet was OK
	err *mysql.MyError // the backend answered ERR
}

// walker is the walker over s's next response.
func (s *Session) walker() relay.Walker {
	return relay.Walker{C: s.c, B: s.b, Head: &s.head, Scratch: &s.scratch, OKBuf: &s.okBuf,
		OKID: &s.okInsertID, OKReport: &s.okReport, OKIDs: s.okInsertIDs,
		Facts: s.facts(), Session: (*relaySession)(s)}
}

// walk follows one response to a query or execute (relay.Walker.Walk).
// cursor: an execute that opened a cursor ends after the definitions.
func (s *Session) walk(mode int, cursor bool) (relay.Result, error) {
	var t respTracker
	kind := respResult
	if cursor {
		kind = respExecute
	}
	t.Start(kind, cursor)
	return s.walkFrom(&t, mode)
}

// walkFrom reads the rest of the response t is tracking: all of it, or
// what an event loop left when it handed the session back mid-response.
func (s *Session) walkFrom(t *respTracker, mode int) (relay.Result, error) {
	defer s.trimScratch()
	w := s.walker()
	r, err := w.Walk(t, mode)
	if r.Relayed {
		s.markRelayed() // the command is timed when it ends (endCommand)
	}
	return r, err
}

// relayPacket streams one logical backend packet to the client
// (relay.Walker.Packet).
func (s *Session) relayPacket() (head []byte, total int, err error) {
	w := s.walker()
	return w.Packet()
}

// relayLocalFile carries LOAD DATA LOCAL INFILE (relay.LocalFile).
func (s *Session) relayLocalFile() error { return relay.LocalFile(s.c, s.b, &s.cmdSeq) }

// relaySession is the session as the walker sees it (relay.Session).
type relaySession Session

func (r *relaySession) RelayedErr(head []byte) { (*Session)(r).relayedErr(head) }

// LocalFile: a statement the interceptor sent with RelayQueryInfile has
// its file go through its transformer (infile.go); a failure of the
// transformer has the rest of the response dropped.
func (r *relaySession) LocalFile() (discard bool, err error) {
	s := (*Session)(r)
	if s.infile.t == nil {
		return false, s.relayLocalFile()
	}
	if err := s.relayLocalFileVia(s.infile.t); err != nil {
		return false, err
	}
	return s.infile.err != nil, nil
}
