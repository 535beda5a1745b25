package loadfile

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// seqIDs hands out 1001, 1002, ...; fail makes the n-th call fail.
type seqIDs struct {
	next, calls, failAt int
}

func (s *seqIDs) Next() (int64, error) {
	s.calls++
	if s.failAt > 0 && s.calls == s.failAt {
		return 0, errors.New("store down")
	}
	if s.next == 0 {
		s.next = 1001
	}
	s.next++
	return int64(s.next - 1), nil
}

// tsv is the server's default format with n fields.
func tsv(n int) Format {
	return Format{FieldTerm: "\t", Enclosed: -1, Escaped: '\\', LineTerm: "\n", Fields: n}
}

// transformAll runs the transformer over data cut into pieces at cuts.
func transformAll(t testing.TB, f Format, data []byte, cuts []int) ([]byte, int64) {
	t.Helper()
	tr := New(f, &seqIDs{})
	var out []byte
	prev := 0
	var err error
	for _, c := range append(cuts, len(data)) {
		if out, err = tr.Transform(out, data[prev:c]); err != nil {
			t.Fatal(err)
		}
		prev = c
	}
	if out, err = tr.Finish(out); err != nil {
		t.Fatal(err)
	}
	return out, tr.Rows()
}

// withKeys is data with "<id><ft>" at each row of marks (ids from 1001)
// and "0<ft>" at each skipped record, and the number of rows.
func withKeys(f Format, data []byte, marks []refMark) ([]byte, int) {
	var out []byte
	prev, rows := 0, 0
	for _, m := range marks {
		out = append(out, data[prev:m.off]...)
		if m.skip {
			out = append(out, "0"+f.FieldTerm...)
		} else {
			out = append(out, strconv.Itoa(1001+rows)+f.FieldTerm...)
			rows++
		}
		prev = m.off
	}
	return append(out, data[prev:]...), rows
}

