package rewriter

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// What planning may cost. The lexer-only paths (the filter, the NEXTVAL
// select, the fast INSERT path, the memo) keep no more than a small
// multiple of the text, except for sequence calls: the planner keeps calls,
// edits and slots for each. The TiDB parser's cost grows with the tokens
// (its tree) and with the nesting (its stack, which a pooled parser keeps,
// and the planner's recursive walk), so an unbounded statement can take
// any amount of memory (figures in BENCHMARKS.md, "Plan memory"). So:
//
//   - a text with more than freeCalls sequence calls (counted as
//     hasSeqCall finds them, a byte scan) reserves CallCost per call from
//     Limits.Memory, a budget all sessions share (the engine's,
//     limits.plan_memory), before anything reads them;
//
// and before the parser reads a statement:
//
//   - its nesting of parentheses is counted by the lexer (allocation-free),
//     and more than Limits.MaxDepth levels is error 1473, at once;
//   - the memory the parse may take, parseMemory (TokenCost per token), is
//     reserved from Limits.Memory as well (charge: one reservation per
//     PlanQuery, as large as its costliest statement needs, given back
//     when it returns); a text that would need more than the whole budget
//     is refused, others wait their turn (the engine decides how long);
//   - a parser that read more than poolTokens tokens is not put back into
//     the pool, which bounds what the pool keeps per parser.

// Limits bound what planning a statement with the parser may cost; the
// zero value is DefaultMaxDepth and no memory budget.
type Limits struct {
	// MaxDepth is the deepest nesting of parentheses a statement the
	// parser must read may have (0: DefaultMaxDepth). Deeper ones are
	// error 1473 (CodeTooDeep).
	MaxDepth int
	// Memory, if set, is asked for a statement's parse cost before the
	// parser reads it and given it back after; an error from Acquire is
	// what PlanQuery and PlanPrepare return.
	Memory Budget
}

// Budget is memory shared by the sessions that plan statements with the
// parser (the engine's limits.plan_memory).
type Budget interface {
	// Acquire reserves n bytes, waiting for them if need be, or says why
	// not (error 1041, or proxy.ErrWouldBlock on an event loop, which
	// must not wait).
	Acquire(n int64) error
	// TryAcquire reserves n bytes if they are free now.
	TryAcquire(n int64) bool
	// Release gives back what Acquire and TryAcquire reserved.
	Release(n int64)
}

const (
	// DefaultMaxDepth: MariaDB itself refuses statements nested much
	// deeper (1064 "memory exhausted" past ~20,000 parentheses, 1436
	// "thread stack overrun" for a few hundred nested expressions).
	DefaultMaxDepth = 1000
	// DefaultPlanMemory is limits.plan_memory's default: 256 MiB, parses
	// of 500,000 tokens at once (a 50,000-row INSERT of (NEXTVAL('t'), 1)
	// rows).
	DefaultPlanMemory = 256 << 20
	// TokenCost is what a parse is charged per token: tree, parser stack
	// and walk per token with room to spare (TestParseCostCovers checks
	// that it covers what a parse takes).
	TokenCost = 512
	// CallCost is what a text is charged per sequence call before it is
	// read, past freeCalls of them: the calls, edits and slots the
	// planner keeps for each, with room to spare (TestParseCostCovers
	// checks it; the parse of what stands in for the call is charged per
	// token as any other).
	CallCost  = 2048
	freeCalls = 64
	// poolTokens: a parser that read more is not pooled. A pooled parser
	// keeps the last tree it built and its stack, both growing with the
	// tokens it read: this bounds them to a few hundred KiB.
	poolTokens = 1024
)

// parseMemory is what a parse of tokens tokens in a text of n bytes is
// charged: the tree, and the text's copies (the one with its sequence
// calls blanked, and the parser's).
func parseMemory(tokens, n int) int64 { return int64(tokens)*TokenCost + 2*int64(n) }

