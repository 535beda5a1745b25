package wire

import (
	"bytes"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Fuzz targets for everything the proxy parses from a client before or
// right after authentication, and for the backend greeting. Their seeds
// run in the normal suite (go test); explore with e.g.
//
//	go test -run '^$' -fuzz FuzzHandshakeResponse -fuzztime 60s ./proxy/
//
// Each target asserts no panic and that whatever is parsed is bounded by
// the input (no field longer than the packet, nothing allocated for a
// claimed length the packet does not hold).

// seedResponse is a well-formed HandshakeResponse41 as a real client sends it.
func seedResponse(caps uint32, user, db, plugin string, auth, attrs []byte) []byte {
	r := &HandshakeResponse{Caps: caps, MaxPacket: 1 << 24, Charset: 45, User: user, DB: db,
		Plugin: plugin, Auth: auth, Attrs: attrs}
	return AppendHandshakeResponse(nil, r, false)
}

// fuzzCaps: a client's usual capabilities (proxy's rawclient_test.go's
// rawBaseCaps) with a database and multi-statements.
const fuzzCaps = gomysql.CLIENT_PROTOCOL_41 | gomysql.CLIENT_SECURE_CONNECTION | gomysql.CLIENT_PLUGIN_AUTH |
	gomysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | gomysql.CLIENT_TRANSACTIONS | gomysql.CLIENT_LONG_FLAG |
	gomysql.CLIENT_CONNECT_ATTRS | gomysql.CLIENT_CONNECT_WITH_DB | gomysql.CLIENT_MULTI_STATEMENTS

// handshakeSeeds are valid responses and the malformed shapes that once
// crashed go-mysql's parser: user, db or plugin without their NUL, auth
// lengths beyond the packet, truncated attributes.
func handshakeSeeds() [][]byte {
	auth := bytes.Repeat([]byte{0x5a}, 20)
	attrs := AttrsWith(nil, "_client_name", "go-sql-driver", "_pid", "42")
	valid := seedResponse(fuzzCaps, "app", "test", gomysql.AUTH_NATIVE_PASSWORD, auth, attrs)
	seeds := [][]byte{
		valid,
		valid[:32], // SSL request
		seedResponse(fuzzCaps&^gomysql.CLIENT_CONNECT_WITH_DB, "app", "", gomysql.AUTH_CACHING_SHA2_PASSWORD, auth, nil),
		seedResponse(fuzzCaps&^gomysql.CLIENT_LONG_PASSWORD, "root", "", "", nil, nil),
	}
	// Every truncation of a valid response: user, auth, db, plugin and
	// attributes each lose their terminator or their tail somewhere.
	for i := 0; i < len(valid); i++ {
		seeds = append(seeds, valid[:i])
	}
	hdr := valid[:32]
	for _, tail := range [][]byte{
		[]byte("app"),              // user without NUL
		[]byte("app\x00\x14short"), // auth length 20, 5 bytes there
		[]byte("app\x00\xfe\xff\xff\xff\xff\xff\xff\xff\xff"), // 8-byte lenenc auth length
		[]byte("app\x00\x00test"),                             // db without NUL
		[]byte("app\x00\x00test\x00mysql_native_password"),    // plugin without NUL
		[]byte("app\x00\x00test\x00p\x00\xfc\xff\xff"),        // attrs claim 64 KB
		[]byte("app\x00\x00test\x00p\x00\xfd\xff\xff\xff"),    // attrs claim 16 MB
	} {
		seeds = append(seeds, append(append([]byte(nil), hdr...), tail...))
	}
	return seeds
}

func FuzzHandshakeResponse(f *testing.F) {
	for _, s := range handshakeSeeds() {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, p []byte, mariadb bool) {
		r, err := ParseHandshakeResponse(p, mariadb)
		if err != nil {
			if r != nil {
				t.Fatal("error with a result")
			}
			return
		}
		if len(p) < 32 {
			t.Fatalf("accepted a %d-byte response", len(p))
		}
		if n := len(r.User) + len(r.Auth) + len(r.DB) + len(r.Plugin) + len(r.Attrs); n > len(p) {
			t.Fatalf("parsed %d bytes of fields out of a %d-byte packet", n, len(p))
		}
		if slack := len(p)*9/8 + 32; cap(r.Auth) > slack || cap(r.Attrs) > slack { // allocator size classes round up
			t.Fatalf("buffers beyond the packet: auth cap %d, attrs cap %d, packet %d", cap(r.Auth), cap(r.Attrs), len(p))
		}
		if len(p) == 32 {
			return // SSL request: nothing more to compare
		}
		// What the proxy would forward must read back the same.
		again := *r
		again.Caps |= gomysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | gomysql.CLIENT_PLUGIN_AUTH
		q := AppendHandshakeResponse(nil, &again, false)
		r2, err := ParseHandshakeResponse(q, mariadb)
		if err != nil {
			t.Fatalf("re-encoded response does not parse: %v", err)
		}
		if r2.User != r.User || !bytes.Equal(r2.Auth, r.Auth) || r2.DB != r.DB || r2.Plugin != r.Plugin || !bytes.Equal(r2.Attrs, r.Attrs) {
			t.Fatalf("round trip changed the response:\n%+v\n%+v", r, r2)
		}
	})
}

func seedGreeting(mariadb bool) []byte {
	g := &Greeting{Version: "10.11.19-MariaDB-0+deb12u1", ThreadID: 42, Scramble: scramble(),
		Caps: 0x81fffffe, Charset: 45, Status: gomysql.SERVER_STATUS_AUTOCOMMIT, Plugin: gomysql.AUTH_NATIVE_PASSWORD,
		ExtCaps: MariaDBStmtBulk | MariaDBExtTypeInfo}
	if !mariadb {
		g.Caps |= gomysql.CLIENT_LONG_PASSWORD
		g.ExtCaps = 0
		g.Version = "8.0.36"
	}
	return AppendGreeting(nil, g)
}

func FuzzParseGreeting(f *testing.F) {
	for _, m := range []bool{true, false} {
		g := seedGreeting(m)
		for i := 0; i <= len(g); i++ {
			f.Add(g[:i])
		}
	}
	f.Add(ErrPacket(1040, "08004", "Too many connections"))
	f.Add([]byte{0xFF})
	f.Add([]byte{10, 'x'})
	f.Fuzz(func(t *testing.T, p []byte) {
		g, err := ParseGreeting(p)
		if err != nil {
			return
		}
		if n := len(g.Version) + len(g.Scramble) + len(g.Plugin); n > len(p) {
			t.Fatalf("parsed %d bytes of fields out of a %d-byte greeting", n, len(p))
		}
	})
}

// The greeting the proxy writes reads back as written.
func TestGreetingRoundTrip(t *testing.T) {
	for _, m := range []bool{true, false} {
		p := seedGreeting(m)
		g, err := ParseGreeting(p)
		if err != nil {
			t.Fatal(err)
		}
		if g.MariaDB() != m || g.ThreadID != 42 || len(g.Scramble) != 20 || g.Plugin != gomysql.AUTH_NATIVE_PASSWORD ||
			g.Status != gomysql.SERVER_STATUS_AUTOCOMMIT || g.Charset != 45 {
			t.Fatalf("round trip: %+v", g)
		}
		if m && g.ExtCaps != MariaDBStmtBulk|MariaDBExtTypeInfo {
			t.Fatalf("extended caps lost: 0x%x", g.ExtCaps)
		}
	}
}

// scramble is 20 random bytes as a server's greeting carries them
// (proxy's randomScramble): no NUL, 7 bits.
func scramble() []byte {
	b := gomysql.RandomBuf(20)
	for i := range b {
		b[i] = b[i]&0x7f | 1
	}
	return b
}
