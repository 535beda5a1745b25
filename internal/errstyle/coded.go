package errstyle

// Coded is an error with the MySQL error code and SQLSTATE the proxy
// answers it with (a proxy.SQLError), for the errors that need no type of
// their own. Its text follows the rule like every other: errstyle's scan
// of the constructors reads NewCoded's code and message.
type Coded struct {
	code  uint16
	state string
	msg   string
}

// NewCoded is an error answered with code, state and msg.
func NewCoded(code uint16, state, msg string) *Coded {
	return &Coded{code: code, state: state, msg: msg}
}

func (e *Coded) Error() string    { return e.msg }
func (e *Coded) Code() uint16     { return e.code }
func (e *Coded) SQLState() string { return e.state }
