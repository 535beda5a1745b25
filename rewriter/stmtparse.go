package rewriter

import (
	"errors"
	"fmt"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// What builder.statement uses beside the statement's plan: how calls name
// their sequences, and the parser behind a recover.

// noteCall records how c names its sequence (Plan.Idents, StringCalls).
func (b *builder) noteCall(c seqCall) {
	if !c.ident || c.fn == Decode {
		b.strCalls = true
		return
	}
	n := SeqName{DB: c.qual, Name: c.tag}
	for _, m := range b.idents {
		if m == n {
			return
		}
	}
	b.idents = append(b.idents, n)
}

// parse runs the parser, turning a panic into an error: the parser's
// value driver panics on some literals (a decimal of 80+ digits). A parser
// that panicked is not reused (*broken).
func parse(p *parser.Parser, src string, broken *bool) (stmts []ast.StmtNode, err error) {
	defer func() {
		if r := recover(); r != nil {
			*broken = true
			stmts, err = nil, fmt.Errorf("parser failed: %v", r)
		}
	}()
	if *broken {
		return nil, errors.New("parser failed")
	}
	stmts, _, err = p.ParseSQL(src)
	return stmts, err
}
