package loadfile

// refReader is a line-by-line port of MariaDB's READ_INFO (sql_load.cc) in
// its own pull style (GET / PUSH with a stack), over a whole file: the
// reference the streaming Transformer is checked against. It returns the
// offsets where rows begin (the byte the first field's first GET returns),
// which is where the transformer must put the keys.
type refReader struct {
	data      []byte
	pos       int
	stack     []int
	fieldTerm string
	lineTerm  string
	lineStart string
	enc, esc  int
	mb        Charset

	foundEOL, startOfLine, eof bool
	enclosed                   bool
	fieldStart                 int // offset of the byte the field's first GET returned, -1 at EOF
}

const refEOF = -1

func (r *refReader) get() int {
	if n := len(r.stack); n > 0 {
		c := r.stack[n-1]
		r.stack = r.stack[:n-1]
		return c
	}
	if r.pos >= len(r.data) {
		return refEOF
	}
	c := int(r.data[r.pos])
	r.pos++
	return c
}

func (r *refReader) push(c int) { r.stack = append(r.stack, c) }

// offset of the next byte get() returns (bytes on the stack come first).
func (r *refReader) offset() int {
	n := r.pos
	for _, c := range r.stack {
		if c != refEOF {
			n--
		}
	}
	return n
}

// terminator: the first byte of s was read; are the rest next?
func (r *refReader) terminator(s string) bool {
	var chr int
	i := 1
	for ; i < len(s); i++ {
		if chr = r.get(); chr != int(s[i]) {
			break
		}
	}
	if i == len(s) {
		return true
	}
	r.push(chr)
	for i--; i > 0; i-- {
		r.push(int(s[i]))
	}
	return false
}

func (r *refReader) term(chr int, s string) bool {
	return s != "" && chr == int(s[0]) && r.terminator(s)
}

// charlen is MariaDB's utf8 charlen: 1, 0 (ILSEQ) or -n (too small, n wanted).
func (r *refReader) charlen(b []int) int {
	c := b[0]
	if c < 0x80 || r.mb == SingleByte {
		return 1
	}
	need := 0
	switch {
	case c < 0xC2:
		return 0
	case c < 0xE0:
		need = 2
	case c < 0xF0:
		need = 3
	case c < 0xF5 && r.mb == UTF8MB4:
		need = 4
	default:
		return 0
	}
	for _, x := range b[1:] {
		if x^0x80 >= 0x40 {
			return 0 // not a continuation byte: bad at once
		}
	}
	if len(b) < need {
		return -need
	}
	return need // (ranges such as E0 A0..BF are checked here by the server: the same bytes either way)
}

// readMBTail: the lead byte was appended; true at EOF.
func (r *refReader) readMBTail(lead int) bool {
	buf := []int{lead}
	chlen := r.charlen(buf)
	for chlen < 0 {
		chr := r.get()
		if chr == refEOF {
			return true
		}
		buf = append(buf, chr)
		chlen = r.charlen(buf)
		if chlen == 0 {
			r.push(chr)
			return false
		}
	}
	return false
}

func (r *refReader) findStartOfFields() bool {
	for chr := r.get(); chr != refEOF; chr = r.get() {
		if r.term(chr, r.lineStart) {
			return false
		}
	}
	r.foundEOL, r.eof = true, true
	return true
}

// readField is READ_INFO::read_field (1: no field).
func (r *refReader) readField() int {
	if r.foundEOL {
		return 1
	}
	if r.startOfLine {
		r.startOfLine = false
		if r.findStartOfFields() {
			return 1
		}
	}
	r.fieldStart = r.offset()
	chr := r.get()
	if chr == refEOF {
		r.foundEOL, r.eof = true, true
		return 1
	}
	foundEnc := -2
	if chr == r.enc {
		foundEnc = r.enc
	} else {
		r.push(chr)
	}
	for {
		chr = r.get()
		if chr == refEOF {
			goto foundEOF
		}
		if chr == r.esc {
			if chr = r.get(); chr == refEOF {
				goto foundEOF
			}
			if r.esc != r.enc || chr == r.esc {
				continue // unescaped data
			}
			r.push(chr)
			chr = r.esc
		}
		if r.lineTerm != "" && chr == int(r.lineTerm[0]) && foundEnc == -2 {
			if r.terminator(r.lineTerm) {
				r.enclosed, r.foundEOL = false, true
				return 0
			}
		}
		if chr == foundEnc {
			if chr = r.get(); chr == foundEnc {
				continue
			}
			if chr == refEOF || r.term(chr, r.lineTerm) {
				r.enclosed, r.foundEOL = true, true
				return 0
			}
			if r.term(chr, r.fieldTerm) {
				r.enclosed = true
				return 0
			}
			r.push(chr)
			chr = foundEnc
		} else if chr == int(r.fieldTerm[0]) && foundEnc == -2 {
			if r.terminator(r.fieldTerm) {
				r.enclosed = false
				return 0
			}
		}
		if r.mb != SingleByte && r.readMBTail(chr) {
			goto foundEOF
		}
	}
foundEOF:
	r.enclosed, r.foundEOL, r.eof = false, true, true
	return 0
}

// nextLine is READ_INFO::next_line (true: EOF).
func (r *refReader) nextLine() bool {
	r.startOfLine = r.lineStart != ""
	if r.foundEOL || r.eof {
		r.foundEOL = false
		return r.eof
	}
	r.foundEOL = false
	if r.lineTerm == "" {
		return false
	}
	for {
		c := r.get()
		if c == refEOF {
			r.eof = true
			return true
		}
		if chlen := r.charlen([]int{c}); chlen < 0 {
			// Measured on MariaDB 10.11: next_line() takes the lead's
			// whole length in bytes, whatever they are (unlike
			// read_mbtail(), which pushes back the first byte that does
			// not continue the character). A non-ASCII lead never starts
			// the ASCII line terminator.
			for k := -chlen; k > 1; k-- {
				if r.get() == refEOF {
					r.eof = true
					return true
				}
			}
			continue
		}
		if c == r.esc {
			if r.get() == refEOF {
				return true
			}
			continue
		}
		if r.term(c, r.lineTerm) {
			return false
		}
	}
}

// refMark is where a record begins: a row, or a record IGNORE skips.
type refMark struct {
	off  int
	skip bool
}

// refRows runs mysql_load's skip loop and read_sep_field over data and
// returns the offsets where records begin.
func refRows(f Format, data []byte) []refMark {
	r := &refReader{data: data, fieldTerm: f.FieldTerm, lineTerm: f.lineTerm(), lineStart: f.LineStart,
		enc: f.Enclosed, esc: f.Escaped, mb: f.Charset, startOfLine: f.LineStart != ""}
	if r.enc < 0 {
		r.enc = -3
	}
	if r.esc < 0 {
		r.esc = -4
	}
	skip := f.Ignore
	if f.LineTerm != "" {
		for skip > 0 {
			skip--
			if r.nextLine() {
				break
			}
		}
	}
	var rows []refMark
	for {
		it, start := 0, -1
		for ; it < f.Fields; it++ {
			if r.readField() != 0 {
				break
			}
			if it == 0 {
				start = r.fieldStart
			}
		}
		if skip > 0 {
			skip--
			if it > 0 {
				rows = append(rows, refMark{start, true})
			}
			continue
		}
		if it < f.Fields && it == 0 {
			break
		}
		rows = append(rows, refMark{off: start})
		if r.nextLine() {
			break
		}
	}
	return rows
}
