package sqltext

// UseName reads the database name of `USE name` (rest: the text after
// USE), a backquoted name decoded; ok is false when the statement has any
// other shape (more words, an unclosed quote, no name).
func UseName(rest []byte) (string, bool) {
	rest = rest[SkipSpace(rest, 0):]
	var name []byte
	if len(rest) > 0 && rest[0] == '`' {
		end, closed := QuotedEnd(rest, 0, false)
		if !closed {
			return "", false
		}
		name = AppendUnquoted(nil, rest[:end], NoEscapes) // `` is a literal backtick
		rest = rest[end:]
	} else {
		i := 0
		for i < len(rest) && rest[i] != ';' && rest[i] != ' ' && rest[i] != '\t' && rest[i] != '\n' && rest[i] != '\r' {
			i++
		}
		name, rest = rest[:i], rest[i:]
	}
	for _, c := range rest {
		if c != ';' && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return "", false
		}
	}
	return string(name), len(name) > 0
}
