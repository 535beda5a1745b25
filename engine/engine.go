// Package engine executes the rewriter's plans inside proxy sessions: it is
// the proxy.Interceptor that answers NEXTVAL/LASTVAL selects from the
// allocator, splices generated IDs into INSERT/REPLACE/UPDATE text, and
// gives prepared statements fresh IDs at every EXECUTE.
//
// Plan once, execute a small plan: the rewriter says "N IDs of tag T at
// these offsets"; the engine draws them (one NextN per tag), renders the
// text and relays it. Pass-through text costs one cheap filter and no
// allocation.
//
// Prepared statements: the rewriter renders generated values as session
// variables @__leaf_k, so the client-visible parameter count is unchanged;
// before each EXECUTE the engine pipelines `SET @__leaf_0=...` with the
// EXECUTE (one round trip). A prepared `SELECT NEXTVAL('t')` is prepared on
// the backend as a same-shaped `SELECT CAST(0 AS SIGNED) AS ...` so the
// client gets real metadata and a real statement id, and each EXECUTE is
// answered by the proxy in the binary protocol.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// IDSource draws IDs per tag; allocator.Sequences implements it.
type IDSource interface {
	NextN(ctx context.Context, tag string, n int, dst []int64) ([]int64, error)
}

// Engine is the proxy.Interceptor. One per server; per-session state lives
// in the session's value slot.
type Engine struct {
	ids   IDSource
	rules *rewriter.Rules
	cols  *columnCache
}

// New returns an engine drawing from ids and filling keys per rules (nil:
// no tables are filled; NEXTVAL still works).
func New(ids IDSource, rules *rewriter.Rules) *Engine {
	return &Engine{ids: ids, rules: rules, cols: newColumnCache(5 * time.Second)}
}

var _ proxy.Interceptor = (*Engine)(nil)

// state is one session's engine state.
type state struct {
	env     rewriter.Env
	ctx     context.Context // valid during one call, for Env.Columns
	sess    *proxy.Session
	modeStr string
	last    map[string]*int64 // LASTVAL per tag
	stmts   map[uint32]*prepared
	ids     []int64
	batches [][]int64
	flat    []int64
	buf     []byte
	row     []*int64
	rows    [1][]*int64
	names   []string
	one     []int64 // scratch for single draws
	vals    []int64
	colErr  error
}

type prepared struct {
	sql  string
	plan rewriter.Plan
	cols []string // Sequence plans: column names
}

func (e *Engine) state(s *proxy.Session) *state {
	if st, ok := s.Value().(*state); ok {
		return st
	}
	st := &state{last: map[string]*int64{}, stmts: map[uint32]*prepared{}, sess: s}
	st.env.Rules = e.rules
	st.env.Columns = func(db, table string) ([]string, error) {
		return e.cols.get(st.ctx, st.sess, db, table)
	}
	s.SetValue(st)
	return st
}

// refreshEnv brings the planner's view of the session up to date: current
// database and sql_mode (re-read by the proxy only after statements that may
// change them).
func (st *state) refreshEnv(ctx context.Context, s *proxy.Session) error {
	st.ctx = ctx
	db, err := s.CurrentDB(ctx)
	if err != nil {
		return err
	}
	st.env.DB = db
	mode, err := s.SQLMode(ctx)
	if err != nil {
		return fmt.Errorf("read sql_mode: %w", err)
	}
	if mode != st.modeStr || st.modeStr == "" {
		st.modeStr = mode
		st.env.Mode = rewriter.ParseSQLMode(mode)
	}
	return nil
}

// Query plans a COM_QUERY and answers, rewrites or lets it pass.
func (e *Engine) Query(ctx context.Context, s *proxy.Session, sql []byte) (bool, error) {
	if len(sql) == 0 {
		return false, nil
	}
	// The text is only valid during this call; so is everything the plan
	// borrows from it (tags, names). Nothing below keeps it.
	text := unsafe.String(&sql[0], len(sql))
	if hasDDL(text) {
		return e.ddl(ctx, s, sql, text)
	}
	return e.planAndRun(ctx, s, sql, text)
}

