// Package engine executes the rewriter's plans inside proxy sessions: it is
// the proxy.Interceptor that answers NEXTVAL/LASTVAL selects from the
// allocator (also blocks, NEXTVAL('t', n), and LEAFPROXY_DECODE: see
// seqcalls.go), splices generated IDs into INSERT/REPLACE/UPDATE text, and
// gives prepared statements fresh IDs at every EXECUTE.
//
// Plan once, execute a small plan: the rewriter says "N IDs of tag T at
// these offsets"; the engine draws them (one NextN per tag), renders the
// text and relays it. Pass-through text costs one cheap filter and no
// allocation.
//
// Prepared statements: the rewriter renders generated values as extra ?
// parameters; the client sees only its own (the prepare response is
// rewritten), and the engine rewrites each EXECUTE to bind fresh IDs to the
// extra parameters (params.go): one command per EXECUTE. A prepared
// `SELECT NEXTVAL('t')` is prepared on
// the backend as a same-shaped `SELECT CAST(0 AS SIGNED) AS ...` so the
// client gets real metadata and a real statement id, and each EXECUTE is
// answered by the proxy in the binary protocol.
package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/metric"
	"github.com/leafproxy/leafproxy/internal/raw"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/proxy/wire"
	"github.com/leafproxy/leafproxy/rewriter"
)

// IDSource draws IDs per tag; allocator.Sequences implements it.
type IDSource interface {
	// NextN appends n ascending IDs of tag to dst: one run of consecutive
	// IDs for a segment tag, and for a snowflake tag up to a tick's
	// sequence space (a statement's keys, as InnoDB's of a multi-row
	// INSERT: ORMs count them from the insert id). A 167 at the tag's end
	// may say how many IDs were left (Fits() int64: keyrange.go's atEnd).
	NextN(ctx context.Context, tag string, n int, dst []int64) ([]int64, error)
	// Generator names the generator that serves tag, "segment" or
	// "snowflake": the key columns it may fill depend on it.
	Generator(tag string) string
}

// Engine is the proxy.Interceptor. One per server; per-session state lives
// in the session's value slot.
type Engine struct {
	engineCounters
	stats    engineStats // per-session counts for metrics (stats.go)
	natives  nativeCache
	idSource IDSource
	rules    atomic.Pointer[rewriter.Rules] // swapped whole on a configuration reload: configured, plus views'
	// configured and views: what rules is made of (SetRules, SetViewRules),
	// under viewsMu.
	viewsMu    sync.Mutex
	configured *rewriter.Rules
	views      []rewriter.Rule
	columns    *columnCache
	onDDL      func() // OnDDL
	// onTableReset: a per_table tag's table was created, dropped or
	// truncated (OnTableReset).
	onTableReset func(ctx context.Context, tag string)
	// What planning with the parser may cost (WithPlanLimits, planmem.go).
	maxDepth int
	plans    *planBudget
	// What kept prepared plans may take (WithPreparedLimits, keptmem.go).
	kept keptBudget
}

// New returns an engine drawing from ids and filling keys per rules (nil:
// no tables are filled; NEXTVAL still works).
func New(ids IDSource, rules *rewriter.Rules, opts ...Option) *Engine {
	e := &Engine{idSource: ids, columns: newColumnCache(5 * time.Second), plans: newPlanBudget(rewriter.DefaultPlanMemory)}
	for _, o := range opts {
		o(e)
	}
	e.kept.init()
	e.configured = rules
	e.rules.Store(rules)
	return e
}

var (
	_ proxy.Interceptor         = (*Engine)(nil)
	_ proxy.StmtDataInterceptor = (*Engine)(nil)
)

