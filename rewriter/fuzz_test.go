package rewriter

import (
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"strconv"
	"strings"
	"testing"
)

const fuzzIDBase = 900000000000

func fuzzIDs(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = fuzzIDBase + int64(i)
	}
	return out
}

// checkRendered asserts what every Rewrite plan must satisfy: the output
// parses (without a RETURNING clause, which the parser cannot read) and
// holds each ID exactly once.
func checkRendered(t *testing.T, sql string, mode Mode, p Plan) string {
	t.Helper()
	n := 0
	for _, tc := range p.Tags {
		n += tc.N
	}
	if n != len(p.Slots) || n == 0 {
		t.Fatalf("%q: %d slots, tags %+v", sql, len(p.Slots), p.Tags)
	}
	out := string(p.mustRender(t, nil, sql, fuzzIDs(n)))
	if l := p.renderedLen(sql, fuzzIDs(n)); l != len(out) {
		t.Fatalf("%q: renderedLen %d, rendered %d bytes", sql, l, len(out))
	}
	// Parse the statements that were spliced: the others were never read.
	in, outStmts := statements(sql, mode), statements(out, mode)
	if len(in) != len(outStmts) {
		t.Fatalf("%q rendered as %q: %d statements became %d", sql, out, len(in), len(outStmts))
	}
	for i, r := range in {
		spliced := false
		for _, sl := range p.Slots {
			spliced = spliced || sl.Start >= r[0] && sl.Start <= r[1]
		}
		if !spliced {
			continue
		}
		if err := parseReturning(t, out[outStmts[i][0]:outStmts[i][1]], mode); err != nil {
			t.Fatalf("%q rendered as %q, which does not parse: %v", sql, out, err)
		}
	}
	if !p.prepared {
		for i := range n {
			id := strconv.FormatInt(fuzzIDBase+int64(i), 10)
			if c := strings.Count(out, id); c != 1 {
				t.Fatalf("%q rendered as %q: ID %s appears %d times", sql, out, id, c)
			}
		}
	}
	return out
}

// statements splits sql at ';' as the planner does.
func statements(sql string, mode Mode) [][2]int {
	var out [][2]int
	l := lexer{sql: sql, mode: mode}
	start := 0
	for {
		t := l.next()
		if t.kind == tEOF || l.isPunct(t, ';') {
			out = append(out, [2]int{start, t.start})
			start = t.end
			if t.kind == tEOF {
				return out
			}
		}
	}
}

