package proxy

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// rawLogin logs in through the proxy with go-mysql's client and returns it;
// tests then write packets by hand on its connection.
func rawLogin(t *testing.T, e *env, db string) *client.Conn {
	t.Helper()
	c, err := client.Connect(e.addr, "app", "secret", db)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// command sends one command packet and returns the first response packet.
func command(t *testing.T, c *client.Conn, payload ...byte) []byte {
	t.Helper()
	c.ResetSequence()
	if err := c.WritePacket(append(make([]byte, 4), payload...)); err != nil {
		t.Fatalf("write command: %v", err)
	}
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return p
}

func errCode(p []byte) uint16 {
	if len(p) < 3 || p[0] != 0xFF {
		return 0
	}
	return binary.LittleEndian.Uint16(p[1:3])
}

func expectClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue // an error packet first is fine
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("proxy did not close the session")
		}
		return
	}
}

func TestMalformedPackets(t *testing.T) {
	e := startProxy(t, sharedDB(t).Addr, nil)
	witness := rawLogin(t, e, "")
	check := func() {
		t.Helper()
		if err := witness.Ping(); err != nil {
			t.Fatalf("other session broken: %v", err)
		}
		if _, err := witness.Execute("SELECT 1"); err != nil {
			t.Fatalf("other session broken: %v", err)
		}
	}

	t.Run("unknown command keeps the session", func(t *testing.T) {
		c := rawLogin(t, e, "")
		if p := command(t, c, 0x63, 1, 2); errCode(p) != gomysql.ER_UNKNOWN_COM_ERROR {
			t.Fatalf("unknown command answered %x, want ERR 1047", p)
		}
		if p := command(t, c, gomysql.COM_BINLOG_DUMP); errCode(p) != gomysql.ER_UNKNOWN_COM_ERROR {
			t.Fatalf("binlog dump answered %x, want ERR 1047", p)
		}
		if err := c.Ping(); err != nil {
			t.Fatalf("session unusable after refused commands: %v", err)
		}
		check()
	})

	t.Run("malformed change user closes the session with an error", func(t *testing.T) {
		c := rawLogin(t, e, "")
		if p := command(t, c, gomysql.COM_CHANGE_USER, 'x', 0); errCode(p) != gomysql.ER_MALFORMED_PACKET {
			t.Fatalf("change user answered %x, want ERR 1835", p)
		}
		expectClosed(t, c.Conn.Conn)
		check()
	})

	t.Run("wrong sequence id closes the session", func(t *testing.T) {
		c := rawLogin(t, e, "")
		nc := c.Conn.Conn
		if _, err := nc.Write([]byte{1, 0, 0, 5, gomysql.COM_PING}); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, nc)
		check()
	})

	t.Run("truncated header closes the session", func(t *testing.T) {
		c := rawLogin(t, e, "")
		nc := c.Conn.Conn
		if _, err := nc.Write([]byte{9, 0}); err != nil {
			t.Fatal(err)
		}
		nc.(*net.TCPConn).CloseWrite()
		expectClosed(t, nc)
		check()
	})

	t.Run("truncated payload closes the session", func(t *testing.T) {
		c := rawLogin(t, e, "")
		nc := c.Conn.Conn
		if _, err := nc.Write([]byte{100, 0, 0, 0, gomysql.COM_QUERY, 'S'}); err != nil {
			t.Fatal(err)
		}
		nc.(*net.TCPConn).CloseWrite()
		expectClosed(t, nc)
		check()
	})

	t.Run("garbage during handshake", func(t *testing.T) {
		nc, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		hdr := make([]byte, 4)
		if _, err := io.ReadFull(nc, hdr); err != nil {
			t.Fatal(err)
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if _, err := io.ReadFull(nc, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		nc.Write([]byte{3, 0, 0, 1, 0xde, 0xad, 0xbe})
		nc.(*net.TCPConn).CloseWrite()
		expectClosed(t, nc)
		check()
	})
}

// Commands beyond queries: each relayed and answered in its own shape.
func TestOtherCommands(t *testing.T) {
	needsMariaDB(t, "COM_STATISTICS and MariaDB's other commands (go-mysql-server: command handling not implemented yet: 9)")
	ensureDB(t, sharedDB(t), "cmds")
	sharedDB(t).Exec(t, "CREATE TABLE IF NOT EXISTS cmds.f (a INT, b VARCHAR(10))")
	e := startProxy(t, sharedDB(t).Addr, nil)
	c := rawLogin(t, e, "cmds")

	fields, err := c.FieldList("f", "")
	if err != nil || len(fields) != 2 || string(fields[0].Name) != "a" {
		t.Fatalf("COM_FIELD_LIST: %v %v", fields, err)
	}
	if p := command(t, c, gomysql.COM_STATISTICS); !bytes.Contains(p, []byte("Uptime")) {
		t.Fatalf("COM_STATISTICS: %q", p)
	}
	if _, err := c.Execute("SET @v = 42"); err != nil {
		t.Fatal(err)
	}
	if p := command(t, c, gomysql.COM_RESET_CONNECTION); p[0] != 0x00 {
		t.Fatalf("COM_RESET_CONNECTION: %x", p)
	}
	r, err := c.Execute("SELECT @v IS NULL, DATABASE()")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.GetInt(0, 0); v != 1 {
		t.Fatal("user variable survived COM_RESET_CONNECTION: not relayed")
	}
	if db, _ := r.GetString(0, 1); db != "cmds" {
		t.Fatalf("database after reset %q", db)
	}
	// COM_SET_OPTION: multi-statements off (1) answers EOF/OK
	if p := command(t, c, gomysql.COM_SET_OPTION, 1, 0); p[0] != 0xFE && p[0] != 0x00 {
		t.Fatalf("COM_SET_OPTION: %x", p)
	}
	if err := c.UseDB("mysql"); err != nil {
		t.Fatalf("COM_INIT_DB: %v", err)
	}
	r, err = c.Execute("SELECT DATABASE()")
	if err != nil {
		t.Fatal(err)
	}
	if db, _ := r.GetString(0, 0); db != "mysql" {
		t.Fatalf("database after COM_INIT_DB %q", db)
	}
}
