package relay

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Session is what the walker cannot do itself: what the session does with
// an ERR it relayed, and a LOCAL INFILE. Called only on those packets.
type Session interface {
	// RelayedErr is told of an ERR packet (head: its first bytes) relayed
	// to the client.
	RelayedErr(head []byte)
	// LocalFile carries the client's file of a LOCAL INFILE the backend
	// asked for (the request relayed to the client). discard: the rest of
	// the response is read and dropped (the client gets an error of the
	// proxy's instead).
	LocalFile() (discard bool, err error)
}

// Walker is a response as the session's goroutine walks it: the session's
// two legs, its buffers, the insert id override of the response's first
// OK, and the session for the rest. A value the session makes for each
// walk (package proxy's walker), over its own fields.
type Walker struct {
	C, B    *wire.Leg // client, backend
	Head    *[wire.HeadLen]byte
	Scratch *[]byte // the packets read whole (Discard, Collect)
	OKBuf   *[]byte // the OK rewritten with an insert id
	// OKID, when not 0 or with OKReport, replaces the insert id 0 of the
	// next response's first OK packet (RelayQueryInsertID), or, OKReport
	// set, that of any OK (an AnswerWatcher's verdict). Spent by the next
	// first packet.
	OKID     *uint64
	OKReport *bool
	// OKIDs, when set, is OKID for each result of a multi-statement text
	// in turn (RelayQueryInsertIDs).
	OKIDs   []uint64
	Facts   wire.RespObserver
	Session Session
}

// How Walk treats the response's packets.
const (
	Relay   = iota // stream each packet to the client
	Discard        // read and drop (a proxy-originated statement)
	Collect        // read, keeping the first result set's rows as text
)

// Result is what a walked response said.
type Result struct {
	OK                 bool // the first packet was OK
	Affected, InsertID uint64
	Warnings           uint16
	Rows               [][]*string
	Err                *mysql.MyError // the backend answered ERR
	// Relayed: the response reached the client (Relay, not respNone,
	// and not discarded after a LOCAL INFILE that failed).
	Relayed bool
}

// Walk reads the rest of the response t is tracking: all of it, or what
// an event loop left when it handed the session back mid-response.
// Relaying streams packets without holding them, the other modes read
// them whole (proxy-originated statements, small).
func (w *Walker) Walk(t *wire.RespTracker, mode int) (Result, error) {
	var r Result
	for !t.Done() {
		var head []byte
		var n int
		var err error
		if mode == Relay {
			if t.AtFirst() && w.OKIDs != nil && t.Results < len(w.OKIDs) {
				*w.OKID = w.OKIDs[t.Results] // RelayQueryInsertIDs
			}
			head, n, err = w.Packet()
		} else {
			head, err = w.B.ReadPacket(*w.Scratch, 1<<30)
			*w.Scratch, n = head, len(head)
		}
		if err != nil {
			return r, err
		}
		ev, err := t.Step(w.Facts, head, n)
		if err != nil {
			return r, err
		}
		switch ev {
		case wire.EvErr:
			if mode != Relay {
				r.Err = wire.ParseErr(head)
			} else {
				w.Session.RelayedErr(head)
			}
		case wire.EvRow:
			if mode == Collect {
				row, err := TextRow(head, t.Cols())
				if err != nil {
					return r, err
				}
				r.Rows = append(r.Rows, row)
			}
		case wire.EvInfile:
			if mode != Relay {
				return r, ProtocolError("LOCAL INFILE request although CLIENT_LOCAL_FILES is off")
			}
			discard, err := w.Session.LocalFile()
			if err != nil {
				return r, err
			}
			if discard {
				mode = Discard // the client gets the transformer's error instead
			}
		}
	}
	r.Relayed = mode == Relay && t.Kind != wire.RespNone
	r.OK, r.Affected, r.InsertID, r.Warnings = t.OK, t.Affected, t.InsertID, t.Warnings
	return r, nil
}

