package proxy

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
	for _, n := range []int{1, 100, maxPayload - 1, maxPayload, maxPayload + 1, 2 * maxPayload, 2*maxPayload + 7} {
		cmd := make([]byte, n)
		for i := range cmd {
			cmd[i] = byte(i * 7)
		}
		var whole, pieces bytes.Buffer
		lw := &leg{w: bufio.NewWriter(&whole), name: "backend"}
		if err := lw.writeCommand(cmd); err != nil || lw.w.Flush() != nil {
			t.Fatal(err)
		}
		lp := &leg{w: bufio.NewWriter(&pieces), name: "backend", seq: 9}
		lp.seq = 0
		f := commandWriter{l: lp, left: n}
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
		if err := f.close(); err != nil || lp.w.Flush() != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(whole.Bytes(), pieces.Bytes()) || lp.seq != lw.seq {
			t.Fatalf("%d bytes: framed %d bytes (seq %d), writeCommand %d (seq %d)", n, pieces.Len(), lp.seq, whole.Len(), lw.seq)
		}
	}
}

// A command written shorter or longer than announced is an error.
func TestCommandWriterLength(t *testing.T) {
	var buf bytes.Buffer
	f := commandWriter{l: &leg{w: bufio.NewWriter(&buf), name: "backend"}, left: 3}
	if _, err := f.Write([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	if err := f.close(); !errors.Is(err, errCommandLength) {
		t.Fatalf("short: %v", err)
	}
	if _, err := f.Write([]byte("cd")); !errors.Is(err, errCommandLength) {
		t.Fatalf("long: %v", err)
	}
}
