package proxy

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

// setupTLS loads the client-facing certificate or, when none is configured,
// makes a self-signed RSA one in memory (clients that ask for TLS without
// verifying get encryption; clients that verify need tls.cert/tls.key).
func (s *Server) setupTLS() error {
	var cert tls.Certificate
	var err error
	if s.cfg.TLS.Cert != "" || s.cfg.TLS.Key != "" {
		cert, err = tls.LoadX509KeyPair(s.cfg.TLS.Cert, s.cfg.TLS.Key)
		if err != nil {
			return fmt.Errorf("tls.cert/tls.key: %w", err)
		}
	} else if cert, err = selfSignedRSA(); err != nil {
		return fmt.Errorf("generate proxy TLS key: %w", err)
	}
	s.clientTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	bt := s.cfg.Backend.TLS
	if bt.Enabled {
		tc := &tls.Config{ServerName: bt.ServerName, InsecureSkipVerify: bt.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
		if tc.ServerName == "" {
			if host, _, err := net.SplitHostPort(s.cfg.Backend.Addr); err == nil {
				tc.ServerName = host
			}
		}
		if bt.CA != "" {
			pem, err := os.ReadFile(bt.CA)
			if err != nil {
				return fmt.Errorf("backend.tls.ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("backend.tls.ca: no certificate in %s", bt.CA)
			}
			tc.RootCAs = pool
		}
		s.backendTLS = tc
	}
	return nil
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
