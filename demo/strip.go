package demo

import (
	"bytes"
	"net"
)

// leafCapture is what the proxy writes before its first generated key,
// inside LAST_INSERT_ID(...), to keep the session's previous value for
// the restore after a failed statement (rewriter's wrapOpen). go-mysql-
// server has no := in expressions (and the demo needs no restore), so the
// demo backend drops it from the statements it is sent, before its parser
// sees them: stripListener's connections take it out of each COM_QUERY
// and COM_STMT_PREPARE packet.
var leafCapture = []byte("0*(@__leaf_l:=LAST_INSERT_ID())+")

// leafMarks are what the proxy writes on the key of the row after the
// wrapped one (rewriter's markOpen and markIf), with what the demo
// backend reads instead: the key alone, or IF(1 IS NULL,NULL,key).
var leafMarks = [][2][]byte{
	{leafCapture, nil},
	{[]byte("0*(@__leaf_m:=LAST_INSERT_ID())+"), nil},
	{[]byte("IF((@__leaf_m:=LAST_INSERT_ID()) IS NULL,NULL,"), []byte("IF(1 IS NULL,NULL,")},
	// a statement whose key the proxy reports (rewriter's plainWrapOpen,
	// plainMark)
	{[]byte("(@__leaf_k:="), []byte("(")},
	{[]byte("IF((@__leaf_m:=@__leaf_k)<=>0.5,NULL,"), []byte("IF(1 IS NULL,NULL,")},
}

// doLastID is how the proxy sets the session's LAST_INSERT_ID() to a key
// it reported (engine/lastid.go); go-mysql-server has no DO, so the demo
// backend reads it as the SELECT that does the same.
var doLastID = []byte("DO LAST_INSERT_ID(")

// stripMarks is body without the proxy's captures and marks.
func stripMarks(body []byte) []byte {
	if len(body) > 0 && bytes.HasPrefix(body[1:], doLastID) {
		body = append([]byte{body[0]}, append([]byte("SELECT "), body[1+len("DO "):]...)...)
	}
	for _, m := range leafMarks {
		if bytes.Contains(body, m[0]) {
			body = bytes.ReplaceAll(body, m[0], m[1])
		}
	}
	return body
}

type stripListener struct{ net.Listener }

func (l stripListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stripConn{Conn: c}, nil
}

// stripConn passes the client's packets on whole, each COM_QUERY and
// COM_STMT_PREPARE without leafMarks (its length rewritten).
type stripConn struct {
	net.Conn
	in, out []byte
	cont    bool // the next packet continues one of 2^24-1 bytes
	err     error
}

const maxPacket = 1<<24 - 1

func (c *stripConn) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if len(c.in) >= 4 {
			n := int(c.in[0]) | int(c.in[1])<<8 | int(c.in[2])<<16
			if len(c.in) >= 4+n {
				body := c.in[4 : 4+n]
				if !c.cont && n > 0 && (body[0] == 0x03 || body[0] == 0x16) && n < maxPacket && (bytes.Contains(body, []byte("@__leaf_")) || bytes.HasPrefix(body[1:], doLastID)) {
					body = stripMarks(body)
					c.out = append(c.out, byte(len(body)), byte(len(body)>>8), byte(len(body)>>16), c.in[3])
					c.out = append(c.out, body...)
				} else {
					c.out = append(c.out, c.in[:4+n]...)
				}
				c.cont = n == maxPacket
				c.in = append(c.in[:0], c.in[4+n:]...)
				continue
			}
		}
		if c.err != nil {
			if len(c.in) > 0 { // a partial packet: as it came
				c.out, c.in = append(c.out, c.in...), c.in[:0]
				break
			}
			return 0, c.err
		}
		var buf [32 << 10]byte
		k, err := c.Conn.Read(buf[:])
		c.in = append(c.in, buf[:k]...)
		c.err = err
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	if len(c.out) == 0 {
		c.out = c.out[:0:0]
	}
	return n, nil
}