// state is one session's engine state.
type state struct {
	engine      *Engine
	stats       sessionStats // what this session did (stats.go)
	mu          sync.Mutex   // guards writes to owned (Stats reads it)
	rules       *atomic.Pointer[rewriter.Rules]
	env         rewriter.Env
	ctx         context.Context // valid during one call, for Env.Columns
	session     Session
	planner     rewriter.Planner // text statements' plans: valid during one call
	class       sqltext.Class    // the COM_QUERY's being planned (the proxy's, Session.Class)
	sqlModeText string
	last        map[string]*int64    // LASTVAL per tag (keys owned: see own)
	owned       map[string]*tagEntry // tag names copied out of packet buffers, with the IDs drawn (own)
	stmts       map[uint32]*prepared
	keptBytes   int64 // what stmts are charged (keptmem.go)
	slotIDs     []int64
	large       largeText // the Large plan being sent (sendLarge)
	kept        []int64   // keptKeys' answer, reused
	tagBatches  [][]int64
	drawnIDs    []int64
	rendered    []byte
	resultRow   []*int64
	resultRows  [1][]*int64
	columnNames []string
	singleDraw  []int64 // scratch for single draws
	rowValues   []int64
	calls       []rewriter.Call // a prepared Sequence plan's calls with bound arguments
	// decoded, decodedRows: LEAFPROXY_DECODE's row (scratch)
	decoded      []wire.Value
	decodedRows  [1][]wire.Value
	paramOffsets []int // scratch for execute rewriting
	idents       []rewriter.SeqName
	lastColumns  colMemo    // the last table checkKeys found in the column cache
	limits       []keyLimit // the ends of the key columns a statement fills (keyrange.go)
	// pending: LASTVALs a numbered statement left in its counters
	// (numbered.go), read when asked for.
	pending map[string]pendingLast
	dup     dupRetry // a filled INSERT's recovery from 1062 (dupretry.go)
	// lastID: the session's LAST_INSERT_ID() when the server's is stale
	// (a ReportsKey statement's first key), 0 when the server's is the
	// session's (lastid.go)
	lastID int64
	// unplannedReads: the session prepared a statement the engine does
	// not plan that may read or change LAST_INSERT_ID() (noteUnplanned)
	unplannedReads bool
	// counters: insert_id and auto_increment_* as the session set them
	// (counters.go)
	counters counterVars
	// orphans: count statements to close (numbered_prepared.go)
	orphans []uint32
	// handed: a loop's plan for the command it handed to the goroutine
	// (handed.go); plannings counts the text statements planned (read by
	// tests while the session runs: a metric.Counter).
	handed    *handedPlan
	plannings metric.Counter
}

func (e *Engine) state(s Session) *state {
	if st, ok := s.Value().(*state); ok {
		return st
	}
	st := &state{engine: e, last: map[string]*int64{}, stmts: map[uint32]*prepared{}, session: s, rules: &e.rules}
	st.env.Rules = e.rules.Load()
	st.env.ReportKeys = true // lastid.go
	st.env.Columns = func(db, table string) ([]string, error) {
		return e.columns.get(st.ctx, st.session, db, table)
	}
	st.env.TableKey = func(db, table, column string) (rewriter.TableKey, error) {
		return e.columns.tableKey(st.ctx, st.session, &st.lastColumns, db, table, column)
	}
	st.env.Limits = rewriter.Limits{MaxDepth: e.maxDepth, Memory: planMemory{budget: e.plans, session: st}}
	s.SetValue(st)
	e.register(st)
	return st
}

// refreshEnv brings the planner's view of the session up to date: current
// database and sql_mode (re-read by the proxy only after statements that may
// change them), and the table rules in force. The proxy reads them with
// statements of its own inside the client's session (SELECT DATABASE(),
// SELECT @@SESSION.sql_mode), which the client sees in its Questions and
// the general log: callers first ask rewriter.NeedsSession whether the
// plan can depend on them at all (with no rule tables, only sequence calls
// and PREPARE / EXECUTE text can).
func (st *state) refreshEnv(ctx context.Context, s Session) error {
	st.ctx = ctx
	st.env.Rules = st.rules.Load()
	db, err := s.CurrentDB(ctx)
	if err != nil {
		return err
	}
	st.env.DB = db
	_, err = st.currentMode(ctx, s)
	return err
}

// currentMode is the session's sql_mode now (an EXECUTE runs with the
// mode of its time, not its PREPARE's).
func (st *state) currentMode(ctx context.Context, s Session) (rewriter.Mode, error) {
	mode, err := s.SQLMode(ctx)
	if err != nil {
		return rewriter.Mode{}, fmt.Errorf("read sql_mode: %w", err)
	}
	if mode != st.sqlModeText || st.sqlModeText == "" {
		st.sqlModeText = mode
		st.env.Mode = rewriter.ParseSQLMode(mode)
	}
	return st.env.Mode, nil
}

