package proxy

import (
	"io"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// RelayQueryWriter is RelayQuery for a text of n bytes that src writes,
// in pieces, straight into the backend connection: a large rewritten
// INSERT is never held whole (issue 29). The text must be one statement
// and not USE or a SET of sql_mode (nothing in the session's view of the
// backend follows from it). A src that gives other than n bytes, or
// fails, closes the session: the backend has part of a command. Only on
// the session's own goroutine (on an event loop it returns ErrWouldBlock
// before sending anything).
func (s blocking) RelayQueryWriter(n int, src io.WriterTo) error {
	if err := s.exec.mayWait(); err != nil {
		return err
	}
	if s.fatal != nil {
		return s.fatal
	}
	l := s.b
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
		return s.setFatal(err)
	}
	ok, err := s.awaitResponse(respResult, false)
	s.applyAfter(afterAction{kind: afterQuery}, ok)
	if err != nil {
		return err
	}
	return s.setFatal(s.c.Flush())
}
