package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The function-size rule (issue 31 for the rewriter, issue 42 for all
// production code): every function of every production package must stay
// small enough for a new maintainer to change in an afternoon: cyclomatic
// complexity under maxComplexity+1 and under maxLines lines. The packages
// are listed by go list, so a new package is covered by default; only the
// test harnesses of roomHarnesses are left out.
const (
	maxComplexity = 29  // as gocyclo -over 29 reports
	maxLines      = 120 // a function must be shorter than this
)

// roomHarnesses are the packages of the module the rule leaves out: test
// harnesses and test-only programs, which no product binary links. Their
// _test.go files are skipped anyway; these have production-looking files
// that serve only tests. Everything else go list reports is covered.
var roomHarnesses = []string{
	"integration",      // tests only
	"internal/testkit", // test harnesses, with every package under it
}

// roomAllowlist names the functions (as "dir.Recv.Name" or "dir.Name",
// dir the package's directory in the module, e.g. "allocator/segment")
// still over the limits. It only shrinks.
var roomAllowlist = map[string]bool{}

// roomDirs lists, relative to the module root, the directories of the
// packages the rule covers: every package go list reports but the
// harnesses.
func roomDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, line := range strings.Fields(string(goList(t, "{{.ImportPath}}"))) {
		rel, ok := strings.CutPrefix(line, module+"/")
		if !ok || slices.ContainsFunc(roomHarnesses, func(h string) bool { return rel == h || strings.HasPrefix(rel, h+"/") }) {
			continue
		}
		dirs = append(dirs, rel)
	}
	for _, h := range roomHarnesses {
		if _, err := os.Stat(filepath.Join("../..", h)); err != nil {
			t.Errorf("roomHarnesses names %s, which is gone: remove it", h)
		}
	}
	if len(dirs) < 20 {
		t.Fatalf("go list found only %d packages to check: %v", len(dirs), dirs)
	}
	return dirs
}

// TestFunctionsFitARoom fails naming every function of the covered
// packages' non-test files whose cyclomatic complexity (as gocyclo counts
// it: 1, plus one per if, for, range, non-default case and select clause,
// && and ||, closures included) is over maxComplexity, or that spans
// maxLines lines or more.
func TestFunctionsFitARoom(t *testing.T) {
	seen := map[string]bool{}
	for _, dir := range roomDirs(t) {
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
			for _, r := range roomsOf(t, dir, path) {
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
	for _, r := range roomsOf(t, "p", path) {
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

// roomsOf reads the functions of one file of the package in directory
// dir, naming them "dir.Recv.Name" or "dir.Name" (the directory, not the
// package name, so that the several package mains stay apart).
func roomsOf(t *testing.T, dir, path string) []room {
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
		name := dir + "."
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
