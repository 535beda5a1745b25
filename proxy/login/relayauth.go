package login

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Exchange is the state of one relayed authentication: the plugin and
// scramble the backend uses now (an auth switch changes both), whether
// each leg is TLS, and the private key of the proxy's client-facing
// certificate when it is RSA (nil otherwise).
type Exchange struct {
	Plugin     string
	Scramble   []byte
	ClientTLS  bool
	BackendTLS bool
	Key        *rsa.PrivateKey
}

// maxAuthRounds bounds a relayed exchange: a backend that keeps asking is
// broken.
const maxAuthRounds = 16

// RelayAuth relays an authentication exchange whose first answer the
// backend already has: each packet the backend sends (auth switch, extra
// auth data) goes to the client, and the client's reply back, until the
// backend answers OK (returned) or ERR (a *mysql.MyError). Packets are
// framed with each leg's own sequence ids; the client leg is left unflushed
// after the last packet written, for the caller's answer to follow.
//
// caching_sha2_password's fast path ("01 03") expects no reply. Its full
// authentication ("01 04") sends the password either in clear over TLS or
// RSA-encrypted with the server's key; when only one of the two legs is TLS
// the proxy reads the password from the client the way that leg allows and
// gives it to the backend the way the other leg needs (relayFullAuth). The
// password lives only in that exchange's memory.
func RelayAuth(c, b *wire.Leg, ex *Exchange) ([]byte, error) {
	for range maxAuthRounds {
		p, err := b.ReadPacket(nil, 64<<10)
		if err != nil {
			return nil, err
		}
		if len(p) == 0 {
			return nil, wire.ProtocolError("empty packet during backend authentication")
		}
		switch p[0] {
		case 0x00:
			return p, nil
		case 0xFF:
			return nil, wire.ParseErr(p)
		case 0xFE: // auth switch: plugin name, then the new scramble
			rest := p[1:]
			i := wire.IndexNul(rest)
			ex.Plugin = string(rest[:i])
			ex.Scramble = wire.TrimNul(rest[min(i+1, len(rest)):])
		case 0x01:
			if ex.Plugin == mysql.AUTH_CACHING_SHA2_PASSWORD && len(p) == 2 && p[1] == 3 {
				if err := c.WritePacket(p); err != nil {
					return nil, err
				}
				continue // fast authentication succeeded: OK follows
			}
			if ex.Plugin == mysql.AUTH_CACHING_SHA2_PASSWORD && len(p) == 2 && p[1] == 4 && ex.ClientTLS != ex.BackendTLS {
				if err := relayFullAuth(c, b, ex, p); err != nil {
					return nil, err
				}
				continue
			}
		}
		r, err := askClient(c, p)
		if err != nil {
			abortBackendAuth(b)
			return nil, err
		}
		if err := b.WritePacket(r); err != nil {
			return nil, err
		}
		if err := b.Flush(); err != nil {
			return nil, err
		}
	}
	return nil, wire.ProtocolError("backend authentication did not finish")
}

// askClient sends the backend's packet p to the client and returns the
// client's reply.
func askClient(c *wire.Leg, p []byte) ([]byte, error) {
	if err := c.WritePacket(p); err != nil {
		return nil, err
	}
	if err := c.Flush(); err != nil {
		return nil, err
	}
	return c.ReadPacket(nil, PreAuthMaxPacket)
}

// abortBackendAuth answers the backend's pending question with an empty
// reply and reads its verdict, best effort, when the client has gone: the
// backend then logs a failed authentication instead of an aborted
// handshake (which counts against the proxy's host in max_connect_errors).
func abortBackendAuth(b *wire.Leg) {
	_ = b.Conn.SetDeadline(time.Now().Add(time.Second))
	if b.WritePacket(nil) == nil && b.Flush() == nil {
		_, _ = b.ReadPacket(nil, 64<<10)
	}
}

