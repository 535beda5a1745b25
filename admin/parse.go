package admin

import (
	"strconv"
	"strings"
)

type kind int

const (
	showSequences kind = iota + 1
	showSessions
	createSequence
)

// stmt is a parsed admin statement; err says what is wrong with a statement
// that is clearly meant for the proxy (SHOW/CREATE LEAFPROXY ...).
type stmt struct {
	kind        kind
	tag         string
	step        int64
	ifNotExists bool
	err         string
}

func (s stmt) what() string {
	switch s.kind {
	case showSequences:
		return "SHOW LEAFPROXY SEQUENCES"
	case showSessions:
		return "SHOW LEAFPROXY SESSIONS"
	case createSequence:
		return "CREATE LEAFPROXY SEQUENCE"
	}
	return "a LEAFPROXY statement"
}

// parse recognises admin statements. Anything not starting with
// SHOW LEAFPROXY or CREATE LEAFPROXY is not one (ok false), and costs a
// look at the first byte for almost every statement.
func parse(sql []byte) (stmt, bool) {
	i := 0
	for i < len(sql) && (sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\n' || sql[i] == '\r') {
		i++
	}
	if i >= len(sql) {
		return stmt{}, false
	}
	switch sql[i] | 0x20 {
	case 's', 'c':
	default:
		return stmt{}, false
	}
	if !secondWordIsLeafproxy(sql[i:]) {
		return stmt{}, false // every SELECT and SHOW: no tokens, no allocation
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
		return bad("leafproxy: SHOW LEAFPROXY takes SEQUENCES or SESSIONS")
	case "CREATE":
		usage := "leafproxy: the syntax is CREATE LEAFPROXY SEQUENCE [IF NOT EXISTS] tag [STEP n]"
		if len(rest) < 2 || !strings.EqualFold(rest[0], "SEQUENCE") {
			return bad(usage)
		}
		st := stmt{kind: createSequence}
		rest = rest[1:]
		if len(rest) >= 3 && strings.EqualFold(rest[0], "IF") && strings.EqualFold(rest[1], "NOT") && strings.EqualFold(rest[2], "EXISTS") {
			st.ifNotExists = true
			rest = rest[3:]
		}
		if len(rest) == 0 {
			return bad(usage)
		}
		st.tag = unquote(rest[0])
		rest = rest[1:]
		if len(rest) == 2 && strings.EqualFold(rest[0], "STEP") {
			n, err := strconv.ParseInt(rest[1], 10, 64)
			if err != nil || n <= 0 || n > 1<<31-1 {
				return bad("leafproxy: STEP must be a positive integer (at most 2147483647)")
			}
			st.step = n
			rest = nil
		}
		if len(rest) != 0 {
			return bad(usage)
		}
		return st, true
	}
	return stmt{}, false
}

// tokens splits a short admin statement into words and quoted names,
// dropping a trailing ';'. ok is false for text with comments or other
// punctuation: such text is no admin statement.
func tokens(s string) ([]string, bool) {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == ';':
			if strings.TrimSpace(s[i+1:]) != "" {
				return nil, false
			}
			return out, true
		case c == '`' || c == '\'' || c == '"':
			j := i + 1
			for j < len(s) {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j >= len(s) {
				return nil, false
			}
			out = append(out, s[i:j+1])
			i = j + 1
		case c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(s) {
				d := s[j]
				if !(d == '_' || d == '$' || d >= '0' && d <= '9' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d >= 0x80) {
					break
				}
				j++
			}
			out = append(out, s[i:j])
			i = j
		default:
			return nil, false
		}
	}
	return out, true
}

// secondWordIsLeafproxy reports whether the word after the first one in
// sql (which starts with a word character) is LEAFPROXY, as tokens would
// split it: a cheap test that keeps ordinary statements from being
// tokenized. (No non-ASCII letter case-folds to one of LEAFPROXY's, so
// comparing bytes agrees with strings.EqualFold.)
func secondWordIsLeafproxy(sql []byte) bool {
	j := 0
	for j < len(sql) && isWordByte(sql[j]) {
		j++
	}
	for j < len(sql) && (sql[j] == ' ' || sql[j] == '\t' || sql[j] == '\n' || sql[j] == '\r') {
		j++
	}
	const w = "leafproxy"
	if len(sql)-j < len(w) || !strings.EqualFold(string(sql[j:j+len(w)]), w) {
		return false
	}
	return j+len(w) == len(sql) || !isWordByte(sql[j+len(w)])
}

// isWordByte is tokens' test for a byte of an unquoted word.
func isWordByte(d byte) bool {
	return d == '_' || d == '$' || d >= '0' && d <= '9' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d >= 0x80
}

// unquote strips `...`, '...' or "..." (with doubled quotes inside).
func unquote(t string) string {
	if len(t) >= 2 && (t[0] == '`' || t[0] == '\'' || t[0] == '"') {
		q := t[:1]
		return strings.ReplaceAll(t[1:len(t)-1], q+q, q)
	}
	return t
}
