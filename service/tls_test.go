package service_test

import (
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// TestDefaultTLSIsSelfSigned checks what the README says of TLS without
// tls.cert/tls.key: clients get TLS with a self-signed certificate (CN
// leafproxy, for localhost, 127.0.0.1 and ::1) that they cannot verify.
func TestDefaultTLSIsSelfSigned(t *testing.T) {
	backend := testdb.Start(t)
	cfg := testConfig(backend)
	cfg.Sequences.Tags = nil
	r := startService(t, cfg)

	var mu sync.Mutex
	var seen *x509.Certificate
	if err := mysql.RegisterTLSConfig("leafproxy-capture", &tls.Config{
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			mu.Lock()
			seen = cs.PeerCertificates[0]
			mu.Unlock()
			return nil
		},
	}); err != nil {
		t.Fatal(err)
	}
	open := func(tlsName string) error {
		mc := mysql.NewConfig()
		mc.User, mc.Passwd, mc.Net, mc.Addr, mc.TLSConfig = "app", "secret", "tcp", r.Addr, tlsName
		db, err := sql.Open("mysql", mc.FormatDSN())
		if err != nil {
			return err
		}
		defer db.Close()
		return db.Ping()
	}
	if err := open("leafproxy-capture"); err != nil {
		t.Fatalf("TLS client without verification: %v", err)
	}
	mu.Lock()
	c := seen
	mu.Unlock()
	if c == nil {
		t.Fatal("no certificate seen")
	}
	if c.Subject.CommonName != "leafproxy" || c.Issuer.String() != c.Subject.String() || c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) != nil {
		t.Errorf("certificate %s issued by %s: want self-signed CN=leafproxy", c.Subject, c.Issuer)
	}
	if !slices.Contains(c.DNSNames, "localhost") || !slices.ContainsFunc(c.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.IPv6loopback) }) ||
		!slices.ContainsFunc(c.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.IPv4(127, 0, 0, 1)) }) {
		t.Errorf("certificate names %v %v", c.DNSNames, c.IPAddresses)
	}
	if err := open("true"); err == nil {
		t.Error("a verifying TLS client accepted the self-signed certificate")
	}
	if err := open("false"); err != nil {
		t.Errorf("plaintext client: %v", err)
	}
}
