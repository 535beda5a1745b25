package proxy

import (
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// InfileTransformer rewrites the file a client sends for LOAD DATA LOCAL
// INFILE on its way to the backend (the engine's keys for a rule table).
// The proxy hands it the file's bytes in order, in pieces of a few KB
// whatever the client's packets, and sends what it returns, re-framed in
// packets of at most 64 KiB. Its memory is its own business; the proxy
// holds only one piece and what it returned for it.
type InfileTransformer interface {
	// Transform appends to dst what to send for p, the next bytes of the
	// file (p is valid only during the call). On an error the bytes it
	// returned are still sent, and must make the backend refuse the
	// statement; the rest of the client's file is read and dropped, the
	// backend's answer too, and the client gets the error instead.
	Transform(dst, p []byte) ([]byte, error)
	// Finish appends what remains once the client's file has ended (also
	// when the client sent none: a missing file, a refused request).
	Finish(dst []byte) ([]byte, error)
}

// infilePacket bounds the packets the proxy writes a transformed file in.
// (Below 16 MiB - 1: a packet of exactly that size would continue in the
// next, and the empty packet that ends the file would be taken for its
// end.)
const infilePacket = 64 << 10

// RelayQueryInfile is RelayQuery for a statement whose LOCAL INFILE file
// passes through t on its way to the backend. It waits for the whole
// exchange, so an event loop gets ErrWouldBlock before anything is sent.
// If t fails, the client gets t's error as the statement's answer (code
// and SQLSTATE as for an Interceptor's error) in place of the backend's.
// ok reports that the client got the backend's OK, which affected rows.
func (s blocking) RelayQueryInfile(sql []byte, t InfileTransformer) (affected uint64, ok bool, err error) {
	if err := s.exec.mayWait(); err != nil {
		return 0, false, err
	}
	s.infile.begin(t)
	s.out = append(append(s.out[:0], mysql.COM_QUERY), sql...)
	r, err := s.relayWalked(s.out)
	s.trimOut()
	terr := s.infile.end()
	if err != nil {
		return 0, false, err
	}
	if terr == nil {
		return r.affected, r.ok, nil
	}
	code, state, msg := errorFields(terr)
	s.log.Warn("LOAD DATA refused while its file streamed", "err", msg)
	return 0, false, s.writeErrFlush(code, state, msg)
}

// relayWalked relays the COM_QUERY pkt and its whole response on the
// session's goroutine, flushed, as relayQuery does there, and returns what
// the response said.
func (s *Session) relayWalked(pkt []byte) (walkResult, error) {
	if s.fatal != nil {
		return walkResult{}, s.fatal
	}
	a := s.queryAfter(pkt)
	if err := s.b.WriteCommand(pkt); err != nil {
		return walkResult{}, s.setFatal(err)
	}
	if err := s.b.FlushForResponse(); err != nil {
		return walkResult{}, s.setFatal(err)
	}
	r, err := s.walk(walkRelay, false)
	if err != nil {
		return r, s.setFatal(err)
	}
	s.applyAfter(a, r.ok)
	return r, s.setFatal(s.c.Flush())
}

// relayLocalFileVia streams the client's file to the backend through t
// (see RelayQueryInfile). The backend's request has gone to the client.
// A transformer's error is kept in s.infile.err; the returned error is the
// session's (a leg failed).
func (s *Session) relayLocalFileVia(t InfileTransformer) error {
	if err := s.c.Flush(); err != nil {
		return err
	}
	out := make([]byte, 0, 2*infilePacket)
	// send writes out's whole packets (all of it when final).
	send := func(final bool) error {
		sent := 0
		for len(out)-sent >= infilePacket || final && len(out) > sent {
			n := min(len(out)-sent, infilePacket)
			if err := wire.WriteHeader(s.b.W, n, s.b.Seq); err != nil {
				return s.b.Fail(err)
			}
			s.b.Seq++
			if _, err := s.b.W.Write(out[sent : sent+n]); err != nil {
				return s.b.Fail(err)
			}
			sent += n
		}
		out = out[:copy(out, out[sent:])]
		return nil
	}
	var terr error
	for cont := false; ; {
		n, err := s.c.ReadHeader()
		if err != nil {
			return err
		}
		s.cmdSeq = s.c.Seq // the client has sent; nothing of the answer has reached it
		if n == 0 && !cont {
			break // the empty packet that ends the file
		}
		cont = n == wire.MaxPayload // then an empty packet only ends this one
		for n > 0 {
			k := min(n, s.c.R.Size())
			p, err := s.c.R.Peek(k)
			if len(p) > 0 && terr == nil {
				out, terr = t.Transform(out, p)
			}
			_, _ = s.c.R.Discard(len(p))
			n -= len(p)
			if err != nil && n > 0 {
				return s.c.Fail(err)
			}
			if err := send(false); err != nil {
				return err
			}
		}
	}
	if terr == nil {
		out, terr = t.Finish(out)
	}
	if err := send(true); err != nil {
		return err
	}
	s.infile.fail(terr)
	if err := wire.WriteHeader(s.b.W, 0, s.b.Seq); err != nil {
		return s.b.Fail(err)
	}
	s.b.Seq++
	return s.b.Flush()
}
