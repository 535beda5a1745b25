package backend

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

// Login is what a session asks of its backend connection: whose
// credentials, which database, and the client's choices to mirror.
type Login struct {
	User, Password string
	DB             string
	Charset        uint8
	ClientCaps     uint32 // the client's negotiated flags; login.MirroredCaps are copied
	ClientExt      uint32
	MaxPacket      uint32
	Attrs          []byte // the client's raw connection attributes
}

// ClientLogin is the backend login for a client whose handshake response
// was resp, as the account's backend user (user, password).
func ClientLogin(resp *wire.HandshakeResponse, user, password string) Login {
	return Login{User: user, Password: password, DB: resp.DB, Charset: login.BackendCharset(resp.Charset),
		ClientCaps: resp.Caps, ClientExt: resp.ExtCaps, MaxPacket: resp.MaxPacket, Attrs: resp.Attrs}
}

// Conn is a logged-in backend connection.
type Conn struct {
	Conn     net.Conn       // the TLS connection when backend.tls is on
	Hello    *wire.Greeting // the backend's own greeting (thread id, capabilities)
	OK       []byte         // the backend's final OK packet after authentication
	ThreadID uint32
	// Compressed: the connection speaks the compressed protocol after the
	// login OK, because the client asked for it on its own leg.
	Compressed bool
}

// Dialer is where the backend is and how to reach it: backend.addr,
// backend.connect_timeout and backend.tls's configuration (nil when off).
type Dialer struct {
	Addr           string
	ConnectTimeout time.Duration
	TLS            *tls.Config
}

// Dial connects to addr: a path (containing '/') is a Unix socket,
// anything else host:port over TCP.
func Dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	network := "tcp"
	if strings.Contains(addr, "/") {
		network = "unix"
	}
	d := net.Dialer{Timeout: timeout}
	return d.DialContext(ctx, network, addr)
}

// Connect dials the backend and logs in with l, all within the connect
// timeout (10 s when none is set). The returned error is the backend's own
// *mysql.MyError (1045, 1049, ...) when it refused, or an I/O error;
// Outcome tells the two apart.
func (d *Dialer) Connect(ctx context.Context, l *Login) (Conn, error) {
	timeout := d.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := Dial(ctx, d.Addr, timeout)
	if err != nil {
		return Conn{}, err
	}
	dl, _ := ctx.Deadline()
	_ = nc.SetDeadline(dl) // bounds the whole backend handshake
	lg := wire.NewLeg("backend", nc, 4<<10, 4<<10)
	g, err := ReadGreeting(lg)
	var bc Conn
	if err == nil {
		bc, err = d.finishLogin(lg, g, l)
	}
	if err != nil {
		nc.Close()
		return Conn{}, err
	}
	_ = bc.Conn.SetDeadline(time.Time{})
	return bc, nil
}

// Outcome is Connect's err as the backend's reachability takes it: nil
// when the backend answered, its own refusal (*mysql.MyError) included.
func Outcome(err error) error {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return nil
	}
	return err
}

