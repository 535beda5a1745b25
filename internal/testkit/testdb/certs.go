package testdb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certs are PEM files for a TLS test: a CA and a server certificate it
// signed, valid for "localhost", 127.0.0.1 and ::1 (and any extra names).
type Certs struct {
	CA, Cert, Key string // file paths
}

// ServerTLSFlags are the mariadbd options that make a server offer TLS with
// these certificates (MariaDB 10.11: --ssl-ca, --ssl-cert, --ssl-key).
func (c Certs) ServerTLSFlags() []string {
	return []string{"--ssl-ca=" + c.CA, "--ssl-cert=" + c.Cert, "--ssl-key=" + c.Key}
}

// MakeCerts writes a fresh CA and a server certificate into dir. The
// keys are ECDSA P-256 (quick to generate; MariaDB's OpenSSL takes them).
func MakeCerts(dir string, names ...string) (Certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "leafproxy test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return Certs{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Certs{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     append([]string{"localhost"}, names...),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return Certs{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Certs{}, err
	}
	c := Certs{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "server-cert.pem"), Key: filepath.Join(dir, "server-key.pem")}
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{c.CA, "CERTIFICATE", caDER}, {c.Cert, "CERTIFICATE", der}, {c.Key, "EC PRIVATE KEY", keyDER}} {
		b := pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der})
		if err := os.WriteFile(f.path, b, 0o600); err != nil {
			return Certs{}, fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return c, nil
}
