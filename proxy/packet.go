package proxy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// maxPayload is the largest payload one physical packet carries; a logical
// packet of this size or more continues in the next physical packet.
const maxPayload = 1<<24 - 1

// headLen is how much of a response packet the relay keeps to classify it:
// enough for an OK packet up to its status flags (1 + 9 + 9 + 2 + 2).
const headLen = 32

// errSequence means the peer broke the protocol; the session cannot continue.
type errSequence struct{ got, want uint8 }

func (e errSequence) Error() string {
	return fmt.Sprintf("packet sequence id %d, expected %d", e.got, e.want)
}

// leg is one side of a session (client or backend): its own buffered
// reader/writer and its own sequence id, as the protocol requires.
type leg struct {
	conn net.Conn
	rw   io.ReadWriter // what the buffers use: conn, or a rawIO over it
	r    *bufio.Reader
	w    *bufio.Writer
	seq  uint8
	name string    // "client" or "backend", for errors
	comp *compConn // non-nil once the leg speaks the compressed protocol
	// noHold: the next flushForResponse writes at once (Session.unpark).
	noHold bool
}

// grow gives a logged-in leg its full-size buffers (the handshake used
// small ones); bytes already buffered are kept.
func (l *leg) grow(rsize, wsize int) {
	if l.r.Buffered() == 0 {
		l.r = bufio.NewReaderSize(l.rw, rsize)
	}
	if l.w.Buffered() == 0 {
		l.w = bufio.NewWriterSize(l.rw, wsize)
	}
}

// peek waits until at least one byte can be read.
func (l *leg) peek() error {
	_, err := l.r.Peek(1)
	return err
}

// buffered reports bytes already read from the connection and not consumed.
func (l *leg) buffered() int {
	n := l.r.Buffered()
	if l.comp != nil {
		n += len(l.comp.plain)
	}
	return n
}

// dst is what the leg's writer writes to.
func (l *leg) dst() io.Writer {
	if l.comp != nil {
		return l.comp
	}
	return l.rw
}

// parkWriter gives an empty writer of the pool's size back to pool.
func (l *leg) parkWriter(pool *sync.Pool, size int) {
	if l.w != nil && l.w.Buffered() == 0 && l.w.Size() == size {
		l.w.Reset(nil)
		pool.Put(l.w)
		l.w = nil
	}
}

// unparkWriter gives the leg a writer from pool if it has none.
func (l *leg) unparkWriter(pool *sync.Pool) {
	if l.w == nil {
		l.w = pool.Get().(*bufio.Writer)
		l.w.Reset(l.dst())
	}
}

// parkReader gives an empty reader of the pool's size back to pool.
func (l *leg) parkReader(pool *sync.Pool, size int) {
	if l.r != nil && l.r.Buffered() == 0 && l.r.Size() == size && l.comp == nil {
		l.r.Reset(nil)
		pool.Put(l.r)
		l.r = nil
	}
}

func (l *leg) unparkReader(pool *sync.Pool) {
	if l.r == nil {
		l.r = pool.Get().(*bufio.Reader)
		l.r.Reset(l.rw)
	}
}

func newLeg(name string, c net.Conn, rsize, wsize int) *leg {
	rw := legIO(c)
	return &leg{conn: c, rw: rw, r: bufio.NewReaderSize(rw, rsize), w: bufio.NewWriterSize(rw, wsize), name: name}
}

// ioError marks an I/O failure on one leg. Any ioError ends the session.
type ioError struct {
	leg string
	err error
}

func (e *ioError) Error() string { return e.leg + ": " + e.err.Error() }
func (e *ioError) Unwrap() error { return e.err }

func (l *leg) fail(err error) error {
	var ie *ioError
	if errors.As(err, &ie) {
		return err
	}
	return &ioError{leg: l.name, err: err}
}