// ReadGreeting reads and checks the backend's greeting.
func ReadGreeting(lg *wire.Leg) (*wire.Greeting, error) {
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

// response is the backend leg's HandshakeResponse41 for l after greeting
// g, without auth data: the proxy's flags plus the client's mirrored
// ones, the backend's plugin, the client's attributes marked.
func response(g *wire.Greeting, l *Login) *wire.HandshakeResponse {
	resp := &wire.HandshakeResponse{
		Caps:      (login.BackendBaseCaps | l.ClientCaps&login.MirroredCaps) & (g.Caps | mysql.CLIENT_LONG_PASSWORD),
		MaxPacket: l.MaxPacket,
		Charset:   l.Charset,
		User:      l.User,
		DB:        l.DB,
		Plugin:    g.Plugin,
	}
	if resp.MaxPacket == 0 {
		resp.MaxPacket = 1 << 30
	}
	if g.MariaDB() {
		// Clearing bit 0 tells MariaDB the extended capabilities follow.
		resp.Caps &^= mysql.CLIENT_LONG_PASSWORD
		resp.ExtCaps = l.ClientExt & login.ProxyExtCaps & g.ExtCaps
	}
	if l.DB != "" {
		resp.Caps |= mysql.CLIENT_CONNECT_WITH_DB
	}
	resp.Attrs = wire.AttrsWith(l.Attrs, "_proxy", "leafproxy")
	return resp
}

// startTLS sends the SSL request and upgrades the leg when backend.tls is
// on (bc.Conn becomes the TLS connection); otherwise it returns lg as it
// is.
func (d *Dialer) startTLS(lg *wire.Leg, bc *Conn, g *wire.Greeting, resp *wire.HandshakeResponse) (*wire.Leg, error) {
	if d.TLS == nil {
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
	tc := tls.Client(&wire.BufferedConn{Conn: bc.Conn, R: lg.R}, d.TLS.Clone())
	if err := tc.Handshake(); err != nil {
		return nil, &TLSError{err}
	}
	bc.Conn = tc
	seq := lg.Seq
	lg = wire.NewLeg("backend", tc, 4<<10, 4<<10)
	lg.Seq = seq
	return lg, nil
}

// finishLogin answers greeting g with l's credentials and follows the
// backend's authentication exchange to its OK.
func (d *Dialer) finishLogin(lg *wire.Leg, g *wire.Greeting, l *Login) (Conn, error) {
	resp := response(g, l)
	bc := Conn{Conn: lg.Conn, Hello: g, ThreadID: g.ThreadID}
	compressLeg(resp, &bc, g, l.ClientCaps)
	lg, err := d.startTLS(lg, &bc, g, resp)
	if err != nil {
		return Conn{}, err
	}
	plugin, scramble := g.Plugin, g.Scramble
	if resp.Auth, err = authData(plugin, scramble, l.Password); err != nil {
		// Unknown default plugin: offer native and let the server switch us.
		plugin, resp.Plugin = mysql.AUTH_NATIVE_PASSWORD, mysql.AUTH_NATIVE_PASSWORD
		resp.Auth = mysql.CalcPassword(scramble, []byte(l.Password))
	}
	if err := lg.WritePacket(wire.AppendHandshakeResponse(nil, resp, false)); err != nil {
		return Conn{}, err
	}
	if err := lg.Flush(); err != nil {
		return Conn{}, err
	}
	_, isTLS := bc.Conn.(*tls.Conn)
	for range 8 { // bounded: a server that keeps switching is broken
		p, err := lg.ReadPacket(nil, 64<<10)
		if err != nil {
			return Conn{}, err
		}
		if len(p) == 0 {
			return Conn{}, errors.New("empty packet during backend authentication")
		}
		var reply []byte
		switch p[0] {
		case 0x00:
			bc.OK = p
			return bc, nil
		case 0xFF:
			return Conn{}, wire.ParseErr(p)
		case 0xFE: // auth switch: plugin name, then the new scramble
			rest := p[1:]
			i := wire.IndexNul(rest)
			plugin = string(rest[:i])
			scramble = wire.TrimNul(rest[min(i+1, len(rest)):])
			if reply, err = authData(plugin, scramble, l.Password); err != nil {
				return Conn{}, err
			}
		case 0x01: // more data: caching_sha2 / sha256 exchanges
			if len(p) >= 2 && p[1] == 3 { // fast auth succeeded, OK follows
				continue
			}
			if len(p) >= 2 && p[1] == 4 { // full authentication
				if isTLS {
					reply = append([]byte(l.Password), 0)
					break
				}
				reply = []byte{2} // ask for the server's public key
				break
			}
			// The public key we asked for.
			pub, perr := login.ParsePublicKey(p[1:])
			if perr != nil {
				return Conn{}, fmt.Errorf("backend public key: %w", perr)
			}
			if reply, err = mysql.EncryptPassword(l.Password, scramble, pub); err != nil {
				return Conn{}, err
			}
		default:
			return Conn{}, fmt.Errorf("unexpected packet 0x%02x during backend authentication", p[0])
		}
		if err := lg.WritePacket(reply); err != nil {
			return Conn{}, err
		}
		if err := lg.Flush(); err != nil {
			return Conn{}, err
		}
	}
	return Conn{}, errors.New("backend authentication did not finish")
}

// TLSError is a failed TLS handshake with the backend (unknown CA, wrong
// server name, no common cipher). It does not unwrap: what clients and
// logs are told (the root of an error's chain) keeps saying it was the
// TLS handshake, not just "x509: certificate signed by unknown
// authority".
type TLSError struct{ err error }

func (e *TLSError) Error() string {
	return "backend TLS handshake failed (backend.tls): " + RootCause(e.err).Error()
}

// RootCause is the innermost error of err's chain (errors.Unwrap).
func RootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

func authData(plugin string, scramble []byte, password string) ([]byte, error) {
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

// compressLeg asks for the compressed protocol on the backend leg when the
// client asked for it on its own (clientCaps) and the backend offers it, so
// that the server's session says what the client asked for (SHOW STATUS
// LIKE 'Compression'). The leg switches after the login OK (package
// proxy's Session.setBackend).
func compressLeg(resp *wire.HandshakeResponse, bc *Conn, g *wire.Greeting, clientCaps uint32) {
	if clientCaps&mysql.CLIENT_COMPRESS != 0 && g.Caps&mysql.CLIENT_COMPRESS != 0 {
		resp.Caps |= mysql.CLIENT_COMPRESS
		bc.Compressed = true
	}
}