// planAndRun plans text and answers, rewrites or (handled=false) leaves
// it to be relayed unchanged.
func (e *Engine) planAndRun(ctx context.Context, s *proxy.Session, sql []byte, text string) (bool, error) {
	if !rewriter.MayRewrite(text) {
		return false, nil
	}
	st := e.state(s)
	if err := st.refreshEnv(ctx, s); err != nil {
		return false, err
	}
	plan, err := rewriter.PlanQuery(text, &st.env)
	if err != nil {
		return false, err
	}
	switch plan.Kind {
	case rewriter.Sequence:
		if err := st.evalCalls(ctx, e, plan.Calls); err != nil {
			return false, err
		}
		st.names = st.names[:0]
		for _, c := range plan.Calls {
			st.names = append(st.names, c.Name) // borrowed from sql: used only below
		}
		st.rows[0] = st.row
		err := s.WriteResultSet(st.names, st.rows[:])
		clear(st.names)
		return true, err
	case rewriter.Rewrite:
		if err := e.checkKeys(ctx, s, plan.Filled); err != nil {
			return false, err
		}
		if err := st.draw(ctx, e, &plan); err != nil {
			return false, err
		}
		st.buf = plan.Render(st.buf[:0], text, st.ids)
		err := s.RelayQuery(st.buf)
		st.trim()
		return true, err
	}
	return false, nil
}

// draw takes the plan's IDs, one NextN per tag, and assigns them to slots.
func (st *state) draw(ctx context.Context, e *Engine, plan *rewriter.Plan) error {
	total := 0
	for _, tc := range plan.Tags {
		total += tc.N
	}
	st.flat = st.flat[:0]
	if cap(st.flat) < total {
		st.flat = make([]int64, 0, total)
	}
	st.batches = st.batches[:0]
	for _, tc := range plan.Tags {
		start := len(st.flat)
		var err error
		st.flat, err = e.ids.NextN(ctx, tc.Tag, tc.N, st.flat)
		if err != nil {
			return fmt.Errorf("generate %d ID(s) for %q: %w", tc.N, tc.Tag, err)
		}
		batch := st.flat[start:len(st.flat):len(st.flat)]
		st.batches = append(st.batches, batch)
		if tc.N > 0 {
			st.setLast(tc.Tag, batch[len(batch)-1])
		}
	}
	var err error
	st.ids, err = plan.AssignIDs(st.ids[:0], st.batches)
	return err
}

// setLast records v as tag's LASTVAL. tag may be borrowed from the packet
// buffer: a new key is cloned, and an existing entry is updated through its
// pointer, because assigning to a map entry may replace its key too.
func (st *state) setLast(tag string, v int64) {
	if p, ok := st.last[tag]; ok {
		*p = v
		return
	}
	st.last[strings.Clone(tag)] = &v
}

// trim drops scratch buffers grown by a huge statement (a 100,000-row
// INSERT) once it has been sent, so that they are not pinned for the
// session's life.
func (st *state) trim() {
	if cap(st.buf) > 1<<20 {
		st.buf = nil
	}
	if cap(st.flat) > 1<<16 || cap(st.ids) > 1<<16 {
		st.flat, st.ids = nil, nil
	}
}

// evalCalls computes a Sequence plan's row left to right into st.row.
func (st *state) evalCalls(ctx context.Context, e *Engine, calls []rewriter.Call) error {
	st.row = st.row[:0]
	st.vals = st.vals[:0]
	if cap(st.vals) < len(calls) {
		st.vals = make([]int64, 0, len(calls))
	}
	for _, c := range calls {
		switch c.Func {
		case rewriter.Next:
			got, err := e.ids.NextN(ctx, c.Tag, 1, st.one[:0])
			if err != nil {
				return fmt.Errorf("NEXTVAL(%s): %w", c.Tag, err)
			}
			st.one = got
			st.setLast(c.Tag, got[0])
			st.vals = append(st.vals, got[0])
			st.row = append(st.row, &st.vals[len(st.vals)-1])
		default:
			if v, ok := st.last[c.Tag]; ok {
				st.vals = append(st.vals, *v)
				st.row = append(st.row, &st.vals[len(st.vals)-1])
			} else {
				st.row = append(st.row, nil)
			}
		}
	}
	return nil
}