// charge is the plan memory one PlanQuery or PlanPrepare holds: for the
// sequence calls of a text that has many, then for the parse of each
// statement, as much as the costliest needs; given back when it returns.
type charge struct {
	budget     Budget
	held, base int64
	// rows: what many-row INSERTs into rule tables were charged
	// (rowsMemory); a Planner holds it past the call, until Release, as
	// the plan, its IDs and its rendered text live until then. parsed:
	// the costliest parse so far.
	rows, parsed int64
	// fullAt: 1 + the start of the statement charged EditRowCost a row.
	fullAt int
}

// RowCost is what a many-row INSERT into a rule table (a text of more
// than bigRows bytes) is charged per row before it is planned: what a
// Large plan's row costs (fast.go, rows.go): its offset (4 bytes) and the
// engine's drawn ID (8), with room to spare; the rendered text is written
// in pieces (TestRowCostCovers checks planning, IDs and rendering: 12
// bytes a row). A statement that is not planned Large (the parser's, a
// key column in the list, up to LargeRows bytes) is charged up to
// EditRowCost a row before it is planned (fullRows). Rows are counted by
// estimateRows.
const RowCost = 16

// EditRowCost is what a many-row INSERT's row costs planned as an edit:
// the edit (40 bytes), the Slot (48), the engine's drawn and assigned IDs
// and the 1062 retry's copy (24), the ID in the rendered text and in the
// proxy's copy of it (up to 2 x 22), with room to spare (~130 bytes a row
// measured).
const EditRowCost = 160

// rowsMemory is what a many-row INSERT text is charged (RowCost a row).
func rowsMemory(text string) int64 { return int64(estimateRows(text)) * RowCost }

// fullRows charges the rest of EditRowCost a row for the many-row INSERT
// text at start, which is not planned Large, once per statement.
func (c *charge) fullRows(env *Env, start int, text string) error {
	if c == nil || c.fullAt == start+1 {
		return nil
	}
	if err := c.addRows(env, int64(estimateRows(text))*(EditRowCost-RowCost)); err != nil {
		return err
	}
	c.fullAt = start + 1
	return nil
}

// estimateRows is about the number of rows of an INSERT text, from a byte
// scan: 1 + the ')' followed by a ',' (white space between), at most one
// per 3 bytes. Deep nesting alone, ((((1)))), counts no rows: the parser
// refuses it for its depth (1473), not for its memory.
func estimateRows(text string) int {
	n := 1
	for i := 0; ; {
		j := strings.IndexByte(text[i:], ')')
		if j < 0 {
			break
		}
		i += j + 1
		for i < len(text) && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r') {
			i++
		}
		if i < len(text) && text[i] == ',' {
			n++
		}
	}
	return min(n, len(text)/3+1)
}

// addRows charges n bytes for a many-row INSERT's rows, on top of what
// is held.
func (c *charge) addRows(env *Env, n int64) error {
	if c == nil || env.Limits.Memory == nil {
		return nil
	}
	c.budget = env.Limits.Memory
	c.rows += n
	return c.to(c.base + c.rows + c.parsed)
}

// calls charges for n sequence calls (quickPlan): nothing is held yet,
// so it may wait.
func (c *charge) calls(env *Env, n int) error {
	c.budget = env.Limits.Memory
	if c.budget == nil {
		return nil
	}
	c.base = int64(n) * CallCost
	return c.to(c.base)
}

// parse charges for a parse of cost n on top of the calls.
func (c *charge) parse(env *Env, n int64) error {
	if c == nil || env.Limits.Memory == nil {
		return nil
	}
	c.budget = env.Limits.Memory
	c.parsed = max(c.parsed, n)
	return c.to(c.base + c.rows + c.parsed)
}

