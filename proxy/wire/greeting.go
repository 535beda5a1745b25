package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// MariaDB's extended capabilities, sent in the last 4 of the greeting's 10
// reserved bytes (and of the handshake response's 23) when the server clears
// CLIENT_LONG_PASSWORD (bit 0, "CLIENT_MYSQL") to say it is MariaDB.
const (
	MariaDBProgress       uint32 = 1 << 0 // progress reports inside results
	MariaDBComMulti       uint32 = 1 << 1
	MariaDBStmtBulk       uint32 = 1 << 2 // COM_STMT_BULK_EXECUTE
	MariaDBExtTypeInfo    uint32 = 1 << 3 // extended column metadata (json, uuid, ...)
	MariaDBCacheMetadata  uint32 = 1 << 4 // execute responses may skip column definitions
	MariaDBBulkUnitResult uint32 = 1 << 5
)

// Greeting is a server's initial handshake packet (protocol 10), as the
// backend sent it or as the proxy writes it.
type Greeting struct {
	Version  string
	ThreadID uint32
	Scramble []byte // 20 bytes
	Caps     uint32
	ExtCaps  uint32 // MariaDB only (caps bit 0 clear)
	Charset  uint8
	Status   uint16
	Plugin   string
}

func (g *Greeting) MariaDB() bool { return g.Caps&mysql.CLIENT_LONG_PASSWORD == 0 }

// ParseGreeting reads a backend greeting. An ERR packet (too many
// connections, host blocked) comes back as *mysql.MyError.
func ParseGreeting(p []byte) (*Greeting, error) {
	if len(p) > 0 && p[0] == 0xFF {
		return nil, ParseErr(p)
	}
	bad := func(what string) error { return fmt.Errorf("malformed server greeting: %s", what) }
	if len(p) < 1 || p[0] != 10 {
		return nil, bad("protocol version is not 10")
	}
	p = p[1:]
	nul := bytes.IndexByte(p, 0)
	if nul < 0 {
		return nil, bad("no end to the version string")
	}
	g := &Greeting{Version: string(p[:nul])}
	p = p[nul+1:]
	if len(p) < 4+8+1+2 {
		return nil, bad("too short")
	}
	g.ThreadID = binary.LittleEndian.Uint32(p)
	g.Scramble = append([]byte(nil), p[4:12]...)
	g.Caps = uint32(binary.LittleEndian.Uint16(p[13:15]))
	p = p[15:]
	if len(p) < 1+2+2+1+10 {
		return g, nil // pre-4.1 server: we need 4.1, caught by the caller
	}
	g.Charset = p[0]
	g.Status = binary.LittleEndian.Uint16(p[1:3])
	g.Caps |= uint32(binary.LittleEndian.Uint16(p[3:5])) << 16
	authLen := int(p[5])
	if g.MariaDB() {
		g.ExtCaps = binary.LittleEndian.Uint32(p[12:16])
	}
	p = p[16:]
	if g.Caps&mysql.CLIENT_SECURE_CONNECTION != 0 {
		n := max(13, authLen-8)
		if len(p) < n {
			return nil, bad("scramble too short")
		}
		part := p[:n]
		if i := bytes.IndexByte(part, 0); i >= 0 {
			part = part[:i]
		}
		g.Scramble = append(g.Scramble, part...)
		p = p[n:]
	}
	if g.Caps&mysql.CLIENT_PLUGIN_AUTH != 0 {
		if i := bytes.IndexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		g.Plugin = string(p)
	}
	return g, nil
}

