package rewriter

import (
	"slices"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// PlanQuery plans one COM_QUERY text, which may hold several statements.
// Errors are *Error; the text must then not be sent.
// It classifies sql itself (sqltext.ClassifyString); a caller that has
// the class uses a Planner.
func PlanQuery(sql string, env *Env) (Plan, error) {
	return planIn(sql, sqltext.ClassifyString(sql), env, false)
}

// PlanPrepare plans a COM_STMT_PREPARE text. The client's placeholders
// stay as they are and every generated value becomes one more ? parameter
// (Slots[i].Param is its index among the backend statement's Params; the
// client binds ClientParams). A ? in a rule table's key column becomes
// COALESCE(NULLIF(?,0),?) (without NULLIF under NO_AUTO_VALUE_ON_ZERO) so
// a value bound at execute time still wins. `SELECT NEXTVAL('t')` gives a
// Sequence plan to answer each execute with.
// It classifies sql itself; PlanPrepareClass takes the caller's class.
func PlanPrepare(sql string, env *Env) (Plan, error) {
	return planIn(sql, sqltext.ClassifyString(sql), env, true)
}

// PlanPrepareClass is PlanPrepare for a caller that has sql's class
// (sqltext.Classify, made once per command).
func PlanPrepareClass(sql string, c sqltext.Class, env *Env) (Plan, error) {
	return planIn(sql, c, env, true)
}

func planIn(sql string, c sqltext.Class, env *Env, prepared bool) (Plan, error) {
	p, _, err := planWith(sql, c, env, prepared, true)
	return p, err
}

// plan numbers the slots in text order and counts IDs per tag.
func (b *builder) plan(slots []Slot, tags []TagCount) Plan {
	if b.numbering != nil || len(b.edits) == 0 {
		for _, m := range b.marks {
			b.noteMax(m.tag, m.v)
		}
	}
	if b.numbering != nil {
		return Plan{Kind: Numbered, Counters: b.counters, CountsExplicit: b.countsExplicit, num: b.numbering, Filled: orNil(b.filled), Explicit: orNil(b.explicit),
			Statements: b.nstmts, ClientParams: b.clientParams, Params: b.clientParams, prepared: b.prepared, Idents: orNil(b.idents), StringCalls: b.strCalls,
			Writes: orNil(b.writes)}
	}
	if b.rows != nil {
		if p, ok := b.largePlan(tags); ok {
			return p
		}
	}
	if len(b.edits) == 0 {
		p := Plan{Explicit: orNil(b.explicit)}
		if b.nstmts == 1 && b.keyed && !b.keyFilled {
			p.LastKey = b.lastKey
		}
		p.StmtKeys = b.reportedKeys()
		return p
	}
	if !editsSorted(b.edits) { // the fast path's are
		slices.SortStableFunc(b.edits, func(x, y edit) int { return x.start - y.start })
	}
	p := Plan{Kind: Rewrite, edits: b.edits, texts: b.texts, prepared: b.prepared, Slots: slices.Grow(slots, len(b.edits)), Tags: tags, Filled: orNil(b.filled), Explicit: orNil(b.explicit), Statements: b.nstmts,
		Idents: orNil(b.idents), StringCalls: b.strCalls, WrapLast: b.wrapLast, WrapMarked: b.wrapMarked}
	if b.prepared && b.nstmts == 1 {
		p.LastKey, p.LastKeyAt = b.lastKey, b.lastKeyAt
	}
	p.StmtKeys = b.reportedKeys()
	b.numberEdits(&p)
	p.texts = b.texts // gluing may have added some
	if b.env.ReportKeys && b.nstmts == 1 {
		b.reportKeys(&p)
	}
	if b.prepared {
		p.numberParams(b.sql, b.env.Mode)
	}
	if len(b.marks) > 0 {
		p.Advances = advances(b.marks, p.Slots)
	}
	return p
}

// numberEdits gives each edit with a slot its slot in text order, counts
// the IDs per tag, and spaces a number that would glue to a word.
func (b *builder) numberEdits(p *Plan) {
	var tagIndex map[string]int        // past a few tags; fewer are found by a scan
	lastText, lastTag := uint32(0), -1 // the last edit's tag (text index) and its Tags index
	for i := range p.edits {
		e := &p.edits[i]
		if e.slot < 0 {
			continue
		}
		// A number glued to a word would change how the text lexes:
		// NEXTVAL('a')WHERE must not become 1001WHERE.
		if e.end > e.start && e.end < len(b.sql) && sqltext.IsIdentByte(b.sql[e.end]) {
			e.post = b.text(b.texts[e.post] + " ")
		}
		if e.end > e.start && e.start > 0 && sqltext.IsIdentByte(b.sql[e.start-1]) {
			e.pre = b.text(" " + b.texts[e.pre])
		}
		tag := b.texts[e.tag]
		t, ok := -1, false
		if lastTag >= 0 && e.tag == lastText {
			t, ok = lastTag, true // the rows of an INSERT: one tag
		} else if tagIndex != nil {
			t, ok = tagIndex[tag]
		} else if t = slices.IndexFunc(p.Tags, func(c TagCount) bool { return c.Tag == tag }); t >= 0 {
			ok = true
		}
		if !ok {
			t = len(p.Tags)
			p.Tags = append(p.Tags, TagCount{Tag: tag})
			switch {
			case tagIndex != nil:
				tagIndex[tag] = t
			case len(p.Tags) > 8:
				tagIndex = make(map[string]int, len(p.Tags))
				for j, c := range p.Tags {
					tagIndex[c.Tag] = j
				}
			}
		}
		p.Tags[t].N++
		lastText, lastTag = e.tag, t
		e.slot = len(p.Slots)
		p.Slots = append(p.Slots, Slot{Tag: tag, Start: e.start, End: e.end, Key: e.key, Bound: e.param, Ignore: e.ignore, KeepZero: e.keepZero, tag: int32(t)})
	}
}

// advances places the explicit marks (in text order) among the slots:
// After counts the slots of the mark's tag before it.
func advances(marks []explicitMark, slots []Slot) []Advance {
	slices.SortStableFunc(marks, func(x, y explicitMark) int { return x.at - y.at })
	out := make([]Advance, 0, len(marks))
	var before map[string]int
	k := 0
	for _, m := range marks {
		for ; k < len(slots) && slots[k].Start < m.at; k++ {
			if before == nil {
				before = make(map[string]int, 2)
			}
			before[slots[k].Tag]++
		}
		out = append(out, Advance{Tag: m.tag, To: m.v, After: before[m.tag], At: m.at})
	}
	return out
}

// numberParams sets Slots[i].Param, ClientParams and Params: the client's
// ? markers (found with the lexer, so quoted and commented ones do not
// count) and the generated ones, merged in the order they appear in the
// rendered text. A generated value inserted where a marker starts comes
// before it; in COALESCE(NULLIF(?,0),?) the client's marker comes first.
func (p *Plan) numberParams(sql string, mode Mode) {
	l := lexer{sql: sql, mode: mode}
	var markers []int
	for t := l.next(); t.kind != tEOF; t = l.next() {
		if t.kind == tParam {
			markers = append(markers, t.start)
		}
	}
	p.ClientParams = len(markers)
	idx, m := 0, 0
	for i := range p.edits {
		e := &p.edits[i]
		for m < len(markers) && markers[m] < e.start {
			idx, m = idx+1, m+1
		}
		if e.param && m < len(markers) && markers[m] == e.start {
			idx, m = idx+1, m+1 // the client's own ?, kept first
		}
		for m < len(markers) && markers[m] < e.end {
			// A marker inside replaced text is gone from the backend
			// text (cannot happen for the shapes planned: NEXTVAL(?) is
			// refused); Params != ClientParams+len(Slots) then says so.
			m++
		}
		if e.slot >= 0 {
			p.Slots[e.slot].Param = idx
			idx++
		}
	}
	idx += len(markers) - m
	p.Params = idx
}

// orNil is s, or nil when it is empty: a Planner reuses its slices, and an
// empty one it kept must not make its plans differ from a fresh planner's.
func orNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// reportedKeys is Plan.StmtKeys: nil unless the text has more than one
// statement and one to report.
func (b *builder) reportedKeys() []int64 {
	if b.nstmts < 2 || b.stmtKeysOff || len(b.stmtKeys) != b.nstmts || b.prepared {
		return nil
	}
	for _, k := range b.stmtKeys {
		if k != 0 {
			return slices.Clone(b.stmtKeys)
		}
	}
	return nil
}
