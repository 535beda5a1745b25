package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// roomDirs are the packages whose functions must each stay small enough
// for a new maintainer to change in an afternoon (issue 31): cyclomatic
// complexity under maxComplexity+1 and under maxLines lines.
var roomDirs = []string{"rewriter", "rewriter/loadfile"}

const (
	maxComplexity = 29  // as gocyclo -over 29 reports
	maxLines      = 120 // a function must be shorter than this
)

// roomAllowlist names the functions (as "pkg.Recv.Name" or "pkg.Name")
// still over the limits. It only shrinks.
var roomAllowlist = map[string]bool{}

// TestFunctionsFitARoom fails naming every function of roomDirs' non-test
// files whose cyclomatic complexity (as gocyclo counts it: 1, plus one per
// if, for, range, non-default case and select clause, && and ||, closures
// included) is over maxComplexity, or that spans maxLines lines or more.
func TestFunctionsFitARoom(t *testing.T) {
	seen := map[string]bool{}
	for _, dir := range roomDirs {
		files, err := filepath.Glob(filepath.Join("../..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("no Go files in %s", dir)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			for _, r := range roomsOf(t, path) {
				seen[r.name] = true
				over := r.complexity > maxComplexity || r.lines >= maxLines
				switch {
				case over && !roomAllowlist[r.name]:
					t.Errorf("%s (%s:%d): complexity %d, %d lines; the limit is complexity %d and fewer than %d lines: split it",
						r.name, filepath.ToSlash(strings.TrimPrefix(path, "../../")), r.line, r.complexity, r.lines, maxComplexity, maxLines)
				case !over && roomAllowlist[r.name]:
					t.Errorf("%s now fits (complexity %d, %d lines): remove it from roomAllowlist", r.name, r.complexity, r.lines)
				}
			}
		}
	}
	for name := range roomAllowlist {
		if !seen[name] {
			t.Errorf("roomAllowlist names %s, which is gone: remove it", name)
		}
	}
}

// TestRoomComplexity checks the count against gocyclo's on known shapes.
func TestRoomComplexity(t *testing.T) {
	src := `package p
func a() {}
func b(x int) int {
	if x > 0 && x < 5 || x == 9 {
		return 1
	}
	for i := 0; i < x; i++ {
	}
	for range []int{} {
	}
	switch x {
	case 1, 2:
	case 3:
	default:
	}
	var c chan int
	select {
	case <-c:
	default:
	}
	f := func() {
		if x == 2 {
		}
	}
	f()
	return 0
}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "p.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got := map[string]room{}
	for _, r := range roomsOf(t, path) {
		got[r.name] = r
	}
	// b: 1 + if + && + || + for + range + 2 cases + 1 comm + closure's if.
	if got["p.a"].complexity != 1 || got["p.b"].complexity != 10 {
		t.Errorf("complexity a=%d b=%d, want 1 and 10", got["p.a"].complexity, got["p.b"].complexity)
	}
	if got["p.a"].lines != 1 || got["p.b"].lines != 25 {
		t.Errorf("lines a=%d b=%d, want 1 and 25", got["p.a"].lines, got["p.b"].lines)
	}
}

type room struct {
	name       string
	line       int
	complexity int
	lines      int
}

// roomsOf reads the functions of one file.
func roomsOf(t *testing.T, path string) []room {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var rooms []room
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		name := f.Name.Name + "."
		if fn.Recv != nil && len(fn.Recv.List) > 0 {
			name += recvName(fn.Recv.List[0].Type) + "."
		}
		name += fn.Name.Name
		start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
		rooms = append(rooms, room{name: name, line: start, complexity: complexity(fn), lines: end - start + 1})
	}
	sort.Slice(rooms, func(i, j int) bool { return rooms[i].line < rooms[j].line })
	return rooms
}

func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.IndexListExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return fmt.Sprintf("%T", e)
}

// complexity is gocyclo's (v0.6.0) count for fn.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}
