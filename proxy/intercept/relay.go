package intercept

import (
	"io"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// RelayExecuteAfter pipelines the text statement pre (e.g. SET @x=1) and
// the execute packet pkt in one write: pre's response is consumed silently
// and pkt's streamed to the client, so pre costs no extra round trip. If pre
// fails, the backend has still run the execute, with stale values: the
// client gets an ERR saying so and the session ends (the returned error is
// fatal).
func RelayExecuteAfter(s Session, pre, pkt []byte) error {
	if err := s.Ready(); err != nil {
		return err
	}
	c, b := s.Legs()
	out := s.Out()
	*out = append(append((*out)[:0], mysql.COM_QUERY), pre...)
	if err := b.WriteCommand(*out); err != nil {
		return s.SetFatal(err)
	}
	preSeq := b.Seq
	if err := b.WriteCommand(pkt); err != nil {
		return s.SetFatal(err)
	}
	execSeq := b.Seq
	s.TrimOut()
	if err := b.FlushForResponse(); err != nil {
		return s.SetFatal(err)
	}
	b.Seq = preSeq
	perr := readResult(s, wire.RespResult, false).Err
	if err := s.Fatal(); err != nil {
		return err
	}
	b.Seq = execSeq
	if perr != nil {
		// The execute has run with whatever the variables held before, so
		// its outcome is unknown to us and must not look like a clean
		// failure: the client gets an ERR naming the problem and the
		// connection closes, as when a connection drops mid-statement.
		if readResult(s, wire.RespResult, false); s.Fatal() != nil {
			return s.Fatal()
		}
		s.Logger().Error("statement prepared by the proxy ran without its generated values; closing the session", "err", perr)
		return s.Quit(mysql.ER_UNKNOWN_ERROR, "HY000",
			"leafproxy: could not set the generated IDs before EXECUTE ("+perr.Error()+"); the statement may have run with stale values; closing the connection")
	}
	if err := s.RelayResponse(wire.ExecuteCursor(pkt)); err != nil {
		return s.SetFatal(err)
	}
	return s.SetFatal(c.Flush())
}

// RelayQueryWriter is RelayQuery for a text of n bytes that src writes,
// in pieces, straight into the backend connection: a large rewritten
// INSERT is never held whole (issue 29). The text must be one statement
// and not USE or a SET of sql_mode (nothing in the session's view of the
// backend follows from it). A src that gives other than n bytes, or
// fails, closes the session: the backend has part of a command. Only on
// the session's own goroutine (on an event loop it returns ErrWouldBlock
// before sending anything).
func RelayQueryWriter(s Session, n int, src io.WriterTo) error {
	if err := s.Ready(); err != nil {
		return err
	}
	c, l := s.Legs()
	l.Seq = 0
	if l.Comp != nil {
		l.Comp.NewCommand()
	}
	f := wire.NewCommandWriter(l, 1+n)
	err := f.WriteByte(mysql.COM_QUERY)
	if err == nil {
		_, err = src.WriteTo(&f)
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return s.SetFatal(err)
	}
	if err := s.AwaitQuery(); err != nil {
		return err
	}
	return s.SetFatal(c.Flush())
}
