package proxy

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// The backend side of a lane: reading the response and relaying it to the
// client as it arrives, following it with the response's state machine
// (respTracker), and ending it.

// backendUnasked handles an event on the backend socket of an idle lane.
// Events are edge-triggered and may announce bytes already read with the
// response, so a look without reading comes first; what is really there
// (MariaDB's ERR before it closes an idle connection, or the close itself)
// is for the goroutine's idle watch.
func (ln *lane) backendUnasked() {
	var b [1]byte
	_, _, errno := unix.Recvfrom(ln.backendFD, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if errno == unix.EAGAIN {
		ln.backendReadable = false
		return
	}
	ln.handOff(handBack{kind: handBackIdle, backendEvent: true}, ln.clientIn)
}

// readBackend reads the response's bytes and relays them, until the socket
// is empty, the response is complete or the client has not taken the last
// bytes (back pressure: backendReadable says to come back).
func (ln *lane) readBackend() {
	for !ln.gone && ln.busy && len(ln.clientPending) == 0 {
		buf := ln.r.backendBuf
		k := copy(buf, ln.backendPartial)
		n, errno := readFD(ln.backendFD, buf[k:])
		switch {
		case errno == unix.EAGAIN:
			ln.backendReadable = false
			return
		case errno != 0:
			ln.fail(&ioError{leg: "backend", err: os.NewSyscallError("read", errno)})
			return
		case n == 0:
			ln.fail(&ioError{leg: "backend", err: io.EOF})
			return
		}
		if k+n < len(buf) && !ln.backendHungUp {
			ln.backendReadable = false // emptied: the next bytes come with an event
		}
		ln.backendPartial = ln.backendPartial[:0]
		ln.relayBackend(buf[:k+n])
		if !ln.backendReadable {
			return
		}
	}
}

// relayBackend passes the response's bytes in buf on to the client,
// renumbering each packet for the client leg (in place) and following the
// response with the tracker; bytes of a packet that cannot be classified
// yet wait for the next read.
func (ln *lane) relayBackend(buf []byte) {
	s := ln.s
	pos, stop := 0, false
	from := 0 // buf[from:pos] is relayed at the end (a reported OK moves it)
	for !stop {
		if ln.inPacket {
			k := min(ln.bodyLeft, len(buf)-pos)
			pos += k
			ln.bodyLeft -= k
			if ln.bodyLeft > 0 {
				break
			}
			ln.inPacket = false
			if !ln.continued {
				stop = ln.packetKind == evDone || ln.packetKind == evErr || ln.packetKind == evInfile
			}
			continue
		}
		if len(buf)-pos < 4 {
			break
		}
		n := int(buf[pos]) | int(buf[pos+1])<<8 | int(buf[pos+2])<<16
		if seq := buf[pos+3]; seq != s.b.seq {
			ln.fail(&ioError{leg: "backend", err: errSequence{got: seq, want: s.b.seq}})
			return
		}
		h := min(n, headLen)
		if !ln.continued && len(buf)-pos-4 < h {
			break
		}
		if ln.retrier != nil && !ln.continued {
			if n > 0 && n <= maxRetryErr && buf[pos+4] == 0xFF {
				if len(buf)-pos-4 < n {
					break // the whole ERR first
				}
				// RelayQueryOr's answer is an ERR: one its Retrier takes,
				// or has a statement to run before (Restorer), goes to
				// the goroutine unrelayed (Redo and that statement may
				// wait); any other is relayed here.
				if e := parseErr(buf[pos+4 : pos+4+n]); ln.retrier.Retry(e.Code, e.Message) || restores(ln.retrier, e.Code) {
					ln.backendPartial = append(ln.backendPartial[:0], buf[pos:]...)
					ln.handOff(handBack{kind: handBackResume, redo: ln.retrier, debt: loopBackoff}, ln.clientIn)
					ln.retrier = nil
					return
				}
			}
			if n > 0 && n < 1024 && buf[pos+4] == 0x00 {
				if len(buf)-pos-4 < n {
					break // the whole OK first
				}
				// An OK that says nothing was written, with a statement to
				// run before it (OKRestorer): to the goroutine, unrelayed.
				if okRestore(ln.retrier, buf[pos+4:pos+4+n]) != "" {
					ln.backendPartial = append(ln.backendPartial[:0], buf[pos:]...)
					ln.handOff(handBack{kind: handBackResume, redo: ln.retrier, debt: loopBackoff}, ln.clientIn)
					ln.retrier = nil
					return
				}
				// An OK whose insert id the interceptor reports: relayed
				// as it reports it (KeyReporter).
				if rep := reporterOf(ln.retrier); rep != nil {
					ln.retrier = nil
					done, end := ln.relayReportedOK(rep, buf[from:pos], buf[pos+4:pos+4+n])
					if ln.gone {
						return
					}
					if done {
						pos += 4 + n
						from, stop = pos, end
						continue
					}
				}
			} else if n > 0 && buf[pos+4] != 0xFF {
				// A result set (RETURNING): reported when it ends well.
				ln.rowsReporter = reporterOf(ln.retrier)
			}
			ln.retrier = nil
		}
		s.b.seq++
		buf[pos+3] = s.c.seq
		s.c.seq++
		if !ln.continued {
			ev, err := ln.response.step(s, buf[pos+4:pos+4+h], n)
			if err != nil {
				ln.fail(err)
				return
			}
			if ev == evErr {
				s.relayedErr(buf[pos+4 : pos+4+h])
				ln.rowsReporter = nil
			}
			ln.packetKind = ev
		}
		ln.continued = n == maxPayload
		ln.inPacket, ln.bodyLeft = true, n
		pos += 4
	}
	if pos > from {
		if err := ln.toClient(buf[from:pos]); err != nil {
			ln.fail(err)
			return
		}
	}
	ln.backendPartial = append(ln.backendPartial[:0], buf[pos:]...)
	switch {
	case !stop:
	case ln.packetKind == evInfile:
		// The client now sends its file: the goroutine streams it to the
		// backend and finishes the response (walkFrom).
		ln.handOff(handBack{kind: handBackResume, infile: true, debt: loopBackoff}, ln.clientIn)
	default:
		ln.finish()
	}
}

// toClient writes response bytes after anything the session wrote itself.
func (ln *lane) toClient(p []byte) error {
	if err := ln.s.c.flush(); err != nil {
		return err
	}
	if _, err := ln.clientSink.Write(p); err != nil {
		return &ioError{leg: "client", err: err}
	}
	return nil
}

// finish ends the response under way.
func (ln *lane) finish() {
	s := ln.s
	ln.busy = false
	ln.retrier = nil
	if ln.rowsReporter != nil {
		ln.rowsReporter.ReportRows()
		ln.rowsReporter = nil
	}
	s.relayDone(ln.r.now)
	s.applyAfter(ln.after, ln.response.ok)
	ln.after = afterAction{}
	if len(ln.backendPartial) > 0 {
		// More than the response: the backend said something unasked.
		ln.handOff(handBack{kind: handBackIdle, backendEvent: true}, ln.clientIn)
		return
	}
	ln.idleAgain()
}

// restores: r is a Restorer with a statement to run before the ERR code.
func restores(r Retrier, code uint16) bool {
	x, ok := r.(Restorer)
	return ok && x.Restore(code) != ""
}

// relayReportedOK relays before (response bytes ahead of the OK, already
// renumbered), then the OK payload p with the insert id rep gives, when
// that differs from p's (done; end: the response ends with it). Not done:
// nothing was written, p is relayed as it is.
func (ln *lane) relayReportedOK(rep KeyReporter, before, p []byte) (done, end bool) {
	s := ln.s
	pkt, changed := reportedOK(rep, p, append(ln.okBuf[:0], 0, 0, 0, 0)) // the header, then the payload
	if !changed {
		return false, false
	}
	ln.okBuf = pkt
	n := len(pkt) - 4
	pkt[0], pkt[1], pkt[2], pkt[3] = byte(n), byte(n>>8), byte(n>>16), s.c.seq
	if len(before) > 0 {
		if err := ln.toClient(before); err != nil {
			ln.fail(err)
			return false, false
		}
	}
	if err := ln.toClient(pkt); err != nil {
		ln.fail(err)
		return false, false
	}
	s.b.seq++
	s.c.seq++
	ev, err := ln.response.step(s, pkt[4:4+min(n, headLen)], n)
	if err != nil {
		ln.fail(err)
		return false, false
	}
	ln.packetKind = ev
	ln.inPacket, ln.continued = false, false
	return true, ev == evDone || ev == evErr || ev == evInfile
}
