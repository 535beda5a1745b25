package rewriter

import (
	"math"
	"strconv"
	"strings"
)

// What a key value becomes in an integer column decides, as for
// AUTO_INCREMENT, whether the key is generated: MariaDB stores the value
// first, and generates when the stored value is NULL or (unless
// NO_AUTO_VALUE_ON_ZERO) 0. So '00', 0.4, '0.4', -0, ' 0', 0x00, b'0' and
// 0.5e0 are generated, while 0.5 and '0.5' store 1 (measured on MariaDB
// 10.11; the table in keyvalue_test.go). KeyValue reproduces that
// conversion for the values the proxy can read: literals in the text and
// values bound at execute time.

// KeyValue is what a key value converts to in an integer key column.
type KeyValue struct {
	// Null: the value is NULL (always generated).
	Null bool
	// V is the integer stored (rounded as the server rounds), when not
	// Null and not Overflow.
	V int64
	// Overflow: the value does not fit a BIGINT (the server clamps it or
	// refuses it; it is never 0).
	Overflow bool
	// Bad: the conversion is an error in strict mode (1366 "Incorrect
	// integer value", 1265 "Data truncated"), a warning otherwise.
	Bad bool
}

// Generates reports whether AUTO_INCREMENT would generate a key for v in
// mode: NULL always; a value that stores as 0 unless NO_AUTO_VALUE_ON_ZERO,
// except one whose conversion is an error (strict mode without IGNORE):
// that statement fails, so the value is kept for the server to refuse.
func (v KeyValue) Generates(mode Mode, ignore bool) bool {
	switch {
	case v.Null:
		return true
	case mode.NoAutoValueOnZero || v.Overflow || v.V != 0:
		return false
	case v.Bad && mode.Strict && !ignore:
		return false
	}
	return true
}

// Explicit is the key that a kept value v stores, which the tag must move
// past as AUTO_INCREMENT's counter would; 0 when there is none to move
// past (NULL, not positive, or a statement the server refuses).
func (v KeyValue) Explicit(mode Mode, ignore bool) int64 {
	if v.Null || v.Overflow || v.V <= 0 || v.Bad && mode.Strict && !ignore {
		return 0
	}
	return v.V
}

// ConvertString is MariaDB's conversion of a string to an integer column
// (strntoull10rnd and check_int): leading white space skipped, a sign,
// digits with a fraction and an exponent, rounded half away from zero;
// trailing white space is only a note, anything else after the number (or
// no number at all) makes it Bad.
func ConvertString(s string) KeyValue {
	i := 0
	for i < len(s) && isSpaceByte(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	intStart := i
	for i < len(s) && isDigitByte(s[i]) {
		i++
	}
	intPart := s[intStart:i]
	frac := ""
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && isDigitByte(s[j]) {
			j++
		}
		frac = s[i+1 : j]
		i = j
	}
	if intPart == "" && frac == "" {
		return KeyValue{Bad: true}
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		eneg := false
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			eneg = s[j] == '-'
			j++
		}
		if j < len(s) && isDigitByte(s[j]) {
			k := j
			for k < len(s) && isDigitByte(s[k]) {
				k++
			}
			e, err := strconv.Atoi(s[j:k])
			if err != nil || e > 1000 {
				e = 1000
			}
			if eneg {
				e = -e
			}
			exp = e
			i = k
		}
	}
	v := roundDecimal(intPart, frac, exp, neg)
	for ; i < len(s); i++ {
		if !isSpaceByte(s[i]) {
			v.Bad = true
			break
		}
	}
	return v
}

