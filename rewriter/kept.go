package rewriter

import (
	"reflect"
	"slices"
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
// PREPARE: Rewrite plans without their edits (Render and WriteTo of the
// result return an error), every slice cut to its length. Other kinds
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
	n := sizeOf[Plan]()
	n += int64(cap(p.Calls)) * sizeOf[Call]()
	for _, c := range p.Calls {
		n += int64(len(c.Tag) + len(c.Name) + len(c.DB))
	}
	n += int64(cap(p.Slots)) * sizeOf[Slot]()
	n += int64(cap(p.Tags)) * sizeOf[TagCount]()
	n += int64(cap(p.Filled)) * sizeOf[Filled]()
	n += int64(cap(p.Explicit)) * sizeOf[ExplicitKey]()
	n += int64(cap(p.Advances)) * sizeOf[Advance]()
	n += int64(cap(p.Idents)) * sizeOf[SeqName]()
	n += int64(cap(p.Counters)) * sizeOf[Counter]()
	n += int64(cap(p.Writes)) * sizeOf[SeqName]()
	n += int64(cap(p.edits)) * sizeOf[edit]()
	n += int64(cap(p.texts)) * 16
	for _, t := range p.texts {
		n += int64(len(t))
	}
	if p.num != nil {
		n += sizeOf[numbering]() + int64(len(p.num.count)+len(p.num.init))
		n += int64(cap(p.num.edits)) * sizeOf[numberedEdit]()
		for _, e := range p.num.edits {
			n += int64(len(e.pre) + len(e.post))
		}
	}
	if p.Load != nil {
		n += sizeOf[Load]() + int64(cap(p.Load.edits))*sizeOf[loadEdit]()
	}
	return n
}

// sizeOf is the size of a T (unsafe.Sizeof without importing unsafe,
// which only internal/raw may: internal/layering).
func sizeOf[T any]() int64 { return int64(reflect.TypeFor[T]().Size()) }
