package lane

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/eventloop"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// The backend side of a lane: reading the response and relaying it to the
// client as it arrives, following it with the response's state machine
// (wire.RespTracker), and ending it.

// backendUnasked handles an event on the backend socket of an idle lane.
// Events are edge-triggered and may announce bytes already read with the
// response, so a look without reading comes first; what is really there
// (MariaDB's ERR before it closes an idle connection, or the close itself)
// is for the goroutine's idle watch.
func (ln *Lane) backendUnasked() {
	var b [1]byte
	_, _, errno := unix.Recvfrom(ln.BackendFD, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if errno == unix.EAGAIN {
		ln.backendReadable = false
		return
	}
	ln.handOff(HandBack{Kind: HandBackIdle, BackendEvent: true}, ln.clientIn)
}

// readBackend reads the response's bytes and relays them, until the socket
// is empty, the response is complete or the client has not taken the last
// bytes (back pressure: backendReadable says to come back).
func (ln *Lane) readBackend() {
	for !ln.Gone && ln.busy && len(ln.clientPending) == 0 {
		buf := ln.r.BackendBuf
		k := copy(buf, ln.backendPartial)
		n, errno := eventloop.ReadFD(ln.BackendFD, buf[k:])
		switch {
		case errno == unix.EAGAIN:
			ln.backendReadable = false
			return
		case errno != 0:
			ln.fail(&wire.IOError{Leg: "backend", Err: os.NewSyscallError("read", errno)})
			return
		case n == 0:
			ln.fail(&wire.IOError{Leg: "backend", Err: io.EOF})
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
func (ln *Lane) relayBackend(buf []byte) {
	pos, stop := 0, false
	from := 0 // buf[from:pos] is relayed at the end (a reported OK moves it)
read:
	for !stop {
		if ln.inPacket {
			if pos, stop = ln.packetBody(buf, pos); ln.inPacket {
				break
			}
			continue
		}
		if len(buf)-pos < 4 {
			break
		}
		n := int(buf[pos]) | int(buf[pos+1])<<8 | int(buf[pos+2])<<16
		if seq := buf[pos+3]; seq != ln.backendLeg.Seq {
			ln.fail(&wire.IOError{Leg: "backend", Err: wire.SequenceError{Got: seq, Want: ln.backendLeg.Seq}})
			return
		}
		h := min(n, wire.HeadLen)
		if !ln.continued && len(buf)-pos-4 < h {
			break
		}
		if ln.watching && !ln.continued {
			switch what, end := ln.watchFirst(buf[from:pos], buf[pos:], n); what {
			case firstWait:
				break read
			case firstGone:
				return
			case firstRelayed:
				pos += 4 + n
				from, stop = pos, end
				continue
			}
		}
		if !ln.packetHeader(buf[pos:], n, h) {
			return
		}
		pos += 4
	}
	ln.endRead(buf, from, pos, stop)
}

// packetBody passes over the body of the packet under way from buf[pos:];
// stop: the packet ended the response.
func (ln *Lane) packetBody(buf []byte, pos int) (next int, stop bool) {
	k := min(ln.bodyLeft, len(buf)-pos)
	pos += k
	ln.bodyLeft -= k
	if ln.bodyLeft > 0 {
		return pos, false
	}
	ln.inPacket = false
	if !ln.continued {
		stop = ln.packetKind == wire.EvDone || ln.packetKind == wire.EvErr || ln.packetKind == wire.EvInfile
	}
	return pos, stop
}

// packetHeader renumbers the packet at the start of p (n bytes of payload,
// its first h in p) for the client leg and, unless it continues a packet
// of maxPayload bytes, steps the tracker with it; false: the lane failed.
func (ln *Lane) packetHeader(p []byte, n, h int) bool {
	ln.backendLeg.Seq++
	p[3] = ln.clientLeg.Seq
	ln.clientLeg.Seq++
	if !ln.continued {
		ev, err := ln.response.Step(ln.facts, p[4:4+h], n)
		if err != nil {
			ln.fail(err)
			return false
		}
		if ev == wire.EvErr {
			ln.sess.RelayedErr(p[4 : 4+h])
			ln.rowsWatched = false
		}
		ln.packetKind = ev
	}
	ln.continued = n == wire.MaxPayload
	ln.inPacket, ln.bodyLeft = true, n
	return true
}

// endRead relays buf[from:pos], keeps buf[pos:] for the next read and,
// when the response has ended (stop), finishes it or hands LOCAL INFILE
// to the goroutine.
func (ln *Lane) endRead(buf []byte, from, pos int, stop bool) {
	if pos > from {
		if err := ln.toClient(buf[from:pos]); err != nil {
			ln.fail(err)
			return
		}
	}
	ln.backendPartial = append(ln.backendPartial[:0], buf[pos:]...)
	switch {
	case !stop:
	case ln.packetKind == wire.EvInfile:
		// The client now sends its file: the goroutine streams it to the
		// backend and finishes the response (walkFrom).
		ln.handOff(HandBack{Kind: HandBackResume, Infile: true, Debt: Backoff}, ln.clientIn)
	default:
		ln.finish()
	}
}

// What watchFirst did with the first packet of a watched answer.
const (
	firstRelay   = iota // nothing: relay it as any other
	firstWait           // the packet is not whole yet: read on
	firstGone           // the session went to its goroutine (or the lane failed)
	firstRelayed        // relayed, with the insert id the watcher gave
)

// watchFirst asks the watcher of RelayQueryOr's answer about its first
// packet, at the start of rest (n bytes of payload), when it is an ERR or
// an OK (Session.Judge); before is what precedes it in this read, already
// renumbered. A verdict to retry or restore hands the session, the packet
// unrelayed, to its goroutine, which carries it out (Redo and the
// statement may wait); a reported insert id is relayed here (firstRelayed;
// end: the response ends with it).
func (ln *Lane) watchFirst(before, rest []byte, n int) (what int, end bool) {
	isErr := n > 0 && n <= ln.maxWatchedErr && rest[4] == 0xFF
	if !isErr && (n == 0 || n >= 1024 || rest[4] != 0x00) {
		if n > 0 && rest[4] != 0xFF {
			ln.rowsWatched = true // a result set (RETURNING): told when it ends well
		}
		ln.watching = false
		return firstRelay, false
	}
	if len(rest)-4 < n {
		return firstWait, false // the whole packet first
	}
	ln.watching = false
	act, id := ln.sess.Judge(isErr, rest[4:4+n])
	switch act {
	case JudgeRelay:
		return firstRelay, false
	case JudgeReport:
		done, end := ln.relayReportedOK(id, before, rest[4:4+n])
		switch {
		case ln.Gone:
			return firstGone, false
		case done:
			return firstRelayed, end
		}
		return firstRelay, false
	}
	ln.backendPartial = append(ln.backendPartial[:0], rest...)
	ln.handOff(HandBack{Kind: HandBackResume, Redo: true, Debt: Backoff}, ln.clientIn)
	return firstGone, false
}

// toClient writes response bytes after anything the session wrote itself.
func (ln *Lane) toClient(p []byte) error {
	if err := ln.clientLeg.Flush(); err != nil {
		return err
	}
	if _, err := ln.clientSink.Write(p); err != nil {
		return &wire.IOError{Leg: "client", Err: err}
	}
	return nil
}

// finish ends the response under way.
func (ln *Lane) finish() {
	ln.busy = false
	ln.watching = false
	rows := ln.rowsWatched
	ln.rowsWatched = false
	ln.sess.Finished(ln.r.Now, ln.response.OK, rows)
	if len(ln.backendPartial) > 0 {
		// More than the response: the backend said something unasked.
		ln.handOff(HandBack{Kind: HandBackIdle, BackendEvent: true}, ln.clientIn)
		return
	}
	ln.idleAgain()
}

// relayReportedOK relays before (response bytes ahead of the OK, already
// renumbered), then the OK payload p with insert id id (done; end: the
// response ends with it). Not done: the lane failed.
func (ln *Lane) relayReportedOK(id uint64, before, p []byte) (done, end bool) {
	pkt := wire.OKWithInsertID(append(ln.okBuf[:0], 0, 0, 0, 0), p, id) // the header, then the payload
	ln.okBuf = pkt
	n := len(pkt) - 4
	pkt[0], pkt[1], pkt[2], pkt[3] = byte(n), byte(n>>8), byte(n>>16), ln.clientLeg.Seq
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
	ln.backendLeg.Seq++
	ln.clientLeg.Seq++
	ev, err := ln.response.Step(ln.facts, pkt[4:4+min(n, wire.HeadLen)], n)
	if err != nil {
		ln.fail(err)
		return false, false
	}
	ln.packetKind = ev
	ln.inPacket, ln.continued = false, false
	return true, ev == wire.EvDone || ev == wire.EvErr || ev == wire.EvInfile
}
