package engine

import (
	"fmt"
	"reflect"
	"sync/atomic"
)

// Prepared statements the engine plans keep their plan (and parameter map)
// until the client closes them, which an ORM's statement cache may never
// do. What they keep is charged to two budgets, refused beyond either at
// the PREPARE (before anything reaches the backend) with an error shaped
// like MariaDB's own for max_prepared_stmt_count (1461), the session
// staying usable:
//
//   - limits.session_prepared_memory: what one session's kept plans may
//     take (default DefaultSessionPreparedMemory);
//   - limits.prepared_memory: what all sessions' may take together
//     (default DefaultPreparedMemory).
//
// A plan's charge is prepared.size: its text, rewriter.Plan.Size of the
// kept plan, the parameter map and a fixed part for the entries around
// it. Statements the engine relays untouched cost it nothing and are not
// charged (the backend's max_prepared_stmt_count bounds them).

const (
	// DefaultPreparedMemory is limits.prepared_memory's default.
	DefaultPreparedMemory = 256 << 20
	// DefaultSessionPreparedMemory is limits.session_prepared_memory's
	// default: ~200 kept 1,000-row `(?)` INSERTs (~80 KB each), or tens
	// of thousands of small statements.
	DefaultSessionPreparedMemory = 8 << 20
	// keptOverhead is what a kept statement costs beyond its slices: the
	// prepared and paramMap structs, the map entry.
	keptOverhead = 512
)

// WithPreparedLimits bounds the memory kept prepared plans may take, in
// all (global) and per session (0: the defaults).
func WithPreparedLimits(global, perSession int64) Option {
	return func(e *Engine) {
		if global > 0 {
			e.kept.limit = global
		}
		if perSession > 0 {
			e.kept.perSession = perSession
		}
	}
}

// keptBudget is the two budgets; a session's own use is state.keptBytes.
type keptBudget struct {
	limit, perSession int64
	used              atomic.Int64
}

func (b *keptBudget) init() {
	if b.limit == 0 {
		b.limit = DefaultPreparedMemory
	}
	if b.perSession == 0 {
		b.perSession = DefaultSessionPreparedMemory
	}
}

// size is what p is charged while it is kept.
func (p *prepared) size() int64 {
	n := int64(keptOverhead+len(p.sql)) + p.plan.Size()
	for _, c := range p.cols {
		n += int64(len(c)) + 16
	}
	if pm := p.params; pm != nil {
		n += int64(reflect.TypeFor[paramMap]().Size())
		n += 4*int64(cap(pm.sourceOf)) + 2*int64(cap(pm.toServer)) + int64(cap(pm.long)) + 4*int64(cap(pm.boundBy))
		n += 8*int64(cap(pm.hidden)) + 2*int64(pm.clientParams) // the types, once bound
	}
	return n
}

// charge reserves n bytes for a plan about to be kept by st, or says why
// not (1461).
func (st *state) chargeKept(n int64) error {
	b := &st.engine.kept
	if st.keptBytes+n > b.perSession {
		return &preparedLimitError{msg: fmt.Sprintf("leafproxy: can't keep more than limits.session_prepared_memory of prepared statement plans in one session "+
			"(current value: %s; this session keeps %d statement(s) taking %s, this one needs %s); close statements it no longer uses, or raise limits.session_prepared_memory",
			byteSize(b.perSession), len(st.stmts), byteSize(st.keptBytes), byteSize(n))}
	}
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return &preparedLimitError{msg: fmt.Sprintf("leafproxy: can't keep more than limits.prepared_memory of prepared statement plans in all sessions "+
			"(current value: %s, in use: %s, this one needs %s); close statements, or raise limits.prepared_memory",
			byteSize(b.limit), byteSize(b.used.Load()), byteSize(n))}
	}
	st.keptBytes += n
	return nil
}

// releaseKept gives back n bytes st kept.
func (st *state) releaseKept(n int64) {
	if n == 0 {
		return
	}
	st.keptBytes -= n
	st.engine.kept.used.Add(-n)
}

// keep stores p as the plan of the backend's statement id, charged
// charged bytes (already reserved with chargeKept); a plan it replaces is
// released.
func (st *state) keep(id uint32, p *prepared, charged int64) {
	if old := st.stmts[id]; old != nil {
		st.releaseKept(old.charged)
	}
	p.charged = charged
	st.stmts[id] = p
}

// forget drops the plan of statement id, releasing its charge.
func (st *state) forget(id uint32) {
	if p := st.stmts[id]; p != nil {
		st.releaseKept(p.charged)
		delete(st.stmts, id)
	}
}

// forgetAll drops every kept plan (reset, close).
func (st *state) forgetAll() {
	for _, p := range st.stmts {
		st.releaseKept(p.charged)
	}
	clear(st.stmts)
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// preparedLimitError is 1461 (ER_MAX_PREPARED_STMT_COUNT_REACHED, 42000),
// as MariaDB answers a PREPARE beyond max_prepared_stmt_count.
type preparedLimitError struct{ msg string }

func (e *preparedLimitError) Error() string    { return e.msg }
func (e *preparedLimitError) Code() uint16     { return 1461 }
func (e *preparedLimitError) SQLState() string { return "42000" }