// readHeader reads one physical packet header and checks its sequence id.
func (l *leg) readHeader() (int, error) {
	h, err := l.r.Peek(4)
	if err != nil {
		if len(h) > 0 && errors.Is(err, io.EOF) {
			err = fmt.Errorf("truncated packet header (%d bytes): %w", len(h), io.ErrUnexpectedEOF)
		}
		return 0, l.fail(err)
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	seq := h[3]
	_, _ = l.r.Discard(4)
	if l.comp != nil && l.comp.asClient {
		// A compressing server numbers the packets inside its frames
		// on from the frame sequence (MariaDB: 3 after a command sent
		// in 3 frames); clients take what comes.
		l.seq = seq
	}
	if seq != l.seq {
		return 0, l.fail(errSequence{got: seq, want: l.seq})
	}
	l.seq++
	return n, nil
}

// readPacket reads one logical packet (physical packets merged) into dst's
// storage. limit bounds the total size.
func (l *leg) readPacket(dst []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	for {
		n, err := l.readHeader()
		if err != nil {
			return dst, err
		}
		if len(dst)+n > limit {
			return dst, l.fail(fmt.Errorf("packet larger than %d bytes", limit))
		}
		start := len(dst)
		dst = slices.Grow(dst, n)[:start+n]
		if _, err := io.ReadFull(l.r, dst[start:]); err != nil {
			return dst, l.fail(err)
		}
		if n < maxPayload {
			return dst, nil
		}
	}
}

// writeHeader writes a packet header byte by byte: a [4]byte passed to
// Write escapes to the heap, which cost one allocation per relayed row.
func writeHeader(w *bufio.Writer, n int, seq uint8) error {
	w.WriteByte(byte(n))
	w.WriteByte(byte(n >> 8))
	w.WriteByte(byte(n >> 16))
	return w.WriteByte(seq) // bufio's error is sticky: the last call reports any
}

// writePacket frames p (split at 16 MB) with this leg's sequence ids.
func (l *leg) writePacket(p []byte) error {
	for {
		n := min(len(p), maxPayload)
		if err := writeHeader(l.w, n, l.seq); err != nil {
			return l.fail(err)
		}
		l.seq++
		if _, err := l.w.Write(p[:n]); err != nil {
			return l.fail(err)
		}
		p = p[n:]
		if n < maxPayload {
			return nil
		}
	}
}

// writeCommand sends a command packet with sequence id 0 (not flushed).
func (l *leg) writeCommand(p []byte) error {
	l.seq = 0
	if l.comp != nil {
		l.comp.newCommand()
	}
	return l.writePacket(p)
}

// flushForResponse flushes a command whose response the caller reads next.
// On a raw socket the command is written by that read (see rawIO): one
// read that finds the socket empty fewer per command. Only when nothing is
// buffered to read (else the read would be served without touching the
// socket and the command would never leave), and not right after the
// session was idle: the wait sees only bytes that arrive after the
// command, so something the backend sent unasked before it would go
// unread until the response (or the connection's end) came.
func (l *leg) flushForResponse() error {
	ri, ok := l.rw.(*rawIO)
	if !ok || !holdOn || l.noHold || l.comp != nil || l.r == nil || l.r.Buffered() > 0 {
		l.noHold = false
		return l.flush()
	}
	ri.holdNext = true
	err := l.flush()
	ri.holdNext = false // the writer may have had nothing left to write
	return err
}

func (l *leg) flush() error {
	if err := l.w.Flush(); err != nil {
		return l.fail(err)
	}
	return nil
}

// copyTo streams n payload bytes from l to dst without holding them.
func (l *leg) copyTo(dst *leg, n int) error {
	for n > 0 {
		k := min(n, l.r.Size())
		b, err := l.r.Peek(k)
		if len(b) > 0 {
			if _, werr := dst.w.Write(b); werr != nil {
				return dst.fail(werr)
			}
			_, _ = l.r.Discard(len(b))
			n -= len(b)
		}
		if err != nil && n > 0 {
			return l.fail(err)
		}
	}
	return nil
}

// Packet classification helpers. An EOF packet is 0xFE with fewer than 9
// bytes: a row starting with a 0xFE length prefix is always longer.
func isEOF(head []byte, n int) bool { return n < 9 && len(head) > 0 && head[0] == 0xFE }
func isOK(head []byte, n int) bool  { return n >= 7 && len(head) > 0 && head[0] == 0x00 }
func isErr(head []byte) bool        { return len(head) > 0 && head[0] == 0xFF }

// eofStatus returns the status flags of an EOF packet.
func eofStatus(head []byte) uint16 {
	if len(head) < 5 {
		return 0
	}
	return binary.LittleEndian.Uint16(head[3:5])
}

// okInfo decodes an OK packet's affected rows, insert id, status and warnings.
func okInfo(p []byte) (affected, insertID uint64, status, warnings uint16) {
	pos := 1
	var n int
	if affected, n = lenenc(p[pos:]); n == 0 {
		return
	}
	pos += n
	if insertID, n = lenenc(p[pos:]); n == 0 {
		return
	}
	pos += n
	if pos+2 <= len(p) {
		status = binary.LittleEndian.Uint16(p[pos:])
	}
	if pos+4 <= len(p) {
		warnings = binary.LittleEndian.Uint16(p[pos+2:])
	}
	return
}

// parseErr decodes an ERR packet into go-mysql's error type.
func parseErr(p []byte) *mysql.MyError {
	e := &mysql.MyError{State: "HY000"}
	if len(p) < 3 {
		e.Code = mysql.ER_UNKNOWN_ERROR
		e.Message = "malformed error packet"
		return e
	}
	e.Code = binary.LittleEndian.Uint16(p[1:3])
	rest := p[3:]
	if len(rest) >= 6 && rest[0] == '#' {
		e.State = string(rest[1:6])
		rest = rest[6:]
	}
	e.Message = string(rest)
	return e
}

// errPacket builds an ERR packet payload.
func errPacket(code uint16, state, msg string) []byte {
	if len(state) != 5 {
		state = "HY000"
	}
	p := make([]byte, 0, 9+len(msg))
	p = append(p, 0xFF, byte(code), byte(code>>8), '#')
	p = append(p, state...)
	return append(p, msg...)
}

// okPacket builds an OK packet payload.
func okPacket(affected, insertID uint64, status, warnings uint16) []byte {
	p := make([]byte, 0, 24)
	p = append(p, 0x00)
	p = mysql.AppendLengthEncodedInteger(p, affected)
	p = mysql.AppendLengthEncodedInteger(p, insertID)
	return append(p, byte(status), byte(status>>8), byte(warnings), byte(warnings>>8))
}

// lenenc decodes a length-encoded integer; n == 0 means b is too short.
func lenenc(b []byte) (v uint64, n int) {
	v, _, n = Lenenc(b)
	return v, n
}

// Lenenc decodes a length-encoded integer or NULL (0xFB); n == 0 means b
// is too short. (go-mysql's LengthEncodedInt panics on short input.)
func Lenenc(b []byte) (v uint64, isNull bool, n int) {
	if len(b) == 0 {
		return 0, false, 0
	}
	switch b[0] {
	case 0xFB:
		return 0, true, 1
	case 0xFC:
		n = 3
	case 0xFD:
		n = 4
	case 0xFE:
		n = 9
	default:
		return uint64(b[0]), false, 1
	}
	if len(b) < n {
		return 0, false, 0
	}
	for i := n - 1; i >= 1; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v, false, n
}

// peekPacketLen returns the length of the next physical packet without
// consuming it.
func (l *leg) peekPacketLen() (int, error) {
	h, err := l.r.Peek(4)
	if err != nil {
		return 0, l.fail(err)
	}
	return int(h[0]) | int(h[1])<<8 | int(h[2])<<16, nil
}

// readPacketPiece appends one physical packet's payload to dst.
func (l *leg) readPacketPiece(dst []byte) ([]byte, error) {
	n, err := l.readHeader()
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	if _, err := io.ReadFull(l.r, dst[start:]); err != nil {
		return dst, l.fail(err)
	}
	return dst, nil
}

// discardPacketPiece reads one physical packet and drops its payload.
func (l *leg) discardPacketPiece() error {
	n, err := l.readHeader()
	if err != nil {
		return err
	}
	if _, err := l.r.Discard(n); err != nil {
		return l.fail(err)
	}
	return nil
}

// bufferedConn reads through r (bytes already buffered from Conn) first; a
// TLS upgrade wraps it so no byte read ahead is lost.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }
