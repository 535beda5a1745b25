package wire

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"testing/iotest"
)

// memConn is a net.Conn reading in and writing to out (nothing else of
// net.Conn is called by the compressed protocol).
type memConn struct {
	net.Conn
	in  io.Reader
	out bytes.Buffer
}

func (c *memConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *memConn) Write(p []byte) (int, error) { return c.out.Write(p) }

// compLeg is a leg speaking the compressed protocol over a memConn reading in.
func compLeg(name string, asClient bool, in io.Reader) (*Leg, *memConn) {
	if in == nil {
		in = bytes.NewReader(nil)
	}
	c := &memConn{in: in}
	l := &Leg{Conn: c, RW: c, R: bufio.NewReader(c), W: bufio.NewWriter(c), Name: name}
	l.Compress(asClient, 4096, 4096)
	return l, c
}

// cframe is one compression frame as read off the wire by the test's own
// decoder.
type cframe struct {
	seq        uint8
	clen, ulen int
	plain      []byte
}

func decodeFrames(t *testing.T, b []byte) []cframe {
	t.Helper()
	var out []cframe
	for len(b) > 0 {
		if len(b) < 7 {
			t.Fatalf("%d bytes after the last frame", len(b))
		}
		f := cframe{clen: int(b[0]) | int(b[1])<<8 | int(b[2])<<16, seq: b[3], ulen: int(b[4]) | int(b[5])<<8 | int(b[6])<<16}
		if len(b) < 7+f.clen {
			t.Fatalf("frame of %d bytes cut at %d", f.clen, len(b)-7)
		}
		payload := b[7 : 7+f.clen]
		b = b[7+f.clen:]
		if f.ulen == 0 {
			f.plain = bytes.Clone(payload)
		} else {
			zr, err := zlib.NewReader(bytes.NewReader(payload))
			if err != nil {
				t.Fatal(err)
			}
			if f.plain, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
			if len(f.plain) != f.ulen {
				t.Fatalf("frame says %d bytes uncompressed, holds %d", f.ulen, len(f.plain))
			}
		}
		out = append(out, f)
	}
	return out
}

// storedFrame and zlibFrame build frames for the reader.
func storedFrame(seq uint8, plain []byte) []byte {
	return append(AppendFrameHeader(nil, len(plain), seq, 0), plain...)
}

func zlibFrame(seq uint8, plain []byte) []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(plain)
	zw.Close()
	return append(AppendFrameHeader(nil, z.Len(), seq, len(plain)), z.Bytes()...)
}

// Frames shorter than 50 bytes go stored (uncompressed length 0), as
// servers send them; from 50 bytes on they are zlib-compressed.
func TestCompConnThreshold(t *testing.T) {
	for _, c := range []struct {
		payload int // packet payload; the frame holds it and its 4-byte header
		stored  bool
	}{{0, true}, {7, true}, {45, true}, {46, false}, {1000, false}} {
		l, conn := compLeg("client", false, nil)
		p := bytes.Repeat([]byte("z"), c.payload)
		if err := l.WritePacket(p); err != nil || l.Flush() != nil {
			t.Fatal(err)
		}
		fs := decodeFrames(t, conn.out.Bytes())
		if len(fs) != 1 {
			t.Fatalf("%d-byte payload: %d frames", c.payload, len(fs))
		}
		f := fs[0]
		if (f.ulen == 0) != c.stored {
			t.Errorf("%d-byte payload (frame of %d): stored %v, want %v", c.payload, c.payload+4, f.ulen == 0, c.stored)
		}
		if !c.stored && f.clen >= f.ulen {
			t.Errorf("%d repeated bytes compressed to %d", f.ulen, f.clen)
		}
		if !bytes.Equal(f.plain, frame(0, p)) {
			t.Errorf("%d-byte payload: frame holds %x", c.payload, f.plain)
		}
		if f.seq != 0 {
			t.Errorf("first frame has sequence id %d", f.seq)
		}
	}
}

