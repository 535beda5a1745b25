package backend

import (
	"context"
	"crypto/rsa"
	"net"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Pending is a backend connection whose greeting has been read and that
// waits for its client's handshake response (backend-account mode: the
// client is greeted with this connection's thread id, scramble and
// plugin). It ends as a logged-in Conn (Authenticate) or is retired
// (Retire).
type Pending struct {
	d     *Dialer
	leg   *wire.Leg
	nc    net.Conn
	Hello *wire.Greeting // the backend's greeting
}

// Open dials the backend and reads its greeting, within the connect
// timeout; the connection's deadline is then the connect timeout plus
// extra (the client's handshake timeout), one bound for the whole login.
func (d *Dialer) Open(ctx context.Context, extra time.Duration) (*Pending, error) {
	timeout := d.ConnectTimeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	nc, err := Dial(ctx, d.Addr, timeout)
	cancel()
	if err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(timeout + extra))
	b := wire.NewLeg("backend", nc, 4<<10, 4<<10)
	g, err := ReadGreeting(b)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &Pending{d: d, leg: b, nc: nc, Hello: g}, nil
}

// Authenticate passes the client's handshake response h on to the
// backend, with the client's user, auth data, database, attributes (plus
// the proxy's mark) and plugin, and the flags the proxy needs on the
// backend leg (protocol 4.1, its own TLS, compression when the client
// asked for it), then relays the authentication exchange between the
// client leg c and the backend (login.RelayAuth; key is the client-facing
// certificate's RSA key, if any). It returns the logged-in connection and
// its leg, whose deadline is still the login's. On error the connection
// is closed: the error is the backend's refusal (*mysql.MyError), an I/O
// error of either leg, or a failed TLS handshake (TLSError).
func (p *Pending) Authenticate(c *wire.Leg, h *login.Hello, key *rsa.PrivateKey) (Conn, *wire.Leg, error) {
	cr, g := h.Resp, p.Hello
	l := Login{User: cr.User, DB: cr.DB, Charset: login.BackendCharset(cr.Charset), ClientCaps: cr.Caps,
		ClientExt: cr.ExtCaps, MaxPacket: cr.MaxPacket, Attrs: cr.Attrs}
	resp := response(g, &l)
	resp.Auth = cr.Auth
	if cr.Caps&mysql.CLIENT_PLUGIN_AUTH != 0 && cr.Plugin != "" {
		resp.Plugin = cr.Plugin
	} else if cr.Caps&mysql.CLIENT_PLUGIN_AUTH == 0 {
		resp.Plugin = mysql.AUTH_NATIVE_PASSWORD // a 4.1 scramble answer
	}
	bc := Conn{Conn: p.nc, Hello: g, ThreadID: g.ThreadID}
	compressLeg(resp, &bc, g, cr.Caps)
	b, err := p.d.startTLS(p.leg, &bc, g, resp)
	if err != nil {
		p.nc.Close()
		return Conn{}, nil, err
	}
	if err := b.WritePacket(wire.AppendHandshakeResponse(nil, resp, false)); err != nil {
		bc.Conn.Close()
		return Conn{}, nil, err
	}
	if err := b.Flush(); err != nil {
		bc.Conn.Close()
		return Conn{}, nil, err
	}
	ex := &login.Exchange{Plugin: resp.Plugin, Scramble: g.Scramble, ClientTLS: h.TLS, BackendTLS: p.d.TLS != nil,
		Key: key}
	ok, err := login.RelayAuth(c, b, ex)
	if err != nil {
		bc.Conn.Close()
		return Conn{}, nil, err
	}
	bc.OK = ok
	return bc, b, nil
}

// Retire ends a pending connection whose client never sent its handshake
// response (it left, failed TLS, was refused): it logs in as user (the
// proxy's own account) and quits, so the backend sees a clean connection
// rather than an aborted handshake, which would count against the
// proxy's host in the backend's max_connect_errors.
func (p *Pending) Retire(user, password string) {
	defer p.nc.Close()
	_ = p.nc.SetDeadline(time.Now().Add(p.d.ConnectTimeout))
	bc, err := p.d.finishLogin(p.leg, p.Hello, &Login{User: user, Password: password, Charset: 45})
	if err != nil {
		return
	}
	Quit(bc.Conn)
}

// Quit logs a connection out cleanly (COM_QUIT, within a second) and
// closes it: an aborted connection counts against the proxy's host in the
// backend's max_connect_errors.
func Quit(nc net.Conn) {
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(comQuit[:])
	nc.Close()
}

var comQuit = [...]byte{1, 0, 0, 0, mysql.COM_QUIT}

// PassThrough is a backend-account mode login as the server sets it up:
// where the backend is, the proxy's own backend account (for Retire), the
// failed-login accounting, the client-facing certificate's RSA key, the
// leg's buffer sizes once compressed, and what it calls back into: Noted
// (the backend's reachability after the dial), Greet (greets the client
// with the backend connection's greeting and reads its handshake
// response) and Admin (is the user name listed in admins).
type PassThrough struct {
	Dialer            *Dialer
	HandshakeTimeout  time.Duration
	User, Password    string
	Checker           login.Checker
	Key               *rsa.PrivateKey
	ReadBuf, WriteBuf int
	Noted             func(error)
	Greet             func(*wire.Greeting) (*login.Hello, error)
	Admin             func(user string) bool
}

// Login logs the client on leg c in through a backend connection of its
// own (Open, then Pending.Authenticate), within the handshake timeout. A
// client whose host is over its failed-login budget is refused after the
// greeting. A user name listed in admins is an admin only when the backend
// confirms it authenticated that very account (ConfirmAdmin). It returns
// the logged-in connection, or a *login.Error to tell the client (any other
// error: the client went away or broke the protocol).
func (pt *PassThrough) Login(ctx context.Context, c *wire.Leg) (bc Conn, admin bool, err error) {
	p, err := pt.Dialer.Open(ctx, pt.HandshakeTimeout)
	pt.Noted(Outcome(err))
	if err != nil {
		return Conn{}, false, Refusal(err, pt.Dialer.Addr)
	}
	h, err := pt.Greet(p.Hello)
	if err != nil {
		p.Retire(pt.User, pt.Password)
		return Conn{}, false, err
	}
	host := login.HostKey(c.Conn.RemoteAddr())
	if wait, blocked := pt.Checker.Throttle.Blocked(host, time.Now()); blocked {
		p.Retire(pt.User, pt.Password)
		return Conn{}, false, login.HostBlocked(c.Conn.RemoteAddr(), wait)
	}
	bc, b, err := p.Authenticate(c, h, pt.Key)
	if err != nil {
		return Conn{}, false, AuthFailure(err, host, pt.Checker, pt.Dialer.Addr)
	}
	if user := h.Resp.User; pt.Admin(user) {
		if bc.Compressed {
			b.Compress(true, pt.ReadBuf, pt.WriteBuf) // the admin check's query is the leg's first command
		}
		if admin, err = ConfirmAdmin(b, user, pt.Checker.Log); err != nil {
			bc.Conn.Close()
			return Conn{}, false, Refusal(err, pt.Dialer.Addr)
		}
	}
	_ = bc.Conn.SetDeadline(time.Time{})
	return bc, admin, nil
}
