package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// blockSource is an IDSource with blocks and decoding: segment tags count
// from 1001 ("t" has max_id 5000 in its store), "snow" is a snowflake tag
// whose blocks hold at most 4096 IDs and whose IDs decode as
// ms<<22 | worker<<12 | seq from 2020-01-01.
type blockSource struct {
	counter
	blocks []int64 // sizes asked for
}

var snowEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

func (b *blockSource) Generator(tag string) string {
	if tag == "snow" {
		return "snowflake"
	}
	return "segment"
}

func (b *blockSource) Block(_ context.Context, tag string, n int64) (first, run, stride int64, err error) {
	b.blocks = append(b.blocks, n)
	first = b.next + 1
	b.next += n
	if tag == "snow" {
		return first, 4096, 1 << 22, nil
	}
	return first, 0, 0, nil
}

func (b *blockSource) BlockLimit(tag string) (int64, string) {
	if tag == "snow" {
		return 4096, "one tick of 2^12"
	}
	return 0, ""
}

func (b *blockSource) DecodeSnowflake(tag string, id int64) (time.Time, int64, int64, error) {
	return snowEpoch.Add(time.Duration(id>>22) * time.Millisecond), id >> 12 & 1023, id & 4095, nil
}

type unknownSeq struct{ tag string }

func (e unknownSeq) Error() string    { return "Unknown SEQUENCE: '" + e.tag + "'" }
func (e unknownSeq) Code() uint16     { return 4091 }
func (e unknownSeq) SQLState() string { return "42S02" }

func (b *blockSource) MaxID(_ context.Context, tag string) (int64, error) {
	if tag == "t" {
		return 5000, nil
	}
	return 0, unknownSeq{tag}
}