// One flush of several packets is one frame; a reading leg gets the
// packets back one by one, with their own sequence ids.
func TestCompConnPacketsInOneFrame(t *testing.T) {
	w, conn := compLeg("client", false, nil)
	w.Seq = 1
	packets := [][]byte{{1}, AppendBigintColumnDef(nil, "id", false), AppendEOF(nil, 2),
		[]byte("\x0242"), bytes.Repeat([]byte("row"), 100), AppendEOF(nil, 2)}
	for _, p := range packets {
		if err := w.WritePacket(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fs := decodeFrames(t, conn.out.Bytes())
	if len(fs) != 1 || fs[0].ulen == 0 {
		t.Fatalf("%d frames (first uncompressed length %d), want one compressed", len(fs), fs[0].ulen)
	}
	r, _ := compLeg("backend", true, bytes.NewReader(conn.out.Bytes()))
	for i, want := range packets {
		got, err := r.ReadPacket(nil, 1<<20)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("packet %d: %x, %v", i, got, err)
		}
	}
	if r.Seq != uint8(1+len(packets)) {
		t.Errorf("reader seq %d", r.Seq)
	}
	if _, err := r.ReadPacket(nil, 10); !errors.Is(err, io.EOF) {
		t.Errorf("after the frame: %v", err)
	}
}

// CompConn.Write cuts a write into frames of at most 1 MiB uncompressed,
// numbered on; a short tail goes stored.
func TestCompConnWriteChunks(t *testing.T) {
	l, conn := compLeg("client", false, nil)
	big := make([]byte, 3<<20+5)
	for i := range big {
		big[i] = byte(i / 1000)
	}
	if n, err := l.Comp.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	fs := decodeFrames(t, conn.out.Bytes())
	if len(fs) != 4 {
		t.Fatalf("%d frames, want 4", len(fs))
	}
	var all []byte
	for i, f := range fs {
		if f.seq != uint8(i) {
			t.Errorf("frame %d has sequence id %d", i, f.seq)
		}
		all = append(all, f.plain...)
	}
	if fs[0].ulen != 1<<20 || fs[3].ulen != 0 || len(fs[3].plain) != 5 {
		t.Errorf("frame sizes %d..., last %d stored %v", fs[0].ulen, len(fs[3].plain), fs[3].ulen == 0)
	}
	if !bytes.Equal(all, big) {
		t.Error("frames do not add up to what was written")
	}
	if l.Comp.seq != 4 {
		t.Errorf("next frame sequence id %d, want 4", l.Comp.seq)
	}
}

// Frames are read however the bytes arrive (one at a time here), and a
// packet may span frames, stored and compressed mixed.
func TestCompConnFramesSplitAcrossReads(t *testing.T) {
	row := bytes.Repeat([]byte("abcdefgh"), 40)
	plain := append(append(frame(0, []byte{1}), frame(1, row)...), frame(2, AppendEOF(nil, 2))...)
	cut1, cut2 := 3, 150 // a packet header and a payload cut across frames
	wire := append(append(storedFrame(0, plain[:cut1]), zlibFrame(1, plain[cut1:cut2])...), zlibFrame(2, plain[cut2:])...)
	for _, name := range []string{"whole", "one byte at a time", "half reads"} {
		var in io.Reader = bytes.NewReader(wire)
		switch name {
		case "one byte at a time":
			in = iotest.OneByteReader(in)
		case "half reads":
			in = iotest.HalfReader(in)
		}
		r, _ := compLeg("backend", true, in)
		for i, want := range [][]byte{{1}, row, AppendEOF(nil, 2)} {
			got, err := r.ReadPacket(nil, 1<<20)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: packet %d: %d bytes, %v", name, i, len(got), err)
			}
		}
		if r.Comp.seq != 3 {
			t.Errorf("%s: next frame sequence id %d, want 3 (the last read, plus one)", name, r.Comp.seq)
		}
	}
}

