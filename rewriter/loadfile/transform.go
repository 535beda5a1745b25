package loadfile

import "strconv"

// IDs hands out the keys, one per record, ascending.
type IDs interface {
	Next() (int64, error)
}

// The reader's states, named after where sql_load.cc is.
type state uint8

const (
	stSkipLine   state = iota // IGNORE n LINES: next_line() before the first record
	stRecord                  // read_sep_field: a record begins
	stFieldStart              // read_field(): entry
	stFindStart               // find_start_of_fields(): looking for LINES STARTING BY
	stFirst                   // read_field(): the field's first byte (the key goes before it)
	stBody                    // read_field(): the field's bytes
	stNextLine                // next_line(): the rest of a line with more fields than read
	stDone                    // the server reads no more records
)

// Transformer inserts the keys into a file's bytes (see the package
// documentation). Not for concurrent use.
type Transformer struct {
	format   Format
	ids      IDs
	lineTerm string // the line terminator in force (Format.lineTerm)
	insert   []byte // scratch: "<id><field terminator>"

	readState  state
	fieldsRead int    // fields read of the current record
	skipLines  uint64 // stSkipLine: lines still to skip
	skipRec    uint64 // records still to skip (IGNORE without a line terminator)
	foundEOL   bool   // READ_INFO::found_end_of_line
	startLine  bool   // READ_INFO::start_of_line: look for LINES STARTING BY first
	enclosed   bool   // the current field began with the enclosure

	carry, work []byte // undecided bytes kept for the next piece
	rows        int64
	err         error

	// special[k][c]: byte c may end a run of plain bytes in state kind k.
	special [4][256]bool
	lead    [256]uint8 // multi-byte lead bytes: the character's length (2..4)
}

const (
	spBody    = iota // unenclosed field
	spEnc            // enclosed field
	spNewline        // next_line()
	spStart          // find_start_of_fields()
)

// New returns a transformer for a file read as f, taking keys from ids.
// f must pass Check.
func New(f Format, ids IDs) *Transformer {
	t := &Transformer{format: f, ids: ids, lineTerm: f.lineTerm(), startLine: f.LineStart != "", readState: stRecord}
	switch {
	case f.LineTerm == "":
		t.skipRec = f.Ignore // no lines: IGNORE skips records
	case t.lineTerm != "" && f.Ignore > 0:
		t.readState, t.skipLines = stSkipLine, f.Ignore
	}
	// (A line terminator equal to the field terminator is reset by the
	// server after IGNORE has been decided on lines: next_line() then
	// returns at once, and IGNORE skips nothing.)
	mark := func(k int, b int) {
		if b >= 0 {
			t.special[k][b] = true
		}
	}
	mark(spBody, f.Escaped)
	mark(spBody, int(f.FieldTerm[0]))
	mark(spEnc, f.Escaped)
	mark(spEnc, f.Enclosed)
	mark(spNewline, f.Escaped)
	if t.lineTerm != "" {
		mark(spBody, int(t.lineTerm[0]))
		mark(spNewline, int(t.lineTerm[0]))
	}
	if f.LineStart != "" {
		mark(spStart, int(f.LineStart[0]))
	}
	if f.Charset != SingleByte {
		for c := 0xC2; c < 0xE0; c++ {
			t.lead[c] = 2
		}
		for c := 0xE0; c < 0xF0; c++ {
			t.lead[c] = 3
		}
		if f.Charset == UTF8MB4 {
			for c := 0xF0; c < 0xF5; c++ {
				t.lead[c] = 4
			}
		}
		for c := range t.lead {
			if t.lead[c] > 0 {
				t.special[spBody][c], t.special[spEnc][c], t.special[spNewline][c] = true, true, true
			}
		}
	}
	return t
}

// Rows is the number of keys written so far: the rows the server makes.
func (t *Transformer) Rows() int64 { return t.rows }

// Transform appends to dst the bytes to send for p, the next piece of the
// file. A few bytes may be held back until the next call (a terminator
// split between pieces). On an error from the ID source it returns an
// *Error, and dst ends with a record the rendered statement refuses (see
// Error); the rest of the file must not be sent.
func (t *Transformer) Transform(dst, p []byte) ([]byte, error) {
	if t.err != nil {
		return dst, t.err
	}
	data := p
	if len(t.carry) > 0 {
		t.work = append(append(t.work[:0], t.carry...), p...)
		data = t.work
	}
	dst, stop := t.run(dst, data, false)
	t.carry = append(t.carry[:0], data[stop:]...)
	if cap(t.work) > 1<<16 {
		t.work = nil
	}
	return dst, t.err
}

// Finish appends to dst what is still held back, at the end of the file.
func (t *Transformer) Finish(dst []byte) ([]byte, error) {
	if t.err != nil {
		return dst, t.err
	}
	dst, _ = t.run(dst, t.carry, true)
	t.carry = t.carry[:0]
	return dst, t.err
}