// Prepare plans a COM_STMT_PREPARE. Rewrite plans are prepared with their
// session-variable text; Sequence plans with a same-shaped constant SELECT.
func (e *Engine) Prepare(ctx context.Context, s *proxy.Session, sql []byte) (bool, error) {
	if len(sql) == 0 || !rewriter.MayRewrite(unsafe.String(&sql[0], len(sql))) {
		return false, nil
	}
	text := string(sql) // kept with the statement
	st := e.state(s)
	if err := st.refreshEnv(ctx, s); err != nil {
		return false, err
	}
	plan, err := rewriter.PlanPrepare(text, &st.env)
	if err != nil {
		return false, err
	}
	p := &prepared{sql: text, plan: plan}
	var backendText []byte
	switch plan.Kind {
	case rewriter.PassThrough:
		return false, nil
	case rewriter.Sequence:
		backendText = append(backendText, "SELECT "...)
		for i, c := range plan.Calls {
			p.cols = append(p.cols, c.Name)
			if i > 0 {
				backendText = append(backendText, ", "...)
			}
			backendText = append(backendText, "CAST(0 AS SIGNED) AS `"...)
			backendText = append(backendText, strings.ReplaceAll(c.Name, "`", "``")...)
			backendText = append(backendText, '`')
		}
	case rewriter.Rewrite:
		if err := e.checkKeys(ctx, s, plan.Filled); err != nil {
			return false, err
		}
		backendText = plan.Render(nil, text, nil)
	}
	res, err := s.RelayPrepare(backendText)
	if err != nil {
		return true, err
	}
	if res.OK {
		st.stmts[res.StmtID] = p
	}
	return true, nil
}

// Execute gives a planned prepared statement its IDs (or its answer).
func (e *Engine) Execute(ctx context.Context, s *proxy.Session, stmtID uint32, pkt []byte) (bool, error) {
	st, ok := s.Value().(*state)
	if !ok {
		return false, nil
	}
	p := st.stmts[stmtID]
	if p == nil {
		return false, nil
	}
	switch p.plan.Kind {
	case rewriter.Sequence:
		// pkt: command, stmt id (4), flags: a cursor would make the client
		// fetch from the backend, which has no such result.
		if len(pkt) > 5 && pkt[5] != 0 {
			return false, &notSupportedError{msg: "leafproxy: a cursor (COM_STMT_EXECUTE flags " + strconv.Itoa(int(pkt[5])) +
				") on a NEXTVAL/LASTVAL statement is not supported; execute it without a cursor (e.g. JDBC useCursorFetch=false)"}
		}
		if err := st.evalCalls(ctx, e, p.plan.Calls); err != nil {
			return false, err
		}
		st.rows[0] = st.row
		return true, s.WriteBinaryResultSet(p.cols, st.rows[:])
	case rewriter.Rewrite:
		if err := st.draw(ctx, e, &p.plan); err != nil {
			return false, err
		}
		st.buf = p.plan.SetVars(st.buf[:0], st.ids)
		err := s.RelayExecuteAfter(unsafe.String(&st.buf[0], len(st.buf)), pkt)
		st.trim()
		return true, err
	}
	return false, nil
}

// StmtClosed drops the statement's plan.
func (e *Engine) StmtClosed(s *proxy.Session, stmtID uint32) {
	if st, ok := s.Value().(*state); ok {
		delete(st.stmts, stmtID)
	}
}