// A read that times out in the middle of a frame header or payload loses
// nothing: the next read goes on where it stopped.
func TestCompConnResumesAfterTimeout(t *testing.T) {
	plain := append(frame(0, bytes.Repeat([]byte("0123456789"), 20)), frame(1, []byte("tail"))...)
	wire := append(zlibFrame(0, plain[:100]), storedFrame(1, plain[100:])...)
	for cut := 0; cut <= len(wire); cut++ {
		in := &timeoutOnce{r: bytes.NewReader(wire), at: cut}
		c := &CompConn{raw: bufio.NewReaderSize(in, 16)}
		var got []byte
		buf := make([]byte, 7)
		timeouts := 0
		for len(got) < len(plain) {
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				timeouts++
				continue
			}
			if err != nil {
				t.Fatalf("cut at %d: %v after %d bytes", cut, err, len(got))
			}
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("cut at %d: read %q", cut, got)
		}
		if cut < len(wire) && timeouts != 1 {
			t.Errorf("cut at %d: %d timeouts seen", cut, timeouts)
		}
	}
}

// timeoutOnce reads r, failing once with a deadline error after at bytes.
type timeoutOnce struct {
	r    io.Reader
	at   int
	done bool
	pos  int
}

func (t *timeoutOnce) Read(p []byte) (int, error) {
	if !t.done && t.pos == t.at {
		t.done = true
		return 0, os.ErrDeadlineExceeded
	}
	if !t.done && t.pos+len(p) > t.at {
		p = p[:t.at-t.pos]
	}
	n, err := t.r.Read(p)
	t.pos += n
	return n, err
}

// A corrupt or truncated frame is an error, not a panic nor made-up bytes.
func TestCompConnCorruptFrames(t *testing.T) {
	plain := frame(0, []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5)))
	good := zlibFrame(0, plain)
	data := bytes.Clone(good)
	data[7+2] ^= 0xFF // the first deflate block's header
	short := zlibFrame(0, plain[:100])
	short[4] = byte(len(plain)) // says more bytes uncompressed than it holds
	for _, c := range []struct {
		name    string
		wire    []byte
		inFrame bool // the error names the compressed frame
	}{
		{"not zlib", append(AppendFrameHeader(nil, 10, 0, 100), "not zlib!!"...), true},
		{"bad deflate data", data, true},
		{"fewer bytes than announced", short, true},
		{"frame cut", good[:20], false},
		{"header cut", good[:5], false},
	} {
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%s: panic %v", c.name, p)
				}
			}()
			r, _ := compLeg("backend", true, bytes.NewReader(c.wire))
			_, err = r.ReadPacket(nil, 1<<20)
		}()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		var ie *IOError
		if !errors.As(err, &ie) || ie.Leg != "backend" {
			t.Errorf("%s: %v is not the leg's IOError", c.name, err)
		}
		if c.inFrame != strings.Contains(err.Error(), "compressed frame") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// The good frame reads, and a second one decompresses with the reused reader.
	r, _ := compLeg("backend", true, bytes.NewReader(append(bytes.Clone(good),
		zlibFrame(1, frame(1, bytes.Repeat([]byte("b"), 70)))...)))
	for _, want := range [][]byte{plain[4:], bytes.Repeat([]byte("b"), 70)} {
		if got, err := r.ReadPacket(nil, 1000); err != nil || !bytes.Equal(got, want) {
			t.Errorf("good frames: %q, %v", got, err)
		}
	}
}

// A frame whose zlib stream does not end well (its Adler-32 checksum
// wrong, or the stream cut before its end) is corrupt, as the server's
// uncompress() says (Z_DATA_ERROR / Z_BUF_ERROR).
func TestCompConnVerifiesZlibStream(t *testing.T) {
	plain := frame(0, []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5)))
	good := zlibFrame(0, plain)
	sum := bytes.Clone(good)
	sum[len(sum)-1] ^= 0xFF // the Adler-32 checksum
	cut := bytes.Clone(good[:len(good)-4])
	cut[0] = byte(len(cut) - 7) // the frame without its checksum
	for name, wire := range map[string][]byte{"bad checksum": sum, "no checksum": cut} {
		r, _ := compLeg("backend", true, bytes.NewReader(wire))
		if _, err := r.ReadPacket(nil, 1<<20); err == nil || !strings.Contains(err.Error(), "compressed frame") {
			t.Errorf("%s: %v, want a compressed frame error", name, err)
		}
	}
}

