package proxy

import (
	"encoding/binary"
	"fmt"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// rawResult is one result of a response as a client reads it: an OK, an
// ERR, or a result set (its rows' payloads) with the status of the EOF that
// ended it (after the rows, or after the definitions when a cursor holds
// the rows).
type rawResult struct {
	ok, err bool
	errMsg  string
	cols    int
	rows    [][]byte
	status  uint16
}

// readResponse reads a whole query or execute response the way a client
// does: results while the server says more exist. cursor: the execute
// asked for a cursor, so a result may end after its definitions.
func (c *rawClient) readResponse(first []byte, cursor bool) []rawResult {
	c.t.Helper()
	var out []rawResult
	for p := first; ; p = c.read() {
		var r rawResult
		switch {
		case p[0] == 0xFF:
			r.err, r.errMsg = true, string(p[9:])
			return append(out, r)
		case p[0] == 0x00 && len(p) >= 7:
			_, _, r.status, _ = wire.OKInfo(p)
			r.ok = true
		default:
			n, _ := wire.LenencUint(p)
			r.cols = int(n)
			for range r.cols {
				c.read()
			}
			eof := c.read()
			if !wire.IsEOF(eof, len(eof)) {
				c.t.Fatalf("no EOF after %d column definitions: % x", r.cols, eof)
			}
			r.status = wire.EOFStatus(eof)
			if !(cursor && r.status&gomysql.SERVER_STATUS_CURSOR_EXISTS != 0 && r.status&gomysql.SERVER_MORE_RESULTS_EXISTS == 0) {
				row := c.read()
				for ; !wire.IsEOF(row, len(row)); row = c.read() {
					if row[0] == 0xFF {
						r.err, r.errMsg = true, string(row[9:])
						return append(out, r)
					}
					r.rows = append(r.rows, row)
				}
				r.status = wire.EOFStatus(row)
			}
		}
		out = append(out, r)
		if r.status&gomysql.SERVER_MORE_RESULTS_EXISTS == 0 {
			return out
		}
	}
}

// prepare prepares sql and reads the whole prepare response.
func (c *rawClient) prepare(sql string) (id uint32, params int) {
	c.t.Helper()
	p := c.command(append([]byte{gomysql.COM_STMT_PREPARE}, sql...))
	if p[0] != 0 {
		c.t.Fatalf("prepare %q: %s", sql, p[min(9, len(p)):])
	}
	id = binary.LittleEndian.Uint32(p[1:5])
	cols, np := int(binary.LittleEndian.Uint16(p[5:7])), int(binary.LittleEndian.Uint16(p[7:9]))
	for _, n := range []int{np, cols} {
		if n > 0 {
			for range n + 1 {
				c.read()
			}
		}
	}
	return id, np
}

// execute sends COM_STMT_EXECUTE of statement id with flags (the cursor
// type) and integer or NULL parameters, and returns the first packet.
func (c *rawClient) execute(id uint32, flags byte, args ...any) []byte {
	c.t.Helper()
	pkt := binary.LittleEndian.AppendUint32([]byte{gomysql.COM_STMT_EXECUTE}, id)
	pkt = append(pkt, flags, 1, 0, 0, 0)
	if len(args) > 0 {
		nulls := make([]byte, (len(args)+7)/8)
		var types, values []byte
		for i, a := range args {
			switch v := a.(type) {
			case nil:
				nulls[i/8] |= 1 << (i % 8)
				types = append(types, gomysql.MYSQL_TYPE_NULL, 0)
			case int:
				types = append(types, gomysql.MYSQL_TYPE_LONGLONG, 0)
				values = binary.LittleEndian.AppendUint64(values, uint64(v))
			default:
				c.t.Fatalf("execute: unsupported argument %T", a)
			}
		}
		pkt = append(append(append(append(pkt, nulls...), 1), types...), values...)
	}
	return c.command(pkt)
}

// binaryInt is the first column of a binary-protocol row whose columns are
// all BIGINT (or INT, 4 bytes when int4) and not NULL.
func binaryInts(row []byte, cols int, width int) []int64 {
	off := 1 + (cols+7+2)/8
	var v []int64
	for range cols {
		if width == 4 {
			v = append(v, int64(int32(binary.LittleEndian.Uint32(row[off:]))))
		} else {
			v = append(v, int64(binary.LittleEndian.Uint64(row[off:])))
		}
		off += width
	}
	return v
}

// A prepared CALL of a procedure that loops over a cursor of its own
// returns one result set per row and its OUT parameter; the procedure's
// open cursor leaves SERVER_STATUS_CURSOR_EXISTS in every EOF, which does
// not mean the execute's result is held by a cursor (none was asked for).
// The client gets every result and the session goes on; the same CALL
// executed with a cursor asked for is answered the same way (the server
// opens cursors for SELECT only).
func TestPreparedCallResultSetsWithCursorFlag(t *testing.T) {
	needsMariaDB(t, "stored procedures in MariaDB's syntax (FOR loops)")
	ensureDB(t, sharedDB(t), "pcall")
	sharedDB(t).Exec(t, "DROP TABLE IF EXISTS pcall.src", "CREATE TABLE pcall.src (a INT)",
		"INSERT INTO pcall.src VALUES (1), (2), (3), (4)",
		"DROP PROCEDURE IF EXISTS pcall.p",
		`CREATE PROCEDURE pcall.p(IN n INT, OUT total BIGINT)
		BEGIN
		  DECLARE s BIGINT DEFAULT 0;
		  FOR r IN (SELECT a FROM src WHERE a <= n ORDER BY a) DO
		    SELECT CAST(r.a AS SIGNED) AS a, CAST(r.a * 10 AS SIGNED) AS ten;
		    SET s = s + r.a;
		  END FOR;
		  SET total = s;
		END`)
	e := startProxy(t, sharedDB(t).Addr, nil)
	for _, loop := range []bool{true, false} {
		for _, flags := range []byte{0, 1} { // no cursor; CURSOR_TYPE_READ_ONLY
			t.Run(fmt.Sprintf("loop=%v/cursor=%d", loop, flags), func(t *testing.T) {
				c := dialRaw(t, e.addr)
				if p := c.login("app", "secret", "pcall", gomysql.CLIENT_MULTI_RESULTS|gomysql.CLIENT_PS_MULTI_RESULTS, 0); p[0] != 0 {
					t.Fatalf("login: % x", p)
				}
				if !loop {
					// A statement the event loop hands back keeps the
					// session on its goroutine for the next commands.
					c.query("DO 1")
				}
				id, params := c.prepare("CALL p(?, ?)")
				if params != 2 {
					t.Fatalf("CALL p(?, ?) has %d parameters, want 2", params)
				}
				for run := 0; run < 2; run++ {
					res := c.readResponse(c.execute(id, flags, 3, nil), flags != 0)
					// 3 rows of the loop, the OUT parameters, the CALL's OK.
					if len(res) != 5 {
						t.Fatalf("run %d: %d results, want 5: %+v", run, len(res), res)
					}
					for i := range 3 {
						r := res[i]
						if r.err || r.cols != 2 || len(r.rows) != 1 {
							t.Fatalf("run %d result %d: %+v", run, i, r)
						}
						if got := binaryInts(r.rows[0], 2, 8); got[0] != int64(i+1) || got[1] != int64(10*(i+1)) {
							t.Fatalf("run %d result %d row = %v, want [%d %d]", run, i, got, i+1, 10*(i+1))
						}
					}
					out := res[3]
					if out.status&gomysql.SERVER_PS_OUT_PARAMS == 0 || len(out.rows) != 1 {
						t.Fatalf("run %d: OUT parameters result %+v", run, out)
					}
					if got := binaryInts(out.rows[0], out.cols, 8); got[len(got)-1] != 6 {
						t.Fatalf("run %d: OUT total = %v, want 6", run, got)
					}
					if !res[4].ok {
						t.Fatalf("run %d: last result %+v, want the CALL's OK", run, res[4])
					}
				}
				// The session goes on.
				r := c.query("SELECT 41 + 1")
				if len(r) != 5 || string(r[3][1:]) != "42" {
					t.Fatalf("SELECT after the CALL: %q", r)
				}
			})
		}
	}
}

// A cursor the client asks for holds a SELECT's rows: the execute's
// response ends after the definitions and COM_STMT_FETCH reads the rows.
func TestPreparedCursorFetch(t *testing.T) {
	ensureDB(t, sharedDB(t), "pcur")
	sharedDB(t).Exec(t, "DROP TABLE IF EXISTS pcur.t", "CREATE TABLE pcur.t (a INT)",
		"INSERT INTO pcur.t VALUES (1), (2), (3), (4), (5)")
	e := startProxy(t, sharedDB(t).Addr, nil)
	c := dialRaw(t, e.addr)
	if p := c.login("app", "secret", "pcur", gomysql.CLIENT_MULTI_RESULTS|gomysql.CLIENT_PS_MULTI_RESULTS, 0); p[0] != 0 {
		t.Fatalf("login: % x", p)
	}
	id, _ := c.prepare("SELECT a FROM t ORDER BY a")
	res := c.readResponse(c.execute(id, 1), true)
	if len(res) != 1 || res[0].cols != 1 || len(res[0].rows) != 0 || res[0].status&gomysql.SERVER_STATUS_CURSOR_EXISTS == 0 {
		t.Fatalf("execute with a cursor: %+v", res)
	}
	var got []int64
	for len(got) < 6 {
		fetch := binary.LittleEndian.AppendUint32([]byte{gomysql.COM_STMT_FETCH}, id)
		fetch = binary.LittleEndian.AppendUint32(fetch, 2)
		p := c.command(fetch)
		for ; !wire.IsEOF(p, len(p)); p = c.read() {
			if p[0] == 0xFF {
				t.Fatalf("fetch: %s", p[9:])
			}
			got = append(got, binaryInts(p, 1, 4)...)
		}
		if wire.EOFStatus(p)&gomysql.SERVER_STATUS_LAST_ROW_SEND != 0 {
			break
		}
	}
	if fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Fatalf("fetched %v, want [1 2 3 4 5]", got)
	}
	if r := c.query("SELECT 41 + 1"); len(r) != 5 || string(r[3][1:]) != "42" {
		t.Fatalf("SELECT after the fetches: %q", r)
	}
}