// relayFullAuth carries caching_sha2_password's full authentication when
// one leg is TLS and the other is not (p is the backend's "01 04").
func relayFullAuth(c, b *wire.Leg, ex *Exchange, p []byte) error {
	r, err := askClient(c, p)
	if err != nil {
		abortBackendAuth(b)
		return err
	}
	var password []byte
	if ex.ClientTLS {
		password = wire.TrimNul(r) // in clear, over the client's TLS
	} else {
		// The client asks for "the server's" public key (02): it gets the
		// proxy's, and sends the password encrypted with it.
		key := ex.Key
		if key == nil || len(r) != 1 || r[0] != 2 {
			abortBackendAuth(b)
			return &mysql.MyError{Code: mysql.ER_ACCESS_DENIED_ERROR, State: "28000",
				Message: "leafproxy: caching_sha2_password full authentication needs the proxy's RSA key (tls.key) when backend.tls is on and the client does not use TLS"}
		}
		der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return err
		}
		pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		enc, err := askClient(c, append([]byte{1}, pub...))
		if err != nil {
			abortBackendAuth(b)
			return err
		}
		plain, err := rsa.DecryptOAEP(sha1.New(), rand.Reader, key, enc, nil)
		if err != nil || len(ex.Scramble) == 0 {
			abortBackendAuth(b)
			return &mysql.MyError{Code: mysql.ER_ACCESS_DENIED_ERROR, State: "28000",
				Message: "leafproxy: could not decrypt the caching_sha2_password answer"}
		}
		for i := range plain {
			plain[i] ^= ex.Scramble[i%len(ex.Scramble)]
		}
		password = wire.TrimNul(plain)
	}
	var reply []byte
	if ex.BackendTLS {
		reply = append(append(reply, password...), 0)
	} else {
		// Ask the backend for its key and encrypt for it.
		if err := b.WritePacket([]byte{2}); err != nil {
			return err
		}
		if err := b.Flush(); err != nil {
			return err
		}
		kp, err := b.ReadPacket(nil, 64<<10)
		if err != nil {
			return err
		}
		if wire.IsErr(kp) {
			return wire.ParseErr(kp)
		}
		if len(kp) < 2 || kp[0] != 1 {
			return wire.ProtocolError("backend sent no public key for caching_sha2_password")
		}
		pub, err := ParsePublicKey(kp[1:])
		if err != nil {
			return err
		}
		if reply, err = mysql.EncryptPassword(string(password), ex.Scramble, pub); err != nil {
			return err
		}
	}
	clear(password)
	if err := b.WritePacket(reply); err != nil {
		return err
	}
	return b.Flush()
}

// CurrentUser runs SELECT CURRENT_USER() on a backend leg that has just
// logged in (no DEPRECATE_EOF on the backend leg) and returns user@host.
func CurrentUser(b *wire.Leg) ([]byte, error) {
	if err := b.WriteCommand(append([]byte{mysql.COM_QUERY}, "SELECT CURRENT_USER()"...)); err != nil {
		return nil, err
	}
	if err := b.Flush(); err != nil {
		return nil, err
	}
	var row []byte
	eofs := 0
	for eofs < 2 {
		p, err := b.ReadPacket(nil, 64<<10)
		if err != nil {
			return nil, err
		}
		switch {
		case wire.IsErr(p):
			return nil, wire.ParseErr(p)
		case wire.IsEOF(p, len(p)):
			eofs++
		case eofs == 1 && row == nil:
			n, k := wire.LenencUint(p)
			if k == 0 || n > uint64(len(p)-k) {
				return nil, wire.ProtocolError("malformed CURRENT_USER() row")
			}
			row = p[k : k+int(n)]
		}
	}
	return row, nil
}

// ChangeUserPacket is COM_CHANGE_USER relayed to a backend leg, which
// always has SECURE_CONNECTION and PLUGIN_AUTH (BackendBaseCaps): user,
// auth, db, charset and plugin as the client sent them (plugin defaulted),
// and, when withAttrs (the backend takes them), the client's attributes
// marked with the proxy's.
func ChangeUserPacket(user string, auth []byte, db string, charset uint16, plugin string, attrs []byte, withAttrs bool) []byte {
	pkt := append([]byte{mysql.COM_CHANGE_USER}, user...)
	pkt = append(pkt, 0, byte(len(auth)))
	pkt = append(pkt, auth...)
	pkt = append(append(pkt, db...), 0)
	pkt = binary.LittleEndian.AppendUint16(pkt, charset)
	pkt = append(append(pkt, plugin...), 0)
	if withAttrs {
		a := wire.AttrsWith(attrs, "_proxy", "leafproxy")
		pkt = mysql.AppendLengthEncodedInteger(pkt, uint64(len(a)))
		pkt = append(pkt, a...)
	}
	return pkt
}

// ParsePublicKey reads the RSA public key a server sends (PEM) for
// caching_sha2_password's full authentication.
func ParsePublicKey(p []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(p)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	rk, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, errors.New("not an RSA key")
	}
	return rk, nil
}