// Frame sequence ids: writes number frames on from the last one read; as
// the client (the backend leg), each command starts again at 0, as the
// server (the client leg) it goes on.
func TestCompConnFrameSequence(t *testing.T) {
	for _, asClient := range []bool{false, true} {
		in := storedFrame(4, frame(0, []byte{0x0e})) // COM_PING in frame 4
		l, conn := compLeg("leg", asClient, bytes.NewReader(in))
		if _, err := l.ReadPacket(nil, 10); err != nil {
			t.Fatal(err)
		}
		if l.Comp.seq != 5 {
			t.Fatalf("asClient %v: after frame 4, next %d", asClient, l.Comp.seq)
		}
		l.WritePacket(OKPacket(0, 0, 2, 0))
		l.Flush()
		l.WriteCommand([]byte{0x0e})
		l.Flush()
		fs := decodeFrames(t, conn.out.Bytes())
		if len(fs) != 2 || fs[0].seq != 5 {
			t.Fatalf("asClient %v: frames %+v", asClient, fs)
		}
		want := uint8(6)
		if asClient {
			want = 0
		}
		if fs[1].seq != want {
			t.Errorf("asClient %v: command's frame sequence id %d, want %d", asClient, fs[1].seq, want)
		}
		// The command's packet inside the frame is numbered from 0 either way.
		if !bytes.Equal(fs[1].plain, frame(0, []byte{0x0e})) {
			t.Errorf("asClient %v: command frame holds %x", asClient, fs[1].plain)
		}
	}
}

// As the client of a compressing server, a leg takes the packet sequence
// ids the server numbers on from its frames; as the server it checks them.
func TestCompressedLegPacketSequence(t *testing.T) {
	in := storedFrame(3, frame(3, OKPacket(0, 0, 2, 0)))
	client, _ := compLeg("backend", true, bytes.NewReader(in))
	client.Seq = 1
	if _, err := client.ReadPacket(nil, 100); err != nil || client.Seq != 4 {
		t.Errorf("as client: %v, seq %d", err, client.Seq)
	}
	server, _ := compLeg("client", false, bytes.NewReader(in))
	server.Seq = 1
	var se SequenceError
	if _, err := server.ReadPacket(nil, 100); !errors.As(err, &se) || se != (SequenceError{Got: 3, Want: 1}) {
		t.Errorf("as server: %v", err)
	}
}

// Leg.Buffered counts decompressed bytes not yet read, so a relay does not
// wait on the socket for a packet it already has.
func TestCompressedLegBuffered(t *testing.T) {
	in := zlibFrame(0, append(frame(0, bytes.Repeat([]byte("p"), 60)), frame(1, []byte("q"))...))
	l, _ := compLeg("backend", true, bytes.NewReader(in))
	l.R = bufio.NewReaderSize(l.Comp, 16) // smaller than the frame
	if _, err := l.ReadPacket(nil, 100); err != nil {
		t.Fatal(err)
	}
	if l.Buffered() != 5 {
		t.Errorf("Buffered = %d, want the 5 bytes of the second packet", l.Buffered())
	}
	if p, err := l.ReadPacket(nil, 100); err != nil || string(p) != "q" || l.Buffered() != 0 {
		t.Errorf("second packet %q, %v; %d left", p, err, l.Buffered())
	}
}

// Two legs over a pipe, both compressing: a command and its large result
// go through unchanged.
func TestCompConnOverPipe(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	backend := NewLeg("backend", a, 4096, 4096)
	backend.Compress(true, 4096, 4096)
	server := NewLeg("client", b, 4096, 4096)
	server.Compress(false, 4096, 4096)
	row := make([]byte, 100000)
	for i := range row {
		row[i] = byte(i * 31 >> 3)
	}
	done := make(chan error, 1)
	go func() {
		cmd, err := server.ReadPacket(nil, 1<<20)
		if err == nil && string(cmd) != "\x03SELECT big" {
			err = errors.New("server got " + string(cmd))
		}
		if err == nil {
			err = server.WritePacket(row)
		}
		if err == nil {
			err = server.Flush()
		}
		done <- err
	}()
	if err := backend.WriteCommand([]byte("\x03SELECT big")); err != nil || backend.Flush() != nil {
		t.Fatal(err)
	}
	got, err := backend.ReadPacket(nil, 1<<20)
	if err != nil || !bytes.Equal(got, row) {
		t.Fatalf("row: %d bytes, %v", len(got), err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
