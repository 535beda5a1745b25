package engine

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// The audit log of what the engine does for operators: SETVAL writes the
// store (leaf_alloc.max_id, or a snowflake floor) and steers the IDs of
// every proxy sharing it, so each one is logged with who asked, from
// where, and how it ended; as admin's statements are (admin package).

// auditSetVal logs SETVAL(c.Tag, c.Value[, c.Used]) and its outcome (err
// nil: done). Info when done, warn when refused or failed.
func (st *state) auditSetVal(c rewriter.Call, err error) {
	l := st.logger()
	if l == nil {
		return
	}
	attrs := []any{"who", st.who(), "action", "SETVAL", "tag", strings.Clone(c.Tag), "value", c.Value, "used", c.Used}
	if err == nil {
		l.Info("audit", append(attrs, "result", "ok")...)
		return
	}
	result, code := "failed", uint16(0)
	var se proxy.SQLError
	var me *mysql.MyError
	switch {
	case errors.As(err, &se):
		code = se.Code()
	case errors.As(err, &me):
		code = me.Code
	}
	if code == mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR {
		result = "denied"
	}
	attrs = append(attrs, "result", result)
	if code != 0 {
		attrs = append(attrs, "code", code)
	}
	l.Warn("audit", append(attrs, "err", err.Error())...)
}

// who names the session's account for the audit log (proxy.Session.Who:
// user@host); "?" for a session that cannot say (unit tests' fakes).
func (st *state) who() string {
	if w, ok := st.session.(interface{ Who() string }); ok {
		return w.Who()
	}
	return "?"
}

// logger is the session's logger, when it has one (the proxy's sessions
// do; the unit tests' fakes not).
func (st *state) logger() *slog.Logger {
	if l, ok := st.session.(interface{ Logger() *slog.Logger }); ok {
		return l.Logger()
	}
	return nil
}
