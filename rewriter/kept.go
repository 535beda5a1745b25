package rewriter

import (
	"slices"
	"unsafe"
)

// A prepared statement keeps its plan for as long as the client keeps the
// statement open (the session's life, for many ORMs' statement caches), so
// what it keeps is counted and cut down to what an EXECUTE reads: Keep
// drops the edits (Render's, needed once, for the PREPARE), and Size says
// what is left, for the engine's budgets of kept plans
// (limits.prepared_memory, limits.session_prepared_memory). A 1,000-row
// `(?)` INSERT kept ~205 bytes per row before (edits with their strings,
// slots, slack of grown slices); kept, a row is its Slot and the engine's
// parameter map.

// Keep returns the plan as a prepared statement keeps it after its
// PREPARE: Rewrite plans without their edits (Render must not be called
// on the result: it panics), every slice cut to its length. Other kinds
// are returned as they are (a Numbered plan renders at each EXECUTE).
func (p Plan) Keep() Plan {
	if p.Kind != Rewrite {
		return p
	}
	p.edits, p.texts = nil, nil
	p.kept = true
	p.Slots = slices.Clone(p.Slots)
	p.Tags = slices.Clone(p.Tags)
	p.Advances = slices.Clone(p.Advances)
	p.Filled = slices.Clone(p.Filled)
	p.Explicit = slices.Clone(p.Explicit)
	p.Idents = slices.Clone(p.Idents)
	return p
}

// Size is about what the plan holds in memory, in bytes, beyond the text
// it was made from: its slices' capacity (string contents of tags and
// names are counted as their length, though most share the text's or the
// rules' memory).
func (p *Plan) Size() int64 {
	n := int64(unsafe.Sizeof(*p))
	n += int64(cap(p.Calls)) * int64(unsafe.Sizeof(Call{}))
	for _, c := range p.Calls {
		n += int64(len(c.Tag) + len(c.Name) + len(c.DB))
	}
	n += int64(cap(p.Slots)) * int64(unsafe.Sizeof(Slot{}))
	n += int64(cap(p.Tags)) * int64(unsafe.Sizeof(TagCount{}))
	n += int64(cap(p.Filled)) * int64(unsafe.Sizeof(Filled{}))
	n += int64(cap(p.Explicit)) * int64(unsafe.Sizeof(ExplicitKey{}))
	n += int64(cap(p.Advances)) * int64(unsafe.Sizeof(Advance{}))
	n += int64(cap(p.Idents)) * int64(unsafe.Sizeof(SeqName{}))
	n += int64(cap(p.Counters)) * int64(unsafe.Sizeof(Counter{}))
	n += int64(cap(p.Writes)) * int64(unsafe.Sizeof(SeqName{}))
	n += int64(cap(p.edits)) * int64(unsafe.Sizeof(edit{}))
	n += int64(cap(p.texts)) * 16
	for _, t := range p.texts {
		n += int64(len(t))
	}
	if p.num != nil {
		n += int64(unsafe.Sizeof(*p.num)) + int64(len(p.num.count)+len(p.num.init)+len(p.num.reads))
		n += int64(cap(p.num.edits)) * int64(unsafe.Sizeof(numberedEdit{}))
		for _, e := range p.num.edits {
			n += int64(len(e.pre) + len(e.post))
		}
	}
	if p.Load != nil {
		n += int64(unsafe.Sizeof(*p.Load)) + int64(cap(p.Load.edits))*int64(unsafe.Sizeof(loadEdit{}))
	}
	return n
}
