package sessionend_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/leafproxy/leafproxy/proxy/idle"
	"github.com/leafproxy/leafproxy/proxy/sessionend"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

func logTo(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// How the backend hears of the end follows how the client left, and the
// log says why.
func TestClientError(t *testing.T) {
	for _, tc := range []struct {
		err      error
		draining bool
		how      uint8
		left     bool
		log      string
	}{
		{io.EOF, false, sessionend.Close, true, "session closed by client"},
		{net.ErrClosed, false, sessionend.Quit, false, "session closed by client"},
		{&wire.IOError{Leg: "client", Err: syscall.ECONNRESET}, false, sessionend.Close, true, "bad packet from client"},
		{os.ErrDeadlineExceeded, true, sessionend.Quit, false, "proxy shutting down"},
		{os.ErrDeadlineExceeded, false, sessionend.Quit, false, "idle timeout"},
		{&idle.BackendClosedError{Reason: "ERR 4031: gone"}, false, sessionend.Close, false, "ERR 4031: gone"},
	} {
		var buf bytes.Buffer
		how, left := sessionend.ClientError(logTo(&buf), tc.err, tc.draining)
		if how != tc.how || left != tc.left || !strings.Contains(buf.String(), tc.log) {
			t.Errorf("%v (draining %v): how %d left %v, log %q; want %d %v %q", tc.err, tc.draining, how, left, buf.String(), tc.how, tc.left, tc.log)
		}
	}
}

// A backend lost mid-answer gets the client a 1158; lost before any of
// it, the client's connection just closes; a client lost mid-command has
// its statement abandoned.
func TestCommandError(t *testing.T) {
	backend := &wire.IOError{Leg: "backend", Err: io.EOF}
	client := &wire.IOError{Leg: "client", Err: io.EOF}
	for _, tc := range []struct {
		err  error
		f    sessionend.Facts
		want sessionend.Verdict
	}{
		{backend, sessionend.Facts{}, sessionend.Verdict{LostBackend: true}},
		{backend, sessionend.Facts{Unanswered: true}, sessionend.Verdict{}},
		{backend, sessionend.Facts{Closing: true}, sessionend.Verdict{}},
		{client, sessionend.Facts{}, sessionend.Verdict{Abandon: true, Left: true}},
		{client, sessionend.Facts{Abandoned: true}, sessionend.Verdict{}},
		{errors.New("other"), sessionend.Facts{}, sessionend.Verdict{}},
	} {
		var buf bytes.Buffer
		if got := sessionend.CommandError(logTo(&buf), tc.err, tc.f); got != tc.want {
			t.Errorf("%v %+v: %+v, want %+v", tc.err, tc.f, got, tc.want)
		}
		if !strings.Contains(buf.String(), "session closed") && !strings.Contains(buf.String(), "backend connection lost") {
			t.Errorf("%v %+v: no log line: %q", tc.err, tc.f, buf.String())
		}
	}
}

func TestQuitPacket(t *testing.T) {
	if got := sessionend.QuitPacket(nil); !bytes.Equal(got, []byte{1, 0, 0, 0, 1}) {
		t.Fatalf("COM_QUIT %x", got)
	}
}
