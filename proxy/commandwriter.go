package proxy

import (
	"errors"
	"fmt"
)

// commandWriter frames a command of a known length as it is written:
// packets of maxPayload bytes (an empty one after a last full one), with
// the leg's sequence ids, into the leg's buffered writer.
type commandWriter struct {
	l          *leg
	left       int // bytes of the command not written yet
	inPacket   int // bytes of the current packet not written yet
	lastLength int // the last packet's length
}

var errCommandLength = errors.New("proxy: a command written longer or shorter than announced")

func (f *commandWriter) header() error {
	f.lastLength = min(f.left, maxPayload)
	f.inPacket = f.lastLength
	if err := writeHeader(f.l.w, f.lastLength, f.l.seq); err != nil {
		return f.l.fail(err)
	}
	f.l.seq++
	return nil
}

func (f *commandWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if f.inPacket == 0 {
			if f.left == 0 {
				return n - len(p), fmt.Errorf("%w: %d bytes over", errCommandLength, len(p))
			}
			if err := f.header(); err != nil {
				return n - len(p), err
			}
		}
		k := min(len(p), f.inPacket)
		if _, err := f.l.w.Write(p[:k]); err != nil {
			return n - len(p), f.l.fail(err)
		}
		f.inPacket -= k
		f.left -= k
		p = p[k:]
	}
	return n, nil
}

// WriteString is Write without converting s.
func (f *commandWriter) WriteString(s string) (int, error) {
	n := len(s)
	for len(s) > 0 {
		if f.inPacket == 0 {
			if f.left == 0 {
				return n - len(s), fmt.Errorf("%w: %d bytes over", errCommandLength, len(s))
			}
			if err := f.header(); err != nil {
				return n - len(s), err
			}
		}
		k := min(len(s), f.inPacket)
		if _, err := f.l.w.WriteString(s[:k]); err != nil {
			return n - len(s), f.l.fail(err)
		}
		f.inPacket -= k
		f.left -= k
		s = s[k:]
	}
	return n, nil
}

// WriteByte writes one byte.
func (f *commandWriter) WriteByte(c byte) error {
	b := [1]byte{c}
	_, err := f.Write(b[:])
	return err
}

// close ends the command: every announced byte written, and the empty
// packet that follows a full last one.
func (f *commandWriter) close() error {
	if f.left != 0 || f.inPacket != 0 {
		return fmt.Errorf("%w: %d bytes short", errCommandLength, f.left)
	}
	if f.lastLength == maxPayload {
		f.lastLength = 0
		if err := writeHeader(f.l.w, 0, f.l.seq); err != nil {
			return f.l.fail(err)
		}
		f.l.seq++
	}
	return nil
}
