package rewriter

import (
	"io"
	"slices"
)

// A large INSERT into a rule table (more than LargeRows bytes, the key
// column absent from its column list, the text's one statement) keeps
// its rows as offsets alone: 4 bytes a row, where an edit and a slot took
// 88. Its IDs are one tag's batch, taken in row order, and its text is
// rendered in pieces straight into the backend connection (WriteTo), so
// that neither the rendered text nor per-row slots are ever held whole
// (issue 29).

// Large reports a plan whose rows are offsets: it has no Slots, one tag,
// AssignIDs returns that tag's batch as it is, and the caller should
// send it with RenderedLen and WriteTo rather than Render.
func (p *Plan) Large() bool { return p.rows != nil }

// renderChunk: WriteTo writes the rendered text in pieces of about this
// many bytes.
const renderChunk = 64 << 10

// largePlan makes the Large plan of what the builder collected, if the
// rows are the text's one statement and all else is the column list's
// edit before them; otherwise it turns the rows into edits (ok false).
func (b *builder) largePlan(tags []TagCount) (p Plan, ok bool) {
	r := b.rows
	if b.nstmts != 1 || len(b.marks) > 0 || len(b.edits) != 1 || len(r.at) == 0 || b.edits[0].start > int(r.at[0]) {
		b.edits = slices.Grow(b.edits, len(r.at))
		for i, at := range r.at {
			b.edits = append(b.edits, edit{start: int(at), end: int(at), tag: r.tag, key: true, post: r.post, wrap: i == 0 && r.wrap})
		}
		if r.wrap && len(r.at) > 1 {
			// the second row marks (markNextRow)
			b.edits[len(b.edits)-len(r.at)+1].pre = b.text(markOpen)
			b.wrapLast, b.wrapMarked = false, true
		}
		b.rows = nil
		return Plan{}, false
	}
	tags = append(tags, TagCount{Tag: b.texts[r.tag], N: len(r.at)})
	return Plan{Kind: Rewrite, edits: b.edits, texts: b.texts, rows: r, Tags: tags, Filled: orNil(b.filled), Explicit: orNil(b.explicit),
		Statements: b.nstmts, Idents: orNil(b.idents), StringCalls: b.strCalls, WrapLast: r.wrap && len(r.at) == 1, WrapMarked: r.wrap && len(r.at) > 1}, true
}

// RenderedLen is the length of the text Render or WriteTo gives.
func (p *Plan) RenderedLen(sql string, ids []int64) int {
	n := p.renderedLen(sql, ids)
	if r := p.rows; r != nil {
		n += len(r.at) * len(p.texts[r.post])
		if r.wrap {
			n += len(wrapOpen) + 1
			if len(r.at) > 1 {
				n += len(markOpen)
			}
		}
		for _, id := range ids[:len(r.at)] {
			n += intLen(id)
		}
	}
	return n
}

// WriteTo writes the rendered text (what Render appends) to w in pieces,
// using buf's memory; it returns buf, maybe grown, for the next call. It
// fails as Render does, or with w's error.
func (p *Plan) WriteTo(w io.Writer, buf []byte, sql string, ids []int64) ([]byte, error) {
	if p.kept {
		return buf, keptError("WriteTo")
	}
	if p.rows == nil {
		buf, err := p.Render(buf[:0], sql, ids)
		if err != nil {
			return buf, err
		}
		_, err = w.Write(buf)
		return buf, err
	}
	return p.renderRows(buf[:0], sql, ids, w)
}

// renderRows appends the rendered text of a Large plan to dst or, when w
// is not nil, writes it to w whenever dst holds renderChunk bytes.
func (p *Plan) renderRows(dst []byte, sql string, ids []int64, w io.Writer) ([]byte, error) {
	var err error
	last := 0
	// out appends sql[last:to), straight to w when it is large.
	out := func(to int) {
		if w != nil && to-last > renderChunk && err == nil {
			if _, err = w.Write(dst); err == nil {
				_, err = io.WriteString(w, sql[last:to])
			}
			dst = dst[:0]
		} else {
			dst = append(dst, sql[last:to]...)
		}
		last = to
	}
	for i := range p.edits {
		e := &p.edits[i]
		out(e.start)
		dst = p.appendEdit(dst, e, ids)
		last = e.end
	}
	r := p.rows
	post := p.texts[r.post]
	for i, at := range r.at {
		out(int(at))
		if i == 0 && r.wrap {
			dst = append(dst, wrapOpen...)
			dst = appendID(dst, ids[i])
			dst = append(dst, ')')
		} else {
			if i == 1 && r.wrap {
				dst = append(dst, markOpen...)
			}
			dst = appendID(dst, ids[i])
		}
		dst = append(dst, post...)
		if w != nil && len(dst) >= renderChunk && err == nil {
			_, err = w.Write(dst)
			dst = dst[:0]
		}
	}
	out(len(sql))
	if w != nil && err == nil {
		_, err = w.Write(dst)
		dst = dst[:0]
	}
	return dst, err
}
