package login

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// BackendTLS is how the backend leg's TLS is set up (backend.tls).
type BackendTLS struct {
	CA                 string // PEM file; empty: the system's roots
	ServerName         string // empty: the host of Addr
	InsecureSkipVerify bool
	Addr               string // the backend's address (host:port or a Unix socket path)
}

// Configs makes the client-facing TLS configuration (ClientTLS) and, when
// bt is not nil (backend.tls is on), the backend leg's (BackendConfig).
func Configs(cert, key string, bt *BackendTLS) (client, backend *tls.Config, err error) {
	if client, err = ClientTLS(cert, key); err != nil {
		return nil, nil, err
	}
	if bt != nil {
		if backend, err = BackendConfig(*bt); err != nil {
			return nil, nil, err
		}
	}
	return client, backend, nil
}

// ClientTLS loads the client-facing certificate from cert and key or,
// when neither is configured, makes a self-signed RSA one in memory
// (clients that ask for TLS without verifying get encryption; clients that
// verify need tls.cert/tls.key).
func ClientTLS(cert, key string) (*tls.Config, error) {
	var c tls.Certificate
	var err error
	if cert != "" || key != "" {
		c, err = tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("tls.cert/tls.key: %w", err)
		}
	} else if c, err = selfSignedRSA(); err != nil {
		return nil, fmt.Errorf("generate proxy TLS key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}, nil
}

// BackendConfig is the backend leg's TLS configuration for bt.
func BackendConfig(bt BackendTLS) (*tls.Config, error) {
	tc := &tls.Config{ServerName: bt.ServerName, InsecureSkipVerify: bt.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if tc.ServerName == "" {
		if host, _, err := net.SplitHostPort(bt.Addr); err == nil {
			tc.ServerName = host
		}
	}
	if bt.CA != "" {
		pem, err := os.ReadFile(bt.CA)
		if err != nil {
			return nil, fmt.Errorf("backend.tls.ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("backend.tls.ca: no certificate in %s", bt.CA)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

func selfSignedRSA() (tls.Certificate, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "leafproxy"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// RSAKey is the private key of a client-facing TLS configuration's
// certificate, when it is RSA (caching_sha2_password's full
// authentication for clients without TLS).
func RSAKey(c *tls.Config) *rsa.PrivateKey {
	if c == nil || len(c.Certificates) == 0 {
		return nil
	}
	k, _ := c.Certificates[0].PrivateKey.(*rsa.PrivateKey)
	return k
}
