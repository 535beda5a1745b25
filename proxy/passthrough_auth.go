package proxy

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/pem"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// authExchange is the state of one relayed authentication: the plugin and
// scramble the backend uses now (an auth switch changes both), and whether
// each leg is TLS.
type authExchange struct {
	plugin     string
	scramble   []byte
	clientTLS  bool
	backendTLS bool
}

// maxAuthRounds bounds a relayed exchange: a backend that keeps asking is
// broken.
const maxAuthRounds = 16

// relayAuth relays an authentication exchange whose first answer the
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
func (s *Server) relayAuth(c, b *wire.Leg, ex *authExchange) ([]byte, error) {
	for range maxAuthRounds {
		p, err := b.ReadPacket(nil, 64<<10)
		if err != nil {
			return nil, err
		}
		if len(p) == 0 {
			return nil, protocolError("empty packet during backend authentication")
		}
		switch p[0] {
		case 0x00:
			return p, nil
		case 0xFF:
			return nil, wire.ParseErr(p)
		case 0xFE: // auth switch: plugin name, then the new scramble
			rest := p[1:]
			i := indexNul(rest)
			ex.plugin = string(rest[:i])
			ex.scramble = trimNul(rest[min(i+1, len(rest)):])
		case 0x01:
			if ex.plugin == mysql.AUTH_CACHING_SHA2_PASSWORD && len(p) == 2 && p[1] == 3 {
				if err := c.WritePacket(p); err != nil {
					return nil, err
				}
				continue // fast authentication succeeded: OK follows
			}
			if ex.plugin == mysql.AUTH_CACHING_SHA2_PASSWORD && len(p) == 2 && p[1] == 4 && ex.clientTLS != ex.backendTLS {
				if err := s.relayFullAuth(c, b, ex, p); err != nil {
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
	return nil, protocolError("backend authentication did not finish")
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
	return c.ReadPacket(nil, preAuthMaxPacket)
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
func (s *Server) relayFullAuth(c, b *wire.Leg, ex *authExchange, p []byte) error {
	r, err := askClient(c, p)
	if err != nil {
		abortBackendAuth(b)
		return err
	}
	var password []byte
	if ex.clientTLS {
		password = trimNul(r) // in clear, over the client's TLS
	} else {
		// The client asks for "the server's" public key (02): it gets the
		// proxy's, and sends the password encrypted with it.
		key, ok := s.rsaKey()
		if !ok || len(r) != 1 || r[0] != 2 {
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
		if err != nil || len(ex.scramble) == 0 {
			abortBackendAuth(b)
			return &mysql.MyError{Code: mysql.ER_ACCESS_DENIED_ERROR, State: "28000",
				Message: "leafproxy: could not decrypt the caching_sha2_password answer"}
		}
		for i := range plain {
			plain[i] ^= ex.scramble[i%len(ex.scramble)]
		}
		password = trimNul(plain)
	}
	var reply []byte
	if ex.backendTLS {
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
			return protocolError("backend sent no public key for caching_sha2_password")
		}
		pub, err := parsePublicKey(kp[1:])
		if err != nil {
			return err
		}
		if reply, err = mysql.EncryptPassword(string(password), ex.scramble, pub); err != nil {
			return err
		}
	}
	clear(password)
	if err := b.WritePacket(reply); err != nil {
		return err
	}
	return b.Flush()
}

// rsaKey is the private key of the proxy's client-facing certificate, when
// it is RSA.
func (s *Server) rsaKey() (*rsa.PrivateKey, bool) {
	if s.clientTLS == nil || len(s.clientTLS.Certificates) == 0 {
		return nil, false
	}
	k, ok := s.clientTLS.Certificates[0].PrivateKey.(*rsa.PrivateKey)
	return k, ok
}
