package rewriter

import (
	"fmt"

	"github.com/leafproxy/leafproxy/internal/errstyle"
)

// MySQL error numbers and SQLSTATEs the planner reports.
const (
	// CodeNotSupported (ER_NOT_SUPPORTED_YET, SQLSTATE 42000): a statement
	// that cannot be planned without repeating or losing an ID.
	CodeNotSupported uint16 = 1235
	// CodeNoDefault (ER_NO_DEFAULT_FOR_FIELD, SQLSTATE HY000): INSERT ...
	// SELECT into a rule table without its key column.
	CodeNoDefault uint16 = 1364
	// CodeBadField (ER_BAD_FIELD_ERROR, SQLSTATE 42S22): the rule's key
	// column is not among the table's columns.
	CodeBadField uint16 = 1054
	// CodeUnknown (ER_UNKNOWN_ERROR, SQLSTATE HY000): Env.Columns failed.
	CodeUnknown uint16 = 1105
	// CodeWrongValueCount (ER_WRONG_VALUE_COUNT_ON_ROW, SQLSTATE 21S01):
	// a VALUES row into a rule table whose value count is not the column
	// count, as the planner reads it.
	CodeWrongValueCount uint16 = 1136
	// CodeFieldTwice (ER_FIELD_SPECIFIED_TWICE, SQLSTATE 42000): a LOAD
	// DATA column list that names the key column twice.
	CodeFieldTwice uint16 = 1110
	// CodeWrongArguments (ER_WRONG_ARGUMENTS, SQLSTATE HY000): SETVAL
	// with arguments the proxy cannot run.
	CodeWrongArguments uint16 = 1210
	// CodeTooDeep (ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT, SQLSTATE
	// HY000): a statement the parser must read nests parentheses deeper
	// than Limits.MaxDepth (parse.go).
	CodeTooDeep uint16 = 1473
)

// Error is a planning error the proxy can send to the client as an ERR
// packet. Every error PlanQuery and PlanPrepare return is an *Error, but
// for what Env.Limits.Memory's Acquire returned.
type Error struct {
	code  uint16
	state string
	msg   string
	cause error
	// unread: the statement the parser could not read (sequence calls
	// replaced by literals), for the server to say whether it is its
	// syntax error too (Unreadable).
	unread string
}

// Unreadable is, for an error saying the planner's parser could not read
// a statement, the statement as the parser saw it (sequence calls replaced
// by same-length literals; one statement, no RETURNING cut): a caller may
// ask the server to prepare it, and answer with the server's own error
// (1064 for a syntax error, as directly) when it fails. "" for other
// errors.
func (e *Error) Unreadable() string { return e.unread }

// Code is the MySQL error number.
func (e *Error) Code() uint16 { return e.code }

// SQLState is the five-character SQLSTATE.
func (e *Error) SQLState() string { return e.state }

// Error is the message: MariaDB's words for the code, or "leafproxy: "
// first (errstyle).
func (e *Error) Error() string { return e.msg }

// Unwrap returns the error from Env.Columns, if that was the cause.
func (e *Error) Unwrap() error { return e.cause }

func errorf(code uint16, format string, args ...any) *Error {
	state := "HY000"
	switch code {
	case CodeNotSupported, CodeFieldTwice:
		state = "42000"
	case CodeBadField:
		state = "42S22"
	case CodeWrongValueCount:
		state = "21S01"
	}
	// MariaDB's own errors (Column count doesn't match ..., Incorrect
	// arguments to ...) keep the server's words first; the planner's own
	// messages start with "leafproxy: " (errstyle).
	return &Error{code: code, state: state, msg: errstyle.Styled(code, fmt.Sprintf(format, args...))}
}
