package sqltext

// The one decoder of quoted text and hex / bit literals, as MariaDB reads
// them; every package that needs a literal's value uses these.

// Escapes says how a backslash reads inside quoted text.
type Escapes uint8

const (
	// NoEscapes: a backslash is itself (NO_BACKSLASH_ESCAPES, a `name`,
	// or a "name" under ANSI_QUOTES).
	NoEscapes Escapes = iota
	// Backslash: a backslash and the next byte stand for MariaDB's escape
	// (\0 \b \n \r \t \Z, any other byte for itself).
	Backslash
	// BackslashLike is Backslash keeping the backslash of \% and \_, as
	// MariaDB does in a string literal (so that LIKE still sees them).
	BackslashLike
)

// Unquote returns the value of the quoted text lit (its opening quote
// first; a missing closing quote is tolerated): a doubled quote stands for
// one, and a backslash escapes as esc says. It allocates only when the
// text has a doubled quote or a backslash to read. Text shorter than two
// bytes, or not starting with a quote, is returned as it is.
func Unquote(lit string, esc Escapes) string {
	if len(lit) < 2 || lit[0] != '\'' && lit[0] != '"' && lit[0] != '`' {
		return lit
	}
	q := lit[0]
	body := lit[1:]
	if len(body) > 0 && body[len(body)-1] == q {
		body = body[:len(body)-1]
	}
	for i := 0; i < len(body); i++ {
		if body[i] == q || esc != NoEscapes && body[i] == '\\' {
			return string(appendBody(make([]byte, 0, len(body)), body, q, esc))
		}
	}
	return body
}

// AppendUnquoted appends the value of the quoted text lit to dst, as
// Unquote reads it.
func AppendUnquoted[T Text](dst []byte, lit T, esc Escapes) []byte {
	q := lit[0]
	body := lit[1:]
	if n := len(body); n > 0 && body[n-1] == q {
		body = body[:n-1]
	}
	return appendBody(dst, body, q, esc)
}

func appendBody[T Text](dst []byte, body T, q byte, esc Escapes) []byte {
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == q && i+1 < len(body) && body[i+1] == q:
			i++
		case esc != NoEscapes && c == '\\' && i+1 < len(body):
			i++
			c = body[i]
			if esc == BackslashLike && (c == '%' || c == '_') {
				dst = append(dst, '\\')
			}
			c = Unescape(c)
		}
		dst = append(dst, c)
	}
	return dst
}

// Unescape maps the byte after a backslash to its value (MariaDB's table).
func Unescape(c byte) byte {
	switch c {
	case '0':
		return 0
	case 'b':
		return '\b'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'Z':
		return 26
	}
	return c
}

// AppendRadix appends the bytes that the hex digits (hex) or binary digits
// stand for, right-aligned as MariaDB reads X'ABC', 0xABC and b'101' (a
// leading part of a byte is padded with zeros). ok is false at the first
// byte that is no digit; dst then holds the bytes before it.
func AppendRadix[T Text](dst []byte, digits T, hex bool) (out []byte, ok bool) {
	bits, per := 1, 8
	if hex {
		bits, per = 4, 2
	}
	var v byte
	n := (per - len(digits)%per) % per // leading zero digits of the first byte
	for i := 0; i < len(digits); i++ {
		d, ok := digit(digits[i], hex)
		if !ok {
			return dst, false
		}
		v = v<<bits | d
		if n++; n == per {
			dst = append(dst, v)
			v, n = 0, 0
		}
	}
	return dst, true
}

func digit(c byte, hex bool) (byte, bool) {
	switch {
	case c == '0' || c == '1':
		return c - '0', true
	case !hex:
		return 0, false
	case c >= '2' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