// query plans a COM_QUERY and answers, rewrites or lets it pass; c is
// sql's class (sqltext.Classify, made once per command by the proxy).
func (e *Engine) query(ctx context.Context, s Session, sql []byte, c sqltext.Class) (bool, error) {
	if len(sql) == 0 {
		return false, nil
	}
	// The text is only valid during this call; so is everything the plan
	// borrows from it (tags, names). Nothing below keeps it.
	text := raw.String(sql)
	if st := stateOf(s); st != nil && st.lastID != 0 && queryNeedsSync(text, c) {
		if err := e.syncLastID(ctx, s, st); err != nil {
			return false, err
		}
	}
	if c.DDL() {
		return e.ddl(ctx, s, sql, text, c)
	}
	if setsCounter(text, c) {
		return e.relaySetCounter(ctx, s, sql)
	}
	return e.planAndRun(ctx, s, sql, text, c)
}

// planAndRun plans text and answers, rewrites or (handled=false) leaves
// it to be relayed unchanged.
func (e *Engine) planAndRun(ctx context.Context, s Session, sql []byte, text string, c sqltext.Class) (bool, error) {
	if !rewriter.MayRewrite(c) || !e.memoized(s, text, c) && !rewriter.NeedsSession(text, c, e.rules.Load()) {
		if st := stateOf(s); st != nil && st.lastID != 0 && writesLastID(c, nil) {
			return false, e.syncLastID(ctx, s, st)
		}
		return false, nil
	}
	st := e.state(s)
	st.class = c
	if err := st.refreshEnv(ctx, s); err != nil {
		return false, err
	}
	// A many-row INSERT's plan memory is held until it was sent.
	defer st.releasePlan(ctx)
	// A command a loop planned and handed over runs here with its plan.
	plan, ok := st.takeHanded(text)
	if !ok {
		st.plannings.Inc()
		var err error
		plan, err = st.planner.PlanQuery(text, c, &st.env)
		if errors.Is(err, proxy.ErrWouldBlock) {
			return false, err // the plan budget is full: the goroutine waits for it
		}
		if err != nil {
			// A call the proxy refuses may be MariaDB's own native sequence.
			if idents, strCalls := rewriter.SequenceNames(text, st.env.Mode); len(idents) > 0 {
				if relay, nerr := e.nativeOnly(ctx, st, idents, strCalls); nerr != nil || relay {
					return false, nerr
				}
			}
			return false, e.serverSyntax(ctx, s, err)
		}
	}
	handled, err := e.runPlan(ctx, s, st, &plan, sql, text)
	st.keepHanded(ctx, text, &plan, err)
	return handled, err
}

// runPlan runs plan, made from text (the COM_QUERY sql): answers,
// rewrites or (handled=false) leaves it to be relayed unchanged.
func (e *Engine) runPlan(ctx context.Context, s Session, st *state, plan *rewriter.Plan, sql []byte, text string) (bool, error) {
	var err error
	if relay, err := e.nativeRelay(ctx, st, plan); err != nil || relay {
		return false, err
	}
	if st.lastID != 0 && writesLastID(st.class, plan) {
		if err := e.syncLastID(ctx, s, st); err != nil {
			return false, err
		}
	}
	// An explicit key moves its tag past it, as AUTO_INCREMENT's counter
	// (one written after a generated key of its tag: in drawPlan).
	var bs proxy.BlockingSession
	if plan.Kind == rewriter.PassThrough && (plan.LastKey != 0 || plan.StmtKeys != nil) {
		// Every row gives its key: the OK packet reports the last, as for
		// an AUTO_INCREMENT column (on the session's goroutine).
		if bs, err = s.Blocking(ctx); err != nil {
			return false, err
		}
	}
	if err := e.advanceExplicit(ctx, st, plan.Explicit); err != nil {
		return false, err
	}
	switch plan.Kind {
	case rewriter.Numbered:
		return e.runNumbered(ctx, s, st, plan, text)
	case rewriter.Sequence:
		return e.runSequence(ctx, s, st, plan)
	case rewriter.LoadData:
		return e.load(ctx, s, st, plan, text)
	case rewriter.Rewrite:
		return e.runRewrite(ctx, s, st, plan, text)
	case rewriter.PassThrough:
		if plan.LastKey != 0 {
			// Every row gives its key: the OK packet reports the last, as
			// for an AUTO_INCREMENT column (on the session's goroutine).
			return true, bs.RelayQueryInsertID(sql, uint64(plan.LastKey))
		}
		if plan.StmtKeys != nil {
			// The same for each such statement of a multi-statement text.
			return true, bs.RelayQueryInsertIDs(append([]byte{mysql.COM_QUERY}, sql...), reportedIDs(plan.StmtKeys))
		}
	}
	return false, nil
}

