package sqltext

import "strings"

// SeqCalls counts the places where s may hold a sequence call, stopping at
// most (-1: no limit): at least as many as there are calls. Every call
// form but LEAFPROXY_DECODE contains "val" in some case: NEXTVAL(,
// LASTVAL( and SETVAL( have it after "next" / "last" / "set", NEXT VALUE
// FOR and PREVIOUS VALUE FOR have the word VALUE followed (past white
// space, comments and executable-comment markers) by FOR. So a "val"
// counts only where it ends "nextval" / "lastval" / "setval" or starts the
// word VALUE followed by FOR; VALUES, VALUE (, "interval" do not. The word
// LEAFPROXY_DECODE anywhere counts once. It is quote-blind (a match in a
// string is a false "maybe"). IndexByte is vectorised but costs a call per
// hit, so each of 'v' and 'V' is searched for only once per hit.
func SeqCalls(s string, most int) int { return seqCalls(s, most, strings.IndexByte) }

func seqCalls[T Text](sql T, most int, index func(T, byte) int) int {
	n := 0
	if hasDecode(sql, index) {
		if n++; n == most {
			return n
		}
	}
	lo, up := index(sql, 'v'), index(sql, 'V')
	for lo >= 0 || up >= 0 {
		var i int
		if up < 0 || lo >= 0 && lo < up {
			i = lo
			if j := index(sql[i+1:], 'v'); j >= 0 {
				lo = i + 1 + j
			} else {
				lo = -1
			}
		} else {
			i = up
			if j := index(sql[i+1:], 'V'); j >= 0 {
				up = i + 1 + j
			} else {
				up = -1
			}
		}
		if i+2 < len(sql) && sql[i+1]|0x20 == 'a' && sql[i+2]|0x20 == 'l' && seqCallAt(sql, i) {
			if n++; n == most {
				return n
			}
		}
	}
	return n
}

// hasDecode reports the word LEAFPROXY_DECODE in any case somewhere.
func hasDecode[T Text](sql T, index func(T, byte) int) bool {
	for i := index(sql, '_'); i >= 0; {
		if i >= 9 && i+7 <= len(sql) && EqualFold(sql[i-9:i+7], "LEAFPROXY_DECODE") {
			return true
		}
		j := index(sql[i+1:], '_')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// seqCallAt reports whether the "val" at sql[i:] may belong to a call.
func seqCallAt[T Text](sql T, i int) bool {
	if i >= 4 && (EqualFold(sql[i-4:i], "NEXT") || EqualFold(sql[i-4:i], "LAST")) || i >= 3 && EqualFold(sql[i-3:i], "SET") {
		return true
	}
	j := i + 5
	if j > len(sql) || sql[i+3]|0x20 != 'u' || sql[i+4]|0x20 != 'e' || j < len(sql) && IsIdentByte(sql[j]) {
		return false // not the word VALUE (VALUES, VALUED, VAL, ...)
	}
	// The lexer that finds calls may be inside /*! ... */ here or not;
	// what follows VALUE is skipped as either would skip it.
	for _, inBang := range [2]bool{false, true} {
		k := skipLexed(sql, j, inBang)
		if EqualFold(sql[k:wordEnd(sql, k)], "FOR") {
			return true
		}
	}
	return false
}

// skipLexed skips what a lexer skips between tokens: white space,
// comments and executable-comment markers. inBang says the lexer is inside
// an executable comment: another opener there is a comment, and its "*/"
// is passed; outside, an opener is passed (its content is code).
func skipLexed[T Text](s T, i int, inBang bool) int {
	for {
		// SkipSpace passes white space and comments; it stops at an
		// executable comment's opener, and at anything else.
		i = SkipSpace(s, i)
		switch {
		case i+1 >= len(s):
			return i
		case s[i] == '/' && s[i+1] == '*': // an opener
			if inBang {
				i = CommentEnd(s, i)
				continue
			}
			inBang = true
			i += BangOpener(s[i:])
		case s[i] == '*' && s[i+1] == '/' && inBang:
			inBang = false
			i += 2
		default:
			return i
		}
	}
}
