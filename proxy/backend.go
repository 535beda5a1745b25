package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// backendLogin is what a session asks of its backend connection: whose
// credentials, which database, and the client's choices to mirror.
type backendLogin struct {
	user, password string
	db             string
	charset        uint8
	clientCaps     uint32 // the client's negotiated flags; login.MirroredCaps are copied
	clientExt      uint32
	maxPacket      uint32
	attrs          []byte // the client's raw connection attributes
}

// backendConn is a logged-in backend connection.
type backendConn struct {
	conn     net.Conn       // the TLS connection when backend.tls is on
	hello    *wire.Greeting // the backend's own greeting (thread id, capabilities)
	ok       []byte         // the backend's final OK packet after authentication
	threadID uint32
	// compressed: the connection speaks the compressed protocol after the
	// login OK, because the client asked for it on its own leg.
	compressed bool
}

// dialBackend connects to backend.addr: a path (containing '/') is a Unix
// socket, anything else host:port over TCP.
func dialBackend(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	network := "tcp"
	if strings.Contains(addr, "/") {
		network = "unix"
	}
	d := net.Dialer{Timeout: timeout}
	return d.DialContext(ctx, network, addr)
}

// connectBackend dials the backend and logs in with l. The returned error is
// the backend's own *mysql.MyError (1045, 1049, ...) when it refused, or an
// I/O error.
func (s *Server) connectBackend(ctx context.Context, l backendLogin) (*backendConn, error) {
	timeout := s.cfg.Backend.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := dialBackend(ctx, s.cfg.Backend.Addr, timeout)
	if err != nil {
		s.noteBackend(err)
		return nil, err
	}
	dl, _ := ctx.Deadline()
	_ = nc.SetDeadline(dl) // bounds the whole backend handshake
	bc, err := s.loginBackend(nc, l)
	s.noteBackend(connectOutcome(err))
	if err != nil {
		nc.Close()
		return nil, err
	}
	_ = bc.conn.SetDeadline(time.Time{})
	s.noteGreeting(bc.hello)
	return bc, nil
}

func (s *Server) loginBackend(nc net.Conn, l backendLogin) (*backendConn, error) {
	lg := wire.NewLeg("backend", nc, 4<<10, 4<<10)
	g, err := readBackendGreeting(lg)
	if err != nil {
		return nil, err
	}
	return s.finishBackendLogin(lg, g, l)
}

// readBackendGreeting reads and checks the backend's greeting.
func readBackendGreeting(lg *wire.Leg) (*wire.Greeting, error) {
	p, err := lg.ReadPacket(nil, 64<<10)
	if err != nil {
		return nil, err
	}
	g, err := wire.ParseGreeting(p)
	if err != nil {
		return nil, err
	}
	if g.Caps&mysql.CLIENT_PROTOCOL_41 == 0 {
		return nil, errors.New("backend does not speak protocol 4.1")
	}
	return g, nil
}

// backendResponse is the backend leg's HandshakeResponse41 for l after
// greeting g, without auth data: the proxy's flags plus the client's
// mirrored ones, the backend's plugin, the client's attributes marked.
func backendResponse(g *wire.Greeting, l backendLogin) *wire.HandshakeResponse {
	resp := &wire.HandshakeResponse{
		Caps:      (login.BackendBaseCaps | l.clientCaps&login.MirroredCaps) & (g.Caps | mysql.CLIENT_LONG_PASSWORD),
		MaxPacket: l.maxPacket,
		Charset:   l.charset,
		User:      l.user,
		DB:        l.db,
		Plugin:    g.Plugin,
	}
	if resp.MaxPacket == 0 {
		resp.MaxPacket = 1 << 30
	}
	if g.MariaDB() {
		// Clearing bit 0 tells MariaDB the extended capabilities follow.
		resp.Caps &^= mysql.CLIENT_LONG_PASSWORD
		resp.ExtCaps = l.clientExt & login.ProxyExtCaps & g.ExtCaps
	}
	if l.db != "" {
		resp.Caps |= mysql.CLIENT_CONNECT_WITH_DB
	}
	resp.Attrs = wire.AttrsWith(l.attrs, "_proxy", "leafproxy")
	return resp
}

// startBackendTLS sends the SSL request and upgrades the leg when
// backend.tls is on (bc.conn becomes the TLS connection); otherwise it
// returns lg as it is.
func (s *Server) startBackendTLS(lg *wire.Leg, bc *backendConn, g *wire.Greeting, resp *wire.HandshakeResponse) (*wire.Leg, error) {
	if s.backendTLS == nil {
		return lg, nil
	}
	if g.Caps&mysql.CLIENT_SSL == 0 {
		return nil, errors.New("backend.tls is enabled but the backend does not offer TLS")
	}
	resp.Caps |= mysql.CLIENT_SSL
	if err := lg.WritePacket(wire.AppendHandshakeResponse(nil, resp, true)); err != nil {
		return nil, err
	}
	if err := lg.Flush(); err != nil {
		return nil, err
	}
	tc := tls.Client(&wire.BufferedConn{Conn: bc.conn, R: lg.R}, s.backendTLS.Clone())
	if err := tc.Handshake(); err != nil {
		return nil, &backendTLSError{err}
	}
	bc.conn = tc
	seq := lg.Seq
	lg = wire.NewLeg("backend", tc, 4<<10, 4<<10)
	lg.Seq = seq
	return lg, nil
}

