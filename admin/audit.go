package admin

import (
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy"
)

// auditText bounds the statement text an audit line carries.
const auditText = 256

// audit logs one admin statement: who (the session's account and client
// address, besides the session id its logger carries), what (the
// statement, its kind and tag) and how it ended (result: ok for a SHOW,
// created, altered, dropped, unchanged when there was nothing to do (IF
// NOT EXISTS / IF EXISTS), denied for an account without admin: true,
// failed with the error otherwise). Info level, warn when denied or
// failed.
func audit(s session, st stmt, sql []byte, result string, err error) {
	text := sql
	if len(text) > auditText {
		text = text[:auditText]
	}
	attrs := []any{"who", s.Who(), "action", st.what(), "tag", st.tag, "statement", string(text)}
	if result != "" {
		attrs = append(attrs, "result", result)
		if err != nil {
			attrs = append(attrs, "err", err.Error()) // done, but the client was not told
		}
		s.Logger().Info("audit", attrs...)
		return
	}
	result = "failed"
	code := errCode(err)
	if code == mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR {
		result = "denied"
	}
	attrs = append(attrs, "result", result)
	if code != 0 {
		attrs = append(attrs, "code", code)
	}
	if err != nil {
		attrs = append(attrs, "err", err.Error())
	}
	s.Logger().Warn("audit", attrs...)
}

// errCode is the MySQL error code err carries (0: none).
func errCode(err error) uint16 {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me.Code
	}
	var se proxy.SQLError
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}