// run passes data on to dst with the keys inserted, as far as it can
// decide; stop is where the undecided bytes begin. fin: data ends the
// file (the server's GET returns EOF after it). The longer states have a
// step of their own, which returns where it got to in data and more when
// it needs bytes beyond data.
func (t *Transformer) run(dst, data []byte, fin bool) (out []byte, stop int) {
	i, emitted, n := 0, 0, len(data)
	for more := false; !more; {
		switch t.readState {
		case stDone:
			return append(dst, data[emitted:]...), n
		case stSkipLine, stNextLine:
			i, more = t.nextLine(data, i, fin)
		case stFindStart:
			i, more = t.findStart(data, i, fin)
		// A record's start, a field's start and first byte, and its
		// bytes: each state falls through to the next it moves to.
		case stRecord:
			t.fieldsRead = 0
			t.readState = stFieldStart
			fallthrough
		case stFieldStart:
			if t.foundEOL {
				t.endRecord(false)
				break
			}
			if t.startLine {
				t.startLine = false
				t.readState = stFindStart
				break
			}
			t.readState = stFirst
			fallthrough
		case stFirst:
			// Before a record's first field, its key.
			if more = i >= n; more {
				break
			}
			if t.fieldsRead == 0 {
				if dst, emitted = t.key(dst, data, i, emitted); t.readState == stDone {
					continue
				}
			}
			t.enclosed = int(data[i]) == t.format.Enclosed
			if t.enclosed {
				i++
			}
			t.readState = stBody
			fallthrough
		case stBody:
			i, more = t.body(data, i, fin)
		}
	}
	// The current step needs bytes beyond data: at the end of the file
	// the server's reader stops there (it reads no record after EOF).
	if fin {
		t.readState = stDone
		return append(dst, data[emitted:]...), n
	}
	return append(dst, data[emitted:i]...), i
}

// nextLine is the step of stSkipLine and stNextLine, next_line(): it reads
// to the end of the line.
func (t *Transformer) nextLine(data []byte, i int, fin bool) (int, bool) {
	n := len(data)
	sp := &t.special[spNewline]
	for i < n && !sp[data[i]] {
		i++
	}
	if i >= n {
		return i, true
	}
	c := data[i]
	if k := int(t.lead[c]); k > 0 {
		// next_line() reads the character's length in bytes,
		// whatever they are (measured on 10.11: "\xe2\n\n" hides
		// both line terminators).
		if i+k > n {
			return i, true
		}
		return i + k, false
	}
	if int(c) == t.format.Escaped {
		if i+2 > n {
			return i, true
		}
		return i + 2, false
	}
	ok, need := match(data, i, t.lineTerm, fin)
	if need {
		return i, true
	}
	if !ok {
		return i + 1, false
	}
	i += len(t.lineTerm)
	if t.readState == stSkipLine {
		if t.skipLines--; t.skipLines > 0 {
			return i, false
		}
	}
	t.readState = stRecord
	return i, false
}

// findStart is the step of stFindStart, find_start_of_fields(): it looks
// for LINES STARTING BY.
func (t *Transformer) findStart(data []byte, i int, fin bool) (int, bool) {
	n := len(data)
	ls := t.format.LineStart
	sp := &t.special[spStart]
	for i < n && !sp[data[i]] {
		i++
	}
	if i >= n {
		return i, true
	}
	ok, need := match(data, i, ls, fin)
	if need {
		return i, true
	}
	if !ok {
		return i + 1, false
	}
	t.readState = stFirst
	return i + len(ls), false
}

// key writes, before a record's first field at data[i], its key (to
// dst, after the data from emitted): a dummy "0" for a record IGNORE
// skips, else the next ID; on an error from the ID source, a "0" that
// fails the statement, and the state is stDone with all of data emitted.
func (t *Transformer) key(dst, data []byte, i, emitted int) (out []byte, emitted2 int) {
	ft := t.format.FieldTerm
	dst = append(dst, data[emitted:i]...)
	if t.skipRec > 0 {
		// A record IGNORE skips (no line terminator: IGNORE counts
		// records) is read with one more field too, so it gets one;
		// the statement never evaluates it.
		return append(append(dst, '0'), ft...), i
	}
	id, err := t.ids.Next()
	if err != nil {
		// A key "0" the statement turns into an error; nothing
		// after it is sent.
		t.err = &Error{Err: err}
		t.readState = stDone
		return append(append(dst, '0'), ft...), len(data)
	}
	t.insert = append(strconv.AppendInt(t.insert[:0], id, 10), ft...)
	t.rows++
	return append(dst, t.insert...), i
}