// Packet streams one logical backend packet to the client, renumbered
// for the client leg, and returns its first bytes (valid until the next
// call) and its length. Nothing beyond wire.HeadLen bytes is held.
func (w *Walker) Packet() (head []byte, total int, err error) {
	for first := true; ; first = false {
		n, err := w.B.ReadHeader()
		if err != nil {
			return nil, 0, err
		}
		if first && (*w.OKID != 0 || *w.OKReport) {
			if head, total, ok, err := w.okWithInsertID(n); ok || err != nil {
				return head, total, err
			}
		}
		if first {
			p, err := w.B.R.Peek(min(n, wire.HeadLen))
			if err != nil {
				return nil, 0, w.B.Fail(err)
			}
			head = w.Head[:copy(w.Head[:], p)]
		}
		if err := wire.WriteHeader(w.C.W, n, w.C.Seq); err != nil {
			return nil, 0, w.C.Fail(err)
		}
		w.C.Seq++
		if err := w.B.CopyTo(w.C, n); err != nil {
			return nil, 0, err
		}
		total += n
		if n < wire.MaxPayload {
			return head, total, nil
		}
	}
}

// okWithInsertID relays the response's first packet, of n bytes (its
// header read), when it is an OK with affected rows and insert id 0, with
// OKID as its insert id instead (RelayQueryInsertID), or, OKReport set,
// any OK with OKID as its insert id (an AnswerWatcher's OKVerdict); ok
// false: it is not, and nothing was consumed. The override is spent
// either way.
func (w *Walker) okWithInsertID(n int) (head []byte, total int, ok bool, err error) {
	id, report := *w.OKID, *w.OKReport
	*w.OKID, *w.OKReport = 0, false
	if n >= 1024 {
		return nil, 0, false, nil
	}
	p, perr := w.B.R.Peek(n)
	if perr != nil || len(p) < 7 || p[0] != 0x00 {
		return nil, 0, false, nil
	}
	affected, k1 := wire.LenencUint(p[1:])
	insertID, k2 := wire.LenencUint(p[1+k1:])
	if k1 == 0 || k2 == 0 || !report && (affected == 0 || insertID != 0) {
		return nil, 0, false, nil
	}
	out := wire.OKWithInsertID((*w.OKBuf)[:0], p, id)
	*w.OKBuf = out
	_, _ = w.B.R.Discard(n)
	if err := wire.WriteHeader(w.C.W, len(out), w.C.Seq); err != nil {
		return nil, 0, true, w.C.Fail(err)
	}
	w.C.Seq++
	if _, err := w.C.W.Write(out); err != nil {
		return nil, 0, true, w.C.Fail(err)
	}
	return w.Head[:copy(w.Head[:], out)], len(out), true, nil
}

// ProtocolError is the backend's failure to speak the protocol.
func ProtocolError(format string, a ...any) error {
	return &wire.IOError{Leg: "backend", Err: fmt.Errorf("protocol: "+format, a...)}
}

// TextRow decodes a text-protocol row (nil = SQL NULL).
func TextRow(p []byte, cols uint64) ([]*string, error) {
	row := make([]*string, 0, cols)
	for pos := 0; pos < len(p) && len(row) < int(cols); {
		if p[pos] == 0xFB {
			row = append(row, nil)
			pos++
			continue
		}
		l, n := wire.LenencUint(p[pos:])
		if n == 0 || pos+n+int(l) > len(p) {
			return nil, ProtocolError("bad text row")
		}
		v := string(p[pos+n : pos+n+int(l)])
		row = append(row, &v)
		pos += n + int(l)
	}
	return row, nil
}

// LocalFile carries LOAD DATA LOCAL INFILE: the backend's request has
// gone to the client c; the client's file arrives as packets ending with
// an empty one, each streamed on to the backend b as it comes. *cmdSeq
// is set to c's sequence id as each arrives (the client has sent; nothing
// of the answer has reached it). (A statement the interceptor sent with
// RelayQueryInfile has its file go through its transformer instead:
// intercept.RelayFile.)
func LocalFile(c, b *wire.Leg, cmdSeq *uint8) error {
	if err := c.Flush(); err != nil {
		return err
	}
	for {
		n, err := c.ReadHeader()
		if err != nil {
			return err
		}
		*cmdSeq = c.Seq
		if err := wire.WriteHeader(b.W, n, b.Seq); err != nil {
			return b.Fail(err)
		}
		b.Seq++
		if err := c.CopyTo(b, n); err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	return b.Flush()
}
