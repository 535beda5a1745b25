package wire

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"net"
)

// The compressed protocol (CLIENT_COMPRESS) wraps the ordinary packet stream
// in frames: 3 bytes compressed length, 1 byte frame sequence id, 3 bytes
// uncompressed length (0: stored as is), then the (zlib) payload holding any
// number of ordinary packets or parts of them. The proxy speaks it on the
// client leg when the client asked for it, and then on that session's
// backend leg too (so the server's session reports what the client chose);
// each leg decompresses into the same packet stream, so the relay between
// them is unchanged. Such a session stays on its goroutine (an event loop
// relays raw bytes).

// minCompress: shorter frames are sent stored, as servers do.
const minCompress = 50

type CompConn struct {
	raw *bufio.Reader
	dst net.Conn
	seq uint8 // next frame sequence id to write; follows the last one read
	// asClient: the proxy is the client on this connection (the backend
	// leg), so each command starts a new frame sequence at 0.
	asClient bool

	// read state survives a read deadline in the middle of a frame
	hdrOK   bool
	clen    int
	ulen    int
	payload []byte
	filled  int
	plain   []byte // decompressed bytes not yet returned
	zr      io.ReadCloser
	one     [1]byte // readFrame's read past the end of the zlib stream
	zw      *zlib.Writer
	zbuf    bytes.Buffer
}

// Compress switches the leg to the compressed protocol; called right after
// the login OK, which itself travels uncompressed. asClient is true for the
// backend leg, where the proxy is the server's client. rsize and wsize
// are the sizes of the leg's new buffers (and of the frame reader's).
func (l *Leg) Compress(asClient bool, rsize, wsize int) {
	cc := &CompConn{raw: bufio.NewReaderSize(l.Conn, rsize), dst: l.Conn, asClient: asClient}
	l.Comp = cc
	l.R = bufio.NewReaderSize(cc, rsize)
	l.W = bufio.NewWriterSize(cc, wsize)
}

// NewCommand notes that a command starts on this leg: as the client, its
// first frame has sequence id 0, as the server expects of every command.
func (c *CompConn) NewCommand() {
	if c.asClient {
		c.seq = 0
	}
}

// Read returns decompressed bytes, reading the next frame when needed.
func (c *CompConn) Read(p []byte) (int, error) {
	for len(c.plain) == 0 {
		if err := c.readFrame(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.plain)
	c.plain = c.plain[n:]
	return n, nil
}

func (c *CompConn) readFrame() error {
	if !c.hdrOK {
		h, err := c.raw.Peek(7)
		if err != nil {
			return err
		}
		c.clen = int(h[0]) | int(h[1])<<8 | int(h[2])<<16
		c.seq = h[3] + 1
		c.ulen = int(h[4]) | int(h[5])<<8 | int(h[6])<<16
		_, _ = c.raw.Discard(7)
		c.hdrOK = true
		if cap(c.payload) < c.clen {
			c.payload = make([]byte, c.clen)
		}
		c.payload = c.payload[:c.clen]
		c.filled = 0
	}
	for c.filled < c.clen {
		n, err := c.raw.Read(c.payload[c.filled:])
		c.filled += n
		if err != nil {
			return err
		}
	}
	c.hdrOK = false
	if c.ulen == 0 {
		c.plain = c.payload
		return nil
	}
	if c.zr == nil {
		zr, err := zlib.NewReader(bytes.NewReader(c.payload))
		if err != nil {
			return fmt.Errorf("compressed frame: %w", err)
		}
		c.zr = zr
	} else if err := c.zr.(zlib.Resetter).Reset(bytes.NewReader(c.payload), nil); err != nil {
		return fmt.Errorf("compressed frame: %w", err)
	}
	out := make([]byte, c.ulen)
	if _, err := io.ReadFull(c.zr, out); err != nil {
		return fmt.Errorf("compressed frame: %w", err)
	}
	// Read the zlib stream to its end, which checks its Adler-32 sum, as
	// the server's uncompress() does: a frame decodable to the announced
	// length but with a wrong or missing sum, or more data, is corrupt.
	if n, err := c.zr.Read(c.one[:]); n != 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			err = fmt.Errorf("more than the announced %d bytes", c.ulen)
		}
		return fmt.Errorf("compressed frame: %w", err)
	}
	c.plain = out
	return nil
}

// Write sends p as one or more frames (the leg's bufio.Writer calls it once
// per flush or full buffer).
func (c *CompConn) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		chunk := p[:min(len(p), 1<<20)]
		p = p[len(chunk):]
		var frame []byte
		if len(chunk) < minCompress {
			frame = AppendFrameHeader(make([]byte, 0, 7+len(chunk)), len(chunk), c.seq, 0)
			frame = append(frame, chunk...)
		} else {
			c.zbuf.Reset()
			if c.zw == nil {
				c.zw = zlib.NewWriter(&c.zbuf)
			} else {
				c.zw.Reset(&c.zbuf)
			}
			_, _ = c.zw.Write(chunk)
			if err := c.zw.Close(); err != nil {
				return 0, err
			}
			frame = AppendFrameHeader(make([]byte, 0, 7+c.zbuf.Len()), c.zbuf.Len(), c.seq, len(chunk))
			frame = append(frame, c.zbuf.Bytes()...)
		}
		c.seq++
		if _, err := c.dst.Write(frame); err != nil {
			return 0, err
		}
	}
	return total, nil
}

func AppendFrameHeader(b []byte, clen int, seq uint8, ulen int) []byte {
	return append(b, byte(clen), byte(clen>>8), byte(clen>>16), seq, byte(ulen), byte(ulen>>8), byte(ulen>>16))
}
