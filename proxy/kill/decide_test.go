package kill

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/killsql"
	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// Decide is the one place that says whether a command is a KILL and
// which way it is carried out; this pins its answer for every command and
// mode without a backend (what each way then does is package proxy's
// kill*_test.go tests').
func TestDecideKill(t *testing.T) {
	const prepared = 7 // a statement id the session prepared as a KILL
	stmt := func(cmd byte, id uint32) []byte {
		p := make([]byte, 5, 12)
		p[0] = cmd
		binary.LittleEndian.PutUint32(p[1:], id)
		return p
	}
	text := func(cmd byte, q string) []byte { return append([]byte{cmd}, q...) }
	type want struct {
		way       killWay
		id        uint64
		validated bool
		msg       string
	}
	for _, tc := range []struct {
		name    string
		backend bool // backend-account mode
		multi   bool // the client negotiated multi-statements
		pkt     []byte
		want    want
	}{
		{"users: KILL n", false, false, text(mysql.COM_QUERY, "KILL 5"), want{way: killMap, id: 5}},
		{"users: KILL QUERY n", false, false, text(mysql.COM_QUERY, "KILL QUERY 5"), want{way: killMap, id: 5}},
		{"users: KILL expr", false, false, text(mysql.COM_QUERY, "KILL CONNECTION_ID()"), want{way: killMap}},
		{"users: KILL USER", false, false, text(mysql.COM_QUERY, "KILL USER u"), want{way: killMap}},
		{"users: no KILL", false, true, text(mysql.COM_QUERY, "SELECT 1; SELECT 2"), want{}},
		{"users: PREPARE FROM a KILL", false, false, text(mysql.COM_QUERY, "PREPARE s FROM 'KILL 5'"), want{way: killDynamic}},
		{"users: EXECUTE IMMEDIATE a KILL", false, false, text(mysql.COM_QUERY, "EXECUTE IMMEDIATE 'KILL 5'"),
			want{way: killRefuse, msg: killsql.InDynamic}},
		{"users: KILL among statements, no multi", false, false, text(mysql.COM_QUERY, "KILL 5; SELECT 1"),
			want{way: killRefuse, msg: killsql.AmongStatements}},
		{"users: KILL among statements, multi", false, true, text(mysql.COM_QUERY, "SELECT 1; KILL 5"), want{way: killMulti}},
		{"users: prepare KILL ?", false, false, text(mysql.COM_STMT_PREPARE, "KILL ?"), want{way: killPrepare}},
		{"users: prepare KILL expr with ?", false, false, text(mysql.COM_STMT_PREPARE, "KILL 1+?"),
			want{way: killRefuse, msg: killsql.ParamInExpr}},
		{"users: prepare no KILL", false, false, text(mysql.COM_STMT_PREPARE, "SELECT ?"), want{}},
		{"users: COM_PROCESS_KILL", false, false, stmt(mysql.COM_PROCESS_KILL, 9), want{way: killMap, id: 9, validated: true}},
		{"users: COM_PROCESS_KILL short", false, false, []byte{mysql.COM_PROCESS_KILL, 1},
			want{way: killRefuse, msg: killMalformed}},
		{"execute of a prepared KILL", false, false, stmt(mysql.COM_STMT_EXECUTE, prepared), want{way: killExecute}},
		{"execute of another statement", false, false, stmt(mysql.COM_STMT_EXECUTE, prepared+1), want{}},
		{"bulk execute of a prepared KILL", false, false, stmt(comStmtBulkExecute, prepared), want{way: killRefuse, msg: killBulk}},
		{"bulk execute of another statement", false, false, stmt(comStmtBulkExecute, prepared+1), want{}},
		{"backend: KILL n", true, false, text(mysql.COM_QUERY, "KILL 5"), want{way: killRelay, id: 5}},
		{"backend: KILL CONNECTION n", true, false, text(mysql.COM_QUERY, "KILL HARD CONNECTION 5"), want{way: killRelay, id: 5}},
		{"backend: KILL QUERY n", true, false, text(mysql.COM_QUERY, "KILL QUERY 5"), want{}},
		{"backend: KILL expr", true, false, text(mysql.COM_QUERY, "KILL CONNECTION_ID()"), want{}},
		{"backend: KILL USER", true, false, text(mysql.COM_QUERY, "KILL USER u"), want{}},
		{"backend: PREPARE FROM a KILL", true, false, text(mysql.COM_QUERY, "PREPARE s FROM 'KILL 5'"), want{}},
		{"backend: prepare KILL ?", true, false, text(mysql.COM_STMT_PREPARE, "KILL ?"), want{}},
		{"backend: COM_PROCESS_KILL", true, false, stmt(mysql.COM_PROCESS_KILL, 9), want{way: killRelay, id: 9}},
		{"no KILL command", false, false, []byte{mysql.COM_PING}, want{}},
	} {
		kills := &State{stmts: map[uint32]*Stmt{prepared: {}}}
		var ks *Stmt // what package proxy hands Decide: the KILL prepared as the id pkt names
		if len(tc.pkt) >= 5 {
			ks = kills.Lookup(binary.LittleEndian.Uint32(tc.pkt[1:5]))
		}
		var c sqltext.Class
		if tc.pkt[0] == mysql.COM_QUERY || tc.pkt[0] == mysql.COM_STMT_PREPARE {
			c = sqltext.Classify(tc.pkt[1:])
		}
		d := Decide(tc.pkt, c, tc.backend, tc.multi, ks)
		got := want{way: d.way, id: d.req.ID, validated: d.validated, msg: d.msg}
		if got != tc.want {
			t.Errorf("%s: decided %+v, want %+v", tc.name, got, tc.want)
		}
		switch {
		case d.way == killDynamic && !bytes.Equal(d.req.PrepareName, []byte("s")):
			t.Errorf("%s: stand-in name %q, want s", tc.name, d.req.PrepareName)
		case d.way == killExecute && d.stmt != kills.stmts[prepared]:
			t.Errorf("%s: not the prepared KILL", tc.name)
		case d.way == killRefuse && d.code != mysql.ER_NOT_SUPPORTED_YET && d.code != mysql.ER_MALFORMED_PACKET:
			t.Errorf("%s: refused with %d", tc.name, d.code)
		}
	}
}
