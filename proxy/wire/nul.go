package wire

import "fmt"

// ProtocolError is a backend that broke the protocol (an answer the proxy
// cannot read): an IOError of the backend leg, which ends the session as
// any broken backend connection does.
func ProtocolError(format string, a ...any) error {
	return &IOError{Leg: "backend", Err: fmt.Errorf("protocol: "+format, a...)}
}

// IndexNul is the index of b's first NUL byte, or len(b) when it has none.
func IndexNul(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

// TrimNul is b without one trailing NUL byte.
func TrimNul(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == 0 {
		return b[:n-1]
	}
	return b
}
