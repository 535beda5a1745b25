package wire

import (
	"errors"
	"fmt"
)

// CommandWriter frames a command of a known length as it is written:
// packets of maxPayload bytes (an empty one after a last full one), with
// the leg's sequence ids, into the leg's buffered writer.
type CommandWriter struct {
	l          *Leg
	left       int // bytes of the command not written yet
	inPacket   int // bytes of the current packet not written yet
	lastLength int // the last packet's length
}

// NewCommandWriter writes a command of n bytes over l; the caller has
// started the command on l (sequence id 0, a new compressed frame
// sequence).
func NewCommandWriter(l *Leg, n int) CommandWriter {
	return CommandWriter{l: l, left: n}
}

var ErrCommandLength = errors.New("proxy: a command written longer or shorter than announced")

func (f *CommandWriter) header() error {
	f.lastLength = min(f.left, MaxPayload)
	f.inPacket = f.lastLength
	if err := WriteHeader(f.l.W, f.lastLength, f.l.Seq); err != nil {
		return f.l.Fail(err)
	}
	f.l.Seq++
	return nil
}

func (f *CommandWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if f.inPacket == 0 {
			if f.left == 0 {
				return n - len(p), fmt.Errorf("%w: %d bytes over", ErrCommandLength, len(p))
			}
			if err := f.header(); err != nil {
				return n - len(p), err
			}
		}
		k := min(len(p), f.inPacket)
		if _, err := f.l.W.Write(p[:k]); err != nil {
			return n - len(p), f.l.Fail(err)
		}
		f.inPacket -= k
		f.left -= k
		p = p[k:]
	}
	return n, nil
}

// WriteString is Write without converting s.
func (f *CommandWriter) WriteString(s string) (int, error) {
	n := len(s)
	for len(s) > 0 {
		if f.inPacket == 0 {
			if f.left == 0 {
				return n - len(s), fmt.Errorf("%w: %d bytes over", ErrCommandLength, len(s))
			}
			if err := f.header(); err != nil {
				return n - len(s), err
			}
		}
		k := min(len(s), f.inPacket)
		if _, err := f.l.W.WriteString(s[:k]); err != nil {
			return n - len(s), f.l.Fail(err)
		}
		f.inPacket -= k
		f.left -= k
		s = s[k:]
	}
	return n, nil
}

// WriteByte writes one byte.
func (f *CommandWriter) WriteByte(c byte) error {
	b := [1]byte{c}
	_, err := f.Write(b[:])
	return err
}

// Close ends the command: every announced byte written, and the empty
// packet that follows a full last one.
func (f *CommandWriter) Close() error {
	if f.left != 0 || f.inPacket != 0 {
		return fmt.Errorf("%w: %d bytes short", ErrCommandLength, f.left)
	}
	if f.lastLength == MaxPayload {
		f.lastLength = 0
		if err := WriteHeader(f.l.W, 0, f.l.Seq); err != nil {
			return f.l.Fail(err)
		}
		f.l.Seq++
	}
	return nil
}