func errCode(err error) uint16 {
	var se proxy.SQLError
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

func lastRow(t *testing.T, s *fakeSession) []int64 {
	t.Helper()
	if len(s.wrote) == 0 {
		t.Fatal("nothing answered")
	}
	rows := s.wrote[len(s.wrote)-1]
	var out []int64
	for _, v := range rows[0] {
		if v == nil {
			out = append(out, -1)
			continue
		}
		out = append(out, *v)
	}
	return out
}

// TestBlockThroughFakeSession: NEXTVAL('t', n) answers the first of n
// consecutive IDs and LASTVAL is the last; a snowflake block above one
// tick is refused (1210) before anything is reserved.
func TestBlockThroughFakeSession(t *testing.T) {
	ids := &blockSource{counter: counter{next: 1000}}
	e := New(ids, nil)
	s := &fakeSession{db: "shop"}
	ctx := context.Background()
	if _, err := e.queryText(ctx, s, []byte("SELECT NEXTVAL('t', 100) AS first, LASTVAL('t'), NEXTVAL('t')")); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(lastRow(t, s)); got != "[1001 1100 1101]" {
		t.Fatalf("row %s, want [1001 1100 1101]", got)
	}
	if _, err := e.queryText(ctx, s, []byte("SELECT NEXTVAL('snow', 4096), LASTVAL('snow')")); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(lastRow(t, s)); got != "[1102 5197]" {
		t.Fatalf("snowflake block row %s, want [1102 5197]", got)
	}
	_, err := e.queryText(ctx, s, []byte("SELECT NEXTVAL('snow', 4097)"))
	if errCode(err) != 1210 || !strings.Contains(err.Error(), "at most 4096 consecutive IDs at once (one tick of 2^12)") {
		t.Fatalf("snowflake block of 4097: %v", err)
	}
	if _, err := e.queryText(ctx, s, []byte("SELECT NEXTVAL('t', 1000001)")); errCode(err) != 1210 {
		t.Fatalf("block of 1000001: %v", err)
	}
	if fmt.Sprint(ids.blocks) != "[100 4096]" {
		t.Fatalf("blocks reserved %v, want [100 4096]: a refused block reserved IDs", ids.blocks)
	}
}

// execPacket builds a COM_STMT_EXECUTE of statement id with parameters
// of the given types and values (nil: NULL); bound=false leaves the types
// out (a re-execute with the same types).
func execPacket(id uint32, bound bool, types []byte, vals [][]byte) []byte {
	p := []byte{mysql.COM_STMT_EXECUTE}
	p = binary.LittleEndian.AppendUint32(p, id)
	p = append(p, 0, 1, 0, 0, 0)
	bitmap := make([]byte, (len(vals)+7)/8)
	for i, v := range vals {
		if v == nil {
			bitmap[i/8] |= 1 << (i % 8)
		}
	}
	p = append(p, bitmap...)
	if bound {
		p = append(p, 1)
		for _, t := range types {
			p = append(p, t, 0)
		}
	} else {
		p = append(p, 0)
	}
	for _, v := range vals {
		p = append(p, v...)
	}
	return p
}

func le64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
func lenStr(s string) []byte {
	return append([]byte{byte(len(s))}, s...)
}

// TestPreparedBlockArgument: NEXTVAL('t', ?) is prepared on the backend
// with the client's ? (so the parameter counts agree) and each EXECUTE
// reads n from the packet: integers, integer strings, types sent once;
// NULL, fractions and sizes out of range are 1210.
func TestPreparedBlockArgument(t *testing.T) {
	ids := &blockSource{counter: counter{next: 1000}}
	e := New(ids, nil)
	s := &fakeSession{db: "shop"}
	ctx := context.Background()
	if handled, err := e.prepareText(ctx, s, []byte("SELECT NEXTVAL('t', ?), LASTVAL('t')")); err != nil || !handled {
		t.Fatalf("prepare: %v %v", handled, err)
	}
	if want := "SELECT CAST(0*? AS SIGNED) AS `NEXTVAL('t', ?)`, CAST(0 AS SIGNED) AS `LASTVAL('t')`"; len(s.prepared) != 1 || s.prepared[0] != want {
		t.Fatalf("backend statement %q, want %q", s.prepared, want)
	}
	run := func(pkt []byte) ([]int64, error) {
		if _, err := e.execute(ctx, s, 1, pkt); err != nil {
			return nil, err
		}
		return lastRow(t, s), nil
	}
	for _, tc := range []struct {
		name  string
		pkt   []byte
		first int64
		n     int64
	}{
		{"LONGLONG", execPacket(1, true, []byte{mysql.MYSQL_TYPE_LONGLONG}, [][]byte{le64(50)}), 1001, 50},
		{"types not resent", execPacket(1, false, nil, [][]byte{le64(3)}), 1051, 3},
		{"string", execPacket(1, true, []byte{mysql.MYSQL_TYPE_VAR_STRING}, [][]byte{lenStr("7")}), 1054, 7},
		{"TINY", execPacket(1, true, []byte{mysql.MYSQL_TYPE_TINY}, [][]byte{{2}}), 1061, 2},
		{"DOUBLE 4.0", execPacket(1, true, []byte{mysql.MYSQL_TYPE_DOUBLE}, [][]byte{binary.LittleEndian.AppendUint64(nil, math.Float64bits(4))}), 1063, 4},
	} {
		row, err := run(tc.pkt)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if row[0] != tc.first || row[1] != tc.first+tc.n-1 {
			t.Fatalf("%s: row %v, want [%d %d]", tc.name, row, tc.first, tc.first+tc.n-1)
		}
	}
	for _, tc := range []struct {
		name string
		pkt  []byte
		say  string
	}{
		{"NULL", execPacket(1, true, []byte{mysql.MYSQL_TYPE_LONGLONG}, [][]byte{nil}), "parameter 1 is NULL"},
		{"0", execPacket(1, true, []byte{mysql.MYSQL_TYPE_LONGLONG}, [][]byte{le64(0)}), "the size must be 1 to 1000000"},
		{"too large", execPacket(1, true, []byte{mysql.MYSQL_TYPE_LONGLONG}, [][]byte{le64(1_000_001)}), "a block of 1000001 IDs"},
		{"fraction", execPacket(1, true, []byte{mysql.MYSQL_TYPE_DOUBLE}, [][]byte{binary.LittleEndian.AppendUint64(nil, math.Float64bits(2.5))}), "not an integer"},
		{"text", execPacket(1, true, []byte{mysql.MYSQL_TYPE_VAR_STRING}, [][]byte{lenStr("ten")}), "not an integer"},
	} {
		if _, err := run(tc.pkt); errCode(err) != 1210 || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s: %v, want 1210 saying %q", tc.name, err, tc.say)
		}
	}
	if _, err := run([]byte{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0}); err == nil {
		t.Error("an execute without its parameter: no error")
	}
	// Long data for the block size: refused, not read as a missing value.
	e.sendLongData(s, 1, []byte{mysql.COM_STMT_SEND_LONG_DATA, 1, 0, 0, 0, 0, 0, '5'})
	if _, err := run(execPacket(1, true, []byte{mysql.MYSQL_TYPE_VAR_STRING}, [][]byte{{}})); errCode(err) != 1210 || !strings.Contains(err.Error(), "long data") {
		t.Errorf("long data: %v", err)
	}
	if fmt.Sprint(ids.blocks) != "[50 3 7 2 4]" {
		t.Fatalf("blocks reserved %v: a refused execute reserved IDs", ids.blocks)
	}
}

