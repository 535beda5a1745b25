package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// mariaGreetingBytes is a MariaDB 10.11 greeting assembled field by field
// from the protocol's description (not by AppendGreeting).
func mariaGreetingBytes(caps, extCaps uint32) []byte {
	var p []byte
	p = append(p, 10)
	p = append(p, "5.5.5-10.11.6-MariaDB-log"...)
	p = append(p, 0)
	p = append(p, 0x2A, 0x01, 0x00, 0x00) // thread id 298
	p = append(p, "abcdefgh"...)          // scramble part 1
	p = append(p, 0)                      // filler
	p = append(p, byte(caps), byte(caps>>8))
	p = append(p, 45)         // utf8mb4_general_ci
	p = append(p, 0x02, 0x00) // SERVER_STATUS_AUTOCOMMIT
	p = append(p, byte(caps>>16), byte(caps>>24))
	p = append(p, 21)               // auth plugin data length
	p = append(p, 0, 0, 0, 0, 0, 0) // reserved
	p = binary.LittleEndian.AppendUint32(p, extCaps)
	p = append(p, "ijklmnopqrst"...) // scramble part 2 (12 bytes)
	p = append(p, 0)
	p = append(p, "mysql_native_password"...)
	return append(p, 0)
}

// MariaDB's usual capabilities: CLIENT_LONG_PASSWORD clear ("not MySQL").
const mariaCaps uint32 = 0x81bff7fe

func TestParseGreetingFields(t *testing.T) {
	ext := MariaDBProgress | MariaDBStmtBulk | MariaDBExtTypeInfo | MariaDBCacheMetadata
	g, err := ParseGreeting(mariaGreetingBytes(mariaCaps, ext))
	if err != nil {
		t.Fatal(err)
	}
	want := Greeting{Version: "5.5.5-10.11.6-MariaDB-log", ThreadID: 298, Scramble: []byte("abcdefghijklmnopqrst"),
		Caps: mariaCaps, ExtCaps: ext, Charset: 45, Status: mysql.SERVER_STATUS_AUTOCOMMIT, Plugin: "mysql_native_password"}
	if g.Version != want.Version || g.ThreadID != want.ThreadID || !bytes.Equal(g.Scramble, want.Scramble) ||
		g.Caps != want.Caps || g.ExtCaps != want.ExtCaps || g.Charset != want.Charset || g.Status != want.Status ||
		g.Plugin != want.Plugin {
		t.Fatalf("ParseGreeting:\n got %+v\nwant %+v", *g, want)
	}
	if !g.MariaDB() {
		t.Error("MariaDB() false with CLIENT_LONG_PASSWORD clear")
	}
	// Both halves of the capabilities count: the upper ones carry
	// CLIENT_PLUGIN_AUTH and CLIENT_CONNECT_ATTRS.
	if g.Caps&mysql.CLIENT_PLUGIN_AUTH == 0 || g.Caps&mysql.CLIENT_CONNECT_ATTRS == 0 || g.Caps&mysql.CLIENT_SECURE_CONNECTION == 0 {
		t.Errorf("caps %#x lost a half", g.Caps)
	}
}

// AppendGreeting writes exactly the bytes of the protocol's layout.
func TestAppendGreetingBytes(t *testing.T) {
	ext := MariaDBStmtBulk | MariaDBBulkUnitResult
	g := &Greeting{Version: "5.5.5-10.11.6-MariaDB-log", ThreadID: 298, Scramble: []byte("abcdefghijklmnopqrst"),
		Caps: mariaCaps, ExtCaps: ext, Charset: 45, Status: mysql.SERVER_STATUS_AUTOCOMMIT, Plugin: "mysql_native_password"}
	got := AppendGreeting([]byte("prefix"), g)
	want := append([]byte("prefix"), mariaGreetingBytes(mariaCaps, ext)...)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendGreeting:\n got %x\nwant %x", got, want)
	}
	// And back, through both parts of the scramble and the plugin name.
	for _, caps := range []uint32{mariaCaps, mariaCaps | mysql.CLIENT_LONG_PASSWORD} {
		g.Caps = caps
		back, err := ParseGreeting(AppendGreeting(nil, g))
		if err != nil {
			t.Fatal(err)
		}
		wantExt := ext
		if caps&mysql.CLIENT_LONG_PASSWORD != 0 {
			wantExt = 0 // MySQL: the reserved bytes mean nothing
		}
		if back.Caps != caps || back.ExtCaps != wantExt || !bytes.Equal(back.Scramble, g.Scramble) || back.Plugin != g.Plugin {
			t.Errorf("caps %#x: read back %+v", caps, *back)
		}
	}
}