// body is the step of stBody, a field's bytes: it reads on to the byte
// that ends the field (then the state is the next one) or to where it
// needs bytes beyond data.
func (t *Transformer) body(data []byte, i int, fin bool) (int, bool) {
	n := len(data)
	f := &t.format
	sp := &t.special[spBody]
	if t.enclosed {
		sp = &t.special[spEnc]
	}
	for {
		for i < n && !sp[data[i]] {
			i++
		}
		if i >= n {
			return i, true
		}
		c := data[i]
		if int(c) == f.Escaped {
			if i+1 >= n {
				return i, true
			}
			if f.Escaped != f.Enclosed || int(data[i+1]) == f.Escaped {
				i += 2 // an escaped byte is data
				continue
			}
			// ESCAPED BY = ENCLOSED BY, not doubled: the byte is the
			// enclosure (the server pushes the next byte back).
		}
		if t.enclosed && int(c) == f.Enclosed {
			j, more := t.enclosure(data, i, fin)
			if more || t.readState != stBody {
				return j, more
			}
			i = j
			continue
		}
		if !t.enclosed && t.lineTerm != "" && c == t.lineTerm[0] {
			ok, need := match(data, i, t.lineTerm, fin)
			if need {
				return i, true
			}
			if ok {
				t.foundEOL = true
				t.fieldRead()
				return i + len(t.lineTerm), false
			}
		}
		if !t.enclosed && c == f.FieldTerm[0] {
			ok, need := match(data, i, f.FieldTerm, fin)
			if need {
				return i, true
			}
			if ok {
				t.fieldRead()
				return i + len(f.FieldTerm), false
			}
		}
		if k := int(t.lead[c]); k > 0 {
			// read_mbtail(): continuation bytes are taken until the
			// character is whole; a byte that is not one is pushed
			// back and read again. (A whole character out of range
			// pushes back its last byte, which is then data alone:
			// the same bytes either way.)
			j := continued(data, i, k)
			if j < i+k && j >= n {
				return i, true
			}
			i = j
			continue
		}
		i++
	}
}

// enclosure is body's step at the enclosure byte of an enclosed field, at
// data[i]: doubled it is data; before the line or field terminator it
// ends the field; else it is data and the next byte is read again.
func (t *Transformer) enclosure(data []byte, i int, fin bool) (int, bool) {
	if i+1 >= len(data) {
		return i, true // at the end of the file the field and line end
	}
	c2 := data[i+1]
	if int(c2) == t.format.Enclosed {
		return i + 2, false // doubled: one enclosure byte of data
	}
	if t.lineTerm != "" && c2 == t.lineTerm[0] {
		ok, need := match(data, i+1, t.lineTerm, fin)
		if need {
			return i, true
		}
		if ok {
			t.foundEOL = true
			t.fieldRead()
			return i + 1 + len(t.lineTerm), false
		}
	}
	if ft := t.format.FieldTerm; c2 == ft[0] {
		ok, need := match(data, i+1, ft, fin)
		if need {
			return i, true
		}
		if ok {
			t.fieldRead()
			return i + 1 + len(ft), false
		}
	}
	return i + 1, false // the enclosure byte is data; the next byte is read again
}

// fieldRead: read_field() returned a field.
func (t *Transformer) fieldRead() {
	t.fieldsRead++
	if t.fieldsRead == t.format.Fields {
		t.endRecord(true)
		return
	}
	t.readState = stFieldStart
}

// endRecord is read_sep_field's end of a record: all fields read, or
// read_field() returned 1 after t.fieldsRead fields.
func (t *Transformer) endRecord(all bool) {
	if t.skipRec > 0 {
		t.skipRec-- // skipped without next_line()
		t.readState = stRecord
		return
	}
	if !all && t.fieldsRead == 0 {
		t.readState = stDone
		return
	}
	// next_line()
	t.startLine = t.format.LineStart != ""
	switch {
	case t.foundEOL:
		t.foundEOL = false
		t.readState = stRecord
	case t.lineTerm == "":
		t.readState = stRecord
	default:
		t.readState = stNextLine
	}
}

// match compares pat with data from i: need means data ends before it can
// tell (and the file goes on).
func match(data []byte, i int, pat string, fin bool) (ok, need bool) {
	for j := 0; j < len(pat); j++ {
		if i+j >= len(data) {
			return false, !fin
		}
		if data[i+j] != pat[j] {
			return false, false
		}
	}
	return true, false
}

// continued returns the end of the character whose k-byte lead is at
// data[i] as read_mbtail() reads it: past the continuation bytes
// (0x80-0xBF) that follow, at most k-1 of them; the first byte that is not
// one is pushed back (measured on 10.11: "\xe2\n" ends a field's
// character at once).
func continued(data []byte, i, k int) int {
	j := i + 1
	for j < len(data) && j < i+k && data[j]^0x80 < 0x40 {
		j++
	}
	return j
}