// FuzzSequence: the recogniser and splicer never panic, and every spliced
// statement parses.
func FuzzSequence(f *testing.F) {
	for _, s := range []string{
		"SELECT NEXTVAL('a')",
		"select nextval(a) x, next value for db.b, lastval(`c`) from dual;",
		"SELECT NEXTVAL('a'), 1",
		"INSERT INTO t VALUES (NEXTVAL('a'), NEXT VALUE FOR b)",
		"UPDATE t SET a = NEXTVAL(/*x*/'a' -- y\n) WHERE b = 'NEXTVAL(c)'",
		"SET @a = NEXTVAL(\"a\")",
		"SELECT NEXTVAL('a'); SELECT NEXTVAL(b) AS `x`",
		"INSERT INTO t SET a = NEXTVAL('a\\'b')",
		"SELECT NEXTVAL('a') FROM t",
		"SELECT /*!50000 NEXTVAL('a') */",
		"SELECT NEXTVAL('a' '')",
		"SELECT NEXTVAL(a.b.c)",
		"SELECT NEXT VALUE FOR `a`.`b`",
		"INSERT INTO t VALUES (NEXTVAL('a')) RETURNING id",
		"INSERT INTO orders (name) VALUES ('a'), (NEXTVAL(b)) RETURNING id, name",
		"REPLACE orders SET name = NEXT VALUE FOR b /*! RETURNING id */",
		"INSERT INTO orders (id) VALUES (NULL) RETURNING NEXTVAL('a')",
		"SELECT NEXTVAL('a', 1000), NEXTVAL(b, ?) x",
		"SELECT LEAFPROXY_DECODE('a', '-12') FROM DUAL",
		"SELECT NEXTVAL('a') + 1, (NEXT VALUE FOR b) ''",
		"SELECT CONCAT(NEXTVAL('a'), ',') AS ``, NEXTVAL('a') = ``",
	} {
		for m := range uint8(4) {
			f.Add(s, m)
		}
	}
	f.Fuzz(func(t *testing.T, sql string, modeBits uint8) {
		if strings.Contains(sql, "90000000") {
			return
		}
		mode := Mode{ANSIQuotes: modeBits&1 != 0, NoBackslashEscapes: modeBits&2 != 0, NoAutoValueOnZero: modeBits&4 != 0}
		env := testEnv(t, mode)
		for _, prepared := range []bool{false, true} {
			if _, problem := compareFast(sql, env, prepared, true); problem != "" {
				t.Fatalf("%q: fast path: %s", sql, problem)
			}
			p, err := plan(sql, env, prepared)
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("%q: error %T %v", sql, err, err)
				}
				continue
			}
			switch p.Kind {
			case Rewrite:
				if _, _, errP := planWith(sql, sqltext.ClassifyString(sql), env, prepared, false); errP != nil {
					// The fast path planned text the TiDB parser cannot
					// read (compareFast checked it): its output does not
					// parse either.
					continue
				}
				checkRendered(t, sql, mode, p)
			case Sequence:
				if len(p.Calls) == 0 {
					t.Fatalf("%q: Sequence plan without calls", sql)
				}
			}
		}
	})
}

