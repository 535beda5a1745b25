package rewriter

import (
	"strconv"
	"strings"
)

// Numbered plans: statements whose rows the proxy never sees, so it cannot
// splice one ID per row into the text. INSERT / REPLACE ... SELECT into a
// rule table (its key filled per row, as AUTO_INCREMENT would), NEXTVAL in
// the select list of INSERT ... SELECT, and NEXTVAL in UPDATE ... SET (one
// value per row, as MariaDB's native sequences give).
//
// The server numbers the rows itself. Before the statement the proxy
//
//  1. runs the plan's InitQuery (SET @__leafproxy_nI = 0 per counter),
//  2. runs its CountQuery: one row, one column per Counter, the number of
//     values the statement will need (rows to fill; for a key column that
//     the SELECT gives, the rows where it is NULL or 0), and, when
//     Plan.CountsExplicit, one more: the largest explicit key (or NULL),
//  3. reserves a Block of that many IDs per counter (consecutive for a
//     segment tag, whole ticks of its worker for a snowflake tag), and
//  4. sends RenderNumbered's text, in which each counter is the expression
//
//     IF((@v := @v + 1) <= N, <k-th ID of the block>, 18446744073709551615 + @v)
//
// so every value the statement takes lies inside the block. If the
// statement needs more values than were counted (rows added between the
// count and the statement, a SELECT whose rows are not the same twice),
// the last branch fails the statement with error 1690 before it is
// written (InnoDB rolls the statement back; the failure is
// OverflowError's); the proxy then counts again and reserves more.
//
// The first generated key of a rule table is LAST_INSERT_ID(<first>), as
// AUTO_INCREMENT reports it.
//
// For INSERT ... SELECT into a rule table the SELECT becomes a common table
// expression with its own column names, numbered in an outer SELECT that
// reads it in order (an ORDER BY without LIMIT gets LIMIT 18446744073709551615
// so that the server keeps the order, and the keys follow it as
// AUTO_INCREMENT's would):
//
//	INSERT INTO t (a, b, id) WITH __leafproxy_q (`__leafproxy_1`, `__leafproxy_2`)
//	  AS (SELECT x, y FROM s ORDER BY x LIMIT 18446744073709551615)
//	  SELECT `__leafproxy_1`, `__leafproxy_2`, IF(...) FROM __leafproxy_q

// Numbered is the Kind of a plan whose rows the server numbers (see above).
const Numbered Kind = LoadData + 1

// Counter is one place in a Numbered plan where each row (or evaluation)
// takes its own ID from a block the proxy reserves.
type Counter struct {
	Tag string
	// Key: the counter fills a rule table's key column (its first value
	// is reported as LAST_INSERT_ID()).
	Key bool
}

// Block is the IDs reserved for one counter: N IDs, the k-th (from 0)
// First+k when Run is 0, else First + (k/Run)*Stride + k%Run.
type Block struct {
	First, N, Run, Stride int64
}

// At is the k-th ID of the block (k from 0).
func (b Block) At(k int64) int64 {
	if b.Run <= 0 {
		return b.First + k
	}
	return b.First + (k/b.Run)*b.Stride + k%b.Run
}

// numbering is what a Numbered plan adds to Plan.
type numbering struct {
	edits []numberedEdit
	count string
	init  string
	// prepared: count is the prepared count (it stores its row in
	// variables, read by CountsQuery) and counters are rendered over the
	// variables BlockVars sets.
	prepared bool
}

// numberedEdit replaces text[start:end) with pre [counter expression] post.
type numberedEdit struct {
	start, end int
	counter    int // -1: no counter
	pre, post  string
}

// OverflowVar is the prefix of the user variables that count a Numbered
// plan's values; OverflowError recognises the error their guard raises.
const OverflowVar = "__leafproxy_n"

// countVar prefixes the variables a prepared count stores its row in;
// blockVar those holding a prepared statement's blocks.
const (
	countVar = "__leafproxy_c"
	blockVar = "__leafproxy_"
)

// OverflowError reports whether an error from the server (code and
// message) is the guard of a Numbered plan's counter: the statement needed
// more values than were counted and was rolled back; count again.
func OverflowError(code uint16, msg string) bool {
	return code == 1690 && strings.Contains(msg, "18446744073709551615 + @`"+OverflowVar)
}

// CountQuery is the query that counts a Numbered plan's values (see the
// package comment of numbered.go); "" for other plans.
func (p *Plan) CountQuery() string {
	if p.num == nil {
		return ""
	}
	return p.num.count
}

// InitQuery sets the plan's counters to 0; run it before CountQuery's
// statement is sent.
func (p *Plan) InitQuery() string {
	if p.num == nil {
		return ""
	}
	return p.num.init
}

