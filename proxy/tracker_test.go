package proxy

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Packet payloads for the tracker tests.
var (
	tOK       = wire.OKPacket(1, 7, mysql.SERVER_STATUS_AUTOCOMMIT, 0)
	tOKMore   = wire.OKPacket(0, 0, mysql.SERVER_STATUS_AUTOCOMMIT|mysql.SERVER_MORE_RESULTS_EXISTS, 0)
	tErr      = wire.ErrPacket(1064, "42000", "syntax")
	tEOF      = wire.AppendEOF(nil, mysql.SERVER_STATUS_AUTOCOMMIT)
	tEOFMore  = wire.AppendEOF(nil, mysql.SERVER_STATUS_AUTOCOMMIT|mysql.SERVER_MORE_RESULTS_EXISTS)
	tEOFCurs  = wire.AppendEOF(nil, mysql.SERVER_STATUS_AUTOCOMMIT|mysql.SERVER_STATUS_CURSOR_EXISTS)
	tCols2    = []byte{2}
	tDef      = append([]byte{3, 'd', 'e', 'f'}, make([]byte, 30)...) // a column definition
	tRow      = []byte{1, '1', 1, '2'}
	tErrDef   = append([]byte{0xFF}, make([]byte, 40)...) // a definition that starts like an ERR
	tInfile   = []byte{0xFB, 'f'}
	tPrepOK   = []byte{0, 9, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0} // stmt 9, 2 columns, 1 parameter
	tPrepOK00 = []byte{0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
)

func TestRespTracker(t *testing.T) {
	cases := []struct {
		name    string
		kind    int
		cursor  bool
		caps    uint32
		packets [][]byte
		evs     []int // what step says of each packet; the last one ends the response
		ok      bool
		err     bool // the last packet is a protocol error
	}{
		{"OK", respResult, false, 0, [][]byte{tOK}, []int{wire.EvDone}, true, false},
		{"ERR", respResult, false, 0, [][]byte{tErr}, []int{wire.EvErr}, false, false},
		{"result set", respResult, false, 0,
			[][]byte{tCols2, tDef, tErrDef, tEOF, tRow, tRow, tEOF},
			[]int{wire.EvNext, wire.EvNext, wire.EvNext, wire.EvNext, wire.EvRow, wire.EvRow, wire.EvDone}, false, false},
		{"error mid-rows", respResult, false, 0,
			[][]byte{tCols2, tDef, tDef, tEOF, tRow, tErr},
			[]int{wire.EvNext, wire.EvNext, wire.EvNext, wire.EvNext, wire.EvRow, wire.EvErr}, false, false},
		{"multi results: OK then rows; only the first's rows are rows", respResult, false, 0,
			[][]byte{tOKMore, tCols2, tDef, tDef, tEOF, tRow, tEOF},
			[]int{wire.EvNext, wire.EvNext, wire.EvNext, wire.EvNext, wire.EvNext, wire.EvNext, wire.EvDone}, true, false},
		{"multi results: rows then OK", respResult, false, 0,
			[][]byte{tCols2, tDef, tDef, tEOFMore, tRow, tEOFMore, tOK},
			[]int{wire.EvNext, wire.EvNext, wire.EvNext, wire.EvNext, wire.EvRow, wire.EvNext, wire.EvDone}, false, false},
		{"cursor opened: ends after the definitions", respExecute, true, 0,
			[][]byte{tCols2, tDef, tDef, tEOFCurs},
			[]int{wire.EvNext, wire.EvNext, wire.EvNext, wire.EvDone}, false, false},
		{"no cursor flag: rows follow", respExecute, true, 0,
			[][]byte{tCols2, tDef, tDef, tEOF, tRow, tEOF},
			[]int{wire.EvNext, wire.EvNext, wire.EvNext, wire.EvNext, wire.EvRow, wire.EvDone}, false, false},
		{"LOCAL INFILE", respResult, false, mysql.CLIENT_LOCAL_FILES,
			[][]byte{tInfile, tOK}, []int{wire.EvInfile, wire.EvDone}, true, false},
		{"LOCAL INFILE not negotiated", respResult, false, 0, [][]byte{tInfile}, []int{0}, false, true},
		{"no EOF after definitions", respResult, false, 0, [][]byte{{1}, tDef, tRow}, []int{wire.EvNext, wire.EvNext, 0}, false, true},
		{"zero columns", respResult, false, 0, [][]byte{{0xFC}}, []int{0}, false, true},
		{"prepare", respPrepare, false, 0,
			[][]byte{tPrepOK, tDef, tEOF, tDef, tDef, tEOF},
			[]int{wire.EvNext, wire.EvNext, wire.EvNext, wire.EvNext, wire.EvNext, wire.EvDone}, true, false},
		{"prepare without parameters or columns", respPrepare, false, 0, [][]byte{tPrepOK00}, []int{wire.EvDone}, true, false},
		{"prepare ERR", respPrepare, false, 0, [][]byte{tErr}, []int{wire.EvErr}, false, false},
		{"simple OK", respSimple, false, 0, [][]byte{tOK}, []int{wire.EvDone}, true, false},
		{"simple EOF", respSimple, false, 0, [][]byte{tEOF}, []int{wire.EvDone}, true, false},
		{"simple ERR", respSimple, false, 0, [][]byte{tErr}, []int{wire.EvErr}, false, false},
		{"field list", respFieldList, false, 0, [][]byte{tDef, tDef, tEOF}, []int{wire.EvNext, wire.EvNext, wire.EvDone}, true, false},
		{"fetch ERR", respFetch, false, 0, [][]byte{tRow, tErr}, []int{wire.EvNext, wire.EvErr}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Session{caps: c.caps}
			var tr respTracker
			tr.Start(c.kind, c.cursor)
			for i, p := range c.packets {
				if tr.Done() {
					t.Fatalf("done before packet %d", i)
				}
				ev, err := tr.Step(s.facts(), p[:min(len(p), wire.HeadLen)], len(p))
				if c.err && i == len(c.packets)-1 {
					if err == nil {
						t.Fatalf("packet %d: want a protocol error", i)
					}
					return
				}
				if err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				if ev != c.evs[i] {
					t.Fatalf("packet %d: event %d, want %d", i, ev, c.evs[i])
				}
			}
			if !tr.Done() {
				t.Fatal("not done after the last packet")
			}
			if tr.OK != c.ok {
				t.Fatalf("ok = %v, want %v", tr.OK, c.ok)
			}
		})
	}
}

func TestRespTrackerRecordsSession(t *testing.T) {
	s := &Session{}
	var tr respTracker
	tr.Start(respPrepare, false)
	if _, err := tr.Step(s.facts(), tPrepOK, len(tPrepOK)); err != nil {
		t.Fatal(err)
	}
	if !s.lastPrepOK || s.lastPrep != 9 || tr.Prep.Params != 1 || tr.Prep.Columns != 2 {
		t.Fatalf("prepare not recorded: %+v lastPrep %d/%v", tr.Prep, s.lastPrep, s.lastPrepOK)
	}
	tr.Start(respPrepare, false)
	_, _ = tr.Step(s.facts(), tErr, len(tErr))
	if s.lastPrepOK {
		t.Fatal("a failed prepare left the last prepared statement in place")
	}
	tr.Start(respResult, false)
	_, _ = tr.Step(s.facts(), tOK, len(tOK))
	if s.status != mysql.SERVER_STATUS_AUTOCOMMIT || tr.InsertID != 7 || tr.Affected != 1 {
		t.Fatalf("OK not recorded: status %x insert id %d affected %d", s.status, tr.InsertID, tr.Affected)
	}
}