// runSequence answers a Sequence plan (a SELECT of NEXTVAL, LASTVAL and
// the like) with one row of the calls' values, or a DECODE alone with its
// own result.
func (e *Engine) runSequence(ctx context.Context, s Session, st *state, plan *rewriter.Plan) (bool, error) {
	if len(plan.Calls) == 1 && plan.Calls[0].Func == rewriter.Decode {
		err := e.decode(ctx, s, st, plan.Calls[0], false)
		st.countNextval(s)
		return true, err
	}
	if err := st.evalCalls(ctx, e, plan.Calls); err != nil {
		return false, err
	}
	st.columnNames = st.columnNames[:0]
	for _, c := range plan.Calls {
		st.columnNames = append(st.columnNames, c.Name) // borrowed from sql: used only below
	}
	st.resultRows[0] = st.resultRow
	err := s.WriteResultSet(st.columnNames, st.resultRows[:])
	clear(st.columnNames)
	st.countNextval(s)
	return true, err
}

// runRewrite runs a Rewrite plan: the key columns checked, the IDs drawn,
// the statement rendered with them and relayed: in pieces when large,
// armed for a duplicate-key retry (or a reported key) when it may be, with
// the insert ids in the OKs when each statement reports its keys.
func (e *Engine) runRewrite(ctx context.Context, s Session, st *state, plan *rewriter.Plan, text string) (bool, error) {
	if err := e.checkKeys(ctx, s, &st.lastColumns, plan.Filled); err != nil {
		return false, err
	}
	var bs proxy.BlockingSession
	if plan.Large() || plan.StmtKeys != nil {
		// Written in pieces, or with insert ids in the OKs: on the
		// session's goroutine, nothing drawn yet.
		var err error
		if bs, err = s.Blocking(ctx); err != nil {
			return false, err
		}
	}
	if err := st.drawPlan(ctx, e, plan, nil); err != nil {
		if w := ignoreWarning(text, plan.Statements, err); w != "" {
			return true, s.RelayQuery([]byte(w))
		}
		return false, err
	}
	if plan.Large() {
		st.countStmt(StmtFilled)
		return true, st.sendLarge(bs, plan, text)
	}
	// The COM_QUERY packet itself: the proxy sends it without a copy.
	var err error
	if st.rendered, err = plan.Render(append(st.rendered[:0], mysql.COM_QUERY), text, st.slotIDs); err != nil {
		return true, err
	}
	st.countStmt(StmtFilled)
	_, adv := e.idSource.(advancer)
	retry := adv && len(plan.Filled) > 0 && plan.Statements == 1 && len(text) <= maxRetryText
	if retry || plan.ReportsKey {
		// A ReportsKey plan's OK gets its key from the engine
		// (dupRetry.OnOK), retried after a 1062 or not.
		st.dup.arm(e, st, text, st.class, plan, st.slotIDs, retry)
		err = s.RelayQueryPacketOr(st.rendered, &st.dup)
		st.trim()
		return true, err
	}
	if plan.StmtKeys != nil {
		err = bs.RelayQueryInsertIDs(st.rendered, reportedIDs(plan.StmtKeys))
	} else {
		err = s.RelayQueryPacket(st.rendered)
	}
	st.trim()
	return true, err
}

