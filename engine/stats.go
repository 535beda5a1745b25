package engine

import (
	"strings"
	"sync"
	"time"

	"github.com/leafproxy/leafproxy/internal/metric"
)

// What the engine did, for metrics: per session, statements by kind, the
// time NEXTVAL answers took and the IDs drawn per tag, counted in the
// session's own state (internal/metric: no shared word written per
// statement, no allocation) and added up when asked (Stats). IDs per tag
// ride on the table of tag names every session keeps anyway (own): the
// lookup the engine already makes finds the tag's counter too.

// Statement kinds (EngineStats.Statements).
const (
	StmtNextval  = iota // a SELECT of NEXTVAL/LASTVAL/SETVAL/LEAFPROXY_DECODE the proxy answered (text or prepared)
	StmtFilled          // a statement sent with generated IDs spliced in: INSERT/REPLACE keys filled, NEXTVAL in VALUES or SET
	StmtNumbered        // INSERT ... SELECT (or NEXTVAL per row) whose rows the proxy numbered
	StmtLoadData        // LOAD DATA LOCAL INFILE into a rule table, keys written into the file
	StmtKinds
)

// StmtNames are the kinds as metrics label them.
var StmtNames = [StmtKinds]string{"nextval", "filled_insert", "numbered", "load_data"}

// EngineStats counts what the engine did and recovered from.
type EngineStats struct {
	// NumberedRetries: numbered statements counted and sent again because
	// their rows outgrew the count.
	NumberedRetries uint64
	// DuplicateKeyRetries: statements sent again after a generated key
	// collided with a key written around the proxy.
	DuplicateKeyRetries uint64
	// Statements the engine carried out, by kind (StmtNames).
	Statements [StmtKinds]uint64
	// Nextval: time from a NEXTVAL statement's arrival to the proxy's answer.
	Nextval metric.Snapshot
	// IDs drawn per tag (each ID once, whether it reached a row or not).
	IDs map[string]uint64
}

// Stats reports the engine's counters, adding up the live sessions and
// those that ended.
func (e *Engine) Stats() EngineStats {
	e.stats.mu.Lock()
	defer e.stats.mu.Unlock()
	out := e.stats.ended
	out.IDs = make(map[string]uint64, len(e.stats.ended.IDs))
	for k, v := range e.stats.ended.IDs {
		out.IDs[k] = v
	}
	for st := range e.stats.counting {
		st.mu.Lock()
		st.stats.addTo(&out)
		for name, t := range st.owned {
			if n := t.ids.Load(); n > 0 {
				out.IDs[name] += n
			}
		}
		st.mu.Unlock()
	}
	out.NumberedRetries, out.DuplicateKeyRetries = e.numberedRetries.Load(), e.dupRetries.Load()
	return out
}

// DisableStats stops the per-session counting (for comparing its cost);
// call it before the engine serves.
func (e *Engine) DisableStats() { e.stats.disabled = true }

// engineStats is the engine's side: the sessions that count, and the
// totals of those that ended (mu guards both; a session's own counters
// are its own).
type engineStats struct {
	disabled bool
	mu       sync.Mutex
	counting map[*state]struct{}
	ended    EngineStats
}

// sessionStats is one session's counts.
type sessionStats struct {
	stmts   [StmtKinds]metric.Counter
	nextval metric.Histogram
}

func (s *sessionStats) addTo(out *EngineStats) {
	for i := range s.stmts {
		out.Statements[i] += s.stmts[i].Load()
	}
	s.nextval.AddTo(&out.Nextval)
}

// tagEntry is a tag name the session owns (see own) and the IDs it drew.
type tagEntry struct {
	name string
	ids  metric.Counter
}

// register makes a new session's counts visible to Stats.
func (e *Engine) register(st *state) {
	if e.stats.disabled {
		return
	}
	e.stats.mu.Lock()
	if e.stats.counting == nil {
		e.stats.counting = map[*state]struct{}{}
	}
	e.stats.counting[st] = struct{}{}
	e.stats.mu.Unlock()
}

// retire moves an ending session's counts into the totals.
func (e *Engine) retire(st *state) {
	if e.stats.disabled {
		return
	}
	e.stats.mu.Lock()
	defer e.stats.mu.Unlock()
	if _, ok := e.stats.counting[st]; !ok {
		return
	}
	delete(e.stats.counting, st)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.stats.addTo(&e.stats.ended)
	e.retireTagsLocked(st)
}

// retireTagsLocked adds the IDs counted in st.owned to the totals; both
// locks held (engine's, then the session's: the order Stats takes them).
func (e *Engine) retireTagsLocked(st *state) {
	for name, t := range st.owned {
		if n := t.ids.Load(); n > 0 {
			if e.stats.ended.IDs == nil {
				e.stats.ended.IDs = map[string]uint64{}
			}
			e.stats.ended.IDs[name] += n
		}
	}
}

// countStmt counts a statement of kind k.
func (st *state) countStmt(k int) {
	if !st.engine.stats.disabled {
		st.stats.stmts[k].Inc()
	}
}

// countNextval counts a NEXTVAL statement answered now; it arrived at
// the session's command start.
func (st *state) countNextval(s Session) {
	if !st.engine.stats.disabled {
		st.stats.stmts[StmtNextval].Inc()
		st.stats.nextval.Observe(time.Now().UnixNano() - s.CommandStart())
	}
}

// countIDs counts n IDs drawn for t.
func (st *state) countIDs(t *tagEntry, n int64) {
	if !st.engine.stats.disabled && n > 0 {
		t.ids.Add(uint64(n))
	}
}

// maxOwnedTags bounds a session's table of owned tag names (clients may
// send any number of distinct names).
const maxOwnedTags = 1024

// own returns tag as a string the engine may hand on. The planner's tags
// borrow the client's packet buffer (the engine reads it through an
// raw.String), which the next command overwrites: nothing past the
// engine may see such a string, so every tag crosses the boundary here.
// Names a session has used before come from its table without allocating.
func (st *state) own(tag string) string { return st.ownTag(tag).name }

// ownTag is own with the tag's entry (its ID counter).
func (st *state) ownTag(tag string) *tagEntry {
	if t, ok := st.owned[tag]; ok {
		return t
	}
	if st.owned == nil || len(st.owned) >= maxOwnedTags {
		// A new table (the old one's counts go to the totals first).
		if !st.engine.stats.disabled {
			st.engine.stats.mu.Lock()
			st.mu.Lock()
			st.engine.retireTagsLocked(st)
			st.owned = make(map[string]*tagEntry, 8)
			st.mu.Unlock()
			st.engine.stats.mu.Unlock()
		} else {
			st.owned = make(map[string]*tagEntry, 8)
		}
	}
	t := &tagEntry{name: strings.Clone(tag)}
	// The owner reads the table without the lock (only it writes); Stats
	// reads it under the lock, so writes take it.
	st.mu.Lock()
	st.owned[t.name] = t
	st.mu.Unlock()
	return t
}