// finishBackendLogin answers greeting g with l's credentials and follows
// the backend's authentication exchange to its OK.
func (s *Server) finishBackendLogin(lg *wire.Leg, g *wire.Greeting, l backendLogin) (*backendConn, error) {
	resp := backendResponse(g, l)
	bc := &backendConn{conn: lg.Conn, hello: g, threadID: g.ThreadID}
	compressLeg(resp, bc, g, l.clientCaps)
	lg, err := s.startBackendTLS(lg, bc, g, resp)
	if err != nil {
		return nil, err
	}
	plugin, scramble := g.Plugin, g.Scramble
	if resp.Auth, err = backendAuthData(plugin, scramble, l.password); err != nil {
		// Unknown default plugin: offer native and let the server switch us.
		plugin, resp.Plugin = mysql.AUTH_NATIVE_PASSWORD, mysql.AUTH_NATIVE_PASSWORD
		resp.Auth = mysql.CalcPassword(scramble, []byte(l.password))
	}
	if err := lg.WritePacket(wire.AppendHandshakeResponse(nil, resp, false)); err != nil {
		return nil, err
	}
	if err := lg.Flush(); err != nil {
		return nil, err
	}
	_, isTLS := bc.conn.(*tls.Conn)
	for range 8 { // bounded: a server that keeps switching is broken
		p, err := lg.ReadPacket(nil, 64<<10)
		if err != nil {
			return nil, err
		}
		if len(p) == 0 {
			return nil, errors.New("empty packet during backend authentication")
		}
		var reply []byte
		switch p[0] {
		case 0x00:
			bc.ok = p
			return bc, nil
		case 0xFF:
			return nil, wire.ParseErr(p)
		case 0xFE: // auth switch: plugin name, then the new scramble
			rest := p[1:]
			i := indexNul(rest)
			plugin = string(rest[:i])
			scramble = trimNul(rest[min(i+1, len(rest)):])
			if reply, err = backendAuthData(plugin, scramble, l.password); err != nil {
				return nil, err
			}
		case 0x01: // more data: caching_sha2 / sha256 exchanges
			if len(p) >= 2 && p[1] == 3 { // fast auth succeeded, OK follows
				continue
			}
			if len(p) >= 2 && p[1] == 4 { // full authentication
				if isTLS {
					reply = append([]byte(l.password), 0)
					break
				}
				reply = []byte{2} // ask for the server's public key
				break
			}
			// The public key we asked for.
			pub, perr := login.ParsePublicKey(p[1:])
			if perr != nil {
				return nil, fmt.Errorf("backend public key: %w", perr)
			}
			if reply, err = mysql.EncryptPassword(l.password, scramble, pub); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unexpected packet 0x%02x during backend authentication", p[0])
		}
		if err := lg.WritePacket(reply); err != nil {
			return nil, err
		}
		if err := lg.Flush(); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("backend authentication did not finish")
}

// backendTLSError is a failed TLS handshake with the backend (unknown CA,
// wrong server name, no common cipher). It does not unwrap: what clients
// and logs are told (rootCause) keeps saying it was the TLS handshake, not
// just "x509: certificate signed by unknown authority".
type backendTLSError struct{ err error }

func (e *backendTLSError) Error() string {
	return "backend TLS handshake failed (backend.tls): " + rootCause(e.err).Error()
}

func backendAuthData(plugin string, scramble []byte, password string) ([]byte, error) {
	switch plugin {
	case mysql.AUTH_NATIVE_PASSWORD, "":
		return mysql.CalcPassword(scramble, []byte(password)), nil
	case mysql.AUTH_CACHING_SHA2_PASSWORD:
		return mysql.CalcCachingSha2Password(scramble, password), nil
	case mysql.AUTH_MARIADB_ED25519:
		return mysql.CalcEd25519Password(scramble, password)
	case mysql.AUTH_CLEAR_PASSWORD:
		return append([]byte(password), 0), nil
	}
	return nil, fmt.Errorf("backend asks for auth plugin %q, which leafproxy does not implement (use mysql_native_password, caching_sha2_password or client_ed25519 for the backend account)", plugin)
}

func indexNul(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

func trimNul(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == 0 {
		return b[:n-1]
	}
	return b
}

// compressLeg asks for the compressed protocol on the backend leg when the
// client asked for it on its own (clientCaps) and the backend offers it, so
// that the server's session says what the client asked for (SHOW STATUS
// LIKE 'Compression'). The leg switches after the login OK (setBackend).
func compressLeg(resp *wire.HandshakeResponse, bc *backendConn, g *wire.Greeting, clientCaps uint32) {
	if clientCaps&mysql.CLIENT_COMPRESS != 0 && g.Caps&mysql.CLIENT_COMPRESS != 0 {
		resp.Caps |= mysql.CLIENT_COMPRESS
		bc.compressed = true
	}
}
