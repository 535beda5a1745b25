package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// handedPlan is the plan an event loop made for a command it then handed
// to the session's goroutine (ErrWouldBlock after planning: a tag with
// nothing buffered, LASTVAL of a numbered statement, SETVAL, a native
// sequence to look up). The goroutine runs the same command next and
// takes this plan instead of planning the text again.
//
// Only Sequence plans are kept: such a plan is its calls and nothing else
// (rewriter's planner), and the calls are copied out of the loop's packet
// buffer and the planner's scratch, both reused once the command has left
// the loop. The plan is taken only for the same text under the same
// database, sql_mode and rules, and only by the next query.
type handedPlan struct {
	text  string
	db    string
	mode  string
	rules *rewriter.Rules
	plan  rewriter.Plan
}

// keepHanded keeps plan for the goroutine's run of text when err hands
// the command over from a loop.
func (st *state) keepHanded(ctx context.Context, text string, plan *rewriter.Plan, err error) {
	if err == nil || plan.Kind != rewriter.Sequence || !errors.Is(err, proxy.ErrWouldBlock) || !proxy.MustNotBlock(ctx) {
		return
	}
	calls := make([]rewriter.Call, len(plan.Calls))
	for i, c := range plan.Calls {
		c.Tag, c.Name, c.DB = strings.Clone(c.Tag), strings.Clone(c.Name), strings.Clone(c.DB)
		calls[i] = c
	}
	st.handed = &handedPlan{
		text: strings.Clone(text), db: st.env.DB, mode: st.sqlModeText, rules: st.env.Rules,
		plan: rewriter.Plan{Kind: rewriter.Sequence, Calls: calls},
	}
}

// takeHanded is the plan a loop kept for text (see handedPlan), if any;
// a kept plan is offered to one query only.
func (st *state) takeHanded(text string) (rewriter.Plan, bool) {
	h := st.handed
	if h == nil {
		return rewriter.Plan{}, false
	}
	st.handed = nil
	if h.text != text || h.db != st.env.DB || h.mode != st.sqlModeText || h.rules != st.env.Rules {
		return rewriter.Plan{}, false
	}
	return h.plan, true
}
