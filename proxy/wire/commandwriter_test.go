package wire

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

// commandWriter frames a command written in pieces exactly as
// writeCommand frames it whole: packets of maxPayload, the empty packet
// after a full last one, sequence ids from 0.
func TestCommandWriterFramesAsWriteCommand(t *testing.T) {
	for _, n := range []int{1, 100, MaxPayload - 1, MaxPayload, MaxPayload + 1, 2 * MaxPayload, 2*MaxPayload + 7} {
		cmd := make([]byte, n)
		for i := range cmd {
			cmd[i] = byte(i * 7)
		}
		var whole, pieces bytes.Buffer
		lw := &Leg{W: bufio.NewWriter(&whole), Name: "backend"}
		if err := lw.WriteCommand(cmd); err != nil || lw.W.Flush() != nil {
			t.Fatal(err)
		}
		lp := &Leg{W: bufio.NewWriter(&pieces), Name: "backend", Seq: 9}
		lp.Seq = 0
		f := CommandWriter{l: lp, left: n}
		if err := f.WriteByte(cmd[0]); err != nil {
			t.Fatal(err)
		}
		rest := cmd[1:]
		for i := 0; len(rest) > 0; i++ {
			k := min(len(rest), 1+i*i*4099%(1<<20))
			var err error
			if i%2 == 0 {
				_, err = f.Write(rest[:k])
			} else {
				_, err = f.WriteString(string(rest[:k]))
			}
			if err != nil {
				t.Fatal(err)
			}
			rest = rest[k:]
		}
		if err := f.Close(); err != nil || lp.W.Flush() != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(whole.Bytes(), pieces.Bytes()) || lp.Seq != lw.Seq {
			t.Fatalf("%d bytes: framed %d bytes (seq %d), writeCommand %d (seq %d)", n, pieces.Len(), lp.Seq, whole.Len(), lw.Seq)
		}
	}
}

// A command written shorter or longer than announced is an error.
func TestCommandWriterLength(t *testing.T) {
	var buf bytes.Buffer
	f := CommandWriter{l: &Leg{W: bufio.NewWriter(&buf), Name: "backend"}, left: 3}
	if _, err := f.Write([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, ErrCommandLength) {
		t.Fatalf("short: %v", err)
	}
	if _, err := f.Write([]byte("cd")); !errors.Is(err, ErrCommandLength) {
		t.Fatalf("long: %v", err)
	}
}
