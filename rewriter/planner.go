package rewriter

import "github.com/leafproxy/leafproxy/internal/sqltext"

// Planner is PlanQuery reusing its memory from one call to the next (the
// builder and the plan's slices), so that planning a filled INSERT
// allocates nothing. One per session: not for concurrent use, and a plan
// it returns is valid until its next call (the engine renders it at once;
// PlanPrepare's plans, kept with their statements, own their memory; a
// plan's Clone outlives both the next call and the text's buffer).
type Planner struct {
	builder builder
	slots   []Slot
	tags    []TagCount
	calls   []Call
	memo    []insertMemo // heads of recent lone INSERTs (memo.go)
	charge  charge       // plan memory held during a call (parse.go)
}

// PlanQuery is PlanQuery (the package function) with pl's memory; c is
// sql's class (sqltext.Classify), made once per command by the caller.
func (pl *Planner) PlanQuery(sql string, c sqltext.Class, env *Env) (Plan, error) {
	p, _, err := pl.planWith(sql, c, env, false, true)
	return p, err
}

// Release gives back the plan memory the last plan holds: a many-row
// INSERT's rows are charged (RowCost each) from before it is planned
// until its caller is done with the plan, its IDs and its rendered text.
func (pl *Planner) Release() { pl.charge.done() }

// Held is the plan memory the last plan holds until Release.
func (pl *Planner) Held() int64 { return pl.charge.held }

// planWith plans with or without the fast path (fast.go); fastHits is the
// number of statements the fast path planned.
func planWith(sql string, c sqltext.Class, env *Env, prepared, fast bool) (p Plan, fastHits int, err error) {
	var ch charge
	p, done, seq, first, err := quickPlan(sql, c, env, nil, prepared, &ch)
	if done {
		ch.done()
		return p, 0, err
	}
	pl := Planner{charge: ch}
	defer pl.charge.done()
	return pl.build(sql, env, prepared, fast, seq, first)
}

func (pl *Planner) planWith(sql string, c sqltext.Class, env *Env, prepared, fast bool) (p Plan, fastHits int, err error) {
	if fast && !prepared && len(pl.memo) > 0 {
		if p, ok := pl.memoPlan(sql, c, env); ok {
			return p, 1, nil
		}
	}
	clear(pl.calls[:cap(pl.calls)]) // they hold strings of the last text
	pl.charge.done()                // the last plan's rows, if not released
	defer func() {
		if err != nil {
			pl.charge.done()
		} else {
			pl.charge.doneKeepRows() // until Release: the plan is in use
		}
	}()
	p, done, seq, first, err := quickPlan(sql, c, env, pl.calls[:0], prepared, &pl.charge)
	if done {
		if p.Calls != nil && cap(p.Calls) <= 64 {
			pl.calls = p.Calls
		}
		return p, 0, err
	}
	p, fastHits, err = pl.build(sql, env, prepared, fast, seq, first)
	if err == nil && fast && !prepared {
		pl.memoize(env)
	}
	return p, fastHits, err
}

// quickPlan answers without the builder when it can: text with nothing to
// plan (MayRewrite(c)), or the hot NEXTVAL select. seq says the text may
// hold a sequence call (false: it holds none); first is what was read of a
// lone INSERT on a rule table (see firstInsert). A text with many calls is
// charged for them first (ch, parse.go).
func quickPlan(sql string, c sqltext.Class, env *Env, calls []Call, prepared bool, ch *charge) (p Plan, done, seq bool, first firstInsert, err error) {
	seq = c.SeqCall()
	if seq {
		if n := sqltext.SeqCalls(sql, freeCalls+1); n > freeCalls {
			if err := ch.calls(env, sqltext.SeqCalls(sql, -1)); err != nil {
				return Plan{}, true, seq, first, err
			}
		}
	}
	if !MayRewrite(c) {
		return Plan{}, true, seq, first, nil // nothing to plan
	}
	if !seq {
		// An INSERT into a table without a rule is only read up to its
		// table name.
		var plain bool
		if plain, first = plainInsertsFirst(sql, env); plain {
			return Plan{}, true, seq, first, nil
		}
		if first.ok {
			return Plan{}, false, seq, first, nil // an INSERT, not a SELECT
		}
	}
	calls, ok, err := matchSequenceSelect(sql, env.Mode, calls, prepared)
	if err != nil {
		return Plan{}, true, seq, first, err
	}
	if ok {
		return Plan{Kind: Sequence, Calls: calls}, true, seq, first, nil
	}
	return Plan{}, false, seq, first, nil
}

