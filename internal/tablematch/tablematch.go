// Package tablematch is the one rule for matching a database or table name
// against a key-filling rule's name (config `tables[].table`), shared by
// the rewriter (which rule fills an INSERT), the allocator (which tables'
// keys a tag must start above) and the service (start-up warnings), so the
// three agree.
//
// Case follows the backend's lower_case_table_names: 0 (Linux's default)
// compares database and table names byte for byte, as the server then
// tells `Mixed` and `mixed` apart; 1 and 2 compare them case-insensitively
// (Unicode lower case, as strings.ToLower). Column names are always
// case-insensitive in MySQL and are not matched here.
//
// Each part of a rule name, the database and the table, is an exact name
// or a shell-style pattern (the syntax of Go's path.Match, except that no
// character is special to '*'):
//
//   - any run of characters, also none
//     ?       one character
//     [abc]   one character of the set; ranges [a-z]; [!a-z] or [^a-z]
//     one character not in it
//     \c      the character c itself (\*, \?, \[, \], \\, \-)
//
// A part holding none of * ? [ \ is an exact name. Nothing allocates when
// matching.
package tablematch

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Case is how the backend compares database and table names.
type Case uint8

const (
	// Exact: byte for byte (lower_case_table_names=0).
	Exact Case = iota
	// Fold: case-insensitively (lower_case_table_names=1 or 2).
	Fold
)

// CaseOf is how a server with this lower_case_table_names compares names.
func CaseOf(lowerCaseTableNames int) Case {
	if lowerCaseTableNames == 0 {
		return Exact
	}
	return Fold
}

func (c Case) String() string {
	if c == Fold {
		return "case-insensitive"
	}
	return "case-sensitive"
}

// Key is name as c compares it: lower case with Fold, itself otherwise.
func (c Case) Key(name string) string {
	if c == Fold {
		return strings.ToLower(name)
	}
	return name
}

