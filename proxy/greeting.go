package proxy

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
	mariadbProgress       uint32 = 1 << 0 // progress reports inside results
	mariadbComMulti       uint32 = 1 << 1
	mariadbStmtBulk       uint32 = 1 << 2 // COM_STMT_BULK_EXECUTE
	mariadbExtTypeInfo    uint32 = 1 << 3 // extended column metadata (json, uuid, ...)
	mariadbCacheMetadata  uint32 = 1 << 4 // execute responses may skip column definitions
	mariadbBulkUnitResult uint32 = 1 << 5
)

// greeting is a server's initial handshake packet (protocol 10), as the
// backend sent it or as the proxy writes it.
type greeting struct {
	version  string
	threadID uint32
	scramble []byte // 20 bytes
	caps     uint32
	extCaps  uint32 // MariaDB only (caps bit 0 clear)
	charset  uint8
	status   uint16
	plugin   string
}

func (g *greeting) mariadb() bool { return g.caps&mysql.CLIENT_LONG_PASSWORD == 0 }

// parseGreeting reads a backend greeting. An ERR packet (too many
// connections, host blocked) comes back as *mysql.MyError.
func parseGreeting(p []byte) (*greeting, error) {
	if len(p) > 0 && p[0] == 0xFF {
		return nil, parseErr(p)
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
	g := &greeting{version: string(p[:nul])}
	p = p[nul+1:]
	if len(p) < 4+8+1+2 {
		return nil, bad("too short")
	}
	g.threadID = binary.LittleEndian.Uint32(p)
	g.scramble = append([]byte(nil), p[4:12]...)
	g.caps = uint32(binary.LittleEndian.Uint16(p[13:15]))
	p = p[15:]
	if len(p) < 1+2+2+1+10 {
		return g, nil // pre-4.1 server: we need 4.1, caught by the caller
	}
	g.charset = p[0]
	g.status = binary.LittleEndian.Uint16(p[1:3])
	g.caps |= uint32(binary.LittleEndian.Uint16(p[3:5])) << 16
	authLen := int(p[5])
	if g.mariadb() {
		g.extCaps = binary.LittleEndian.Uint32(p[12:16])
	}
	p = p[16:]
	if g.caps&mysql.CLIENT_SECURE_CONNECTION != 0 {
		n := max(13, authLen-8)
		if len(p) < n {
			return nil, bad("scramble too short")
		}
		part := p[:n]
		if i := bytes.IndexByte(part, 0); i >= 0 {
			part = part[:i]
		}
		g.scramble = append(g.scramble, part...)
		p = p[n:]
	}
	if g.caps&mysql.CLIENT_PLUGIN_AUTH != 0 {
		if i := bytes.IndexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		g.plugin = string(p)
	}
	return g, nil
}

// appendGreeting writes g as a protocol-10 greeting.
func appendGreeting(p []byte, g *greeting) []byte {
	p = append(p, 10)
	p = append(p, g.version...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint32(p, g.threadID)
	p = append(p, g.scramble[:8]...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint16(p, uint16(g.caps))
	p = append(p, g.charset)
	p = binary.LittleEndian.AppendUint16(p, g.status)
	p = binary.LittleEndian.AppendUint16(p, uint16(g.caps>>16))
	p = append(p, byte(len(g.scramble)+1))
	p = append(p, 0, 0, 0, 0, 0, 0)
	p = binary.LittleEndian.AppendUint32(p, g.extCaps)
	p = append(p, g.scramble[8:]...)
	p = append(p, 0)
	p = append(p, g.plugin...)
	return append(p, 0)
}

// handshakeResponse is a client's HandshakeResponse41 (or the SSL request
// that precedes it, which is its first 32 bytes).
type handshakeResponse struct {
	caps      uint32
	extCaps   uint32
	maxPacket uint32
	charset   uint8
	user      string
	auth      []byte
	db        string
	plugin    string
	attrs     []byte // raw lenenc key/value pairs, forwarded as they came
}

var errShortHandshake = errors.New("malformed handshake response")

// parseHandshakeResponse parses a HandshakeResponse41 with every length
// checked against the packet: a missing NUL or an oversized length is an
// error, never a panic or an allocation beyond the packet.
func parseHandshakeResponse(p []byte, serverMariaDB bool) (*handshakeResponse, error) {
	if len(p) < 32 {
		return nil, errShortHandshake
	}
	r := &handshakeResponse{
		caps:      binary.LittleEndian.Uint32(p),
		maxPacket: binary.LittleEndian.Uint32(p[4:]),
		charset:   p[8],
	}
	if r.caps&mysql.CLIENT_PROTOCOL_41 == 0 {
		return nil, errors.New("client does not speak protocol 4.1")
	}
	if serverMariaDB && r.caps&mysql.CLIENT_LONG_PASSWORD == 0 {
		r.extCaps = binary.LittleEndian.Uint32(p[28:32])
	}
	if len(p) == 32 {
		return r, nil // SSL request
	}
	p = p[32:]
	cstr := func() (string, error) {
		i := bytes.IndexByte(p, 0)
		if i < 0 {
			return "", errShortHandshake
		}
		s := string(p[:i])
		p = p[i+1:]
		return s, nil
	}
	var err error
	if r.user, err = cstr(); err != nil {
		return nil, err
	}
	switch {
	case r.caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		n, k := lenenc(p)
		if k == 0 || n > uint64(len(p)-k) {
			return nil, errShortHandshake
		}
		r.auth = append([]byte(nil), p[k:k+int(n)]...)
		p = p[k+int(n):]
	case r.caps&mysql.CLIENT_SECURE_CONNECTION != 0:
		if len(p) < 1 || int(p[0]) > len(p)-1 {
			return nil, errShortHandshake
		}
		r.auth = append([]byte(nil), p[1:1+int(p[0])]...)
		p = p[1+int(p[0]):]
	default:
		s, err := cstr()
		if err != nil {
			return nil, err
		}
		r.auth = []byte(s)
	}
	if r.caps&mysql.CLIENT_CONNECT_WITH_DB != 0 && len(p) > 0 {
		if r.db, err = cstr(); err != nil {
			return nil, err
		}
	}
	if r.caps&mysql.CLIENT_PLUGIN_AUTH != 0 && len(p) > 0 {
		if r.plugin, err = cstr(); err != nil {
			// Some clients end the packet with the plugin name unterminated.
			r.plugin, p = string(p), nil
		}
	}
	if r.caps&mysql.CLIENT_CONNECT_ATTRS != 0 && len(p) > 0 {
		n, k := lenenc(p)
		if k == 0 || n > uint64(len(p)-k) {
			return nil, errShortHandshake
		}
		r.attrs = append([]byte(nil), p[k:k+int(n)]...)
	}
	return r, nil
}

// appendHandshakeResponse writes the backend leg's HandshakeResponse41
// (sslOnly: just the 32-byte SSL request).
func appendHandshakeResponse(p []byte, r *handshakeResponse, sslOnly bool) []byte {
	p = binary.LittleEndian.AppendUint32(p, r.caps)
	p = binary.LittleEndian.AppendUint32(p, r.maxPacket)
	p = append(p, r.charset)
	p = append(p, make([]byte, 19)...)
	p = binary.LittleEndian.AppendUint32(p, r.extCaps)
	if sslOnly {
		return p
	}
	p = append(p, r.user...)
	p = append(p, 0)
	p = mysql.AppendLengthEncodedInteger(p, uint64(len(r.auth)))
	p = append(p, r.auth...)
	if r.caps&mysql.CLIENT_CONNECT_WITH_DB != 0 {
		p = append(p, r.db...)
		p = append(p, 0)
	}
	p = append(p, r.plugin...)
	p = append(p, 0)
	if r.caps&mysql.CLIENT_CONNECT_ATTRS != 0 {
		p = mysql.AppendLengthEncodedInteger(p, uint64(len(r.attrs)))
		p = append(p, r.attrs...)
	}
	return p
}

// attrsWith appends key=value to raw connection attributes, so the backend
// sees the client's own attributes plus the proxy's mark.
func attrsWith(raw []byte, kv ...string) []byte {
	out := append([]byte(nil), raw...)
	for _, s := range kv {
		out = mysql.AppendLengthEncodedInteger(out, uint64(len(s)))
		out = append(out, s...)
	}
	return out
}