// A MySQL server (CLIENT_LONG_PASSWORD set) has no extended capabilities,
// whatever its reserved bytes hold.
func TestParseGreetingMySQLIgnoresReserved(t *testing.T) {
	p := mariaGreetingBytes(mariaCaps|mysql.CLIENT_LONG_PASSWORD, 0xFFFFFFFF)
	g, err := ParseGreeting(p)
	if err != nil {
		t.Fatal(err)
	}
	if g.MariaDB() || g.ExtCaps != 0 {
		t.Errorf("MySQL greeting: MariaDB() %v, ExtCaps %#x", g.MariaDB(), g.ExtCaps)
	}
	if string(g.Scramble) != "abcdefghijklmnopqrst" || g.Plugin != "mysql_native_password" {
		t.Errorf("scramble %q plugin %q", g.Scramble, g.Plugin)
	}
}

// The optional parts: no CLIENT_PLUGIN_AUTH, no plugin name; a plugin name
// without its NUL (servers that forgot it); a longer auth data length;
// a pre-4.1 greeting ending after the lower capabilities.
func TestParseGreetingOptionalParts(t *testing.T) {
	noPlugin := mariaGreetingBytes(mariaCaps&^mysql.CLIENT_PLUGIN_AUTH, 0)
	if g, err := ParseGreeting(noPlugin); err != nil || g.Plugin != "" || len(g.Scramble) != 20 {
		t.Errorf("without CLIENT_PLUGIN_AUTH: %+v, %v", g, err)
	}
	full := mariaGreetingBytes(mariaCaps, 0)
	unterminated := full[:len(full)-1]
	if g, err := ParseGreeting(unterminated); err != nil || g.Plugin != "mysql_native_password" {
		t.Errorf("plugin without NUL: %+v, %v", g, err)
	}
	// Auth data length 33 (32 and a NUL): part 2 is 25 bytes, read up to its NUL.
	long := bytes.Clone(full)
	at := bytes.Index(long, []byte("ijkl")) - 11 // the length byte
	if long[at] != 21 {
		t.Fatalf("layout: byte %d is %d", at, long[at])
	}
	long[at] = 33
	tail := append([]byte("ijklmnopqrstuvwxyz012345\x00"), "caching_sha2_password\x00"...)
	long = append(long[:at+11], tail...)
	if g, err := ParseGreeting(long); err != nil || string(g.Scramble) != "abcdefghijklmnopqrstuvwxyz012345" ||
		g.Plugin != "caching_sha2_password" {
		t.Errorf("auth data of 33: %+v, %v", g, err)
	}
	// Auth data length 0 with CLIENT_SECURE_CONNECTION: 13 bytes all the same.
	zero := bytes.Clone(full)
	zero[at] = 0
	if g, err := ParseGreeting(zero); err != nil || len(g.Scramble) != 20 || g.Plugin != "mysql_native_password" {
		t.Errorf("auth data length 0: %+v, %v", g, err)
	}
	// Pre-4.1: thread id, 8 bytes of scramble, filler, lower caps, no more.
	old := full[:bytes.Index(full, []byte("abcdefgh"))+8+1+2]
	g, err := ParseGreeting(old)
	if err != nil || g.Caps != mariaCaps&0xFFFF || len(g.Scramble) != 8 || g.Charset != 0 {
		t.Errorf("pre-4.1 greeting: %+v, %v", g, err)
	}
}