// convertNumberToken converts a number token of the text: an integer, a
// decimal (with '.': rounded half away from zero) or a float (with an
// exponent: a DOUBLE, rounded half to even, as rint).
func convertNumberToken(text string, neg bool) KeyValue {
	if strings.ContainsAny(text, "eE") {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !isRangeErr(err) {
			return KeyValue{Bad: true}
		}
		if neg {
			f = -f
		}
		return ConvertFloat(f)
	}
	intPart, frac, _ := strings.Cut(text, ".")
	return roundDecimal(intPart, frac, 0, neg)
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// ConvertFloat is a DOUBLE stored in an integer column: rint (half to
// even).
func ConvertFloat(f float64) KeyValue {
	if math.IsNaN(f) {
		return KeyValue{Bad: true}
	}
	r := math.RoundToEven(f)
	if r >= math.MaxInt64 || r < math.MinInt64 {
		return KeyValue{Overflow: true}
	}
	return KeyValue{V: int64(r)}
}

// roundDecimal is the integer nearest to ±intPart.frac × 10^exp, halves
// away from zero.
func roundDecimal(intPart, frac string, exp int, neg bool) KeyValue {
	digits := strings.TrimLeft(intPart+frac, "0")
	point := len(intPart) + exp - (len(intPart+frac) - len(digits)) // digits before the point, in digits
	if digits == "" {
		return KeyValue{}
	}
	var whole string
	roundUp := false
	switch {
	case point <= 0:
		roundUp = point == 0 && digits[0] >= '5'
	case point >= len(digits):
		if point > 19 {
			return KeyValue{Overflow: true}
		}
		whole = digits + strings.Repeat("0", point-len(digits))
	default:
		whole, roundUp = digits[:point], digits[point] >= '5'
	}
	var u uint64
	if whole != "" {
		var err error
		if u, err = strconv.ParseUint(whole, 10, 64); err != nil {
			return KeyValue{Overflow: true}
		}
	}
	if roundUp {
		u++
	}
	if u > math.MaxInt64 {
		return KeyValue{Overflow: true}
	}
	v := int64(u)
	if neg {
		v = -v
	}
	return KeyValue{V: v}
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// isSpaceByte is my_isspace for the ASCII range: space, \t \n \v \f \r.
func isSpaceByte(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// readKeyLiteral reads a key value written as a literal, from t on: signs
// before a number, a number (integer, decimal, float, 0x.. / 0b..), a
// string (with an _charset or N introducer), x'..' (a binary string),
// b'..' (bits), NULL, TRUE or FALSE. ok false: the value is an expression
// (or anything else). last is the literal's last token.
func readKeyLiteral(l *lexer, t token) (v KeyValue, last token, ok bool) {
	neg, signs := false, false
	for l.isPunct(t, '-') || l.isPunct(t, '+') {
		neg = neg != l.isPunct(t, '-')
		signs = true
		t = l.next()
	}
	switch t.kind {
	case tNumber:
		return convertNumberToken(l.text(t), neg), t, true
	case tString:
		if signs {
			return KeyValue{}, t, false
		}
		return ConvertString(unquote(l.text(t), t.kind, l.mode)), t, true
	case tWord:
	default:
		return KeyValue{}, t, false
	}
	w := l.text(t)
	if len(w) > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'b') {
		base := 16
		if w[1] == 'b' {
			base = 2
		}
		v, ok := bitsValue(w[2:], base)
		if ok && neg {
			v.V = -v.V
		}
		return v, t, ok
	}
	if signs {
		return KeyValue{}, t, false
	}
	switch {
	case l.is(t, "NULL"):
		return KeyValue{Null: true}, t, true
	case l.is(t, "TRUE"):
		return KeyValue{V: 1}, t, true
	case l.is(t, "FALSE"):
		return KeyValue{}, t, true
	}
	// A character set introducer, with or without space before its
	// literal: _binary '..', _utf8mb4'..', _binary X'..', _binary 0x..
	// (the literal's value, converted as a string).
	if w[0] == '_' && len(w) > 1 {
		return introducedLiteral(l, t)
	}
	// A prefix glued to a string: N'..', x'..', b'..'.
	s := l.next()
	if s.kind != tString || s.start != t.end || l.sql[s.start] != '\'' {
		return KeyValue{}, t, false
	}
	body := unquote(l.text(s), s.kind, l.mode)
	switch {
	case strings.EqualFold(w, "x"):
		// A binary string: its bytes are converted as a string.
		b, err := hexBytes(body)
		if err != nil {
			return KeyValue{}, s, false
		}
		return ConvertString(b), s, true
	case strings.EqualFold(w, "b"):
		v, ok := bitsValue(body, 2)
		return v, s, ok
	case strings.EqualFold(w, "n"):
		return ConvertString(body), s, true
	}
	return KeyValue{}, t, false
}

// introducedLiteral reads the literal after the character set introducer
// t (_binary, _utf8mb4), with or without space before it: a string, or a
// hexadecimal or bit literal (a string too, with an introducer).
func introducedLiteral(l *lexer, t token) (v KeyValue, last token, ok bool) {
	save := l.pos
	s := l.next()
	if s.kind == tString && l.sql[s.start] == '\'' {
		return ConvertString(unquote(l.text(s), s.kind, l.mode)), s, true
	}
	if s.kind == tWord || s.kind == tNumber {
		if sw := l.text(s); sw[0] != '_' {
			v, last, ok := readKeyLiteral(l, s)
			if ok {
				if vv, isStr := introducedBytes(sw, last, l); isStr {
					v = ConvertString(vv)
				}
			}
			return v, last, ok
		}
	}
	l.pos = save
	return KeyValue{}, t, false
}

// introducedBytes is, for a hexadecimal or bit literal after a character
// set introducer (_binary 0x41, _binary X'41'), the string it stands for:
// with an introducer it is a string, converted as one; isStr false for
// other literals (a number after _utf8mb4 is a syntax error the server
// reports).
func introducedBytes(word string, last token, l *lexer) (b string, isStr bool) {
	var digits string
	switch {
	case len(word) > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X'):
		digits = word[2:]
	case strings.EqualFold(word, "x") && last.kind == tString:
		digits = unquote(l.text(last), last.kind, l.mode)
	default:
		return "", false
	}
	if len(digits)%2 != 0 {
		digits = "0" + digits
	}
	h, err := hexBytes(digits)
	return h, err == nil
}

// bitsValue is a hexadecimal or binary number literal in integer context.
func bitsValue(digits string, base int) (KeyValue, bool) {
	if digits == "" {
		return KeyValue{}, base == 2 // b'' is 0; 0x alone is not a number
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i] | 0x20
		if !(isDigitByte(digits[i]) && (base == 16 || digits[i] <= '1') || base == 16 && c >= 'a' && c <= 'f') {
			return KeyValue{}, false
		}
	}
	u, err := strconv.ParseUint(digits, base, 64)
	if err != nil || u > math.MaxInt64 {
		return KeyValue{Overflow: true}, true
	}
	return KeyValue{V: int64(u)}, true
}

func hexBytes(s string) (string, error) {
	if len(s)%2 != 0 {
		return "", strconv.ErrSyntax
	}
	b := make([]byte, len(s)/2)
	for i := range b {
		u, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return "", err
		}
		b[i] = byte(u)
	}
	return string(b), nil
}
