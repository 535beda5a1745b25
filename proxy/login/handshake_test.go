package login_test

import (
	"crypto/sha1"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

type accounts map[string]login.Creds

func (a accounts) Creds(user string) (login.Creds, bool) { c, ok := a[user]; return c, ok }
func (a accounts) HashOnly() bool {
	for _, c := range a {
		if c.HashOnly() {
			return true
		}
	}
	return false
}

// TestAuthenticateNative: mysql_native_password answers are checked
// against a password in clear and against a password hash without a
// plugin switch (nothing is written to the client); a wrong one gets
// 1045, is counted, and blocks the host once its budget is spent.
func TestAuthenticateNative(t *testing.T) {
	stage1 := sha1.Sum([]byte("pw2"))
	stage2 := sha1.Sum(stage1[:])
	users := accounts{"clear": {Password: "pw1"}, "hash": {PasswordHash: stage2[:]}}
	var fails atomic.Uint64
	k := login.Checker{Method: mysql.AUTH_NATIVE_PASSWORD, Decoy: "decoy",
		Throttle: login.NewThrottle(2, time.Minute, time.Minute, 10), Failures: &fails,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	conn, peer := net.Pipe()
	defer conn.Close()
	defer peer.Close()
	c := wire.NewLeg("client", conn, 1<<10, 1<<10)
	remote := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1}
	scramble := []byte("abcdefghijklmnopqrst")
	for user, pw := range map[string]string{"clear": "pw1", "hash": "pw2"} {
		auth := mysql.CalcPassword(scramble, []byte(pw))
		if err := k.Authenticate(c, users, user, mysql.AUTH_NATIVE_PASSWORD, auth, scramble, remote); err != nil {
			t.Fatalf("%s: %v", user, err)
		}
	}
	for i, want := range []uint16{mysql.ER_ACCESS_DENIED_ERROR, mysql.ER_ACCESS_DENIED_ERROR, mysql.ER_HOST_IS_BLOCKED} {
		auth := mysql.CalcPassword(scramble, []byte("wrong"))
		err := k.Authenticate(c, users, "clear", mysql.AUTH_NATIVE_PASSWORD, auth, scramble, remote)
		var le *login.Error
		if !errors.As(err, &le) || le.Code != want {
			t.Fatalf("attempt %d: %v, want %d", i, err, want)
		}
	}
	if got := fails.Load(); got != 2 {
		t.Errorf("%d failures counted, want 2", got)
	}
}

// TestChangeUserPacket: the relayed COM_CHANGE_USER carries the client's
// fields and, only when asked, its attributes marked with the proxy's.
func TestChangeUserPacket(t *testing.T) {
	p := login.ChangeUserPacket("u", []byte{1, 2}, "db", 45, "mysql_native_password", nil, false)
	want := append([]byte{mysql.COM_CHANGE_USER, 'u', 0, 2, 1, 2, 'd', 'b', 0, 45, 0}, "mysql_native_password\x00"...)
	if string(p) != string(want) {
		t.Fatalf("packet % x, want % x", p, want)
	}
	if q := login.ChangeUserPacket("u", []byte{1, 2}, "db", 45, "mysql_native_password", nil, true); len(q) <= len(p) {
		t.Fatal("no attributes appended")
	}
}
