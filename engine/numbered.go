package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// Numbered plans (rewriter/numbered.go): INSERT ... SELECT into a rule
// table, NEXTVAL for many rows. The engine counts the values the statement
// needs, reserves a block of IDs per counter, sends the statement, and
// counts again with more room when the server says the rows outgrew the
// count (the statement was rolled back; nothing was written).

// blocker is implemented by ID sources that reserve blocks of IDs
// (allocator.Sequences).
type blocker interface {
	// Block reserves n IDs of tag: the k-th is first+k when run is 0, else
	// first + (k/run)*stride + k%run.
	Block(ctx context.Context, tag string, n int64) (first, run, stride int64, err error)
}

// advancer is implemented by ID sources whose tags move past explicit keys
// (allocator.Sequences).
type advancer interface {
	Advance(ctx context.Context, tag string, v int64) error
}

// numberedAttempts bounds how often a numbered statement is counted and
// sent again after its rows outgrew the count.
const numberedAttempts = 5

// runNumbered executes a Numbered plan for text.
func (e *Engine) runNumbered(ctx context.Context, s Session, st *state, plan *rewriter.Plan, text string) (bool, error) {
	bs, err := s.Blocking(ctx) // it talks to the backend before the statement
	if err != nil {
		return false, err
	}
	if err := e.checkKeys(ctx, s, &st.lastColumns, plan.Filled); err != nil {
		return false, err
	}
	handled, err := e.numberedAttempts(ctx, s, st, plan, numberedRun{
		count: func() ([][]*string, error) {
			if _, _, err := bs.BackendExec(ctx, plan.InitQuery()); err != nil {
				return nil, fmt.Errorf("leafproxy: set the row counters: %w", err)
			}
			rows, err := bs.BackendQuery(ctx, plan.CountQuery())
			if err != nil {
				return nil, countError(err)
			}
			return rows, nil
		},
		send: func(blocks []rewriter.Block) (bool, error) {
			st.rendered = plan.RenderNumbered(st.rendered[:0], text, blocks)
			retried, err := bs.RelayQueryRetry(st.rendered, rewriter.OverflowError)
			st.trim()
			return retried, err
		},
	})
	if w := ignoreWarning(text, plan.Statements, err); w != "" {
		return true, s.RelayQuery([]byte(w)) // keys past the column's end: nothing was sent
	}
	return handled, err
}

// numberedRun is what differs between a text and a prepared numbered
// statement: how its values are counted (the count's row), and how it is
// sent over a set of blocks (retried: the rows outgrew the blocks, the
// server rolled the statement back).
type numberedRun struct {
	count func() ([][]*string, error)
	send  func(blocks []rewriter.Block) (retried bool, err error)
}

