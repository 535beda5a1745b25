package rewriter

import (
	"slices"
	"strings"
)

// Clone returns a deep copy of the plan that shares no memory with the
// text it was made from nor with the Planner that made it: every slice is
// copied and every string (tags, names, the edits' texts, a numbered
// plan's pieces, LOAD DATA's format) is copied out, so the copy stays
// valid after the text's buffer and the Planner are reused (a command an
// event loop planned and handed to the session's goroutine keeps its plan
// this way: engine/handed.go). The copy is rendered from the same text,
// as the plan is; it is the one place that allocates, so a plan run where
// it was made is never cloned.
func (p *Plan) Clone() Plan {
	c := *p
	c.Calls = cloneEach(p.Calls, func(x *Call) { x.Tag, x.Name, x.DB = strings.Clone(x.Tag), strings.Clone(x.Name), strings.Clone(x.DB) })
	c.Slots = cloneEach(p.Slots, func(x *Slot) { x.Tag = strings.Clone(x.Tag) })
	c.Tags = cloneEach(p.Tags, func(x *TagCount) { x.Tag = strings.Clone(x.Tag) })
	c.Filled = cloneEach(p.Filled, cloneFilled)
	c.Counters = cloneEach(p.Counters, func(x *Counter) { x.Tag = strings.Clone(x.Tag) })
	c.Writes = cloneEach(p.Writes, cloneSeqName)
	c.Explicit = cloneEach(p.Explicit, func(x *ExplicitKey) { x.Tag = strings.Clone(x.Tag) })
	c.Advances = cloneEach(p.Advances, func(x *Advance) { x.Tag = strings.Clone(x.Tag) })
	c.StmtKeys = slices.Clone(p.StmtKeys)
	c.Idents = cloneEach(p.Idents, cloneSeqName)
	c.edits = slices.Clone(p.edits) // numbers and indexes into texts only
	c.texts = cloneEach(p.texts, func(x *string) { *x = strings.Clone(*x) })
	if p.Load != nil {
		c.Load = p.Load.clone()
	}
	if p.num != nil {
		c.num = p.num.clone()
	}
	if p.rows != nil {
		r := *p.rows
		r.at = slices.Clone(r.at)
		c.rows = &r
	}
	return c
}

// cloneEach is slices.Clone(s) with f applied to each copied element
// (nil stays nil, empty stays empty).
func cloneEach[T any](s []T, f func(*T)) []T {
	c := slices.Clone(s)
	for i := range c {
		f(&c[i])
	}
	return c
}

func cloneFilled(x *Filled) {
	x.DB, x.Table, x.Column, x.Tag = strings.Clone(x.DB), strings.Clone(x.Table), strings.Clone(x.Column), strings.Clone(x.Tag)
}

func cloneSeqName(x *SeqName) { x.DB, x.Name = strings.Clone(x.DB), strings.Clone(x.Name) }

func (l *Load) clone() *Load {
	c := *l
	cloneFilled(&c.Filled)
	f := &c.Format
	f.FieldTerm, f.LineStart, f.LineTerm = strings.Clone(f.FieldTerm), strings.Clone(f.LineStart), strings.Clone(f.LineTerm)
	c.Charset = strings.Clone(c.Charset)
	c.edits = cloneEach(l.edits, func(e *loadEdit) { e.text = strings.Clone(e.text) })
	return &c
}

func (n *numbering) clone() *numbering {
	c := *n
	c.count, c.init = strings.Clone(n.count), strings.Clone(n.init)
	c.edits = cloneEach(n.edits, func(e *numberedEdit) { e.pre, e.post = strings.Clone(e.pre), strings.Clone(e.post) })
	return &c
}