func TestTransformTable(t *testing.T) {
	csv := Format{FieldTerm: ",", Enclosed: '"', Escaped: '\\', LineTerm: "\n", Fields: 2}
	tests := []struct {
		name string
		f    Format
		in   string
		want string
	}{
		{"three lines", tsv(2), "a\tb\nc\td\ne\tf\n", "1001\ta\tb\n1002\tc\td\n1003\te\tf\n"},
		{"last line without terminator", tsv(2), "a\tb\nc\td", "1001\ta\tb\n1002\tc\td"},
		{"empty file", tsv(2), "", ""},
		{"an empty line is a row", tsv(2), "a\n\nb\n", "1001\ta\n1002\t\n1003\tb\n"},
		{"no row after the last terminator", tsv(1), "a\n", "1001\ta\n"},
		{"fewer and more fields", tsv(2), "a\nb\tc\td\te\nf\tg\n", "1001\ta\n1002\tb\tc\td\te\n1003\tf\tg\n"},
		{"IGNORE 1 LINES", func() Format { f := tsv(2); f.Ignore = 1; return f }(), "h1\th2\na\tb\n", "h1\th2\n1001\ta\tb\n"},
		{"IGNORE more lines than there are", func() Format { f := tsv(2); f.Ignore = 5; return f }(), "h1\th2\na\tb\n", "h1\th2\na\tb\n"},
		{"escaped line terminator is data", tsv(2), "a\\\nb\tc\nd\te\n", "1001\ta\\\nb\tc\n1002\td\te\n"},
		{"enclosed field holds a line terminator", csv, "\"a\nb\",c\nd,e\n", "1001,\"a\nb\",c\n1002,d,e\n"},
		{"doubled enclosure", csv, "\"a\"\"\n\",c\nd,e\n", "1001,\"a\"\"\n\",c\n1002,d,e\n"},
		{"enclosure not followed by a terminator is data", csv, "\"a\"x\n,c\nd,e\n", "1001,\"a\"x\n,c\nd,e\n"},
		{"surplus fields are skipped raw: an enclosed line terminator there ends the line", func() Format { f := csv; f.Fields = 1; return f }(),
			"a,\"b\nc\"\nd\n", "1001,a,\"b\n1002,c\"\n1003,d\n"},
		{"CRLF", Format{FieldTerm: ",", Enclosed: -1, Escaped: '\\', LineTerm: "\r\n", Fields: 2}, "a,b\r\nc\rd,e\r\n", "1001,a,b\r\n1002,c\rd,e\r\n"},
		{"LINES STARTING BY", Format{FieldTerm: ",", Enclosed: -1, Escaped: -1, LineStart: "xx", LineTerm: "\n", Fields: 2},
			"xxa,b\nskip\nzzxxc,d\nxx", "xx1001,a,b\nskip\nzzxx1002,c,d\nxx"},
		{"no line terminator: records are Fields fields", Format{FieldTerm: ",", Enclosed: -1, Escaped: -1, LineTerm: "", Fields: 2},
			"a,b,c,d,e", "1001,a,b,1002,c,d,1003,e"},
		{"line terminator = field terminator: the same", Format{FieldTerm: "|", Enclosed: -1, Escaped: -1, LineTerm: "|", Fields: 2, Ignore: 1},
			"a|b|c|d", "1001|a|b|1002|c|d"},
		{"IGNORE without line terminator skips records (which get a dummy key)", Format{FieldTerm: ",", Enclosed: -1, Escaped: -1, LineTerm: "", Fields: 2, Ignore: 1},
			"a,b,c,d", "0,a,b,1001,c,d"},
		{"utf8 field: a byte that does not continue a character is pushed back", func() Format { f := tsv(1); f.Charset = UTF8MB4; return f }(),
			"a\xe2\nx\n\xe2\x82\tb\n", "1001\ta\xe2\n1002\tx\n1003\t\xe2\x82\tb\n"},
		{"utf8 field: continuation bytes are taken whole", func() Format { f := tsv(2); f.Charset = UTF8MB4; return f }(),
			"\xf0\x9f\x98\x80\tb\n", "1001\t\xf0\x9f\x98\x80\tb\n"},
		{"utf8 skipped rest of a line: a lead takes its length in bytes", func() Format { f := tsv(1); f.Charset = UTF8MB4; return f }(),
			"a\t\xe2\n\nb\nc\n", "1001\ta\t\xe2\n\nb\n1002\tc\n"},
		{"utf8mb3 has no 4-byte characters", func() Format { f := tsv(1); f.Charset = UTF8MB3; return f }(),
			"a\t\xf0\x90\nb\nc\n", "1001\ta\t\xf0\x90\n1002\tb\n1003\tc\n"},
		{"latin1: high bytes are bytes", tsv(1), "a\xe2\nx\n", "1001\ta\xe2\n1002\tx\n"},
		{"ESCAPED BY = ENCLOSED BY", Format{FieldTerm: ",", Enclosed: '"', Escaped: '"', LineTerm: "\n", Fields: 2},
			"\"a\"\"b\",c\n\"d\"\n", "1001,\"a\"\"b\",c\n1002,\"d\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if why := tt.f.Check(); why != "" {
				t.Fatalf("format refused: %s", why)
			}
			if ref, _ := withKeys(tt.f, []byte(tt.in), refRows(tt.f, []byte(tt.in))); string(ref) != tt.want {
				t.Errorf("the reference model says %q, the table %q", ref, tt.want)
			}
			for cut := 0; cut <= len(tt.in); cut++ {
				got, _ := transformAll(t, tt.f, []byte(tt.in), []int{cut})
				if string(got) != tt.want {
					t.Fatalf("cut at %d:\n got %q\nwant %q", cut, got, tt.want)
				}
			}
			var cuts []int // every byte its own piece
			for i := 1; i < len(tt.in); i++ {
				cuts = append(cuts, i)
			}
			if got, _ := transformAll(t, tt.f, []byte(tt.in), cuts); string(got) != tt.want {
				t.Fatalf("byte by byte:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	ok := tsv(1)
	for _, tt := range []struct {
		f    func(*Format)
		want string // part of the reason; "" = accepted
	}{
		{func(*Format) {}, ""},
		{func(f *Format) { f.FieldTerm = "" }, "fixed-width"},
		{func(f *Format) { f.FieldTerm, f.Enclosed = "", '"' }, "no field separator"},
		{func(f *Format) { f.FieldTerm = "1" }, "digit"},
		{func(f *Format) { f.LineTerm = "\n9" }, "digit"},
		{func(f *Format) { f.Escaped = '7' }, "digit"},
		{func(f *Format) { f.LineStart = "R1:" }, ""},
		{func(f *Format) { f.FieldTerm = "é" }, "non-ASCII"},
		{func(f *Format) { f.FieldTerm, f.LineTerm = "\n,", "\n" }, "same byte"},
		{func(f *Format) { f.FieldTerm, f.LineTerm = "|", "|" }, ""},
		{func(f *Format) { f.FieldTerm = "\\t" }, "escape"},
		{func(f *Format) { f.Fields = 0 }, "no fields"},
	} {
		f := ok
		tt.f(&f)
		got := f.Check()
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("%+v: Check() = %q, want %q", f, got, tt.want)
		}
	}
}

// An ID source that fails mid-file: what was sent ends with a record keyed
// "0", nothing after it, and the error says why.
func TestTransformIDFailure(t *testing.T) {
	tr := New(tsv(2), &seqIDs{failAt: 2})
	out, err := tr.Transform(nil, []byte("a\tb\nc\td\ne\tf\n"))
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("error %v, want *Error", err)
	}
	if string(out) != "1001\ta\tb\n0\t" {
		t.Errorf("sent %q", out)
	}
	if out2, err := tr.Transform(out, []byte("more\n")); err == nil || len(out2) != len(out) {
		t.Errorf("after the failure: %q, %v", out2, err)
	}
}

// Memory stays bounded however long a line or the file is: only a
// terminator's worth of bytes is held between pieces.
func TestTransformBoundedCarry(t *testing.T) {
	f := Format{FieldTerm: "<>", Enclosed: '"', Escaped: '\\', LineTerm: "\r\n", LineStart: "::", Fields: 3, Charset: UTF8MB4}
	tr := New(f, &seqIDs{})
	piece := bytes.Repeat([]byte("::ab<>\"c\r\nd\"<>é\xe2\x82\r\n"), 1000)
	var out []byte
	for i := 0; i < 200; i++ {
		var err error
		if out, err = tr.Transform(out[:0], piece[:len(piece)-i%7]); err != nil {
			t.Fatal(err)
		}
		if len(tr.carry) > 8 || cap(tr.work) > 1<<16 {
			t.Fatalf("holds %d bytes back (work buffer %d)", len(tr.carry), cap(tr.work))
		}
	}
}

// randomFormat draws formats from the separators that stress the reader.
func randomFormat(r *rand.Rand) Format {
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	f := Format{
		FieldTerm: pick(",", "\t", "ab", ",,", "\"", "||"),
		LineTerm:  pick("\n", "\r\n", "", "nn", ",", "\n\n"),
		LineStart: pick("", "", "x", "xy"),
		Enclosed:  []int{-1, '"', '\''}[r.IntN(3)],
		Escaped:   []int{-1, '\\', '"'}[r.IntN(3)],
		Ignore:    uint64(r.IntN(3)),
		Fields:    1 + r.IntN(3),
		Charset:   Charset(r.IntN(3)),
	}
	return f
}

// randomData draws bytes the reader treats specially, and some that are not.
func randomData(r *rand.Rand, n int) []byte {
	alphabet := []string{"a", "b", ",", "\t", "\n", "\r", "\"", "'", "\\", "x", "y", "n", "|",
		"\xc3", "\xa9", "\xe2", "\x82", "\xf0", "\x9f", "\x80", "\xff", "é"}
	var b []byte
	for len(b) < n {
		b = append(b, alphabet[r.IntN(len(alphabet))]...)
	}
	return b
}

// The streaming transformer agrees with the reference port of the
// server's reader on random formats, files and cuts into pieces.
func TestTransformMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tested := 0
	for i := 0; i < 30000; i++ {
		f := randomFormat(r)
		if f.Check() != "" {
			continue
		}
		tested++
		data := randomData(r, r.IntN(60))
		checkAgainstReference(t, f, data, r)
	}
	if tested < 5000 {
		t.Fatalf("only %d formats passed Check", tested)
	}
}