// numberedAttempts counts, reserves and sends until the rows fit their
// blocks: the steps common to text and prepared numbered statements.
func (e *Engine) numberedAttempts(ctx context.Context, s Session, st *state, plan *rewriter.Plan, run numberedRun) (bool, error) {
	bl, ok := e.idSource.(blocker)
	if !ok {
		return false, &notSupportedError{msg: "leafproxy: this ID source cannot reserve blocks of IDs for statements that number many rows"}
	}
	if err := st.resolveLast(ctx); err != nil {
		return false, err
	}
	var err error
	if st.limits, err = e.keyLimits(ctx, s, &st.lastColumns, plan.Filled, st.limits[:0]); err != nil {
		return false, err
	}
	blocks := make([]rewriter.Block, len(plan.Counters))
	room := make([]int64, len(plan.Counters))
	for attempt := 1; ; attempt++ {
		rows, err := run.count()
		if err != nil {
			return false, err
		}
		counts, explicit, err := parseCounts(rows, len(plan.Counters), plan.CountsExplicit)
		if err != nil {
			return false, err
		}
		for _, c := range plan.Counters {
			if c.Key && explicit > 0 {
				if err := e.advance(ctx, st.own(c.Tag), explicit); err != nil {
					return false, err
				}
			}
		}
		for i, c := range plan.Counters {
			n := max(counts[i], room[i])
			blocks[i] = rewriter.Block{N: n, First: 1}
			if n == 0 {
				continue
			}
			te := st.ownTag(c.Tag)
			tag := te.name
			first, runLen, stride, err := bl.Block(ctx, tag, n)
			if err != nil {
				if oe := atEnd(st.limits, tag, int(n), err); oe != nil && c.Key {
					return false, oe
				}
				return false, fmt.Errorf("reserve %d ID(s) of %q: %w", n, tag, err)
			}
			st.countIDs(te, n)
			blocks[i] = rewriter.Block{First: first, N: n, Run: runLen, Stride: stride}
			if c.Key && len(st.limits) > 0 {
				if err := checkBlock(st.limits, tag, blocks[i]); err != nil {
					return false, err
				}
			}
		}
		if attempt == 1 {
			st.countStmt(StmtNumbered)
		}
		retried, err := run.send(blocks)
		if err != nil {
			return true, err
		}
		if !retried {
			st.noteNumbered(plan, blocks)
			return true, nil
		}
		if ok, table := e.retrySafe(ctx, st, plan.Writes); !ok {
			return true, overflowAnswer(s, table)
		}
		if attempt == numberedAttempts {
			return true, s.WriteError(mysql.ER_UNKNOWN_ERROR, "HY000", fmt.Sprintf(
				"leafproxy: the rows of this statement kept outnumbering the IDs reserved for them (%d attempts: rows are being added "+
					"between the count and the statement, or its SELECT gives other rows each time); nothing was written, try again", attempt))
		}
		e.numberedRetries.Add(1)
		for i := range room {
			room[i] = max(2*blocks[i].N, 16)
		}
	}
}

// advance moves tag past the explicit key v, when the ID source can.
func (e *Engine) advance(ctx context.Context, tag string, v int64) error {
	a, ok := e.idSource.(advancer)
	if !ok || v <= 0 {
		return nil
	}
	if err := a.Advance(ctx, tag, v); err != nil {
		if errors.Is(err, proxy.ErrWouldBlock) {
			return err
		}
		return fmt.Errorf("move sequence %q past the explicit key %d: %w", tag, v, err)
	}
	return nil
}

// countError is the client's error for a failed count: the server's own,
// except the CTE's column-count error, which the statement itself would
// have reported as 1136.
func countError(err error) error {
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == 4002 {
		return &mysql.MyError{Code: mysql.ER_WRONG_VALUE_COUNT_ON_ROW, State: "21S01", Message: "Column count doesn't match value count at row 1"}
	}
	if errors.As(err, &me) {
		return err
	}
	return fmt.Errorf("leafproxy: count the rows of the statement: %w", err)
}

// parseCounts reads the count query's row: n counts, then the largest
// explicit key when explicit.
func parseCounts(rows [][]*string, n int, explicit bool) (counts []int64, maxKey int64, err error) {
	want := n
	if explicit {
		want++
	}
	if len(rows) != 1 || len(rows[0]) != want {
		return nil, 0, fmt.Errorf("leafproxy: counting the rows of the statement gave %d row(s), want one of %d column(s)", len(rows), want)
	}
	counts = make([]int64, n)
	for i := range n {
		if p := rows[0][i]; p != nil {
			v, err := strconv.ParseInt(*p, 10, 64)
			if err != nil || v < 0 {
				return nil, 0, fmt.Errorf("leafproxy: counting the rows of the statement gave %q", *p)
			}
			counts[i] = v
		}
	}
	if explicit {
		if p := rows[0][n]; p != nil {
			// A key that is not an integer (a string column) cannot be
			// compared with IDs: nothing to move past.
			if f, err := strconv.ParseFloat(*p, 64); err == nil && f >= 1 && f < 9.2e18 {
				maxKey = int64(f)
			}
		}
	}
	return counts, maxKey, nil
}

// pendingLast is a LASTVAL that a numbered statement left in its counter:
// the server knows how many of the block's IDs it took.
type pendingLast struct {
	counter int
	block   rewriter.Block
}