// SessionReset forgets prepared plans and LASTVAL: COM_RESET_CONNECTION
// drops the backend's statements and variables too.
func (e *Engine) SessionReset(s *proxy.Session) {
	if st, ok := s.Value().(*state); ok {
		clear(st.stmts)
		clear(st.last)
	}
}

// SessionClosed drops the session's state.
func (e *Engine) SessionClosed(s *proxy.Session) { s.SetValue(nil) }

// ddl handles text that holds a statement that may change a table's
// columns. A lone DDL statement is relayed as it is (a DEFAULT NEXTVAL(s)
// in CREATE/ALTER TABLE is MariaDB's own sequence, not ours to evaluate);
// a multi-statement text is planned as usual. Cached column lists are
// dropped after the server has run it, so no session re-caches the old
// layout while a long ALTER runs.
func (e *Engine) ddl(ctx context.Context, s *proxy.Session, sql []byte, text string) (bool, error) {
	defer e.cols.invalidate()
	if body := strings.TrimRight(text, " \t\r\n;"); !strings.Contains(body, ";") {
		return true, s.RelayQuery(sql)
	}
	e.cols.invalidate()
	if handled, err := e.planAndRun(ctx, s, sql, text); handled || err != nil {
		return handled, err
	}
	return true, s.RelayQuery(sql)
}

