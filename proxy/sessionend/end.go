package sessionend

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"golang.org/x/sys/unix"

	"github.com/leafproxy/leafproxy/proxy/idle"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// ComQuit is a COM_QUIT packet.
var ComQuit = [5]byte{1, 0, 0, 0, mysql.COM_QUIT}

// QuitPacket is COM_QUIT as the backend leg l must frame it: in a stored
// compressed frame (sequence 0, a new command) when the leg compresses.
func QuitPacket(l *wire.Leg) []byte {
	if l == nil || l.Comp == nil {
		return ComQuit[:]
	}
	return append(wire.AppendFrameHeader(make([]byte, 0, 12), len(ComQuit), 0, 0), ComQuit[:]...)
}

// What a session's goroutine does with its backend connection when it
// ends (the session's plan, set as it learns why it ends).
const (
	Close   = iota // close it as it is (the client left without quitting, the backend failed)
	Quit           // between commands: COM_QUIT first, as a client that quits
	Abandon        // the client's connection failed mid-command: stop the statement too
)

// LeftWithoutQuit reports a client connection that ended without COM_QUIT
// (closed, reset, cut mid-packet): the backend connection then ends the
// same way.
func LeftWithoutQuit(err error) bool {
	var errno unix.Errno
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &errno)
}

// ClientError reads err, which ended the wait for the client's next
// command or its read, and logs why the session closed: how is the
// session's plan for the backend connection, left that the client closed
// without COM_QUIT. draining says the proxy is shutting down.
func ClientError(log *slog.Logger, err error, draining bool) (how uint8, left bool) {
	var gone *idle.BackendClosedError
	how = Quit // between commands, unless the client just left
	if LeftWithoutQuit(err) {
		how, left = Close, true
	}
	switch {
	case errors.As(err, &gone):
		how = Close
		log.Info("session closed: backend closed its connection while the client was idle", "reason", gone.Reason)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		log.Debug("session closed by client")
	case errors.Is(err, os.ErrDeadlineExceeded) && draining:
		log.Debug("session closed: proxy shutting down")
	case errors.Is(err, os.ErrDeadlineExceeded):
		log.Info("session closed: idle timeout")
	default:
		log.Info("session closed: bad packet from client", "err", oneLine(err))
	}
	return how, left
}

// Facts are what CommandError needs to know of the session whose command
// failed.
type Facts struct {
	Abandoned bool // its client went away mid-command: the statement was killed
	Closing   bool // the proxy cut it off (forced shutdown)
	// Unanswered: nothing of the command's answer has reached the client
	// (its leg's sequence id is still the command's).
	Unanswered bool
	Backend    string // the backend's address, for the log
}

// Verdict is what CommandError decided.
type Verdict struct {
	// Abandon: the client's connection failed while a command was under
	// way: its statement may still be running, so the plan becomes
	// Abandon (Left: the client left without COM_QUIT). Otherwise the
	// plan stays as it was.
	Abandon, Left bool
	// LostBackend: the backend connection was lost mid-answer; the client
	// gets an ERR (1158) before its connection closes.
	LostBackend bool
}

// CommandError reads err, a fatal error of a session's command (other
// than the client's COM_QUIT), and logs why the session closed.
func CommandError(log *slog.Logger, err error, f Facts) (v Verdict) {
	var ie *wire.IOError
	if f.Abandoned && !f.Closing {
		// Its client went away mid-command: the statement was killed and
		// the backend connection cut (Session.abandon).
		log.Info("session closed: the client went away during a command", "err", oneLine(err))
		return v
	}
	if errors.As(err, &ie) && ie.Leg == "client" && !f.Closing {
		// The client's connection failed while a command was under way:
		// its statement may still be running (on a loop, lane.endBackend
		// looks).
		v.Abandon, v.Left = true, LeftWithoutQuit(err)
	}
	if errors.As(err, &ie) && ie.Leg == "backend" && !f.Closing && f.Unanswered {
		// Nothing of the answer has reached the client: close, as the
		// server's own connection would have, so the client sees a lost
		// connection (2013) that drivers and pools know to retry, not an
		// error packet they would take as the statement's answer.
		log.Warn("backend connection lost before any of the answer was relayed; closing the client connection",
			"backend", f.Backend, "err", oneLine(err))
		return v
	}
	if errors.As(err, &ie) && ie.Leg == "backend" && !f.Closing {
		log.Warn("backend connection lost", "backend", f.Backend, "err", oneLine(err))
		v.LostBackend = true
		return v
	}
	if f.Closing {
		log.Info("session closed by proxy shutdown")
		return v
	}
	log.Info("session closed", "err", oneLine(err))
	return v
}

// oneLine is err's message up to its first line break, for logs.
func oneLine(err error) string {
	m := err.Error()
	if i := strings.IndexByte(m, '\n'); i >= 0 {
		m = m[:i]
	}
	return m
}