// noteNumbered records, for LASTVAL, which counter holds the last value of
// each NEXTVAL tag of the statement just run (read on demand: reading it
// now would be a statement the client did not send, changing ROW_COUNT()).
func (st *state) noteNumbered(plan *rewriter.Plan, blocks []rewriter.Block) {
	for i, c := range plan.Counters {
		if c.Key || blocks[i].N == 0 {
			continue
		}
		if st.pending == nil {
			st.pending = map[string]pendingLast{}
		}
		st.pending[st.own(c.Tag)] = pendingLast{counter: i, block: blocks[i]}
	}
}

// resolveLast reads the counters of the last numbered statement for the
// tags whose LASTVAL they hold (before the next one resets them).
func (st *state) resolveLast(ctx context.Context) error {
	if len(st.pending) == 0 {
		return nil
	}
	bs, err := st.session.Blocking(ctx)
	if err != nil {
		return err
	}
	q := "SELECT "
	tags := make([]string, 0, len(st.pending))
	for tag, p := range st.pending {
		if len(tags) > 0 {
			q += ", "
		}
		q += "@" + rewriter.OverflowVar + strconv.Itoa(p.counter)
		tags = append(tags, tag)
	}
	rows, err := bs.BackendQuery(ctx, q)
	if err != nil {
		return fmt.Errorf("leafproxy: read the last sequence values of the previous statement: %w", err)
	}
	for i, tag := range tags {
		p := st.pending[tag]
		if len(rows) == 1 && i < len(rows[0]) && rows[0][i] != nil {
			if used, err := strconv.ParseInt(*rows[0][i], 10, 64); err == nil && used > 0 {
				st.setLast(tag, p.block.At(min(used, p.block.N)-1))
			}
		}
	}
	clear(st.pending)
	return nil
}

// transactional engines roll a failed statement back, so a numbered
// statement whose rows outgrew the count can be sent again.
var transactional = map[string]bool{"innodb": true, "xtradb": true, "rocksdb": true, "tokudb": true, "ndbcluster": true, "ndb": true}

// retrySafe reports whether every table of writes is transactional (read
// from information_schema, cached with the native-sequence answers); the
// first that is not (or cannot be found) is named.
func (e *Engine) retrySafe(ctx context.Context, st *state, writes []rewriter.SeqName) (bool, string) {
	for _, w := range writes {
		key := rewriter.SeqName{DB: w.DB, Name: "\x00engine:" + w.Name}
		c := &e.natives
		c.mu.Lock()
		ent, ok := c.entries[key]
		c.mu.Unlock()
		if !ok || time.Since(ent.checkedAt) >= nativeTTL {
			bs, err := st.session.Blocking(ctx)
			if err != nil {
				return false, qualifiedName(w)
			}
			rows, err := bs.BackendQuery(ctx, "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = "+quote(w.DB)+
				" AND TABLE_NAME = "+quote(w.Name))
			if err != nil {
				return false, qualifiedName(w)
			}
			ent = nativeEntry{checkedAt: time.Now()}
			if len(rows) == 1 && len(rows[0]) == 1 && rows[0][0] != nil {
				ent.native = transactional[strings.ToLower(*rows[0][0])]
			}
			c.mu.Lock()
			if c.entries == nil || len(c.entries) > 10000 {
				c.entries = map[rewriter.SeqName]nativeEntry{}
			}
			c.entries[rewriter.SeqName{DB: strings.Clone(key.DB), Name: strings.Clone(key.Name)}] = ent
			c.mu.Unlock()
		}
		if !ent.native {
			return false, qualifiedName(w)
		}
	}
	return true, ""
}

// overflowAnswer is the client's error when a numbered statement that
// outgrew its count cannot be sent again: a table of it keeps what the
// failed attempt wrote.
func overflowAnswer(s Session, table string) error {
	return s.WriteError(mysql.ER_UNKNOWN_ERROR, "HY000", fmt.Sprintf(
		"leafproxy: the rows of this statement outnumbered the IDs reserved for them (rows were added between the proxy's count and the statement); "+
			"%s is not transactional, so the rows written before the failure may remain, as for any failed statement on it, and the proxy does not send it again", table))
}