// RenderNumbered appends the statement of a Numbered plan to dst, sql being
// the text the plan was made from and blocks[i] the IDs reserved for
// Counters[i]. A plan from PlanPrepare takes no blocks: its statement is
// prepared once and reads each execute's blocks from the variables
// BlockVars sets.
func (p *Plan) RenderNumbered(dst []byte, sql string, blocks []Block) []byte {
	last := 0
	for _, e := range p.num.edits {
		dst = append(dst, sql[last:e.start]...)
		dst = append(dst, e.pre...)
		if e.counter >= 0 {
			if p.num.prepared {
				dst = appendCounterVars(dst, e.counter, p.Counters[e.counter].Key)
			} else {
				dst = appendCounter(dst, e.counter, blocks[e.counter], p.Counters[e.counter].Key)
			}
		}
		dst = append(dst, e.post...)
		last = e.end
	}
	return append(dst, sql[last:]...)
}

// appendCounter writes counter i's expression over block b.
func appendCounter(dst []byte, i int, b Block, key bool) []byte {
	v := "@" + OverflowVar + strconv.Itoa(i)
	dst = append(dst, "IF(("...)
	dst = append(dst, v...)
	dst = append(dst, " := "...)
	dst = append(dst, v...)
	dst = append(dst, " + 1) <= "...)
	dst = strconv.AppendInt(dst, b.N, 10)
	dst = append(dst, ", "...)
	if key {
		dst = append(dst, "IF("...)
		dst = append(dst, v...)
		dst = append(dst, " = 1, LAST_INSERT_ID("...)
		dst = strconv.AppendInt(dst, b.First, 10)
		dst = append(dst, "), "...)
	}
	if b.Run <= 0 {
		dst = strconv.AppendInt(dst, b.First-1, 10)
		dst = append(dst, " + "...)
		dst = append(dst, v...)
	} else {
		dst = strconv.AppendInt(dst, b.First, 10)
		dst = append(dst, " + (("...)
		dst = append(dst, v...)
		dst = append(dst, " - 1) DIV "...)
		dst = strconv.AppendInt(dst, b.Run, 10)
		dst = append(dst, ") * "...)
		dst = strconv.AppendInt(dst, b.Stride, 10)
		dst = append(dst, " + (("...)
		dst = append(dst, v...)
		dst = append(dst, " - 1) MOD "...)
		dst = strconv.AppendInt(dst, b.Run, 10)
		dst = append(dst, ')')
	}
	if key {
		dst = append(dst, ')')
	}
	dst = append(dst, ", 18446744073709551615 + "...)
	dst = append(dst, v...)
	return append(dst, ')')
}

// appendCounterVars writes counter i's expression over the block held in
// the variables BlockVars sets (a prepared statement's).
func appendCounterVars(dst []byte, i int, key bool) []byte {
	n := strconv.Itoa(i)
	v := "@" + OverflowVar + n
	b, lim, run, stride := "@"+blockVar+"b"+n, "@"+blockVar+"lim"+n, "@"+blockVar+"r"+n, "@"+blockVar+"s"+n
	dst = append(dst, "IF(("+v+" := "+v+" + 1) <= "+lim+", "...)
	if key {
		dst = append(dst, "IF("+v+" = 1, LAST_INSERT_ID("+b+"), "...)
	}
	dst = append(dst, b+" + (("+v+" - 1) DIV "+run+") * "+stride+" + (("+v+" - 1) MOD "+run+")"...)
	if key {
		dst = append(dst, ')')
	}
	return append(dst, ", 18446744073709551615 + "+v+")"...)
}

// CountsQuery reads what a prepared plan's count stored: one row, as
// CountQuery's for a text plan.
func (p *Plan) CountsQuery() string {
	q := "SELECT "
	for i := range p.Counters {
		if i > 0 {
			q += ", "
		}
		q += "@" + countVar + strconv.Itoa(i)
	}
	if p.CountsExplicit {
		q += ", @" + countVar + "x"
	}
	return q
}

// segmentRun is the run of a consecutive block in the variable form:
// longer than any block, so (k DIV run) is 0 and (k MOD run) is k.
const segmentRun = 1 << 62

// BlockVars is the statement that sets a prepared plan's counters to 0 and
// its blocks' variables, to run before each execute.
func (p *Plan) BlockVars(dst []byte, blocks []Block) []byte {
	dst = append(dst, "SET "...)
	for i, b := range blocks {
		n := strconv.Itoa(i)
		if i > 0 {
			dst = append(dst, ", "...)
		}
		run, stride := b.Run, b.Stride
		if run <= 0 {
			run, stride = segmentRun, 0
		}
		dst = append(dst, "@"+OverflowVar+n+" = 0, @"+blockVar+"lim"+n+" = "...)
		dst = strconv.AppendInt(dst, b.N, 10)
		dst = append(dst, ", @"+blockVar+"b"+n+" = "...)
		dst = strconv.AppendInt(dst, b.First, 10)
		dst = append(dst, ", @"+blockVar+"r"+n+" = "...)
		dst = strconv.AppendInt(dst, run, 10)
		dst = append(dst, ", @"+blockVar+"s"+n+" = "...)
		dst = strconv.AppendInt(dst, stride, 10)
	}
	return dst
}

// initQuery is the SET of n counters to 0.
func initQuery(n int) string {
	var sb strings.Builder
	sb.WriteString("SET ")
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("@" + OverflowVar + strconv.Itoa(i) + " = 0")
	}
	return sb.String()
}
