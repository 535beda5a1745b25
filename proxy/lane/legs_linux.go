package lane

import (
	"bufio"
	"io"
	"net"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// The legs a session's goroutine takes back from a lane (HandBack): over
// the sockets the lane used, reading first what the lane had read ahead.

// LegOver is a leg on c whose reads return prefix first, with a writer from
// writers (package proxy's pools, which idle sessions give theirs back to).
func LegOver(name string, c net.Conn, prefix []byte, rsize int, writers interface{ Get() any }) *wire.Leg {
	l := &wire.Leg{Conn: c, RW: wire.LegIO(c), Name: name}
	if len(prefix) > 0 {
		l.RW = &PrefixRW{Prefix: prefix, ReadWriter: l.RW}
	}
	l.R = bufio.NewReaderSize(l.RW, rsize)
	l.W = writers.Get().(*bufio.Writer)
	l.W.Reset(l.RW)
	if len(prefix) > 0 {
		_, _ = l.R.Peek(1) // Buffered() now says something is there
	}
	return l
}

// PrefixRW reads Prefix before the connection (bytes a loop read ahead,
// which the session's goroutine reads first, or hands to its next lane).
type PrefixRW struct {
	Prefix []byte
	io.ReadWriter
}

func (p *PrefixRW) Read(b []byte) (int, error) {
	if len(p.Prefix) > 0 {
		n := copy(b, p.Prefix)
		p.Prefix = p.Prefix[n:]
		return n, nil
	}
	return p.ReadWriter.Read(b)
}