// TestDecodeThroughFakeSession: LEAFPROXY_DECODE's row, text and prepared
// (the id bound at EXECUTE), for a snowflake and a segment tag; an
// unknown tag is the ID source's 4091.
func TestDecodeThroughFakeSession(t *testing.T) {
	ids := &blockSource{counter: counter{next: 1000}}
	e := New(ids, nil)
	s := &fakeSession{db: "shop"}
	ctx := context.Background()
	row := func() string {
		t.Helper()
		if len(s.typed) == 0 {
			t.Fatal("no typed answer")
		}
		var out []string
		for i, v := range s.typed[len(s.typed)-1][0] {
			c := s.cols[len(s.cols)-1][i]
			switch {
			case v.IsNull():
				out = append(out, c.Name+"=NULL")
			case c.Type == wire.TypeVarchar:
				out = append(out, c.Name+"="+v.String())
			case c.Type == wire.TypeDatetime3:
				out = append(out, c.Name+"="+v.Time().Format("2006-01-02 15:04:05.000"))
			default:
				out = append(out, fmt.Sprintf("%s=%d", c.Name, v.Int()))
			}
		}
		return strings.Join(out, " ")
	}
	id := int64(1500)<<22 | 7<<12 | 42
	for _, tc := range []struct{ sql, want string }{
		{fmt.Sprintf("SELECT LEAFPROXY_DECODE('snow', %d)", id), fmt.Sprintf("tag=snow generator=snowflake id=%d created_at=2020-01-01 00:00:01.500 worker_id=7 sequence=42 handed_out=NULL max_id=NULL", id)},
		{"SELECT LEAFPROXY_DECODE('t', 4999)", "tag=t generator=segment id=4999 created_at=NULL worker_id=NULL sequence=NULL handed_out=1 max_id=5000"},
		{"SELECT LEAFPROXY_DECODE(t, '5000')", "tag=t generator=segment id=5000 created_at=NULL worker_id=NULL sequence=NULL handed_out=0 max_id=5000"},
	} {
		if handled, err := e.queryText(ctx, s, []byte(tc.sql)); err != nil || !handled {
			t.Fatalf("%s: %v %v", tc.sql, handled, err)
		}
		if got := row(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
	for _, q := range []string{"SELECT LEAFPROXY_DECODE('t', -1)", "SELECT LEAFPROXY_DECODE('t', 0)"} {
		if _, err := e.queryText(ctx, s, []byte(q)); errCode(err) != 1210 || !strings.Contains(err.Error(), "is not an ID of sequence 't': its IDs start at 1") {
			t.Errorf("%s: %v, want 1210", q, err)
		}
	}
	if _, err := e.queryText(ctx, s, []byte("SELECT LEAFPROXY_DECODE('nope', 1)")); errCode(err) != 4091 {
		t.Errorf("unknown tag: %v, want 4091", err)
	}
	if _, err := e.prepareText(ctx, s, []byte("SELECT LEAFPROXY_DECODE('t', ?)")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.prepared[0], "CAST(0*? AS SIGNED) AS `id`, CAST(NULL AS DATETIME(3)) AS `created_at`") || strings.Count(s.prepared[0], "?") != 1 {
		t.Fatalf("backend statement %q", s.prepared[0])
	}
	if _, err := e.execute(ctx, s, 1, execPacket(1, true, []byte{mysql.MYSQL_TYPE_LONGLONG}, [][]byte{le64(12)})); err != nil {
		t.Fatal(err)
	}
	if got, want := row(), "tag=t generator=segment id=12 created_at=NULL worker_id=NULL sequence=NULL handed_out=1 max_id=5000"; got != want {
		t.Errorf("prepared decode:\n got %s\nwant %s", got, want)
	}
	if _, err := e.execute(ctx, s, 1, execPacket(1, true, []byte{mysql.MYSQL_TYPE_VAR_STRING}, [][]byte{lenStr("x")})); errCode(err) != 1210 ||
		!strings.Contains(err.Error(), "Incorrect arguments to LEAFPROXY_DECODE: parameter 1") {
		t.Errorf("prepared decode of a non-integer: %v", err)
	}
}
