package wire

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

// MaxPayload is the largest payload one physical packet carries; a logical
// packet of this size or more continues in the next physical packet.
const MaxPayload = 1<<24 - 1

// HeadLen is how much of a response packet the relay keeps to classify it:
// enough for an OK packet up to its status flags (1 + 9 + 9 + 2 + 2).
const HeadLen = 32

// SequenceError means the peer broke the protocol; the session cannot continue.
type SequenceError struct{ Got, Want uint8 }

func (e SequenceError) Error() string {
	return fmt.Sprintf("packet sequence id %d, expected %d", e.Got, e.Want)
}

// Leg is one side of a session (client or backend): its own buffered
// reader/writer and its own sequence id, as the protocol requires.
type Leg struct {
	Conn net.Conn
	RW   io.ReadWriter // what the buffers use: conn, or a rawIO over it
	R    *bufio.Reader
	W    *bufio.Writer
	Seq  uint8
	Name string    // "client" or "backend", for errors
	Comp *CompConn // non-nil once the leg speaks the compressed protocol
	// noHold: the next flushForResponse writes at once (Session.unpark).
	NoHold bool
}

// Grow gives a logged-in leg its full-size buffers (the handshake used
// small ones); bytes already buffered are kept.
func (l *Leg) Grow(rsize, wsize int) {
	if l.R.Buffered() == 0 {
		l.R = bufio.NewReaderSize(l.RW, rsize)
	}
	if l.W.Buffered() == 0 {
		l.W = bufio.NewWriterSize(l.RW, wsize)
	}
}

// Peek waits until at least one byte can be read.
func (l *Leg) Peek() error {
	_, err := l.R.Peek(1)
	return err
}

// Buffered reports bytes already read from the connection and not consumed.
func (l *Leg) Buffered() int {
	n := l.R.Buffered()
	if l.Comp != nil {
		n += len(l.Comp.plain)
	}
	return n
}

// dst is what the leg's writer writes to.
func (l *Leg) dst() io.Writer {
	if l.Comp != nil {
		return l.Comp
	}
	return l.RW
}

// ParkWriter gives an empty writer of the pool's size back to pool.
func (l *Leg) ParkWriter(pool *sync.Pool, size int) {
	if l.W != nil && l.W.Buffered() == 0 && l.W.Size() == size {
		l.W.Reset(nil)
		pool.Put(l.W)
		l.W = nil
	}
}

// UnparkWriter gives the leg a writer from pool if it has none.
func (l *Leg) UnparkWriter(pool *sync.Pool) {
	if l.W == nil {
		l.W = pool.Get().(*bufio.Writer)
		l.W.Reset(l.dst())
	}
}

// ParkReader gives an empty reader of the pool's size back to pool.
func (l *Leg) ParkReader(pool *sync.Pool, size int) {
	if l.R != nil && l.R.Buffered() == 0 && l.R.Size() == size && l.Comp == nil {
		l.R.Reset(nil)
		pool.Put(l.R)
		l.R = nil
	}
}

func (l *Leg) UnparkReader(pool *sync.Pool) {
	if l.R == nil {
		l.R = pool.Get().(*bufio.Reader)
		l.R.Reset(l.RW)
	}
}

func NewLeg(name string, c net.Conn, rsize, wsize int) *Leg {
	rw := LegIO(c)
	return &Leg{Conn: c, RW: rw, R: bufio.NewReaderSize(rw, rsize), W: bufio.NewWriterSize(rw, wsize), Name: name}
}

// IOError marks an I/O failure on one leg. Any ioError ends the session.
type IOError struct {
	Leg string
	Err error
}

func (e *IOError) Error() string { return e.Leg + ": " + e.Err.Error() }
func (e *IOError) Unwrap() error { return e.Err }

func (l *Leg) Fail(err error) error {
	var ie *IOError
	if errors.As(err, &ie) {
		return err
	}
	return &IOError{Leg: l.Name, Err: err}
}

