package admin

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

type kind int

const (
	showSequences kind = iota + 1
	showSessions
	showTables
	createSequence
	alterSequence
	dropSequence
)

// stmt is a parsed admin statement; err says what is wrong with a statement
// that is clearly meant for the proxy (SHOW/CREATE/ALTER/DROP LEAFPROXY
// ...): a syntax error (1064), or with badArg a value out of range (1210).
type stmt struct {
	kind        kind
	tag         string
	step        int64
	ifNotExists bool
	ifExists    bool
	// CREATE ... SNOWFLAKE: layout names a layout (default, js_safe), or
	// hasBits gives bits (time, worker, sequence); epoch is RFC 3339.
	snowflake bool
	layout    string
	bits      [3]int
	hasBits   bool
	epoch     string
	// filter: SHOW LEAFPROXY SEQUENCES LIKE/WHERE as a WHERE expression
	// over its columns (show.go).
	filter string
	start  int64 // CREATE ... START WITH: the segment tag's first ID (0: 1, or above its tables' keys)
	// maxValue: MAXVALUE n (0: none); setMax: ALTER sets it (0 with
	// NOMAXVALUE or NO MAXVALUE: none).
	maxValue int64
	setMax   bool
	err      string
	// unsupported: err is a 1235 (a MariaDB option the proxy does not take).
	unsupported bool
	badArg      bool
}

func (s stmt) what() string {
	switch s.kind {
	case showSequences:
		return "SHOW LEAFPROXY SEQUENCES"
	case showSessions:
		return "SHOW LEAFPROXY SESSIONS"
	case showTables:
		return "SHOW LEAFPROXY TABLES"
	case createSequence:
		return "CREATE LEAFPROXY SEQUENCE"
	case alterSequence:
		return "ALTER LEAFPROXY SEQUENCE"
	case dropSequence:
		return "DROP LEAFPROXY SEQUENCE"
	}
	return "a LEAFPROXY statement"
}

// parse recognises admin statements. c is sql's class (sqltext.Classify,
// made once per command by the proxy): a text it does not call Admin
// (SHOW, CREATE, ALTER or DROP and then LEAFPROXY, past white space and
// comments) is not one (ok false), and is not read again: every SELECT
// and SHOW costs nothing here. An executable comment (/*! ... */) is code
// for the server, so text holding one is no admin statement.
func parse(sql []byte, c sqltext.Class) (stmt, bool) {
	if !c.Admin() {
		return stmt{}, false
	}
	i := sqltext.SkipSpace(sql, 0)
	if f, ok := showFilter(string(sql[i:])); ok {
		return stmt{kind: showSequences, filter: f}, true
	}
	toks, ok := tokens(string(sql[i:]))
	if !ok || len(toks) < 2 || !strings.EqualFold(toks[1], "LEAFPROXY") {
		return stmt{}, false
	}
	first := strings.ToUpper(toks[0])
	rest := toks[2:]
	bad := func(msg string) (stmt, bool) { return stmt{err: msg}, true }
	switch first {
	case "SHOW":
		if len(rest) == 1 && strings.EqualFold(rest[0], "SEQUENCES") {
			return stmt{kind: showSequences}, true
		}
		if len(rest) == 1 && (strings.EqualFold(rest[0], "SESSIONS") || strings.EqualFold(rest[0], "PROCESSLIST")) {
			return stmt{kind: showSessions}, true
		}
		if len(rest) == 1 && strings.EqualFold(rest[0], "TABLES") {
			return stmt{kind: showTables}, true
		}
		return bad("leafproxy: SHOW LEAFPROXY takes SEQUENCES [LIKE 'pattern' | WHERE expr], SESSIONS or TABLES")
	case "CREATE":
		return parseCreate(rest)
	case "ALTER":
		usage := "leafproxy: the syntax is ALTER LEAFPROXY SEQUENCE tag [STEP n] [MAXVALUE n | NOMAXVALUE]"
		if len(rest) < 3 || !strings.EqualFold(rest[0], "SEQUENCE") || !isName(rest[1]) {
			return bad(usage)
		}
		st := stmt{kind: alterSequence, tag: unquote(rest[1])}
		return st.alterOptions(rest[2:], usage), true
	case "DROP":
		usage := "leafproxy: the syntax is DROP LEAFPROXY SEQUENCE [IF EXISTS] tag"
		if len(rest) < 2 || !strings.EqualFold(rest[0], "SEQUENCE") {
			return bad(usage)
		}
		st := stmt{kind: dropSequence}
		rest = rest[1:]
		if len(rest) == 3 && strings.EqualFold(rest[0], "IF") && strings.EqualFold(rest[1], "EXISTS") {
			st.ifExists = true
			rest = rest[2:]
		}
		if len(rest) != 1 || !isName(rest[0]) {
			return bad(usage)
		}
		st.tag = unquote(rest[0])
		return st, true
	}
	return stmt{}, false
}

