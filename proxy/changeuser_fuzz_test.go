package proxy

import (
	"bytes"
	"encoding/binary"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// FuzzChangeUser: the COM_CHANGE_USER parser (proxy/wire's
// handshake_fuzz_test.go fuzzes the handshake response and the greeting)
// asserts no panic and that whatever is parsed is bounded by the input.

const fuzzCaps = rawBaseCaps | gomysql.CLIENT_CONNECT_WITH_DB | gomysql.CLIENT_MULTI_STATEMENTS

func FuzzChangeUser(f *testing.F) {
	caps := uint32(fuzzCaps)
	body := []byte("bob\x00\x14")
	body = append(body, bytes.Repeat([]byte{7}, 20)...)
	body = append(body, "test\x00"...)
	body = binary.LittleEndian.AppendUint16(body, 45)
	body = append(body, "mysql_native_password\x00"...)
	body = append(body, mysqlLenenc(wire.AttrsWith(nil, "_client_name", "mysql2"))...)
	f.Add(body, caps)
	f.Add(body, caps&^gomysql.CLIENT_SECURE_CONNECTION)
	for i := range body {
		f.Add(body[:i], caps)
	}
	f.Add([]byte("bob"), caps)
	f.Add([]byte("bob\x00\xff"), caps)
	f.Add([]byte("bob\x00\x00db"), caps)
	f.Add([]byte("bob\x00\x00db\x00\x2d\x00\xfd\xff\xff\xff"), caps)
	f.Fuzz(func(t *testing.T, p []byte, caps uint32) {
		r, err := login.ParseChangeUser(p, caps)
		if err != nil {
			return
		}
		if n := len(r.User) + len(r.Auth) + len(r.DB) + len(r.Plugin) + len(r.Attrs); n > len(p) {
			t.Fatalf("parsed %d bytes of fields out of a %d-byte packet", n, len(p))
		}
		if slack := len(p)*9/8 + 32; cap(r.Auth) > slack || cap(r.Attrs) > slack { // allocator size classes round up
			t.Fatalf("buffers beyond the packet: auth cap %d, attrs cap %d, packet %d", cap(r.Auth), cap(r.Attrs), len(p))
		}
	})
}

func mysqlLenenc(b []byte) []byte {
	return append(gomysql.AppendLengthEncodedInteger(nil, uint64(len(b))), b...)
}