// sqlString quotes s as a string literal under mode.
func sqlString(s string, mode Mode) string {
	s = strings.ReplaceAll(s, "'", "''")
	if !mode.NoBackslashEscapes {
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + s + "'"
}

// FuzzInsert builds INSERTs of every shape from the fuzzer's choices and
// checks the splicer: no panic, output parses, exactly the expected number
// of IDs, and the other values unchanged.
func FuzzInsert(f *testing.F) {
	f.Add(uint8(0), []byte{0, 1, 2, 3, 4, 5, 6, 7}, "it's", "c", uint8(0))
	f.Add(uint8(1), []byte{0, 0}, `a\b`, "*/", uint8(2))
	f.Add(uint8(2), []byte{2, 3, 4}, "😀", "x", uint8(4))
	f.Add(uint8(3), []byte{7}, "", "", uint8(8))
	f.Add(uint8(4), []byte{1, 6}, "); DROP", "--", uint8(9))
	f.Add(uint8(64+32), []byte{0, 6, 7}, "returning", "RETURNING", uint8(8))
	f.Add(uint8(64+16+3), []byte{2}, ") RETURNING (", "x", uint8(1))
	f.Fuzz(func(t *testing.T, shape uint8, kinds []byte, str, comment string, modeBits uint8) {
		if len(kinds) == 0 || len(kinds) > 64 || strings.Contains(str, "90000000") || strings.Contains(comment, "90000000") {
			return
		}
		mode := Mode{ANSIQuotes: modeBits&1 != 0, NoBackslashEscapes: modeBits&2 != 0, NoAutoValueOnZero: modeBits&4 != 0}
		prepared := modeBits&8 != 0
		if prepared && strings.ContainsRune(str+comment, '?') {
			return // checkParams counts every '?' as a marker, also inside a string or comment
		}
		lit := sqlString(str, mode)
		for strings.Contains(comment, "*/") || strings.Contains(comment, "/*") { // "**//" -> "*/"
			comment = strings.ReplaceAll(strings.ReplaceAll(comment, "*/", ""), "/*", "")
		}
		cmt := "/* " + comment + "*/"
		want, zeroDefaults := 0, 0
		key := func(k byte) string {
			switch k % 8 {
			case 0:
				want++
				return "NULL"
			case 1:
				// MariaDB stores 0 for DEFAULT under NO_AUTO_VALUE_ON_ZERO
				// (an AUTO_INCREMENT column's default is 0): no ID.
				if !mode.NoAutoValueOnZero {
					want++
				} else {
					zeroDefaults++ // rewritten to 0, as MariaDB stores it
				}
				return "DEFAULT"
			case 2:
				if !mode.NoAutoValueOnZero {
					want++
				}
				return "0"
			case 3:
				if !mode.NoAutoValueOnZero {
					want++
				}
				return "'0'"
			case 4:
				return "7"
			case 5:
				return "-3"
			case 6:
				want++
				return "NEXTVAL('x')"
			}
			if prepared {
				want++
				return "?"
			}
			want++
			return "null"
		}
		var sb strings.Builder
		verb := "INSERT INTO"
		if shape&16 != 0 {
			verb = "REPLACE"
		}
		switch shape % 5 {
		case 0: // key in the column list
			sb.WriteString(verb + " orders (id, name) VALUES ")
			for i, k := range kinds {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString("(" + key(k) + ", " + cmt + lit + ")")
			}
		case 1: // key absent
			sb.WriteString(verb + " orders " + cmt + " (name) VALUES ")
			for i := range kinds {
				if i > 0 {
					sb.WriteString(",")
				}
				sb.WriteString("(" + cmt + lit + ")")
				want++
			}
		case 2: // no column list
			sb.WriteString(verb + " orders VALUES ")
			for i, k := range kinds {
				if i > 0 {
					sb.WriteString(",")
				}
				sb.WriteString("(" + key(k) + "," + cmt + lit + ", NULL)")
			}
		case 3: // SET with the key
			sb.WriteString(verb + " orders SET name = " + cmt + lit + ", id = " + key(kinds[0]))
		case 4: // SET without the key, and a second statement
			sb.WriteString(verb + " orders SET name = " + cmt + lit + "; " + verb + " orders (name) VALUES (" + cmt + lit + ")")
			want += 2
		}
		if shape&32 != 0 && shape%5 != 4 && shape&16 == 0 {
			sb.WriteString(" ON DUPLICATE KEY UPDATE name = " + cmt + lit)
		}
		if shape&64 != 0 && shape%5 != 4 {
			sb.WriteString(" RETURNING id, " + cmt + lit + " AS name")
		}
		sql := sb.String()
		p, err := plan(sql, testEnv(t, mode), prepared)
		if err != nil {
			t.Fatalf("%q: %v", sql, err)
		}
		if _, problem := compareFast(sql, testEnv(t, mode), prepared, false); problem != "" {
			t.Fatalf("%q: fast path: %s", sql, problem)
		}
		if want == 0 {
			if zeroDefaults > 0 && p.Kind == Rewrite && len(p.Slots) == 0 {
				return
			}
			if p.Kind != PassThrough {
				t.Fatalf("%q: %v plan, want PassThrough", sql, p.Kind)
			}
			return
		}
		if p.Kind != Rewrite || len(p.Slots) != want {
			t.Fatalf("%q: %v plan with %d slots, want %d", sql, p.Kind, len(p.Slots), want)
		}
		out := checkRendered(t, sql, mode, p)
		if strings.Count(out, cmt+lit) != strings.Count(sql, cmt+lit) {
			t.Fatalf("%q rendered as %q: values changed", sql, out)
		}
		if prepared {
			checkParams(t, sql, mode, p)
		} else if strings.Count(out, "?") != strings.Count(sql, "?") {
			t.Fatalf("%q rendered as %q: parameter count changed", sql, out)
		}
		if c := strings.Count(out, wrapOpen); c < 1 || c > 2 {
			t.Fatalf("%q rendered as %q: %d LAST_INSERT_ID", sql, out, c)
		}
	})
}
