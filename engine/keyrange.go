package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// The end of a key column. AUTO_INCREMENT on a full column answers 167
// (SQLSTATE 22003, "Out of range value for column 'id' at row N") and
// writes nothing; a generated key past the column's maximum sent to the
// server instead would be clamped to the maximum in a non-strict sql_mode
// (REPLACE then replaces that row, ODKU updates it) or refused with 1264.
// So the engine compares every drawn key with the largest value of the
// column it fills, after drawing and before anything is sent, and answers
// 167 itself.

// colMax is the largest value a column of type t holds, at most
// math.MaxInt64 (IDs are BIGINT); false for a type that holds no IDs
// (checkKeys refuses those).
func colMax(t colType) (int64, bool) {
	var b uint
	switch t.dataType {
	case "tinyint":
		b = 7
	case "smallint":
		b = 15
	case "mediumint":
		b = 23
	case "int", "integer":
		b = 31
	case "bigint":
		b = 63
	}
	if b > 0 {
		if strings.Contains(t.columnType, "unsigned") {
			b++
		}
		if b >= 63 {
			return math.MaxInt64, true
		}
		return 1<<b - 1, true
	}
	if t.dataType == "decimal" || t.dataType == "numeric" {
		if t.scale != 0 || t.precision <= 0 {
			return 0, false
		}
		if t.precision >= 19 {
			return math.MaxInt64, true
		}
		return int64(math.Pow10(int(t.precision))) - 1, true
	}
	return 0, false
}

// keyLimit is the largest key the columns a statement fills from tag can
// hold: the smallest of them (col names it).
type keyLimit struct {
	tag    string
	max    int64
	db     string
	table  string
	column string
	typ    string
}

// keyLimits appends to dst the limit of every tag whose IDs fill a key
// column of filled, from the column cache (as checkKeys reads it: an
// entry older than the cache's TTL is read again), before any ID is
// drawn: on an event loop a read is ErrWouldBlock with nothing drawn.
func (e *Engine) keyLimits(ctx context.Context, s Session, memo *colMemo, filled []rewriter.Filled, dst []keyLimit) ([]keyLimit, error) {
	for _, f := range filled {
		ent, err := e.columns.entry(ctx, s, memo, f.DB, f.Table)
		if err != nil {
			return dst, err
		}
		for i, c := range ent.cols {
			if !strings.EqualFold(c, f.Column) {
				continue
			}
			if i >= len(ent.maxes) {
				break
			}
			mx := ent.maxes[i]
			if mx <= 0 || mx == math.MaxInt64 {
				break
			}
			found := false
			for j := range dst {
				if dst[j].tag == f.Tag {
					found = true
					if mx < dst[j].max {
						dst[j] = keyLimit{tag: f.Tag, max: mx, db: f.DB, table: f.Table, column: c, typ: ent.types[i].columnType}
					}
				}
			}
			if !found {
				dst = append(dst, keyLimit{tag: f.Tag, max: mx, db: f.DB, table: f.Table, column: c, typ: ent.types[i].columnType})
			}
			break
		}
	}
	return dst, nil
}

// checkIDs returns a 167 when an ID of ids (drawn from tag, in row order)
// is beyond tag's limit in limits; first is the number of the row ids
// start at (1 for a statement's first).
func checkIDs(limits []keyLimit, tag string, ids []int64, first int) error {
	for i := range limits {
		l := &limits[i]
		if l.tag != tag {
			continue
		}
		for k, id := range ids {
			if id > l.max {
				oe := l.outOfRange(first+k, id)
				oe.AllPast = first+k == 1
				return oe
			}
		}
	}
	return nil
}

// outOfRange is the 167 for id, the key of row row.
func (l *keyLimit) outOfRange(row int, id int64) *OutOfRangeError {
	return &OutOfRangeError{Tag: l.tag, Column: l.column, Table: l.db + "." + l.table, Type: l.typ, Max: l.max, ID: id, Row: row}
}

// OutOfRangeError is AUTO_INCREMENT's answer on a full key column, 167
// (SQLSTATE 22003) with the server's words, and what the proxy adds: the
// tag and the column it has run past. Nothing was sent.
type OutOfRangeError struct {
	Tag, Table, Column, Type string
	Max, ID                  int64
	Row                      int
	// Cause: the ID source's own 167 (it fetches nothing past the
	// widest key column filled from the tag), when no ID was drawn.
	Cause error
	// AllPast: every key of the statement from the tag is past the end
	// (no row would have been written): an INSERT IGNORE is then answered
	// with a warning, as AUTO_INCREMENT answers it; when some would fit,
	// with this error (AUTO_INCREMENT would write those rows).
	AllPast bool
}