// An ERR packet instead of a greeting (too many connections, host
// blocked) is the server's error, code and message kept.
func TestParseGreetingErrPacket(t *testing.T) {
	g, err := ParseGreeting(append([]byte{0xFF, 0x10, 0x04}, "Too many connections"...))
	var me *mysql.MyError
	if g != nil || !errors.As(err, &me) || me.Code != mysql.ER_CON_COUNT_ERROR || me.Message != "Too many connections" {
		t.Fatalf("ParseGreeting(ERR) = %v, %v", g, err)
	}
	_, err = ParseGreeting(ErrPacket(1129, "HY000", "Host 'x' is blocked"))
	if !errors.As(err, &me) || me.Code != 1129 || me.State != "HY000" {
		t.Errorf("ParseGreeting(ERR with state) = %v", err)
	}
}

func TestParseGreetingMalformed(t *testing.T) {
	full := mariaGreetingBytes(mariaCaps, 0)
	scr2 := bytes.Index(full, []byte("ijkl"))
	for _, c := range []struct {
		name string
		p    []byte
		what string
	}{
		{"empty", nil, "protocol version is not 10"},
		{"protocol 9", append([]byte{9}, full[1:]...), "protocol version is not 10"},
		{"version without NUL", []byte("\x0a5.5.5-10.11"), "no end to the version string"},
		{"cut in the thread id", full[:len("5.5.5-10.11.6-MariaDB-log")+4], "too short"},
		{"cut before the lower caps", full[:bytes.Index(full, []byte("abcdefgh"))+9], "too short"},
		{"scramble part 2 cut", full[:scr2+5], "scramble too short"},
	} {
		g, err := ParseGreeting(c.p)
		if g != nil || err == nil || err.Error() != "malformed server greeting: "+c.what {
			t.Errorf("%s: %v, %v; want %q", c.name, g, err, c.what)
		}
	}
}

// respCaps: what a MariaDB Connector/C client sends.
const respCaps = mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH |
	mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_TRANSACTIONS | mysql.CLIENT_MULTI_RESULTS |
	mysql.CLIENT_LONG_FLAG | mysql.CLIENT_LONG_PASSWORD

// AppendHandshakeResponse writes the HandshakeResponse41 layout exactly.
func TestAppendHandshakeResponseBytes(t *testing.T) {
	caps := respCaps | mysql.CLIENT_CONNECT_WITH_DB | mysql.CLIENT_CONNECT_ATTRS
	r := &HandshakeResponse{Caps: caps, ExtCaps: MariaDBStmtBulk, MaxPacket: 1 << 24, Charset: 45, User: "app",
		Auth: []byte{1, 2, 3}, DB: "shop", Plugin: "mysql_native_password", Attrs: []byte("\x04_pid\x0242")}
	var want []byte
	want = binary.LittleEndian.AppendUint32(want, caps)
	want = append(want, 0, 0, 0, 1, 45)
	want = append(want, make([]byte, 19)...)
	want = append(want, byte(MariaDBStmtBulk), 0, 0, 0)
	want = append(want, "app\x00"...)
	want = append(want, 3, 1, 2, 3)
	want = append(want, "shop\x00mysql_native_password\x00"...)
	want = append(want, 8)
	want = append(want, "\x04_pid\x0242"...)
	if got := AppendHandshakeResponse(nil, r, false); !bytes.Equal(got, want) {
		t.Fatalf("AppendHandshakeResponse:\n got %x\nwant %x", got, want)
	}
	// The SSL request is the first 32 bytes and nothing more.
	if got := AppendHandshakeResponse([]byte("x"), r, true); !bytes.Equal(got, append([]byte("x"), want[:32]...)) {
		t.Errorf("SSL request %x", got)
	}
	// Without CLIENT_CONNECT_WITH_DB the database is not written.
	r.Caps &^= mysql.CLIENT_CONNECT_WITH_DB
	if got := AppendHandshakeResponse(nil, r, false); bytes.Contains(got, []byte("shop")) {
		t.Errorf("database written without CLIENT_CONNECT_WITH_DB: %q", got)
	}
}

