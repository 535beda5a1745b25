package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/rewriter"
)

// param is one binary-protocol parameter as a test writes it.
type param struct {
	typ  byte
	val  []byte // nil: NULL
	long bool   // sent with COM_STMT_SEND_LONG_DATA: no value in the packet
}

func str(s string) param {
	return param{typ: mysql.MYSQL_TYPE_VAR_STRING, val: append([]byte{byte(len(s))}, s...)}
}
func i64(v int64) param {
	return param{typ: mysql.MYSQL_TYPE_LONGLONG, val: binary.LittleEndian.AppendUint64(nil, uint64(v))}
}
func null() param { return param{typ: mysql.MYSQL_TYPE_VAR_STRING} }

// executePacket builds a client's COM_STMT_EXECUTE.
func executePacket(ps []param, sendTypes bool) []byte {
	p := []byte{mysql.COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0}
	if len(ps) == 0 {
		return p
	}
	bm := len(p)
	p = append(p, make([]byte, (len(ps)+7)/8)...)
	for i, x := range ps {
		if x.val == nil && !x.long {
			p[bm+i/8] |= 1 << (i % 8)
		}
	}
	if sendTypes {
		p = append(p, 1)
		for _, x := range ps {
			p = append(p, x.typ, 0)
		}
	} else {
		p = append(p, 0)
	}
	for _, x := range ps {
		if !x.long {
			p = append(p, x.val...)
		}
	}
	return p
}

// decodeExecute reads a backend COM_STMT_EXECUTE with m parameters, none
// of them long data.
func decodeExecute(t *testing.T, p []byte, m int) []param {
	t.Helper()
	if m == 0 {
		if len(p) != execHeader {
			t.Fatalf("execute without parameters is %d bytes", len(p))
		}
		return nil
	}
	bm := p[execHeader : execHeader+(m+7)/8]
	rest := p[execHeader+(m+7)/8:]
	if rest[0] != 1 {
		t.Fatalf("new-params-bound flag %d, want 1", rest[0])
	}
	types := rest[1 : 1+2*m]
	rest = rest[1+2*m:]
	out := make([]param, m)
	for j := range out {
		out[j].typ = types[2*j]
		if bm[j/8]&(1<<(j%8)) != 0 {
			continue
		}
		l, err := binaryValueLen(rest, types[2*j])
		if err != nil {
			t.Fatal(err)
		}
		out[j].val, rest = rest[:l], rest[l:]
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes left after the values", len(rest))
	}
	return out
}

func mapFor(t *testing.T, client int, slotParams ...int) *paramMap {
	t.Helper()
	plan := rewriter.Plan{Kind: rewriter.Rewrite, ClientParams: client, Params: client + len(slotParams)}
	for _, sp := range slotParams {
		plan.Slots = append(plan.Slots, rewriter.Slot{Param: sp})
	}
	pm, err := newParamMap(&plan)
	if err != nil {
		t.Fatal(err)
	}
	return pm
}

func TestAppendExecute(t *testing.T) {
	nine := []param{str("a"), null(), i64(3), str("dddd"), null(), str(""), i64(-7), null(), str("i")}
	for _, tc := range []struct {
		name   string
		client []param
		slots  []int // backend parameter index of each generated value
	}{
		{"0 client params, 1 generated", nil, []int{0}},
		{"0 client params, 2 generated", nil, []int{0, 1}},
		{"1 client param, generated first", []param{str("x")}, []int{0}},
		{"1 client param, generated last", []param{str("x")}, []int{1}},
		{"1 NULL client param", []param{null()}, []int{1}},
		{"9 client params, NULLs across the byte boundary", nine, []int{0, 8}},
		{"9 client params, 7 generated", nine, []int{1, 3, 5, 7, 9, 11, 15}},
		{"8 client params become 9", nine[:8], []int{8}},
		{"7 client params become 8", nine[:7], []int{0}},
		{"all NULL, 16 backend", []param{null(), null(), null(), null(), null(), null(), null(), null(), null(), null(), null(), null(), null(), null(), null()}, []int{14}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pm := mapFor(t, len(tc.client), tc.slots...)
			ids := make([]int64, len(tc.slots))
			for i := range ids {
				ids[i] = int64(1000 + i)
			}
			// Expected backend parameters: the client's in order, the IDs at their indexes.
			want := make([]param, pm.backendParams)
			isSlot := map[int]int{}
			for k, j := range tc.slots {
				isSlot[j] = k
			}
			c := 0
			for j := range want {
				if k, ok := isSlot[j]; ok {
					want[j] = i64(ids[k])
					continue
				}
				want[j] = tc.client[c]
				c++
			}
			for round, sendTypes := range []bool{true, false, true} {
				out, _, err := pm.parseAndAppend(nil, executePacket(tc.client, sendTypes), ids, nil)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if !bytes.Equal(out[:execHeader], executePacket(nil, false)) {
					t.Fatalf("header %x", out[:execHeader])
				}
				got := decodeExecute(t, out, pm.backendParams)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("round %d (types sent %v):\n got %v\nwant %v", round, sendTypes, got, want)
				}
			}
		})
	}
}