// AppendGreeting writes g as a protocol-10 greeting.
func AppendGreeting(p []byte, g *Greeting) []byte {
	p = append(p, 10)
	p = append(p, g.Version...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint32(p, g.ThreadID)
	p = append(p, g.Scramble[:8]...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint16(p, uint16(g.Caps))
	p = append(p, g.Charset)
	p = binary.LittleEndian.AppendUint16(p, g.Status)
	p = binary.LittleEndian.AppendUint16(p, uint16(g.Caps>>16))
	p = append(p, byte(len(g.Scramble)+1))
	p = append(p, 0, 0, 0, 0, 0, 0)
	p = binary.LittleEndian.AppendUint32(p, g.ExtCaps)
	p = append(p, g.Scramble[8:]...)
	p = append(p, 0)
	p = append(p, g.Plugin...)
	return append(p, 0)
}

// HandshakeResponse is a client's HandshakeResponse41 (or the SSL request
// that precedes it, which is its first 32 bytes).
type HandshakeResponse struct {
	Caps      uint32
	ExtCaps   uint32
	MaxPacket uint32
	Charset   uint8
	User      string
	Auth      []byte
	DB        string
	Plugin    string
	Attrs     []byte // raw lenenc key/value pairs, forwarded as they came
}

var ErrShortHandshake = errors.New("malformed handshake response")

// ParseHandshakeResponse parses a HandshakeResponse41 with every length
// checked against the packet: a missing NUL or an oversized length is an
// error, never a panic or an allocation beyond the packet.
func ParseHandshakeResponse(p []byte, serverMariaDB bool) (*HandshakeResponse, error) {
	if len(p) < 32 {
		return nil, ErrShortHandshake
	}
	r := &HandshakeResponse{
		Caps:      binary.LittleEndian.Uint32(p),
		MaxPacket: binary.LittleEndian.Uint32(p[4:]),
		Charset:   p[8],
	}
	if r.Caps&mysql.CLIENT_PROTOCOL_41 == 0 {
		return nil, errors.New("client does not speak protocol 4.1")
	}
	if serverMariaDB && r.Caps&mysql.CLIENT_LONG_PASSWORD == 0 {
		r.ExtCaps = binary.LittleEndian.Uint32(p[28:32])
	}
	if len(p) == 32 {
		return r, nil // SSL request
	}
	p = p[32:]
	cstr := func() (string, error) {
		i := bytes.IndexByte(p, 0)
		if i < 0 {
			return "", ErrShortHandshake
		}
		s := string(p[:i])
		p = p[i+1:]
		return s, nil
	}
	var err error
	if r.User, err = cstr(); err != nil {
		return nil, err
	}
	switch {
	case r.Caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		n, k := LenencUint(p)
		if k == 0 || n > uint64(len(p)-k) {
			return nil, ErrShortHandshake
		}
		r.Auth = append([]byte(nil), p[k:k+int(n)]...)
		p = p[k+int(n):]
	case r.Caps&mysql.CLIENT_SECURE_CONNECTION != 0:
		if len(p) < 1 || int(p[0]) > len(p)-1 {
			return nil, ErrShortHandshake
		}
		r.Auth = append([]byte(nil), p[1:1+int(p[0])]...)
		p = p[1+int(p[0]):]
	default:
		s, err := cstr()
		if err != nil {
			return nil, err
		}
		r.Auth = []byte(s)
	}
	if r.Caps&mysql.CLIENT_CONNECT_WITH_DB != 0 && len(p) > 0 {
		if r.DB, err = cstr(); err != nil {
			return nil, err
		}
	}
	if r.Caps&mysql.CLIENT_PLUGIN_AUTH != 0 && len(p) > 0 {
		if r.Plugin, err = cstr(); err != nil {
			// Some clients end the packet with the plugin name unterminated.
			r.Plugin, p = string(p), nil
		}
	}
	if r.Caps&mysql.CLIENT_CONNECT_ATTRS != 0 && len(p) > 0 {
		n, k := LenencUint(p)
		if k == 0 || n > uint64(len(p)-k) {
			return nil, ErrShortHandshake
		}
		r.Attrs = append([]byte(nil), p[k:k+int(n)]...)
	}
	return r, nil
}

// AppendHandshakeResponse writes the backend leg's HandshakeResponse41
// (sslOnly: just the 32-byte SSL request).
func AppendHandshakeResponse(p []byte, r *HandshakeResponse, sslOnly bool) []byte {
	p = binary.LittleEndian.AppendUint32(p, r.Caps)
	p = binary.LittleEndian.AppendUint32(p, r.MaxPacket)
	p = append(p, r.Charset)
	p = append(p, make([]byte, 19)...)
	p = binary.LittleEndian.AppendUint32(p, r.ExtCaps)
	if sslOnly {
		return p
	}
	p = append(p, r.User...)
	p = append(p, 0)
	p = mysql.AppendLengthEncodedInteger(p, uint64(len(r.Auth)))
	p = append(p, r.Auth...)
	if r.Caps&mysql.CLIENT_CONNECT_WITH_DB != 0 {
		p = append(p, r.DB...)
		p = append(p, 0)
	}
	p = append(p, r.Plugin...)
	p = append(p, 0)
	if r.Caps&mysql.CLIENT_CONNECT_ATTRS != 0 {
		p = mysql.AppendLengthEncodedInteger(p, uint64(len(r.Attrs)))
		p = append(p, r.Attrs...)
	}
	return p
}

// AttrsWith appends key=value to raw connection attributes, so the backend
// sees the client's own attributes plus the proxy's mark.
func AttrsWith(raw []byte, kv ...string) []byte {
	out := append([]byte(nil), raw...)
	for _, s := range kv {
		out = mysql.AppendLengthEncodedInteger(out, uint64(len(s)))
		out = append(out, s...)
	}
	return out
}