// What AppendHandshakeResponse writes, ParseHandshakeResponse reads back,
// for each optional part and an auth response longer than 250 bytes.
func TestHandshakeResponseRoundTrip(t *testing.T) {
	attrs := AttrsWith(nil, "_client_name", "libmariadb", "_os", strings.Repeat("L", 300))
	long := bytes.Repeat([]byte{0xA5}, 300) // lenenc 0xFC length
	for _, c := range []struct {
		name string
		r    HandshakeResponse
	}{
		{"minimal", HandshakeResponse{Caps: respCaps, User: "u", Auth: nil, Plugin: "mysql_native_password"}},
		{"with db", HandshakeResponse{Caps: respCaps | mysql.CLIENT_CONNECT_WITH_DB, User: "app", DB: "test",
			Auth: bytes.Repeat([]byte{7}, 20), Plugin: "mysql_native_password"}},
		{"db flag, empty db", HandshakeResponse{Caps: respCaps | mysql.CLIENT_CONNECT_WITH_DB, User: "app",
			Auth: []byte{1}, Plugin: "client_ed25519"}},
		{"attributes", HandshakeResponse{Caps: respCaps | mysql.CLIENT_CONNECT_ATTRS | mysql.CLIENT_CONNECT_WITH_DB,
			User: "app", DB: "d", Auth: []byte{9, 9}, Plugin: "caching_sha2_password", Attrs: attrs}},
		{"long auth", HandshakeResponse{Caps: respCaps | mysql.CLIENT_CONNECT_ATTRS, User: "root", Auth: long,
			Plugin: "sha256_password", Attrs: attrs}},
		{"secure connection only", HandshakeResponse{Caps: respCaps &^ mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
			User: "u", Auth: bytes.Repeat([]byte{3}, 20), Plugin: "mysql_native_password"}},
		{"MariaDB extended caps", HandshakeResponse{Caps: respCaps &^ mysql.CLIENT_LONG_PASSWORD, ExtCaps: MariaDBStmtBulk | MariaDBCacheMetadata,
			User: "u", Auth: []byte{1}, Plugin: "mysql_native_password"}},
	} {
		c.r.MaxPacket, c.r.Charset = 16<<20, 224
		p := AppendHandshakeResponse(nil, &c.r, false)
		for _, serverMariaDB := range []bool{true, false} {
			got, err := ParseHandshakeResponse(p, serverMariaDB)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			wantExt := uint32(0)
			if serverMariaDB && c.r.Caps&mysql.CLIENT_LONG_PASSWORD == 0 {
				wantExt = c.r.ExtCaps
			}
			if got.Caps != c.r.Caps || got.ExtCaps != wantExt || got.MaxPacket != c.r.MaxPacket || got.Charset != 224 ||
				got.User != c.r.User || !bytes.Equal(got.Auth, c.r.Auth) || got.DB != c.r.DB || got.Plugin != c.r.Plugin ||
				!bytes.Equal(got.Attrs, c.r.Attrs) {
				t.Errorf("%s (MariaDB server %v):\n got %+v\nwant %+v", c.name, serverMariaDB, *got, c.r)
			}
		}
	}
}