// draw takes the plan's IDs, one NextN per tag, and assigns them to slots.
func (st *state) draw(ctx context.Context, e *Engine, plan *rewriter.Plan) error {
	total := 0
	for _, tc := range plan.Tags {
		total += tc.N
	}
	st.drawnIDs = st.drawnIDs[:0]
	if cap(st.drawnIDs) < total {
		st.drawnIDs = make([]int64, 0, total)
	}
	st.tagBatches = st.tagBatches[:0]
	// The key columns' ends, before any ID is drawn (keyrange.go).
	var err error
	if st.limits, err = e.keyLimits(ctx, st.session, &st.lastColumns, plan.Filled, st.limits[:0]); err != nil {
		return err
	}
	for _, tc := range plan.Tags {
		start := len(st.drawnIDs)
		te := st.ownTag(tc.Tag)
		tag := te.name
		if st.counters.steers() && plan.ReportsKey && len(plan.Tags) == 1 && len(plan.Filled) == 1 && e.idSource.Generator(tag) == "segment" {
			st.drawnIDs, err = st.counterKeys(ctx, e, tag, tc.N, st.drawnIDs)
		} else {
			st.drawnIDs, err = e.idSource.NextN(ctx, tag, tc.N, st.drawnIDs)
		}
		if err != nil {
			if oe := atEnd(st.limits, tag, tc.N, err); oe != nil {
				return oe
			}
			return fmt.Errorf("generate %d ID(s) for %q: %w", tc.N, tag, err)
		}
		st.countIDs(te, int64(tc.N))
		batch := st.drawnIDs[start:len(st.drawnIDs):len(st.drawnIDs)]
		if len(st.limits) > 0 {
			if err := checkIDs(st.limits, tag, batch, 1); err != nil {
				return err
			}
		}
		st.tagBatches = append(st.tagBatches, batch)
		if tc.N > 0 {
			st.setLast(tag, batch[len(batch)-1])
		}
	}
	st.slotIDs, err = plan.AssignIDs(st.slotIDs[:0], st.tagBatches)
	return err
}

// setLast records v as tag's LASTVAL (tag is owned: see own). An existing
// entry is updated through its pointer, so the hot path does not allocate.
func (st *state) setLast(tag string, v int64) {
	if len(st.pending) > 0 {
		delete(st.pending, tag)
	}
	if p, ok := st.last[tag]; ok {
		*p = v
		return
	}
	p := new(int64) // not &v: that would move v to the heap on every call
	*p = v
	st.last[tag] = p
}

// sendLarge sends a Large plan's text (a many-row INSERT, rows as
// offsets) written in pieces into the backend connection, never whole;
// its IDs are the drawn batch itself (AssignIDs), not kept past it. It is
// never retried after a 1062 (longer than maxRetryText).
func (st *state) sendLarge(s proxy.BlockingSession, plan *rewriter.Plan, text string) error {
	st.large = largeText{st: st, plan: *plan, text: text, ids: st.slotIDs}
	err := s.RelayQueryWriter(plan.RenderedLen(text, st.slotIDs), &st.large)
	st.large = largeText{}
	st.slotIDs = nil // st.drawnIDs' memory: not to be appended to
	st.trim()
	return err
}

// largeText is a Large plan's text as an io.WriterTo (a field of the
// session's state: sending it allocates nothing).
type largeText struct {
	st   *state
	plan rewriter.Plan
	text string
	ids  []int64
}

func (lt *largeText) WriteTo(w io.Writer) (int64, error) {
	var err error
	lt.st.rendered, err = lt.plan.WriteTo(w, lt.st.rendered[:0], lt.text, lt.ids)
	return int64(lt.plan.RenderedLen(lt.text, lt.ids)), err
}

// trim drops scratch buffers grown by a huge statement (a 100,000-row
// INSERT) once it has been sent, so that they are not pinned for the
// session's life.
func (st *state) trim() {
	if cap(st.rendered) > 1<<20 {
		st.rendered = nil
	}
	if cap(st.drawnIDs) > 1<<16 || cap(st.slotIDs) > 1<<16 {
		st.drawnIDs, st.slotIDs = nil, nil
	}
}