// parseCreate reads what follows CREATE LEAFPROXY:
//
//	SEQUENCE [IF NOT EXISTS] tag [STEP n]
//	SEQUENCE [IF NOT EXISTS] tag SNOWFLAKE [LAYOUT name | LAYOUT (t, w, s)] [EPOCH 'time']
func parseCreate(rest []string) (stmt, bool) {
	usage := "leafproxy: the syntax is CREATE LEAFPROXY SEQUENCE [IF NOT EXISTS] tag [START [WITH] n] [MAXVALUE n] [STEP n] " +
		"or CREATE LEAFPROXY SEQUENCE [IF NOT EXISTS] tag SNOWFLAKE [LAYOUT js_safe | LAYOUT default | LAYOUT (time_bits, worker_bits, sequence_bits)] [EPOCH 'RFC 3339 time']"
	bad := func() (stmt, bool) { return stmt{err: usage}, true }
	if len(rest) < 2 || !strings.EqualFold(rest[0], "SEQUENCE") {
		return bad()
	}
	st := stmt{kind: createSequence}
	rest = rest[1:]
	if len(rest) >= 3 && strings.EqualFold(rest[0], "IF") && strings.EqualFold(rest[1], "NOT") && strings.EqualFold(rest[2], "EXISTS") {
		st.ifNotExists = true
		rest = rest[3:]
	}
	if len(rest) == 0 || !isName(rest[0]) {
		return bad()
	}
	st.tag = unquote(rest[0])
	rest = rest[1:]
	if len(rest) == 0 || !strings.EqualFold(rest[0], "SNOWFLAKE") {
		return st.segmentOptions(rest, usage), true
	}
	st.snowflake = true
	rest = rest[1:]
	if len(rest) >= 2 && strings.EqualFold(rest[0], "LAYOUT") {
		switch {
		case rest[1] == "(":
			if len(rest) < 8 || rest[3] != "," || rest[5] != "," || rest[7] != ")" {
				return bad()
			}
			for i, tok := range []string{rest[2], rest[4], rest[6]} {
				n, err := strconv.Atoi(tok)
				if err != nil {
					return bad()
				}
				st.bits[i] = n
			}
			st.hasBits = true
			rest = rest[8:]
		case isName(rest[1]):
			st.layout = strings.ToLower(unquote(rest[1]))
			rest = rest[2:]
		default:
			return bad()
		}
	}
	if len(rest) == 2 && strings.EqualFold(rest[0], "EPOCH") && isQuoted(rest[1]) {
		st.epoch = unquote(rest[1])
		rest = nil
	}
	if len(rest) != 0 {
		return bad()
	}
	return st, true
}

// segmentOptions reads a segment tag's options, in any order, each once:
// STEP n, START [WITH] n (MariaDB's CREATE SEQUENCE words; the tag's first
// ID), MAXVALUE n (no ID above n is handed out: 4084 past it, as a
// MariaDB sequence that ran out). NOMAXVALUE and MariaDB's other options
// are refused as not supported (1235).
func (st stmt) segmentOptions(rest []string, usage string) stmt {
	seen := map[string]bool{}
	for len(rest) > 0 {
		word := strings.ToUpper(rest[0])
		if seen[word] {
			return stmt{err: usage}
		}
		seen[word] = true
		switch word {
		case "STEP":
			if len(rest) < 2 {
				return stmt{err: usage}
			}
			if st = st.withStep(rest[1], usage); st.err != "" {
				return st
			}
			rest = rest[2:]
		case "START":
			rest = rest[1:]
			if len(rest) > 0 && strings.EqualFold(rest[0], "WITH") {
				rest = rest[1:]
			}
			if len(rest) == 0 || !isNumber(rest[0]) {
				return stmt{err: usage}
			}
			n, err := strconv.ParseInt(rest[0], 10, 64)
			if err != nil || n < 1 {
				return stmt{err: fmt.Sprintf("Incorrect arguments to %s: START WITH %s: the first ID must be 1 to 9223372036854775807", st.what(), rest[0]), badArg: true}
			}
			st.start = n
			rest = rest[1:]
		case "MAXVALUE":
			if st = st.withMaxValue(rest, usage); st.err != "" {
				return st
			}
			rest = rest[2:]
		case "NOMAXVALUE", "MINVALUE", "INCREMENT", "CYCLE", "CACHE":
			return stmt{err: fmt.Sprintf("leafproxy: CREATE LEAFPROXY SEQUENCE takes no %s: a segment sequence counts up by 1 and ends at its MAXVALUE or where the key columns it fills end (SHOW LEAFPROXY SEQUENCES: ids_left)", word), unsupported: true}
		default:
			return stmt{err: usage}
		}
	}
	return st
}