func TestAppendExecuteLongData(t *testing.T) {
	// INSERT (id, a, b, c) VALUES (LAST_INSERT_ID(?), ?, ?, ?): client 0..2 are backend 1..3.
	pm := mapFor(t, 3, 0)
	client := []param{str("a"), {typ: mysql.MYSQL_TYPE_BLOB, long: true}, i64(5)}
	if j := pm.longData(1); j != 2 {
		t.Fatalf("long data for client parameter 1 goes to backend %d, want 2", j)
	}
	if j := pm.longData(3); j != 4 {
		t.Fatalf("an index beyond the client's (3) maps to %d, want 4 (beyond the backend's)", j)
	}
	out, _, err := pm.parseAndAppend(nil, executePacket(client, true), []int64{99}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Backend: 99, "a", (long data: no value, not NULL), 5.
	want := []byte{mysql.COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1,
		mysql.MYSQL_TYPE_LONGLONG, 0, mysql.MYSQL_TYPE_VAR_STRING, 0, mysql.MYSQL_TYPE_BLOB, 0, mysql.MYSQL_TYPE_LONGLONG, 0,
		99, 0, 0, 0, 0, 0, 0, 0, 1, 'a', 5, 0, 0, 0, 0, 0, 0, 0}
	if !bytes.Equal(out, want) {
		t.Fatalf("\n got %x\nwant %x", out, want)
	}
	// After the execute the long data is gone: the same packet is now short.
	pm.resetLong()
	if _, _, err := pm.parseAndAppend(nil, executePacket(client, true), []int64{99}, nil); err == nil {
		t.Fatal("a packet without parameter 1's value was accepted after the long data was reset")
	}
}

func TestAppendExecuteErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkt  func() []byte
		want string
	}{
		{"types never sent", func() []byte { return executePacket([]param{str("a")}, false) }, "no parameter types"},
		{"short header", func() []byte { return []byte{mysql.COM_STMT_EXECUTE, 7, 0} }, "short header"},
		{"no bitmap", func() []byte { return executePacket(nil, false) }, "NULL bitmap"},
		{"truncated types", func() []byte { return executePacket([]param{str("a")}, true)[:12] }, "parameter types"},
		{"truncated value", func() []byte { p := executePacket([]param{str("abc")}, true); return p[:len(p)-1] }, "malformed"},
		{"trailing bytes", func() []byte { return append(executePacket([]param{str("a")}, true), 0) }, "after the parameter values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pm := mapFor(t, 1, 0)
			_, _, err := pm.parseAndAppend(nil, tc.pkt(), []int64{1}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestNewParamMapRefusesBadNumbering(t *testing.T) {
	for _, plan := range []rewriter.Plan{
		{ClientParams: 1, Params: 3, Slots: []rewriter.Slot{{Param: 0}}},
		{ClientParams: 1, Params: 3, Slots: []rewriter.Slot{{Param: 0}, {Param: 0}}},
		{ClientParams: 1, Params: 2, Slots: []rewriter.Slot{{Param: 2}}},
	} {
		if _, err := newParamMap(&plan); err == nil {
			t.Errorf("%+v accepted", plan)
		}
	}
}

// A steady-state execute rewrite allocates nothing.
func TestAppendExecuteAllocs(t *testing.T) {
	pm := mapFor(t, 2, 0)
	pkt := executePacket([]param{str("name"), i64(4)}, false)
	pm.types = []byte{mysql.MYSQL_TYPE_VAR_STRING, 0, mysql.MYSQL_TYPE_LONGLONG, 0}
	ids := []int64{1}
	buf, offs := make([]byte, 0, 256), make([]int, 0, 8)
	if a := testing.AllocsPerRun(100, func() {
		buf, offs, _ = pm.parseAndAppend(buf[:0], pkt, ids, offs)
	}); a != 0 {
		t.Fatalf("%v allocations per execute", a)
	}
}

// parseAndAppend is parseExecute then appendExecute, as executeRewrite
// runs them.
func (pm *paramMap) parseAndAppend(dst, pkt []byte, ids []int64, offs []int) ([]byte, []int, error) {
	bitmap, values, offs, err := pm.parseExecute(pkt, offs)
	if err != nil {
		return dst, offs, err
	}
	return pm.appendExecute(dst, pkt, bitmap, values, offs, ids), offs, nil
}