// build runs the builder over sql.
func (pl *Planner) build(sql string, env *Env, prepared, fast, seq bool, first firstInsert) (p Plan, fastHits int, err error) {
	b := pl.reset(sql, env, prepared, fast, seq, first)
	if err := b.run(); err != nil {
		pl.trim()
		return Plan{}, b.fastHits, err
	}
	p = pl.finish()
	pl.trim()
	return p, b.fastHits, nil
}

// trim drops the builder's slices that grew huge (a 10,000-row INSERT's):
// a session's Planner keeps its memory for the next statement, which is
// rarely as large (the plan just made keeps its own references).
func (pl *Planner) trim() {
	b := &pl.builder
	b.rows = nil // a Large plan's rows are its own
	if cap(b.edits) > 1024 {
		b.edits, b.filled = nil, nil
	}
	if cap(b.calls) > 1024 {
		b.calls = nil
	}
	if cap(b.explicit) > 1024 {
		b.explicit = nil
	}
	if cap(b.marks) > 1024 {
		b.marks = nil
	}
	if cap(b.idents) > 1024 {
		b.idents = nil
	}
	if cap(b.texts) > 1024 {
		b.texts = nil
	}
}

// reset readies pl's builder for sql, reusing its memory.
func (pl *Planner) reset(sql string, env *Env, prepared, fast, seq bool, first firstInsert) *builder {
	clear(pl.builder.edits[:cap(pl.builder.edits)]) // they hold strings of the last text
	clear(pl.builder.filled[:cap(pl.builder.filled)])
	clear(pl.builder.calls[:cap(pl.builder.calls)])
	clear(pl.builder.explicit[:cap(pl.builder.explicit)])
	clear(pl.builder.marks[:cap(pl.builder.marks)])
	clear(pl.builder.fillTags[:cap(pl.builder.fillTags)])
	clear(pl.builder.idents[:cap(pl.builder.idents)])
	clear(pl.builder.texts[:cap(pl.builder.texts)])
	clear(pl.slots[:cap(pl.slots)])
	clear(pl.tags[:cap(pl.tags)])
	texts := pl.builder.texts[:0]
	if cap(texts) == 0 {
		texts = make([]string, 0, 8) // one allocation, not three (a fresh Planner's)
	}
	pl.builder = builder{sql: sql, env: env, prepared: prepared, fast: fast, noSeq: !seq, first: first, charge: &pl.charge,
		edits: pl.builder.edits[:0], filled: pl.builder.filled[:0], calls: pl.builder.calls[:0], explicit: pl.builder.explicit[:0], idents: pl.builder.idents[:0],
		marks: pl.builder.marks[:0], fillTags: pl.builder.fillTags[:0], texts: append(texts, "")}
	return &pl.builder
}

// finish makes the plan of what the builder collected, keeping its
// slices for the next call unless they grew huge.
func (pl *Planner) finish() Plan {
	b := &pl.builder
	if b.load != nil {
		return Plan{Kind: LoadData, Load: b.load, Filled: []Filled{b.load.Filled}}
	}
	p := b.plan(pl.slots[:0], pl.tags[:0])
	if p.Slots != nil && cap(p.Slots) <= 1024 { // a 100,000-row INSERT's are not kept
		pl.slots, pl.tags = p.Slots, p.Tags
	}
	return p
}
