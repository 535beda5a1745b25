package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// frame is one physical packet: the 4-byte header, then payload.
func frame(seq uint8, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// readLeg is a leg that reads the bytes in.
func readLeg(name string, in []byte) *Leg {
	return &Leg{R: bufio.NewReader(bytes.NewReader(in)), Name: name}
}

// writeLeg is a leg that writes into out.
func writeLeg(name string, out io.Writer) *Leg {
	return &Leg{W: bufio.NewWriter(out), Name: name}
}

// An EOF packet is 0xFE shorter than 9 bytes; a 0xFE of 9 bytes or more is
// a row whose first field has an 8-byte length prefix.
func TestIsEOF(t *testing.T) {
	eof := AppendEOF(nil, mysql.SERVER_STATUS_AUTOCOMMIT)
	for _, c := range []struct {
		name string
		head []byte
		n    int
		want bool
	}{
		{"EOF packet", eof, len(eof), true},
		{"bare 0xFE (old EOF)", []byte{0xFE}, 1, true},
		{"0xFE of 8 bytes", []byte{0xFE, 0, 0, 0, 0, 0, 0, 0}, 8, true},
		{"row with 0xFE prefix, 9 bytes", []byte{0xFE, 0, 0, 0, 0, 0, 0, 0, 0}, 9, false},
		{"row with 0xFE prefix, long", []byte{0xFE, 0, 1, 0, 0, 0, 0, 0, 0}, 0x10009, false},
		{"row starting 0xFE with only its head kept", []byte{0xFE}, MaxPayload, false},
		{"OK packet", []byte{0x00, 0, 0, 2, 0, 0, 0}, 7, false},
		{"ERR packet", []byte{0xFF, 1, 2}, 3, false},
		{"empty head", nil, 5, false},
	} {
		if got := IsEOF(c.head, c.n); got != c.want {
			t.Errorf("%s: IsEOF = %v, want %v", c.name, got, c.want)
		}
	}
}

// An OK packet is 0x00 of at least 7 bytes (header, two lenenc ints,
// status, warnings); shorter 0x00 packets are rows or other payloads.
func TestIsOK(t *testing.T) {
	ok := OKPacket(0, 0, mysql.SERVER_STATUS_AUTOCOMMIT, 0)
	for _, c := range []struct {
		name string
		head []byte
		n    int
		want bool
	}{
		{"OKPacket", ok, len(ok), true},
		{"long OK with info", ok, 200, true},
		{"0x00 of 6 bytes", ok[:6], 6, false},
		{"0x00 of 1 byte", []byte{0}, 1, false},
		{"EOF", []byte{0xFE, 0, 0, 2, 0}, 5, false},
		{"ERR", []byte{0xFF, 0, 0, 0, 0, 0, 0}, 7, false},
		{"row starting with a 1-byte string", []byte{0x01, 'a', 0, 0, 0, 0, 0}, 7, false},
		{"empty head", nil, 7, false},
	} {
		if got := IsOK(c.head, c.n); got != c.want {
			t.Errorf("%s: IsOK = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestIsErr(t *testing.T) {
	for _, c := range []struct {
		head []byte
		want bool
	}{
		{ErrPacket(1045, "28000", "Access denied"), true},
		{[]byte{0xFF}, true},
		{[]byte{0x00, 0xFF}, false},
		{[]byte{0xFE}, false},
		{[]byte{0xFB}, false},
		{nil, false},
	} {
		if got := IsErr(c.head); got != c.want {
			t.Errorf("IsErr(%x) = %v, want %v", c.head, got, c.want)
		}
	}
}

// AppendEOF writes 0xFE, warnings (0), status; EOFStatus reads the status
// back, and 0 from a packet too short to hold it.
func TestEOFStatus(t *testing.T) {
	for _, st := range []uint16{0, mysql.SERVER_STATUS_AUTOCOMMIT, mysql.SERVER_MORE_RESULTS_EXISTS | mysql.SERVER_STATUS_IN_TRANS, 0xFFFF} {
		p := AppendEOF(nil, st)
		if want := []byte{0xFE, 0, 0, byte(st), byte(st >> 8)}; !bytes.Equal(p, want) {
			t.Fatalf("AppendEOF(%#x) = %x, want %x", st, p, want)
		}
		if !IsEOF(p, len(p)) {
			t.Errorf("AppendEOF(%#x) is not an EOF", st)
		}
		if got := EOFStatus(p); got != st {
			t.Errorf("EOFStatus = %#x, want %#x", got, st)
		}
		if got := EOFStatus(p[:4]); got != 0 {
			t.Errorf("EOFStatus of 4 bytes = %#x, want 0", got)
		}
	}
	if got := EOFStatus(append([]byte{0x01}, AppendEOF(nil, 2)...)); got != 0x0200 {
		t.Errorf("EOFStatus reads bytes 3..4: got %#x", got)
	}
}

// OKInfo decodes hand-built OK packets (not OKPacket's): affected rows and
// insert id in each lenenc width, status and warnings, and an info string
// after them, which it ignores.
func TestOKInfo(t *testing.T) {
	le := func(b ...byte) []byte { return b }
	cases := []struct {
		name               string
		p                  []byte
		affected, insertID uint64
		status, warnings   uint16
	}{
		{"1-byte ints", le(0, 3, 250, 0x02, 0x00, 0x01, 0x00), 3, 250, 2, 1},
		{"3-byte insert id", le(0, 0, 0xFC, 0xFB, 0x00, 0x22, 0x40, 0x07, 0x00), 0, 251, 0x4022, 7},
		{"3-byte max", le(0, 0xFC, 0xFF, 0xFF, 0xFC, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00), 0xFFFF, 0x100, 2, 0},
		{"4-byte insert id", le(0, 1, 0xFD, 0x00, 0x00, 0x01, 0x02, 0x00, 0x03, 0x00), 1, 0x10000, 2, 3},
		{"4-byte max", le(0, 0xFD, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0), 0xFFFFFF, 0, 0, 0},
		{"9-byte insert id", le(0, 0xFE, 1, 0, 0, 0, 1, 0, 0, 0, 0xFE, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x22, 0, 0xFF, 0xFF),
			0x100000001, 1 << 63, 0x22, 0xFFFF},
		{"9-byte max", le(0, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 2, 0, 0, 0), math.MaxUint64, 0, 2, 0},
		{"info string after", append(le(0, 5, 6, 0x08, 0x00, 0x02, 0x00), "Rows matched: 5  Changed: 5  Warnings: 2"...), 5, 6, 8, 2},
		{"session track after", append(le(0, 0, 0, 0x02, 0x40, 0x00, 0x00, 0x00), 0x0A, 0x00, 0x08, 0x07, 's', 'y', 's', 'v', 'a', 'r', 0), 0, 0, 0x4002, 0},
		{"no warnings", le(0, 1, 2, 0x02, 0x00), 1, 2, 2, 0},
		{"no status", le(0, 1, 2), 1, 2, 0, 0},
		{"insert id cut", le(0, 1, 0xFC, 0x01), 1, 0, 0, 0},
		{"affected cut", le(0, 0xFE, 1, 2, 3), 0, 0, 0, 0},
		{"only the header", le(0), 0, 0, 0, 0},
	}
	for _, c := range cases {
		a, id, st, w := OKInfo(c.p)
		if a != c.affected || id != c.insertID || st != c.status || w != c.warnings {
			t.Errorf("%s: OKInfo = %d, %d, %#x, %d; want %d, %d, %#x, %d", c.name, a, id, st, w,
				c.affected, c.insertID, c.status, c.warnings)
		}
	}
}

// OKPacket's output is exactly the OK packet of the protocol, and reads
// back through IsOK and OKInfo for every lenenc width.
func TestOKPacketRoundTrip(t *testing.T) {
	if got, want := OKPacket(1, 0, mysql.SERVER_STATUS_AUTOCOMMIT, 3), []byte{0, 1, 0, 2, 0, 3, 0}; !bytes.Equal(got, want) {
		t.Fatalf("OKPacket(1, 0, 2, 3) = %x, want %x", got, want)
	}
	vals := []uint64{0, 1, 250, 251, 0xFFFF, 0x10000, 0xFFFFFF, 0x1000000, math.MaxUint64}
	for _, a := range vals {
		for _, id := range vals {
			p := OKPacket(a, id, 0x4002, 65535)
			if !IsOK(p, len(p)) || IsEOF(p, len(p)) || IsErr(p) {
				t.Fatalf("OKPacket(%d, %d) misclassified", a, id)
			}
			ga, gid, st, w := OKInfo(p)
			if ga != a || gid != id || st != 0x4002 || w != 65535 {
				t.Errorf("OKPacket(%d, %d) reads back %d, %d, %#x, %d", a, id, ga, gid, st, w)
			}
		}
	}
}

func TestParseErr(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     []byte
		code  uint16
		state string
		msg   string
	}{
		{"with SQLSTATE", append([]byte{0xFF, 0x15, 0x04, '#', '2', '8', '0', '0', '0'}, "Access denied for user"...), 1045, "28000", "Access denied for user"},
		{"without SQLSTATE (pre-4.1 / handshake)", append([]byte{0xFF, 0x10, 0x04}, "Too many connections"...), 1040, "HY000", "Too many connections"},
		{"'#' message shorter than a state", []byte{0xFF, 0x01, 0x00, '#', 'a', 'b'}, 1, "HY000", "#ab"},
		{"state and empty message", []byte{0xFF, 0xFF, 0xFF, '#', '4', '2', 'S', '0', '2'}, 0xFFFF, "42S02", ""},
		{"code only", []byte{0xFF, 0x28, 0x23}, 9000, "HY000", ""},
		{"short", []byte{0xFF, 0x01}, mysql.ER_UNKNOWN_ERROR, "HY000", "malformed error packet"},
		{"empty", nil, mysql.ER_UNKNOWN_ERROR, "HY000", "malformed error packet"},
	} {
		e := ParseErr(c.p)
		if e.Code != c.code || e.State != c.state || e.Message != c.msg {
			t.Errorf("%s: ParseErr = %d %q %q, want %d %q %q", c.name, e.Code, e.State, e.Message, c.code, c.state, c.msg)
		}
	}
}

// ErrPacket writes the 4.1 ERR packet (always with a state, HY000 for a
// bad one), and ParseErr reads it back.
func TestErrPacketRoundTrip(t *testing.T) {
	want := append([]byte{0xFF, 0x7A, 0x04, '#', '4', '2', '0', '0', '0'}, "syntax"...)
	if got := ErrPacket(1146, "42000", "syntax"); !bytes.Equal(got, want) {
		t.Fatalf("ErrPacket = %x, want %x", got, want)
	}
	for _, c := range []struct {
		code       uint16
		state, msg string
		wantState  string
		wantLen    int
	}{
		{1045, "28000", "Access denied", "28000", 9 + 13},
		{0xABCD, "HY000", "", "HY000", 9},
		{1, "", "no state", "HY000", 9 + 8},
		{2, "4200", "short state", "HY000", 9 + 11},
		{3, "420000", "long state", "HY000", 9 + 10},
		{4, "08S01", strings.Repeat("x", 600) + " # 12345", "08S01", 9 + 608},
	} {
		p := ErrPacket(c.code, c.state, c.msg)
		if len(p) != c.wantLen || !IsErr(p) || IsOK(p, len(p)) {
			t.Errorf("ErrPacket(%d, %q): %d bytes, IsErr %v", c.code, c.state, len(p), IsErr(p))
		}
		e := ParseErr(p)
		if e.Code != c.code || e.State != c.wantState || e.Message != c.msg {
			t.Errorf("ErrPacket(%d, %q, %q) reads back %d %q %q", c.code, c.state, c.msg, e.Code, e.State, e.Message)
		}
	}
}

// Lenenc decodes what go-mysql encodes at every width boundary, with the
// width go-mysql chose.
func TestLenencBoundaries(t *testing.T) {
	for _, c := range []struct {
		v      uint64
		prefix byte // 0: the value itself
		n      int
	}{
		{0, 0, 1}, {1, 0, 1}, {250, 0, 1},
		{251, 0xFC, 3}, {252, 0xFC, 3}, {0xFFFF, 0xFC, 3},
		{0x10000, 0xFD, 4}, {0xFFFFFF, 0xFD, 4},
		{0x1000000, 0xFE, 9}, {1 << 32, 0xFE, 9}, {1<<63 + 5, 0xFE, 9}, {math.MaxUint64, 0xFE, 9},
	} {
		enc := mysql.AppendLengthEncodedInteger([]byte{0xAA}, c.v)[1:]
		if len(enc) != c.n || c.prefix != 0 && enc[0] != c.prefix {
			t.Fatalf("%d encodes as %x", c.v, enc)
		}
		for _, tail := range [][]byte{nil, {0xFB, 1, 2}} {
			v, isNull, n := Lenenc(append(bytes.Clone(enc), tail...))
			if v != c.v || isNull || n != c.n {
				t.Errorf("Lenenc(%x + %d bytes) = %d, %v, %d; want %d, false, %d", enc, len(tail), v, isNull, n, c.v, c.n)
			}
		}
		if v, n := LenencUint(enc); v != c.v || n != c.n {
			t.Errorf("LenencUint(%x) = %d, %d", enc, v, n)
		}
		// go-mysql's own decoder agrees.
		if v, _, n := mysql.LengthEncodedInt(enc); v != c.v || n != c.n {
			t.Errorf("go-mysql decodes %x as %d, %d", enc, v, n)
		}
	}
}

// A prefix whose bytes are not all there decodes to n == 0 (no panic, no
// partial value); 0xFB is NULL.
func TestLenencTruncatedAndNull(t *testing.T) {
	for _, b := range [][]byte{
		nil, {},
		{0xFC}, {0xFC, 0xFF},
		{0xFD}, {0xFD, 1}, {0xFD, 1, 2},
		{0xFE}, {0xFE, 1, 2, 3, 4, 5, 6, 7},
	} {
		v, isNull, n := Lenenc(b)
		if n != 0 || v != 0 || isNull {
			t.Errorf("Lenenc(%x) = %d, %v, %d; want 0, false, 0", b, v, isNull, n)
		}
		if v, n := LenencUint(b); v != 0 || n != 0 {
			t.Errorf("LenencUint(%x) = %d, %d", b, v, n)
		}
	}
	if v, isNull, n := Lenenc([]byte{0xFB, 7}); v != 0 || !isNull || n != 1 {
		t.Errorf("Lenenc(0xFB) = %d, %v, %d; want NULL of 1 byte", v, isNull, n)
	}
	if v, n := LenencUint([]byte{0xFB}); v != 0 || n != 1 {
		t.Errorf("LenencUint(0xFB) = %d, %d; want 0, 1", v, n)
	}
}

func TestWriteHeader(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	for _, c := range []struct {
		n   int
		seq uint8
	}{{0, 0}, {1, 1}, {0x123456, 0x7F}, {MaxPayload, 255}} {
		buf.Reset()
		w.Reset(&buf)
		if err := WriteHeader(w, c.n, c.seq); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		want := []byte{byte(c.n), byte(c.n >> 8), byte(c.n >> 16), c.seq}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("WriteHeader(%#x, %d) = %x, want %x", c.n, c.seq, buf.Bytes(), want)
		}
	}
	// A writer that already failed reports it on the header's last byte.
	fail := errors.New("broken pipe")
	bw := bufio.NewWriterSize(errWriter{fail}, 16)
	bw.Write(make([]byte, 17)) // overflows the buffer: the error sticks
	if err := WriteHeader(bw, 5, 0); !errors.Is(err, fail) {
		t.Errorf("WriteHeader on a failed writer: %v", err)
	}
}

type errWriter struct{ err error }

func (e errWriter) Write([]byte) (int, error) { return 0, e.err }

// ReadPacket reads consecutive packets, advancing the leg's sequence id;
// WritePacket numbers them the same way.
func TestLegReadWriteSequence(t *testing.T) {
	var buf bytes.Buffer
	w := writeLeg("backend", &buf)
	w.Seq = 3
	payloads := [][]byte{[]byte("\x03SELECT 1"), {}, bytes.Repeat([]byte{0xAB}, 70000)}
	for _, p := range payloads {
		if err := w.WritePacket(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if w.Seq != 6 {
		t.Errorf("writer seq %d, want 6", w.Seq)
	}
	want := append(append(frame(3, payloads[0]), frame(4, nil)...), frame(5, payloads[2])...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("wire bytes differ from the three frames")
	}
	r := readLeg("client", buf.Bytes())
	r.Seq = 3
	var dst []byte
	for i, p := range payloads {
		var err error
		dst, err = r.ReadPacket(dst, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst, p) {
			t.Errorf("packet %d: %d bytes, want %d", i, len(dst), len(p))
		}
	}
	if r.Seq != 6 {
		t.Errorf("reader seq %d, want 6", r.Seq)
	}
	if _, err := r.ReadPacket(dst, 1<<20); !errors.Is(err, io.EOF) {
		t.Errorf("after the last packet: %v, want EOF", err)
	}
	// Sequence ids wrap at 255.
	r = readLeg("client", append(frame(255, []byte("a")), frame(0, []byte("b"))...))
	r.Seq = 255
	for _, want := range []string{"a", "b"} {
		if p, err := r.ReadPacket(nil, 10); err != nil || string(p) != want {
			t.Errorf("wrap: %q, %v", p, err)
		}
	}
}

// A packet out of sequence is a SequenceError inside the leg's IOError.
func TestLegSequenceError(t *testing.T) {
	r := readLeg("backend", frame(2, []byte("x")))
	r.Seq = 1
	_, err := r.ReadPacket(nil, 100)
	var se SequenceError
	if !errors.As(err, &se) || se != (SequenceError{Got: 2, Want: 1}) {
		t.Fatalf("err = %v, want SequenceError{2, 1}", err)
	}
	var ie *IOError
	if !errors.As(err, &ie) || ie.Leg != "backend" {
		t.Fatalf("err = %#v, want an IOError of the backend leg", err)
	}
	if got := err.Error(); got != "backend: packet sequence id 2, expected 1" {
		t.Errorf("message %q", got)
	}
	if r.Seq != 1 {
		t.Errorf("seq moved to %d on a refused packet", r.Seq)
	}
	// The second physical packet of a large one is checked too.
	p := append(frame(0, make([]byte, MaxPayload)), frame(5, nil)...)
	r = readLeg("client", p)
	if _, err := r.ReadPacket(nil, 1<<25); !errors.As(err, &se) || se.Got != 5 || se.Want != 1 {
		t.Errorf("continuation out of sequence: %v", err)
	}
}

// A logical packet of exactly MaxPayload bytes goes as a full packet and
// an empty one; larger ones split at MaxPayload; ReadPacket merges them.
func TestLegLargePackets(t *testing.T) {
	for _, c := range []struct {
		n     int
		sizes []int
	}{
		{MaxPayload - 1, []int{MaxPayload - 1}},
		{MaxPayload, []int{MaxPayload, 0}},
		{MaxPayload + 1, []int{MaxPayload, 1}},
		{2 * MaxPayload, []int{MaxPayload, MaxPayload, 0}},
	} {
		p := make([]byte, c.n)
		for i := range p {
			p[i] = byte(i % 251)
		}
		var buf bytes.Buffer
		w := writeLeg("client", &buf)
		w.Seq = 1
		if err := w.WritePacket(p); err != nil || w.Flush() != nil {
			t.Fatal(err)
		}
		if w.Seq != uint8(1+len(c.sizes)) {
			t.Errorf("%d bytes: seq %d after, want %d", c.n, w.Seq, 1+len(c.sizes))
		}
		// The headers where they must be.
		wire := buf.Bytes()
		if len(wire) != c.n+4*len(c.sizes) {
			t.Fatalf("%d bytes: %d on the wire, want %d", c.n, len(wire), c.n+4*len(c.sizes))
		}
		off := 0
		for i, sz := range c.sizes {
			h := wire[off : off+4]
			if got := int(h[0]) | int(h[1])<<8 | int(h[2])<<16; got != sz || h[3] != uint8(1+i) {
				t.Errorf("%d bytes: packet %d header %x, want length %d seq %d", c.n, i, h, sz, 1+i)
			}
			off += 4 + sz
		}
		r := readLeg("backend", wire)
		r.Seq = 1
		got, err := r.ReadPacket(nil, 1<<26)
		if err != nil || !bytes.Equal(got, p) {
			t.Fatalf("%d bytes: read back %d bytes, %v", c.n, len(got), err)
		}
		if r.Seq != w.Seq || r.R.Buffered() != 0 {
			t.Errorf("%d bytes: reader seq %d (writer %d), %d bytes left", c.n, r.Seq, w.Seq, r.R.Buffered())
		}
	}
}

// ReadPacket refuses a logical packet over its limit, counting the merged
// physical packets, and keeps what it read in dst's storage.
func TestLegReadPacketLimit(t *testing.T) {
	r := readLeg("client", frame(0, make([]byte, 101)))
	if _, err := r.ReadPacket(nil, 100); err == nil || !strings.Contains(err.Error(), "packet larger than 100 bytes") {
		t.Errorf("101 bytes with limit 100: %v", err)
	}
	r = readLeg("client", frame(0, make([]byte, 100)))
	if p, err := r.ReadPacket(nil, 100); err != nil || len(p) != 100 {
		t.Errorf("100 bytes with limit 100: %d, %v", len(p), err)
	}
	wire := append(frame(0, make([]byte, MaxPayload)), frame(1, make([]byte, 10))...)
	r = readLeg("client", wire)
	if _, err := r.ReadPacket(nil, MaxPayload+9); err == nil {
		t.Error("merged packet over the limit accepted")
	}
	// dst's storage is reused.
	dst := make([]byte, 0, 64)
	r = readLeg("client", frame(0, []byte("hello")))
	if p, err := r.ReadPacket(dst, 64); err != nil || &p[0] != &dst[:1][0] {
		t.Errorf("dst not reused (%v)", err)
	}
}

// A stream that ends inside a header or a payload is io.ErrUnexpectedEOF;
// one that ends between packets is io.EOF; both are IOErrors.
func TestLegReadPacketTruncated(t *testing.T) {
	full := frame(0, []byte("hello"))
	for _, c := range []struct {
		name string
		in   []byte
		want error
	}{
		{"nothing", nil, io.EOF},
		{"header cut", full[:3], io.ErrUnexpectedEOF},
		{"payload cut", full[:7], io.ErrUnexpectedEOF},
	} {
		r := readLeg("backend", c.in)
		_, err := r.ReadPacket(nil, 100)
		var ie *IOError
		if !errors.Is(err, c.want) || !errors.As(err, &ie) || ie.Leg != "backend" {
			t.Errorf("%s: %v, want %v in a backend IOError", c.name, err, c.want)
		}
		if c.want == io.EOF && errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: a clean end reported as unexpected", c.name)
		}
	}
}

// A stream that ends right after a header announcing a payload has ended
// inside a packet, as one cut inside the header has (ReadHeader makes that
// io.ErrUnexpectedEOF so a truncated packet is not taken for a clean close).
func TestLegReadPacketEndsAfterHeader(t *testing.T) {
	for _, read := range []func(*Leg) error{
		func(l *Leg) error { _, err := l.ReadPacket(nil, 100); return err },
		func(l *Leg) error { _, err := l.ReadPacketPiece(nil); return err },
		func(l *Leg) error { return l.DiscardPacketPiece() },
	} {
		err := read(readLeg("client", frame(0, []byte("hello"))[:4]))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("stream ending after a 5-byte packet's header: %v, want io.ErrUnexpectedEOF", err)
		}
	}
}

// Fail wraps an error once, naming the leg; an IOError already wrapped
// (by the other leg) keeps its leg.
func TestLegFail(t *testing.T) {
	l := &Leg{Name: "client"}
	base := errors.New("connection reset")
	err := l.Fail(base)
	var ie *IOError
	if !errors.As(err, &ie) || ie.Leg != "client" || ie.Err != base || err.Error() != "client: connection reset" {
		t.Fatalf("Fail = %#v", err)
	}
	if !errors.Is(err, base) || errors.Unwrap(err) != base {
		t.Error("IOError does not unwrap to its cause")
	}
	other := (&Leg{Name: "backend"}).Fail(err)
	if other != err {
		t.Errorf("an IOError was wrapped again: %v", other)
	}
	wrapped := (&Leg{Name: "backend"}).Fail(errors.Join(errors.New("ctx"), err))
	if !errors.As(wrapped, &ie) || ie.Leg != "client" {
		t.Errorf("an IOError inside another error was rewrapped: %v", wrapped)
	}
}

// Two legs over a net.Pipe: what one writes the other reads, sequence ids
// agreeing, and WriteCommand restarts the sequence at 0.
func TestLegOverPipe(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	client := NewLeg("client", a, 64, 64)
	server := NewLeg("backend", b, 64, 64)
	if client.RW != io.ReadWriter(a) {
		t.Fatalf("a pipe's leg I/O is %T, want the conn itself", client.RW)
	}
	done := make(chan error, 1)
	go func() {
		p, err := server.ReadPacket(nil, 1<<20)
		if err == nil && (server.Seq != 1 || string(p) != "\x03SELECT 1") {
			err = errors.New("server read " + string(p))
		}
		if err == nil {
			err = server.WritePacket(OKPacket(0, 0, 2, 0))
		}
		if err == nil {
			err = server.WritePacket(bytes.Repeat([]byte("r"), 1000)) // more than the buffer
		}
		if err == nil {
			err = server.Flush()
		}
		done <- err
	}()
	client.Seq = 7
	if err := client.WriteCommand([]byte("\x03SELECT 1")); err != nil {
		t.Fatal(err)
	}
	if client.Seq != 1 {
		t.Errorf("WriteCommand left seq %d, want 1", client.Seq)
	}
	if err := client.FlushForResponse(); err != nil {
		t.Fatal(err)
	}
	ok, err := client.ReadPacket(nil, 1<<20)
	if err != nil || !IsOK(ok, len(ok)) {
		t.Fatalf("OK: %x, %v", ok, err)
	}
	big, err := client.ReadPacket(nil, 1<<20)
	if err != nil || len(big) != 1000 || client.Seq != 3 {
		t.Fatalf("row: %d bytes, seq %d, %v", len(big), client.Seq, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A closed peer is an IOError naming the leg.
	b.Close()
	if _, err := client.ReadPacket(nil, 10); err == nil || !strings.HasPrefix(err.Error(), "client: ") {
		t.Errorf("read from closed pipe: %v", err)
	}
}

// CopyTo streams a payload larger than either buffer without changing it,
// leaving what follows unread; a short source fails on the source leg, a
// failing destination on the destination leg.
func TestLegCopyTo(t *testing.T) {
	payload := make([]byte, 10000)
	for i := range payload {
		payload[i] = byte(i * 13)
	}
	src := &Leg{R: bufio.NewReaderSize(iotest.HalfReader(bytes.NewReader(append(bytes.Clone(payload), "next"...))), 512), Name: "backend"}
	var out bytes.Buffer
	dst := &Leg{W: bufio.NewWriterSize(&out, 256), Name: "client"}
	if err := src.CopyTo(dst, len(payload)); err != nil {
		t.Fatal(err)
	}
	dst.Flush()
	if !bytes.Equal(out.Bytes(), payload) {
		t.Fatalf("copied %d bytes, not the payload", out.Len())
	}
	if rest, _ := io.ReadAll(src.R); string(rest) != "next" {
		t.Errorf("after the copy the source holds %q", rest)
	}
	if err := src.CopyTo(dst, 0); err != nil {
		t.Errorf("copying nothing: %v", err)
	}

	short := readLeg("backend", payload[:100])
	var ie *IOError
	if err := short.CopyTo(&Leg{W: bufio.NewWriter(io.Discard), Name: "client"}, 200); !errors.As(err, &ie) || ie.Leg != "backend" || !errors.Is(err, io.EOF) {
		t.Errorf("short source: %v", err)
	}
	broken := &Leg{W: bufio.NewWriterSize(errWriter{errors.New("broken pipe")}, 16), Name: "client"}
	if err := readLeg("backend", payload).CopyTo(broken, len(payload)); !errors.As(err, &ie) || ie.Leg != "client" {
		t.Errorf("failing destination: %v", err)
	}
}

// The relay's piecewise reads: PeekPacketLen consumes nothing,
// ReadPacketPiece appends one physical packet, DiscardPacketPiece drops one;
// all check the sequence.
func TestLegPacketPieces(t *testing.T) {
	wire := append(append(frame(0, []byte("abc")), frame(1, []byte("defg"))...), frame(2, []byte("hi"))...)
	l := readLeg("backend", wire)
	if n, err := l.PeekPacketLen(); n != 3 || err != nil || l.Seq != 0 {
		t.Fatalf("PeekPacketLen = %d, %v (seq %d)", n, err, l.Seq)
	}
	if n, _ := l.PeekPacketLen(); n != 3 {
		t.Fatal("PeekPacketLen consumed the header")
	}
	got, err := l.ReadPacketPiece([]byte("x"))
	if err != nil || string(got) != "xabc" {
		t.Fatalf("ReadPacketPiece = %q, %v", got, err)
	}
	if err := l.DiscardPacketPiece(); err != nil || l.Seq != 2 {
		t.Fatalf("DiscardPacketPiece: %v, seq %d", err, l.Seq)
	}
	if n, err := l.PeekPacketLen(); n != 2 || err != nil {
		t.Fatalf("third packet: %d, %v", n, err)
	}
	l.Seq = 9
	var se SequenceError
	if _, err := l.ReadPacketPiece(nil); !errors.As(err, &se) {
		t.Errorf("ReadPacketPiece out of sequence: %v", err)
	}
	l = readLeg("backend", frame(0, []byte("abcdef"))[:6])
	if err := l.DiscardPacketPiece(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("discarding a cut packet: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := readLeg("backend", []byte{1, 0}).PeekPacketLen(); err == nil {
		t.Error("PeekPacketLen of 2 bytes succeeded")
	}
}

// Parked buffers go back to the pool only when empty and of the pool's
// size; unparking takes one and points it at the leg's connection.
func TestLegParkBuffers(t *testing.T) {
	const size = 128
	rpool := sync.Pool{New: func() any { return bufio.NewReaderSize(nil, size) }}
	wpool := sync.Pool{New: func() any { return bufio.NewWriterSize(nil, size) }}
	var out bytes.Buffer
	in := bytes.NewReader(frame(0, []byte("ab")))
	l := &Leg{RW: struct {
		io.Reader
		io.Writer
	}{in, &out}, Name: "client"}
	l.R = bufio.NewReaderSize(l.RW, size)
	l.W = bufio.NewWriterSize(l.RW, size)

	l.W.WriteString("pending")
	l.ParkWriter(&wpool, size)
	if l.W == nil {
		t.Fatal("a writer holding bytes was parked")
	}
	l.Flush()
	l.ParkWriter(&wpool, size*2)
	if l.W == nil {
		t.Fatal("a writer of another size was parked")
	}
	l.ParkWriter(&wpool, size)
	if l.W != nil {
		t.Fatal("an empty writer was not parked")
	}
	l.UnparkWriter(&wpool)
	if l.W == nil || l.W.Size() != size {
		t.Fatal("no writer after unpark")
	}
	l.WritePacket([]byte("x"))
	l.Flush()
	if out.String() != "pending"+string(frame(0, []byte("x"))) {
		t.Errorf("unparked writer wrote %q", out.String())
	}

	l.R.Peek(1) // buffers the whole packet
	l.ParkReader(&rpool, size)
	if l.R == nil {
		t.Fatal("a reader holding bytes was parked")
	}
	l.Seq = 0
	if p, err := l.ReadPacket(nil, 10); err != nil || string(p) != "ab" {
		t.Fatalf("read %q, %v", p, err)
	}
	l.ParkReader(&rpool, size)
	if l.R != nil {
		t.Fatal("an empty reader was not parked")
	}
	l.UnparkReader(&rpool)
	if _, err := l.R.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("unparked reader does not read the leg's connection: %v", err)
	}
	// A compressed leg keeps its reader (the frame reader sits under it).
	l.Comp = &CompConn{}
	l.ParkReader(&rpool, size)
	if l.R == nil {
		t.Error("a compressed leg's reader was parked")
	}
}

// Grow replaces empty buffers with larger ones and keeps any holding
// bytes, so nothing read ahead or written is lost.
func TestLegGrow(t *testing.T) {
	var out bytes.Buffer
	rw := struct {
		io.Reader
		io.Writer
	}{bytes.NewReader(append(frame(0, []byte("one")), frame(1, []byte("two"))...)), &out}
	l := &Leg{RW: rw, R: bufio.NewReaderSize(rw, 16), W: bufio.NewWriterSize(rw, 16), Name: "client"}
	l.R.Peek(1)
	l.W.WriteString("w")
	oldR, oldW := l.R, l.W
	l.Grow(4096, 4096)
	if l.R != oldR || l.W != oldW {
		t.Fatal("Grow replaced buffers holding bytes")
	}
	l.ReadPacket(nil, 10)
	l.ReadPacket(nil, 10)
	l.Flush()
	l.Grow(4096, 8192)
	if l.R.Size() != 4096 || l.W.Size() != 8192 {
		t.Errorf("Grow: sizes %d and %d", l.R.Size(), l.W.Size())
	}
	if out.String() != "w" {
		t.Errorf("written %q", out.String())
	}
}

// BufferedConn serves the bytes its reader holds before the connection's.
func TestBufferedConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		a.Write([]byte("hello world"))
		a.Close()
	}()
	r := bufio.NewReaderSize(b, 16)
	if _, err := r.Peek(5); err != nil {
		t.Fatal(err)
	}
	bc := &BufferedConn{Conn: b, R: r}
	all, err := io.ReadAll(bc)
	if err != nil || string(all) != "hello world" {
		t.Errorf("read %q, %v", all, err)
	}
	if bc.LocalAddr() != b.LocalAddr() {
		t.Error("BufferedConn does not pass through the connection")
	}
}