// withMaxValue reads MAXVALUE n from rest (rest[0] is MAXVALUE): n is 1
// to 9223372036854775806 (one below BIGINT's end, so that max_id can pass
// it), else a bad argument.
func (st stmt) withMaxValue(rest []string, usage string) stmt {
	if len(rest) < 2 || !isNumber(rest[1]) {
		return stmt{err: usage}
	}
	n, err := strconv.ParseInt(rest[1], 10, 64)
	if err != nil || n < 1 || n == math.MaxInt64 {
		return stmt{err: fmt.Sprintf("Incorrect arguments to %s: MAXVALUE %s: it must be 1 to 9223372036854775806", st.what(), rest[1]), badArg: true}
	}
	st.maxValue, st.setMax = n, true
	return st
}

// alterOptions reads ALTER's options, each once, at least one: STEP n,
// MAXVALUE n, NOMAXVALUE (or NO MAXVALUE).
func (st stmt) alterOptions(rest []string, usage string) stmt {
	seen := map[string]bool{}
	for len(rest) > 0 {
		word := strings.ToUpper(rest[0])
		if word == "NO" && len(rest) > 1 && strings.EqualFold(rest[1], "MAXVALUE") {
			word, rest = "NOMAXVALUE", rest[1:]
		}
		if word == "NOMAXVALUE" {
			if seen["MAXVALUE"] {
				return stmt{err: usage}
			}
			seen["MAXVALUE"] = true
			st.maxValue, st.setMax = 0, true
			rest = rest[1:]
			continue
		}
		if seen[word] || len(rest) < 2 {
			return stmt{err: usage}
		}
		seen[word] = true
		switch word {
		case "STEP":
			st = st.withStep(rest[1], usage)
		case "MAXVALUE":
			st = st.withMaxValue(rest, usage)
		default:
			return stmt{err: usage}
		}
		if st.err != "" {
			return st
		}
		rest = rest[2:]
	}
	return st
}

// withStep sets the STEP: a number that is not 1 to 2147483647 (the
// leaf_alloc.step column) is a bad argument (1210), anything else a
// syntax error.
func (st stmt) withStep(tok, usage string) stmt {
	n, err := strconv.ParseInt(tok, 10, 64)
	switch {
	case err != nil && !isNumber(tok):
		return stmt{err: usage}
	case err != nil || n <= 0 || n > 1<<31-1:
		return stmt{err: fmt.Sprintf("Incorrect arguments to %s: STEP %s: it must be 1 to 2147483647", st.what(), tok), badArg: true}
	}
	st.step = n
	return st
}

func isNumber(tok string) bool {
	tok = strings.TrimPrefix(tok, "-")
	return tok != "" && strings.Trim(tok, "0123456789") == ""
}

// isName says tok is a word or a quoted name (not punctuation).
func isName(tok string) bool { return tok != "(" && tok != ")" && tok != "," }

func isQuoted(tok string) bool { return len(tok) >= 2 && (tok[0] == '\'' || tok[0] == '"') }

// tokens splits a short admin statement into words, numbers, quoted names
// and ( ) , punctuation, skipping white space and comments and dropping a
// trailing ';'. ok is false for text with an executable comment, an
// unclosed quote, other punctuation or a second statement: such text is no
// admin statement. Quoted text has no backslash escapes here (a doubled
// quote stands for itself), as unquote reads it. The tokens are
// sqltext.NextToken's; a word or number is the run of identifier bytes
// (1.5 or 1e+3 is no admin token), and a '-' before digits makes one
// negative number.
func tokens(s string) ([]string, bool) {
	var out []string
	for i := sqltext.SkipSpace(s, 0); i < len(s); i = sqltext.SkipSpace(s, i) {
		if s[i] == '-' && i+1 < len(s) && sqltext.IsDigit(s[i+1]) {
			j := i + 1
			for j < len(s) && sqltext.IsDigit(s[j]) {
				j++
			}
			out = append(out, s[i:j])
			i = j
			continue
		}
		t := sqltext.NextToken(s, i, sqltext.Quoting{NoBackslashEscapes: true})
		switch t.Kind {
		case sqltext.TokWord, sqltext.TokNumber:
			j := i
			for j < len(s) && sqltext.IsIdentByte(s[j]) {
				j++
			}
			if j != t.End {
				return nil, false
			}
		case sqltext.TokString, sqltext.TokQuoted:
			if !t.Closed {
				return nil, false
			}
		case sqltext.TokPunct:
			switch s[i] {
			case '(', ')', ',':
			case ';':
				if sqltext.SkipSpace(s, i+1) != len(s) {
					return nil, false
				}
				return out, true
			default:
				return nil, false
			}
		default:
			return nil, false
		}
		out = append(out, s[t.Start:t.End])
		i = t.End
	}
	return out, true
}

// unquote strips `...`, '...' or "..." (with doubled quotes inside, no
// backslash escapes: see tokens).
func unquote(t string) string { return sqltext.Unquote(t, sqltext.NoEscapes) }