func (e *OutOfRangeError) Error() string {
	if e.Cause != nil {
		left := "no ID left that fits"
		if e.Row > 1 {
			left = fmt.Sprintf("only %d IDs left that fit, fewer than the statement's keys", e.Row-1)
		}
		return "Out of range value for column '" + e.Column + "' at row " + strconv.Itoa(e.Row) +
			fmt.Sprintf(" (leafproxy: tag '%s' is at the end of %s.%s %s, which holds at most %d: it has "+left+" "+
				"and fetches no segment past the widest key column filled from it; nothing was written; "+
				"widen the column, e.g. to BIGINT, or move the rule to a new tag)", e.Tag, e.Table, e.Column, e.Type, e.Max)
	}
	return "Out of range value for column '" + e.Column + "' at row " + strconv.Itoa(e.Row) +
		fmt.Sprintf(" (leafproxy: tag '%s' is past the end of %s.%s %s, which holds at most %d: the next key would be %d; "+
			"nothing was written; widen the column, e.g. to BIGINT, or move the rule to a new tag)", e.Tag, e.Table, e.Column, e.Type, e.Max, e.ID)
}

func (e *OutOfRangeError) Code() uint16     { return 167 }
func (e *OutOfRangeError) SQLState() string { return "22003" }

// checkBlock is checkIDs for a numbered block: every ID reserved, as any
// may number a row.
func checkBlock(limits []keyLimit, tag string, b rewriter.Block) error {
	if b.N <= 0 {
		return nil
	}
	for i := range limits {
		l := &limits[i]
		if l.tag != tag || b.At(b.N-1) <= l.max {
			continue
		}
		// The first row past the end (IDs ascend within a block).
		k := sort.Search(int(b.N), func(k int) bool { return b.At(int64(k)) > l.max })
		oe := l.outOfRange(k+1, b.At(int64(k)))
		oe.AllPast = k == 0
		return oe
	}
	return nil
}

// atEnd turns the ID source's 167 (the tag is at its end: no segment past
// the widest key column filled from it) into the statement's, naming the
// column; nil for any other error, or a tag without a limit here.
//
// n is how many IDs were asked for: with one, no key of the statement fit.
// With more, the ID source says how many would have fit (its IDs of one
// statement are one run, which it does not split at the end: the error's
// Fits), and the row after them is the one the 167 names, as
// AUTO_INCREMENT's.
func atEnd(limits []keyLimit, tag string, n int, err error) *OutOfRangeError {
	var se proxy.SQLError
	if err == nil || !errors.As(err, &se) || se.Code() != 167 {
		return nil
	}
	row, allPast := 1, n == 1
	var f interface{ Fits() int64 }
	if errors.As(err, &f) && f.Fits() >= 0 && f.Fits() < int64(n) {
		row, allPast = int(f.Fits())+1, f.Fits() == 0
	}
	for i := range limits {
		if l := &limits[i]; l.tag == tag {
			return &OutOfRangeError{Tag: l.tag, Column: l.column, Table: l.db + "." + l.table, Type: l.typ, Max: l.max, Row: row, Cause: err, AllPast: allPast}
		}
	}
	return nil
}

// ignoreWarning is what an INSERT IGNORE whose key is past its column's
// end is answered with, as AUTO_INCREMENT answers it: no row, no error,
// warning 167. The server raises it itself (SIGNAL with a warning's
// SQLSTATE class), so SHOW WARNINGS shows it; "" when text is not a lone
// INSERT IGNORE or err is not a 167 on a key.
func ignoreWarning(text string, statements int, err error) string {
	if statements != 1 || !insertIgnore(text) {
		return ""
	}
	return signalWarning(err)
}

// signalWarning is the statement that makes the server answer OK with
// warning 167 for err, an OutOfRangeError where no key fit ("" for any
// other error).
func signalWarning(err error) string {
	var oe *OutOfRangeError
	if !errors.As(err, &oe) || !oe.AllPast || strings.ContainsAny(oe.Column, "\\'\x00") {
		return ""
	}
	return "SIGNAL SQLSTATE '01000' SET MYSQL_ERRNO = 167, MESSAGE_TEXT = 'Out of range value for column ''" +
		oe.Column + "'' at row " + strconv.Itoa(oe.Row) + "'"
}

// loadReplace reports whether a LOAD DATA statement says REPLACE after
// its file name (escapes: backslashes escape in string literals).
func loadReplace(text string, escapes bool) bool {
	i := sqltext.SkipToCode(text, 0)
	for _, kw := range [...]string{"LOAD", "DATA", "LOW_PRIORITY", "CONCURRENT", "LOCAL", "INFILE"} {
		if sqltext.HasKeyword(text[i:], kw) {
			i = sqltext.SkipToCode(text, i+len(kw))
		}
	}
	if i >= len(text) || text[i] != '\'' && text[i] != '"' {
		return false
	}
	end, _ := sqltext.QuotedEnd(text, i, escapes)
	return sqltext.HasKeyword(text[sqltext.SkipToCode(text, end):], "REPLACE")
}

// insertIgnore reports whether text starts with INSERT [LOW_PRIORITY |
// DELAYED | HIGH_PRIORITY] IGNORE.
func insertIgnore(text string) bool {
	i := sqltext.SkipToCode(text, 0)
	if !sqltext.HasKeyword(text[i:], "INSERT") {
		return false
	}
	i = sqltext.SkipToCode(text, i+len("INSERT"))
	for _, kw := range [...]string{"LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY"} {
		if sqltext.HasKeyword(text[i:], kw) {
			i = sqltext.SkipToCode(text, i+len(kw))
			break
		}
	}
	return sqltext.HasKeyword(text[i:], "IGNORE")
}