// IsPattern reports whether a name part is a pattern (holds * ? [ or \).
func IsPattern(part string) bool { return strings.ContainsAny(part, `*?[\`) }

// Syntax is the pattern syntax in a sentence, for error messages.
const Syntax = `* any characters, ? one, [a-z] one of a set, [!a-z] one not in it; \ before a character takes it literally`

// Check reports what is wrong with pattern, nil if nothing.
func Check(pattern string) error {
	for i := 0; i < len(pattern); {
		switch pattern[i] {
		case '\\':
			if i+1 == len(pattern) {
				return errors.New(`it ends in \ (\ takes the next character literally)`)
			}
			_, w := utf8.DecodeRuneInString(pattern[i+1:])
			i += 1 + w
		case '[':
			end, err := classEnd(pattern, i)
			if err != nil {
				return err
			}
			i = end
		case ']':
			return errors.New(`] without its [ (write \] for the character)`)
		default:
			i++
		}
	}
	return nil
}

// classEnd checks the set that opens at pattern[i] ('[') and returns the
// offset after its ']'.
func classEnd(pattern string, i int) (int, error) {
	i++
	if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
		i++
	}
	items := 0
	for {
		if i >= len(pattern) {
			return 0, errors.New(`[ without its ] (write \[ for the character)`)
		}
		if pattern[i] == ']' {
			if items == 0 {
				return 0, errors.New(`an empty set [] (write \] for the character)`)
			}
			return i + 1, nil
		}
		lo, w, ok := classChar(pattern, i)
		if !ok {
			return 0, errors.New(`a set ends in \`)
		}
		i += w
		items++
		if i < len(pattern) && pattern[i] == '-' {
			if i+1 >= len(pattern) || pattern[i+1] == ']' {
				return 0, errors.New(`- in a set must stand between two characters (write \- for the character)`)
			}
			hi, w, ok := classChar(pattern, i+1)
			if !ok {
				return 0, errors.New(`a set ends in \`)
			}
			if hi < lo {
				return 0, errors.New("a range [" + string(lo) + "-" + string(hi) + "] that runs backwards")
			}
			i += 1 + w
		}
	}
}

// classChar reads one (possibly escaped) character of a set at pattern[i].
func classChar(pattern string, i int) (r rune, w int, ok bool) {
	if pattern[i] == '\\' {
		if i+1 >= len(pattern) {
			return 0, 0, false
		}
		r, w = utf8.DecodeRuneInString(pattern[i+1:])
		return r, w + 1, true
	}
	r, w = utf8.DecodeRuneInString(pattern[i:])
	return r, w, true
}

// Match reports whether name matches pattern (which must pass Check), as
// c compares names. With Fold, pattern must be in lower case already
// (Case.Key), name is lowered character by character here.
func Match(pattern, name string, c Case) bool {
	px, nx := 0, 0
	starPx, starNx := -1, 0 // where the last * was, and how far it has eaten
	for px < len(pattern) || nx < len(name) {
		if px < len(pattern) {
			switch pattern[px] {
			case '*':
				if px == len(pattern)-1 {
					return true // a final * takes the rest
				}
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px, nx = px+1, nx+w
					continue
				}
			case '[':
				if nx < len(name) {
					r, w := next(name, nx, c)
					if in, end := inClass(pattern, px, r); in {
						px, nx = end, nx+w
						continue
					}
				}
			default:
				lit := px
				if pattern[px] == '\\' {
					lit++
				}
				if nx < len(name) {
					if pw, nw := literal(pattern, lit, name, nx, c); pw > 0 {
						px, nx = lit+pw, nx+nw
						continue
					}
				}
			}
		}
		// Mismatch: let the last * eat one more character, or fail.
		if starPx < 0 || starNx >= len(name) {
			return false
		}
		_, w := utf8.DecodeRuneInString(name[starNx:])
		starNx += w
		px, nx = starPx+1, starNx
	}
	return true
}

// literal compares the pattern's literal character at pattern[p] with
// the name's at name[n] and returns their widths, 0, 0 when they differ.
// Bytes that are not UTF-8 compare as themselves.
func literal(pattern string, p int, name string, n int, c Case) (pw, nw int) {
	pc, nc := pattern[p], name[n]
	if pc < utf8.RuneSelf && nc < utf8.RuneSelf {
		if c == Fold {
			nc = lower(nc)
		}
		if nc == pc {
			return 1, 1
		}
		return 0, 0
	}
	if c == Exact {
		_, pw = utf8.DecodeRuneInString(pattern[p:])
		if strings.HasPrefix(name[n:], pattern[p:p+pw]) {
			return pw, pw
		}
		return 0, 0
	}
	pr, pw := utf8.DecodeRuneInString(pattern[p:])
	r, nw := next(name, n, c)
	if r == utf8.RuneError && nw == 1 || pr == utf8.RuneError && pw == 1 {
		if pw == 1 && nw == 1 && pc == nc {
			return 1, 1
		}
		return 0, 0
	}
	if r == pr {
		return pw, nw
	}
	return 0, 0
}

// next is the character at name[i] (lowered with Fold) and its width.
func next(name string, i int, c Case) (rune, int) {
	r, w := utf8.DecodeRuneInString(name[i:])
	if c == Fold {
		r = unicode.ToLower(r)
	}
	return r, w
}

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// inClass reports whether r is in the set that opens at pattern[i] and
// returns the offset after its ']'.
func inClass(pattern string, i int, r rune) (in bool, end int) {
	i++
	negate := false
	if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
		negate = true
		i++
	}
	for pattern[i] != ']' {
		lo, w, _ := classChar(pattern, i)
		i += w
		hi := lo
		if pattern[i] == '-' {
			hi, w, _ = classChar(pattern, i+1)
			i += 1 + w
		}
		if lo <= r && r <= hi {
			in = true
		}
	}
	return in != negate, i + 1
}

// Prefix is the literal start of pattern, before its first * ? [ or \:
// every name it matches starts with it (as c compares names).
func Prefix(pattern string) string {
	if i := strings.IndexAny(pattern, `*?[\`); i >= 0 {
		return pattern[:i]
	}
	return pattern
}
