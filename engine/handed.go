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
// nothing buffered, a filled INSERT whose IDs or key columns cannot be had
// without waiting, an explicit key's insert id, a numbered INSERT ...
// SELECT or UPDATE, LASTVAL of a numbered statement, SETVAL, LOAD DATA, a
// native sequence to look up). The goroutine runs the same command next
// and takes this plan instead of planning the text again.
//
// Every kind is kept, as a deep copy (rewriter.Plan.Clone): a plan borrows
// the loop's packet buffer (tags, names, an edit's text) and the planner's
// scratch (its slices), both reused once the command has left the loop.
// Only the hand-over copies: a plan run on the loop is never cloned. Not
// kept: a Large plan (a text over 64 KB never runs on a loop) and a plan
// that holds plan memory (the goroutine plans it again under the budget).
// The plan is taken only for the same text under the same database,
// sql_mode and rules, and only by the next query.
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
	if err == nil || !errors.Is(err, proxy.ErrWouldBlock) || !proxy.MustNotBlock(ctx) || plan.Large() || st.planner.Held() > 0 {
		return
	}
	st.handed = &handedPlan{
		text: strings.Clone(text), db: st.env.DB, mode: st.sqlModeText, rules: st.env.Rules,
		plan: plan.Clone(),
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