// to makes what is held at least n. Holding some and waiting for more
// could stall with another session doing the same, each holding what the
// other waits for: what does not fit at once is waited for as a whole,
// after giving back what is held.
func (c *charge) to(n int64) error {
	if n <= c.held {
		return nil
	}
	if c.held > 0 {
		if c.budget.TryAcquire(n - c.held) {
			c.held = n
			return nil
		}
		c.budget.Release(c.held)
		c.held = 0
	}
	if err := c.budget.Acquire(n); err != nil {
		return err
	}
	c.held = n
	return nil
}

// done gives back what the call held.
func (c *charge) done() {
	if c.held > 0 {
		c.budget.Release(c.held)
	}
	*c = charge{}
}

// doneKeepRows gives back what the call held but the rows' charge.
func (c *charge) doneKeepRows() {
	keep := min(c.rows, c.held)
	if keep == 0 {
		c.done()
		return
	}
	if c.held > keep {
		c.budget.Release(c.held - keep)
	}
	*c = charge{budget: c.budget, held: keep}
}

// parsers holds idle parsers: a parser is not safe for concurrent use and
// costs ~20 KB to make.
var parsers = sync.Pool{New: func() any { return parser.New() }}

// stmtCost is what runFrom counted of a statement as it read it: its
// tokens (a sequence call as one) and its deepest nesting of parentheses.
type stmtCost struct {
	counted       bool
	tokens, depth int
}

// parseCost counts the tokens of the statement sql[start:end) (or takes
// what runFrom counted) and checks its nesting against Limits.MaxDepth;
// table and rule name what the statement is planned for (a rule table, or
// its first sequence call).
func (b *builder) parseCost(start, end int, hasRule bool, table string, rule Rule) (tokens int, err error) {
	if hasRule && end-start > bigRows {
		// Its rows are planned as edits (RowCost was charged before).
		if err := b.charge.fullRows(b.env, start, b.sql[start:end]); err != nil {
			return 0, err
		}
	}
	limit := b.env.Limits.MaxDepth
	if limit <= 0 {
		limit = DefaultMaxDepth
	}
	if c := b.cost; c.counted {
		if c.depth > limit {
			return c.tokens, b.tooDeep(limit, hasRule, table, rule)
		}
		return c.tokens, nil
	}
	l := lexer{sql: b.sql[:end], pos: start, mode: b.env.Mode, inBang: b.inBang}
	depth := 0
	for t := l.next(); t.kind != tEOF; t = l.next() {
		tokens++
		if t.kind != tPunct {
			continue
		}
		switch b.sql[t.start] {
		case '(':
			if depth++; depth > limit {
				return tokens, b.tooDeep(limit, hasRule, table, rule)
			}
		case ')':
			depth = max(depth-1, 0)
		}
	}
	return tokens, nil
}

// tooDeep is error 1473 for a statement nested deeper than limit.
func (b *builder) tooDeep(limit int, hasRule bool, table string, rule Rule) *Error {
	what, why := "this statement", "to plan it"
	if hasRule {
		what, why = "this INSERT into "+table, "to fill its key column "+rule.Column
	} else if len(b.calls) > 0 {
		call := b.sql[b.calls[0].start:b.calls[0].end]
		what, why = "the statement around "+call, "to give "+call+" its values"
	}
	return errorf(CodeTooDeep, "%s nests parentheses more than %d deep: %s the proxy must parse it, and it parses "+
		"up to limits.max_plan_depth = %d levels; flatten the expression, or raise limits.max_plan_depth", what, limit, why, limit)
}

// parse runs the parser, turning a panic into an error: the parser's
// value driver panics on some literals (a decimal of 80+ digits). A parser
// that panicked is not reused (*broken).
func parse(p *parser.Parser, src string, broken *bool) (stmts []ast.StmtNode, err error) {
	defer func() {
		if r := recover(); r != nil {
			*broken = true
			stmts, err = nil, fmt.Errorf("parser failed: %v", r)
		}
	}()
	if *broken {
		return nil, errors.New("parser failed")
	}
	stmts, _, err = p.ParseSQL(src)
	return stmts, err
}

func firstLine(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