// hasDDL reports whether any statement of text (by a cheap split at every
// ';', quote-blind: a false "yes" only costs an invalidation) starts with
// a statement that can change a table's columns.
func hasDDL(text string) bool {
	if isDDL(text) {
		return true
	}
	for i := strings.IndexByte(text, ';'); i >= 0; {
		if isDDL(text[i+1:]) {
			return true
		}
		j := strings.IndexByte(text[i+1:], ';')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// isDDL reports whether text starts (past spaces and simple comments) with
// a statement that can change a table's columns, so cached column lists
// are dropped.
func isDDL(text string) bool {
	i := 0
	for i < len(text) {
		switch c := text[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(':
			i++
			continue
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			j := strings.Index(text[i+2:], "*/")
			if j < 0 {
				return false
			}
			i += j + 4
			continue
		}
		break
	}
	w := text[i:min(len(text), i+8)]
	for _, kw := range [...]string{"ALTER", "DROP", "CREATE", "RENAME", "TRUNCATE"} {
		if len(w) >= len(kw) && strings.EqualFold(w[:len(kw)], kw) {
			return true
		}
	}
	return false
}

// columnCache remembers tables' column order for INSERT without a column
// list. Entries expire (DDL through another proxy is not seen) and are
// dropped on DDL seen here.
type columnCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]colEntry
}

type colEntry struct {
	cols  []string
	types []colType // parallel to cols
	at    time.Time
}

// colType is what information_schema says of a column's type.
type colType struct {
	dataType   string // e.g. bigint, varchar
	columnType string // e.g. bigint(20) unsigned
	precision  int64  // NUMERIC_PRECISION (decimal)
	scale      int64  // NUMERIC_SCALE (decimal)
}

func newColumnCache(ttl time.Duration) *columnCache {
	return &columnCache{ttl: ttl, m: map[string]colEntry{}}
}

func (c *columnCache) invalidate() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

func (c *columnCache) get(ctx context.Context, s *proxy.Session, db, table string) ([]string, error) {
	e, err := c.entry(ctx, s, db, table)
	if err != nil {
		return nil, err
	}
	if len(e.cols) == 0 {
		return nil, fmt.Errorf("table %s.%s not found", db, table)
	}
	return e.cols, nil
}

// entry returns the table's columns and types, from the cache or from
// information_schema. A table that is not there (or not visible to the
// backend account) gives an entry with no columns.
func (c *columnCache) entry(ctx context.Context, s *proxy.Session, db, table string) (colEntry, error) {
	key := db + "\x00" + table
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.ttl {
		return e, nil
	}
	if db == "" {
		return colEntry{}, errors.New("no database selected")
	}
	rows, err := s.BackendQuery(ctx, "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE"+
		" FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "+quote(db)+" AND TABLE_NAME = "+quote(table)+
		" ORDER BY ORDINAL_POSITION")
	if err != nil {
		return colEntry{}, fmt.Errorf("read columns of %s.%s: %w", db, table, err)
	}
	e = colEntry{cols: make([]string, 0, len(rows)), types: make([]colType, 0, len(rows)), at: time.Now()}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for _, r := range rows {
		if len(r) < 5 || r[0] == nil {
			continue
		}
		t := colType{dataType: strings.ToLower(str(r[1])), columnType: strings.ToLower(str(r[2]))}
		t.precision, _ = strconv.ParseInt(str(r[3]), 10, 64)
		t.scale, _ = strconv.ParseInt(str(r[4]), 10, 64)
		e.cols = append(e.cols, *r[0])
		e.types = append(e.types, t)
	}
	c.mu.Lock()
	if len(c.m) > 10000 {
		clear(c.m)
	}
	c.m[key] = e
	c.mu.Unlock()
	return e, nil
}

// quote makes a string literal that is safe whatever the sql_mode: no
// backslash is needed when quotes are doubled, and backslashes are avoided
// by hex-encoding any string that holds one.
func quote(s string) string {
	if strings.ContainsAny(s, "\\\x00") {
		return fmt.Sprintf("X'%x'", s)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// generatorOf is implemented by ID sources that serve tags from different
// generators (allocator.Sequences).
type generatorOf interface {
	Generator(tag string) string
}

// checkKeys refuses a statement whose generated keys would go into a
// column that cannot hold them: a VARCHAR key would silently get a number,
// an INT key a snowflake ID that the server truncates or rejects. Tables
// information_schema does not show (temporary tables, no privilege) are
// left to the server.
func (e *Engine) checkKeys(ctx context.Context, s *proxy.Session, filled []rewriter.Filled) error {
	for _, f := range filled {
		ent, err := e.cols.entry(ctx, s, f.DB, f.Table)
		if err != nil {
			return err
		}
		for i, c := range ent.cols {
			if !strings.EqualFold(c, f.Column) {
				continue
			}
			gen := "segment"
			if g, ok := e.ids.(generatorOf); ok {
				gen = g.Generator(f.Tag)
			}
			if why := keyTypeProblem(ent.types[i], gen); why != "" {
				return &notSupportedError{msg: fmt.Sprintf("leafproxy: cannot fill %s.%s.%s with IDs from tag %q (%s): column type %s %s",
					f.DB, f.Table, f.Column, f.Tag, gen, ent.types[i].columnType, why)}
			}
		}
	}
	return nil
}

// keyTypeProblem says why a column of type t cannot hold IDs from gen, or "".
func keyTypeProblem(t colType, gen string) string {
	switch t.dataType {
	case "bigint":
		return ""
	case "tinyint", "smallint", "mediumint", "int", "integer":
		if gen == "snowflake" {
			return "is too narrow for 64-bit snowflake IDs; use BIGINT"
		}
		return "" // segment IDs fit until the column's maximum, where the server reports an error
	case "decimal", "numeric":
		if t.scale != 0 {
			return "has a fractional part; use BIGINT"
		}
		if gen == "snowflake" && t.precision < 19 {
			return "is too narrow for 64-bit snowflake IDs; use BIGINT"
		}
		return ""
	}
	return "is not an integer type; the generator produces BIGINT IDs"
}

// notSupportedError is a 1235 (ER_NOT_SUPPORTED_YET) the engine raises itself:
// a rule's key column that cannot hold generated IDs, a cursor on a NEXTVAL
// statement.
type notSupportedError struct{ msg string }

func (e *notSupportedError) Error() string    { return e.msg }
func (e *notSupportedError) Code() uint16     { return 1235 }
func (e *notSupportedError) SQLState() string { return "42000" }