// Layouts real clients send that the proxy never writes: auth with a
// 1-byte length (no CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA), the old
// NUL-terminated auth, an unterminated plugin name, a database flag with
// the packet ending after the auth data.
func TestParseHandshakeResponseClientLayouts(t *testing.T) {
	head := func(caps uint32) []byte {
		p := binary.LittleEndian.AppendUint32(nil, caps)
		p = binary.LittleEndian.AppendUint32(p, 1<<24)
		p = append(p, 33)
		return append(p, make([]byte, 23)...)
	}
	secure := mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH
	for _, c := range []struct {
		name               string
		p                  []byte
		user, auth, db, pl string
		attrs              string
	}{
		{"1-byte auth length", append(head(secure|mysql.CLIENT_CONNECT_WITH_DB), "bob\x00\x03xyzdb1\x00mysql_native_password\x00"...),
			"bob", "xyz", "db1", "mysql_native_password", ""},
		{"NUL-terminated auth", append(head(mysql.CLIENT_PROTOCOL_41), "bob\x00secret\x00"...),
			"bob", "secret", "", "", ""},
		{"plugin without NUL", append(head(secure), "bob\x00\x00mysql_native_password"...),
			"bob", "", "", "mysql_native_password", ""},
		{"db flag, packet ends after auth", append(head(secure|mysql.CLIENT_CONNECT_WITH_DB), "bob\x00\x01z"...),
			"bob", "z", "", "", ""},
		{"attrs flag, no attributes", append(head(secure|mysql.CLIENT_CONNECT_ATTRS), "bob\x00\x00p\x00"...),
			"bob", "", "", "p", ""},
		{"attributes", append(head(secure|mysql.CLIENT_CONNECT_ATTRS), "bob\x00\x00p\x00\x05\x01k\x02vv"...),
			"bob", "", "", "p", "\x01k\x02vv"},
		{"bytes after the attributes", append(head(secure|mysql.CLIENT_CONNECT_ATTRS), "bob\x00\x00p\x00\x02\x01kjunk"...),
			"bob", "", "", "p", "\x01k"},
	} {
		r, err := ParseHandshakeResponse(c.p, true)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if r.User != c.user || string(r.Auth) != c.auth || r.DB != c.db || r.Plugin != c.pl || string(r.Attrs) != c.attrs ||
			r.Charset != 33 || r.MaxPacket != 1<<24 {
			t.Errorf("%s: %+v", c.name, *r)
		}
	}
}

// The SSL request: the first 32 bytes, the extended capabilities read
// only from a MariaDB client talking to a MariaDB server.
func TestParseHandshakeResponseSSLRequest(t *testing.T) {
	r := &HandshakeResponse{Caps: respCaps | mysql.CLIENT_SSL, ExtCaps: MariaDBProgress, MaxPacket: 1 << 30, Charset: 8}
	ssl := AppendHandshakeResponse(nil, r, true)
	if len(ssl) != 32 {
		t.Fatalf("SSL request of %d bytes", len(ssl))
	}
	for _, c := range []struct {
		caps          uint32
		serverMariaDB bool
		ext           uint32
	}{
		{respCaps | mysql.CLIENT_SSL, true, 0},
		{respCaps&^mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_SSL, true, MariaDBProgress},
		{respCaps&^mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_SSL, false, 0},
	} {
		r.Caps = c.caps
		got, err := ParseHandshakeResponse(AppendHandshakeResponse(nil, r, true), c.serverMariaDB)
		if err != nil {
			t.Fatal(err)
		}
		if got.Caps != c.caps || got.ExtCaps != c.ext || got.MaxPacket != 1<<30 || got.Charset != 8 || got.User != "" || got.Auth != nil {
			t.Errorf("caps %#x MariaDB %v: %+v", c.caps, c.serverMariaDB, *got)
		}
		if got.Caps&mysql.CLIENT_SSL == 0 {
			t.Error("CLIENT_SSL lost")
		}
	}
}

