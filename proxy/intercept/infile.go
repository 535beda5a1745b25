package intercept

import "github.com/leafproxy/leafproxy/proxy/wire"

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

// RelayFile streams the client's LOCAL INFILE file from leg c to leg b
// through t (the backend's request has gone to the client). cmdSeq is
// the session's record of the client leg's sequence id once the client
// has sent (set at each packet of the file). done: the whole file went,
// and terr is the transformer's error (the client gets it as the
// statement's answer); err is the session's (a leg failed).
func RelayFile(c, b *wire.Leg, t InfileTransformer, cmdSeq *uint8) (done bool, terr, err error) {
	if err := c.Flush(); err != nil {
		return false, nil, err
	}
	out := make([]byte, 0, 2*infilePacket)
	// send writes out's whole packets (all of it when final).
	send := func(final bool) error {
		sent := 0
		for len(out)-sent >= infilePacket || final && len(out) > sent {
			n := min(len(out)-sent, infilePacket)
			if err := wire.WriteHeader(b.W, n, b.Seq); err != nil {
				return b.Fail(err)
			}
			b.Seq++
			if _, err := b.W.Write(out[sent : sent+n]); err != nil {
				return b.Fail(err)
			}
			sent += n
		}
		out = out[:copy(out, out[sent:])]
		return nil
	}
	for cont := false; ; {
		n, err := c.ReadHeader()
		if err != nil {
			return false, nil, err
		}
		*cmdSeq = c.Seq // the client has sent; nothing of the answer has reached it
		if n == 0 && !cont {
			break // the empty packet that ends the file
		}
		cont = n == wire.MaxPayload // then an empty packet only ends this one
		for n > 0 {
			k := min(n, c.R.Size())
			p, err := c.R.Peek(k)
			if len(p) > 0 && terr == nil {
				out, terr = t.Transform(out, p)
			}
			_, _ = c.R.Discard(len(p))
			n -= len(p)
			if err != nil && n > 0 {
				return false, nil, c.Fail(err)
			}
			if err := send(false); err != nil {
				return false, nil, err
			}
		}
	}
	if terr == nil {
		out, terr = t.Finish(out)
	}
	if err := send(true); err != nil {
		return false, nil, err
	}
	if err := wire.WriteHeader(b.W, 0, b.Seq); err != nil {
		return true, terr, b.Fail(err)
	}
	b.Seq++
	return true, terr, b.Flush()
}
