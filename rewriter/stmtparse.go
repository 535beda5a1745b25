package rewriter

// How builder.statement records the way calls name their sequences.

// noteCall records how c names its sequence (Plan.Idents, StringCalls).
func (b *builder) noteCall(c seqCall) {
	if !c.ident || c.function == Decode {
		b.strCalls = true
		return
	}
	n := SeqName{DB: c.dbQualifier, Name: c.tag}
	for _, m := range b.idents {
		if m == n {
			return
		}
	}
	b.idents = append(b.idents, n)
}