// ReadHeader reads one physical packet header and checks its sequence id.
func (l *Leg) ReadHeader() (int, error) {
	h, err := l.R.Peek(4)
	if err != nil {
		if len(h) > 0 && errors.Is(err, io.EOF) {
			err = fmt.Errorf("truncated packet header (%d bytes): %w", len(h), io.ErrUnexpectedEOF)
		}
		return 0, l.Fail(err)
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	seq := h[3]
	_, _ = l.R.Discard(4)
	if l.Comp != nil && l.Comp.asClient {
		// A compressing server numbers the packets inside its frames
		// on from the frame sequence (MariaDB: 3 after a command sent
		// in 3 frames); clients take what comes.
		l.Seq = seq
	}
	if seq != l.Seq {
		return 0, l.Fail(SequenceError{Got: seq, Want: l.Seq})
	}
	l.Seq++
	return n, nil
}

// ReadPacket reads one logical packet (physical packets merged) into dst's
// storage. limit bounds the total size.
func (l *Leg) ReadPacket(dst []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	for {
		n, err := l.ReadHeader()
		if err != nil {
			return dst, err
		}
		if len(dst)+n > limit {
			return dst, l.Fail(fmt.Errorf("packet larger than %d bytes", limit))
		}
		start := len(dst)
		dst = slices.Grow(dst, n)[:start+n]
		if _, err := io.ReadFull(l.R, dst[start:]); err != nil {
			return dst, l.Fail(cutInPacket(err))
		}
		if n < MaxPayload {
			return dst, nil
		}
	}
}

// WriteHeader writes a packet header byte by byte: a [4]byte passed to
// Write escapes to the heap, which cost one allocation per relayed row.
func WriteHeader(w *bufio.Writer, n int, seq uint8) error {
	w.WriteByte(byte(n))
	w.WriteByte(byte(n >> 8))
	w.WriteByte(byte(n >> 16))
	return w.WriteByte(seq) // bufio's error is sticky: the last call reports any
}

// WritePacket frames p (split at 16 MB) with this leg's sequence ids.
func (l *Leg) WritePacket(p []byte) error {
	for {
		n := min(len(p), MaxPayload)
		if err := WriteHeader(l.W, n, l.Seq); err != nil {
			return l.Fail(err)
		}
		l.Seq++
		if _, err := l.W.Write(p[:n]); err != nil {
			return l.Fail(err)
		}
		p = p[n:]
		if n < MaxPayload {
			return nil
		}
	}
}

// WriteCommand sends a command packet with sequence id 0 (not flushed).
func (l *Leg) WriteCommand(p []byte) error {
	l.Seq = 0
	if l.Comp != nil {
		l.Comp.NewCommand()
	}
	return l.WritePacket(p)
}

// FlushForResponse flushes a command whose response the caller reads next.
// On a raw socket the command is written by that read (see rawIO): one
// read that finds the socket empty fewer per command. Only when nothing is
// buffered to read (else the read would be served without touching the
// socket and the command would never leave), and not right after the
// session was idle: the wait sees only bytes that arrive after the
// command, so something the backend sent unasked before it would go
// unread until the response (or the connection's end) came.
func (l *Leg) FlushForResponse() error {
	ri, ok := l.RW.(*RawIO)
	if !ok || !holdOn || l.NoHold || l.Comp != nil || l.R == nil || l.R.Buffered() > 0 {
		l.NoHold = false
		return l.Flush()
	}
	ri.holdNext = true
	err := l.Flush()
	ri.holdNext = false // the writer may have had nothing left to write
	return err
}

func (l *Leg) Flush() error {
	if err := l.W.Flush(); err != nil {
		return l.Fail(err)
	}
	return nil
}

// CopyTo streams n payload bytes from l to dst without holding them.
func (l *Leg) CopyTo(dst *Leg, n int) error {
	for n > 0 {
		k := min(n, l.R.Size())
		b, err := l.R.Peek(k)
		if len(b) > 0 {
			if _, werr := dst.W.Write(b); werr != nil {
				return dst.Fail(werr)
			}
			_, _ = l.R.Discard(len(b))
			n -= len(b)
		}
		if err != nil && n > 0 {
			return l.Fail(err)
		}
	}
	return nil
}

// Packet classification helpers. An EOF packet is 0xFE with fewer than 9
// bytes: a row starting with a 0xFE length prefix is always longer.
func IsEOF(head []byte, n int) bool { return n < 9 && len(head) > 0 && head[0] == 0xFE }
func IsOK(head []byte, n int) bool  { return n >= 7 && len(head) > 0 && head[0] == 0x00 }
func IsErr(head []byte) bool        { return len(head) > 0 && head[0] == 0xFF }

// EOFStatus returns the status flags of an EOF packet.
func EOFStatus(head []byte) uint16 {
	if len(head) < 5 {
		return 0
	}
	return binary.LittleEndian.Uint16(head[3:5])
}

// OKInfo decodes an OK packet's affected rows, insert id, status and warnings.
func OKInfo(p []byte) (affected, insertID uint64, status, warnings uint16) {
	pos := 1
	var n int
	if affected, n = LenencUint(p[pos:]); n == 0 {
		return
	}
	pos += n
	if insertID, n = LenencUint(p[pos:]); n == 0 {
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

// ParseErr decodes an ERR packet into go-mysql's error type.
func ParseErr(p []byte) *mysql.MyError {
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

// ErrPacket builds an ERR packet payload.
func ErrPacket(code uint16, state, msg string) []byte {
	if len(state) != 5 {
		state = "HY000"
	}
	p := make([]byte, 0, 9+len(msg))
	p = append(p, 0xFF, byte(code), byte(code>>8), '#')
	p = append(p, state...)
	return append(p, msg...)
}

// OKPacket builds an OK packet payload.
func OKPacket(affected, insertID uint64, status, warnings uint16) []byte {
	p := make([]byte, 0, 24)
	p = append(p, 0x00)
	p = mysql.AppendLengthEncodedInteger(p, affected)
	p = mysql.AppendLengthEncodedInteger(p, insertID)
	return append(p, byte(status), byte(status>>8), byte(warnings), byte(warnings>>8))
}

// OKWithInsertID appends to dst the OK payload p (rows affected, insert
// id, status, warnings, info; both length-encoded integers whole) with
// insert id id.
func OKWithInsertID(dst, p []byte, id uint64) []byte {
	affected, k1 := LenencUint(p[1:])
	_, k2 := LenencUint(p[1+k1:])
	dst = append(dst, 0x00)
	dst = mysql.AppendLengthEncodedInteger(dst, affected)
	dst = mysql.AppendLengthEncodedInteger(dst, id)
	return append(dst, p[1+k1+k2:]...)
}

// LenencUint decodes a length-encoded integer; n == 0 means b is too short.
func LenencUint(b []byte) (v uint64, n int) {
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

// PeekPacketLen returns the length of the next physical packet without
// consuming it.
func (l *Leg) PeekPacketLen() (int, error) {
	h, err := l.R.Peek(4)
	if err != nil {
		return 0, l.Fail(err)
	}
	return int(h[0]) | int(h[1])<<8 | int(h[2])<<16, nil
}

// ReadPacketPiece appends one physical packet's payload to dst.
func (l *Leg) ReadPacketPiece(dst []byte) ([]byte, error) {
	n, err := l.ReadHeader()
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	if _, err := io.ReadFull(l.R, dst[start:]); err != nil {
		return dst, l.Fail(cutInPacket(err))
	}
	return dst, nil
}

// cutInPacket is err from reading a payload whose header was read: an end
// of the stream there cut a packet, which is not a clean close (as a cut
// header is not: ReadHeader).
func cutInPacket(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// DiscardPacketPiece reads one physical packet and drops its payload.
func (l *Leg) DiscardPacketPiece() error {
	n, err := l.ReadHeader()
	if err != nil {
		return err
	}
	if _, err := l.R.Discard(n); err != nil {
		return l.Fail(cutInPacket(err))
	}
	return nil
}

// BufferedConn reads through r (bytes already buffered from Conn) first; a
// TLS upgrade wraps it so no byte read ahead is lost.
type BufferedConn struct {
	net.Conn
	R *bufio.Reader
}

func (b *BufferedConn) Read(p []byte) (int, error) { return b.R.Read(p) }