func checkAgainstReference(t *testing.T, f Format, data []byte, r *rand.Rand) {
	t.Helper()
	want, rows := withKeys(f, data, refRows(f, data))
	var cuts []int
	for p := 0; p < len(data); p += 1 + r.IntN(6) {
		if p > 0 {
			cuts = append(cuts, p)
		}
	}
	got, n := transformAll(t, f, data, cuts)
	if !bytes.Equal(got, want) || n != int64(rows) {
		t.Fatalf("format %s, file %q, cuts %v:\n got %q (%d rows)\nwant %q (%d rows)", describe(f), data, cuts, got, n, want, rows)
	}
}

func describe(f Format) string {
	return fmt.Sprintf("{ft %q lt %q ls %q enc %q esc %q ignore %d fields %d charset %d}",
		f.FieldTerm, f.LineTerm, f.LineStart, byteString(f.Enclosed), byteString(f.Escaped), f.Ignore, f.Fields, f.Charset)
}

func FuzzTransform(f *testing.F) {
	f.Add(uint64(1), []byte("a\tb\n\"c\nd\"\te\n"))
	f.Add(uint64(7), []byte("xy\"a\",b\r\n\xe2\n\\\n"))
	f.Fuzz(func(t *testing.T, seed uint64, data []byte) {
		r := rand.New(rand.NewPCG(seed, 3))
		fm := randomFormat(r)
		if fm.Check() != "" {
			return
		}
		checkAgainstReference(t, fm, data, r)
	})
}