func TestParseHandshakeResponseMalformed(t *testing.T) {
	head := func(caps uint32) []byte {
		return append(binary.LittleEndian.AppendUint32(nil, caps), make([]byte, 28)...)
	}
	lenenc := mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_SECURE_CONNECTION
	secure := mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION
	for _, c := range []struct {
		name string
		p    []byte
	}{
		{"empty", nil},
		{"31 bytes", head(lenenc)[:31]},
		{"user without NUL", append(head(lenenc), "root"...)},
		{"lenenc auth beyond the packet", append(head(lenenc), "u\x00\x14short"...)},
		{"lenenc auth length cut", append(head(lenenc), "u\x00\xfc\x01"...)},
		{"lenenc auth of 2^64-1", append(head(lenenc), "u\x00\xfe\xff\xff\xff\xff\xff\xff\xff\xffx"...)},
		{"nothing after user, lenenc", append(head(lenenc), "u\x00"...)},
		{"secure auth beyond the packet", append(head(secure), "u\x00\x05abc"...)},
		{"nothing after user, secure", append(head(secure), "u\x00"...)},
		{"old auth without NUL", append(head(mysql.CLIENT_PROTOCOL_41), "u\x00secret"...)},
		{"db without NUL", append(head(secure|mysql.CLIENT_CONNECT_WITH_DB), "u\x00\x00test"...)},
		{"attributes beyond the packet", append(head(secure|mysql.CLIENT_PLUGIN_AUTH|mysql.CLIENT_CONNECT_ATTRS), "u\x00\x00p\x00\x10\x01k"...)},
		{"attributes length cut", append(head(secure|mysql.CLIENT_PLUGIN_AUTH|mysql.CLIENT_CONNECT_ATTRS), "u\x00\x00p\x00\xfd\x01"...)},
	} {
		r, err := ParseHandshakeResponse(c.p, true)
		if r != nil || !errors.Is(err, ErrShortHandshake) {
			t.Errorf("%s: %v, %v; want ErrShortHandshake", c.name, r, err)
		}
	}
	// A pre-4.1 client is refused by name, even in a well-formed packet.
	r, err := ParseHandshakeResponse(append(head(mysql.CLIENT_SECURE_CONNECTION), "u\x00\x00"...), true)
	if r != nil || err == nil || errors.Is(err, ErrShortHandshake) || !strings.Contains(err.Error(), "protocol 4.1") {
		t.Errorf("pre-4.1 client: %v, %v", r, err)
	}
}

// AttrsWith appends lenenc key/value strings after the client's own
// attributes, copying them (the client's packet buffer is not written).
func TestAttrsWith(t *testing.T) {
	raw := make([]byte, 0, 64)
	raw = append(raw, "\x03_os\x05Linux"...)
	long := strings.Repeat("v", 251)
	out := AttrsWith(raw, "_proxy", "leafproxy", "big", long)
	if spare := raw[len(raw):cap(raw)]; bytes.ContainsAny(spare, "_lv") {
		t.Error("AttrsWith wrote into the raw attributes' spare capacity")
	}
	var got []string
	for rest := out; len(rest) > 0; {
		s, _, n, err := mysql.LengthEncodedString(rest)
		if err != nil {
			t.Fatalf("attributes do not decode: %v", err)
		}
		got = append(got, string(s))
		rest = rest[n:]
	}
	want := []string{"_os", "Linux", "_proxy", "leafproxy", "big", long}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("attributes %q, want %q", got, want)
	}
	if i := bytes.Index(out, []byte(long)); i < 3 || !bytes.Equal(out[i-3:i], []byte{0xFC, 251, 0}) {
		t.Error("a 251-byte value lacks its 3-byte lenenc length")
	}
	if out := AttrsWith(nil); len(out) != 0 {
		t.Errorf("AttrsWith(nil) = %x", out)
	}
	// Forwarded in a response, they read back whole.
	r := &HandshakeResponse{Caps: respCaps | mysql.CLIENT_CONNECT_ATTRS, User: "u", Plugin: "p", Attrs: out}
	back, err := ParseHandshakeResponse(AppendHandshakeResponse(nil, r, false), false)
	if err != nil || !bytes.Equal(back.Attrs, out) {
		t.Errorf("forwarded attributes: %v", err)
	}
}
