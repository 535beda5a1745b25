// Package loadfile gives each record of a LOAD DATA LOCAL INFILE file a
// generated key as the file streams through the proxy: a Transformer finds
// the records exactly as MariaDB's LOAD DATA reader (sql/sql_load.cc,
// READ_INFO and read_sep_field) finds them, and writes "<id><FIELDS
// TERMINATED BY>" where each record's first field begins, so the server
// reads the ID as one more first field. The rewriter renders the statement
// to match: the column list gets @__leaf_g first, and the SET list puts it
// in the key column (docs/loaddata.md).
//
// It is pure: bytes in, bytes out, IDs from a caller's IDs. Its memory is a
// few bytes of look-ahead (a terminator split over two pieces), whatever
// the size of the file or of its lines.
//
// Why the insertion is exact: at a record's start (after LINES STARTING BY)
// the server's reader is in a fresh state. The digits and the field
// terminator written there are read as one unenclosed field, ending in that
// terminator, after which the reader is in the same fresh state, now one
// field further: it reads the client's bytes exactly as it would have, with
// the statement's fields shifted by one. Check refuses the formats where
// that would not hold (a terminator with digits in it, a line terminator
// that starts like the field terminator, an escape character that starts
// the field terminator, fixed-width rows, non-ASCII separators). An ID is
// written only where the server would start a row: before a byte, never at
// the end of the file, never in IGNORE'd lines.
package loadfile

import "strings"

// Charset is what the reader must know of the file's character set
// (CHARACTER SET, or the session's character_set_database): in a
// multi-byte character set the reader takes a character's bytes together,
// so a byte that would otherwise end a field or a line can belong to a
// character.
type Charset uint8

const (
	// SingleByte: latin1, binary, ascii, cp1250, ...: every byte alone.
	SingleByte Charset = iota
	// UTF8MB3: MariaDB's utf8mb3 (utf8 by default).
	UTF8MB3
	// UTF8MB4: utf8mb4.
	UTF8MB4
)

// singleByte are MariaDB's character sets of one byte per character.
var singleByte = map[string]bool{
	"armscii8": true, "ascii": true, "binary": true, "cp1250": true, "cp1251": true, "cp1256": true,
	"cp1257": true, "cp850": true, "cp852": true, "cp866": true, "dec8": true, "geostd8": true,
	"greek": true, "hebrew": true, "hp8": true, "keybcs2": true, "koi8r": true, "koi8u": true,
	"latin1": true, "latin2": true, "latin5": true, "latin7": true, "macce": true, "macroman": true,
	"swe7": true, "tis620": true,
}

// CharsetOf maps a character set name (as the server spells it; "utf8"
// must be resolved by the caller, it depends on the server's old_mode) to
// how the reader treats it. ok is false for the character sets whose
// multi-byte characters the transformer does not follow (big5, cp932,
// gbk, sjis, gb2312, gb18030, euckr, ujis, eucjpms: some hide an ASCII
// byte inside a character; ucs2, utf16, utf32), and unknown names.
func CharsetOf(name string) (Charset, bool) {
	n := strings.ToLower(name)
	switch {
	case singleByte[n]:
		return SingleByte, true
	case n == "utf8mb3":
		return UTF8MB3, true
	case n == "utf8mb4":
		return UTF8MB4, true
	}
	return 0, false
}

// Format is how the statement says its file is read, after the server's
// defaults (FIELDS TERMINATED BY '\t', LINES TERMINATED BY '\n', ESCAPED BY
// '\\' unless sql_mode has NO_BACKSLASH_ESCAPES and ESCAPED BY is not
// given, no enclosure, no line prefix).
type Format struct {
	FieldTerm string // FIELDS TERMINATED BY
	Enclosed  int    // FIELDS [OPTIONALLY] ENCLOSED BY: the byte, or -1 for none
	Escaped   int    // the escape byte in force, or -1 for none
	LineStart string // LINES STARTING BY
	LineTerm  string // LINES TERMINATED BY, as given (may be empty)
	Ignore    uint64 // IGNORE n LINES / ROWS
	// Fields is how many fields the statement reads per record: its
	// column list's length (columns and @variables), or the table's
	// column count without one.
	Fields  int
	Charset Charset
}

// Check says why the transformer cannot key this format ("" if it can).
// The reasons are for an error message that names the clause.
func (f Format) Check() string {
	switch {
	case f.Fields < 1:
		return "it reads no fields"
	case f.FieldTerm == "":
		if f.Enclosed < 0 {
			return "FIELDS TERMINATED BY '' with no ENCLOSED BY reads fixed-width rows, which have no field separator to add the key with"
		}
		return "FIELDS TERMINATED BY '' has no field separator to add the key with"
	}
	for _, s := range []struct{ clause, v string }{
		{"FIELDS TERMINATED BY", f.FieldTerm}, {"LINES TERMINATED BY", f.LineTerm}, {"LINES STARTING BY", f.LineStart},
		{"FIELDS ENCLOSED BY", byteString(f.Enclosed)}, {"FIELDS ESCAPED BY", byteString(f.Escaped)},
	} {
		for i := 0; i < len(s.v); i++ {
			if s.v[i] >= 0x80 {
				return s.clause + " has a non-ASCII byte (the server warns it does not implement those either)"
			}
			if s.v[i] >= '0' && s.v[i] <= '9' && s.clause != "LINES STARTING BY" {
				return s.clause + " has a digit, which the generated keys are written with"
			}
		}
	}
	if lt := f.lineTerm(); lt != "" && lt[0] == f.FieldTerm[0] {
		return "LINES TERMINATED BY starts with the same byte as FIELDS TERMINATED BY, so the key's separator could end the line"
	}
	if f.Escaped >= 0 && f.Escaped == int(f.FieldTerm[0]) {
		return "FIELDS ESCAPED BY is the first byte of FIELDS TERMINATED BY, so the key's separator would be read as an escape"
	}
	return ""
}

// lineTerm is the line terminator the reader uses: none when it equals
// the field terminator (READ_INFO resets it then).
func (f Format) lineTerm() string {
	if f.LineTerm == f.FieldTerm {
		return ""
	}
	return f.LineTerm
}

func byteString(b int) string {
	if b < 0 {
		return ""
	}
	return string(rune(b))
}

// Error is the failure of a Transformer: the ID source's error. When it
// is returned, the bytes written so far end with a record whose key field
// is "0", which the rendered statement turns into an error, so the server
// refuses the whole statement.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }
