package proxy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

type codedTestError struct {
	code uint16
	msg  string
}

func (e *codedTestError) Error() string    { return e.msg }
func (e *codedTestError) Code() uint16     { return e.code }
func (e *codedTestError) SQLState() string { return "HY000" }

// TestErrorFieldsStyle: the proxy's own errors reach the client in
// errstyle's style (MariaDB's words for the code kept, else "leafproxy: "
// first, once); a *mysql.MyError, which may be the backend's, as it is.
func TestErrorFieldsStyle(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code uint16
		msg  string
	}{
		{errors.New("create tag: dial tcp: refused"), 1105, "leafproxy: create tag: dial tcp: refused"},
		{errors.New("leafproxy: already styled"), 1105, "leafproxy: already styled"},
		{fmt.Errorf("wrapped: %w", &codedTestError{4091, "Unknown SEQUENCE: 'x'"}), 4091, "Unknown SEQUENCE: 'x'"},
		{&codedTestError{4084, "Sequence 't' has run out"}, 4084, "Sequence 't' has run out"},
		{&codedTestError{1235, "SETVAL of a snowflake tag"}, 1235, "leafproxy: SETVAL of a snowflake tag"},
		{&mysql.MyError{Code: 1146, State: "42S02", Message: "Table 'a.b' doesn't exist"}, 1146, "Table 'a.b' doesn't exist"},
	} {
		code, _, msg := errorFields(tc.err)
		if code != tc.code || msg != tc.msg {
			t.Errorf("errorFields(%v) = %d %q, want %d %q", tc.err, code, msg, tc.code, tc.msg)
		}
	}
}
