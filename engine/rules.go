package engine

import (
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/rewriter"
)

// The rules the engine plans with: the configured ones (SetRules, on a
// reload), plus those of the views over rule tables (SetViewRules, from
// the service's reading of information_schema.VIEWS).

// SetRules replaces the table rules (a configuration reload): statements
// planned from now on use them; prepared statements keep their plans.
func (e *Engine) SetRules(rules *rewriter.Rules) {
	e.viewsMu.Lock()
	defer e.viewsMu.Unlock()
	e.configured = rules
	e.rules.Store(rules.With(e.views))
}

// SetViewRules sets the rules of the views over rule tables
// (rewriter.ViewRule), added to the configured rules: an INSERT through
// such a view is filled as one into its table. Configured rules win.
func (e *Engine) SetViewRules(views []rewriter.Rule) {
	e.viewsMu.Lock()
	defer e.viewsMu.Unlock()
	e.views = views
	e.rules.Store(e.configured.With(views))
}

// ConfiguredRules are the rules SetRules gave, without the views'.
func (e *Engine) ConfiguredRules() *rewriter.Rules {
	e.viewsMu.Lock()
	defer e.viewsMu.Unlock()
	return e.configured
}

// memoized reports a text of one statement that starts with an INSERT head
// the session's planner keeps (rewriter.Planner.HasHead): NeedsSession
// would answer true after reading the head again, which an ORM's stream of
// INSERTs would pay for on every statement.
func (e *Engine) memoized(s Session, text string, c sqltext.Class) bool {
	st := stateOf(s)
	return st != nil && !c.Semicolon() && st.planner.HasHead(text, e.rules.Load())
}
