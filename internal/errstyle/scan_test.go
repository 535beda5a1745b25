package errstyle_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/errstyle"
)

// The packages whose errors reach clients (ERR packets, warnings, the
// HTTP ID API's bodies).
var scanned = []string{"proxy", "proxy/backend", "proxy/intercept", "proxy/kill", "proxy/login", "proxy/sessionend", "proxy/wire",
	"rewriter", "engine", "admin", "idapi", "allocator", "allocator/segment", "allocator/schema"}

// codes names the error-code constants the scanned constructors use.
var codes = map[string]uint16{
	"ER_ACCESS_DENIED_ERROR": mysql.ER_ACCESS_DENIED_ERROR, "ER_NOT_SUPPORTED_YET": mysql.ER_NOT_SUPPORTED_YET,
	"ER_TABLE_EXISTS_ERROR": mysql.ER_TABLE_EXISTS_ERROR, "ER_PARSE_ERROR": mysql.ER_PARSE_ERROR,
	"ER_WRONG_ARGUMENTS": mysql.ER_WRONG_ARGUMENTS, "ER_UNKNOWN_ERROR": mysql.ER_UNKNOWN_ERROR,
	"ER_WRONG_VALUE_COUNT_ON_ROW": mysql.ER_WRONG_VALUE_COUNT_ON_ROW, "ER_MALFORMED_PACKET": mysql.ER_MALFORMED_PACKET,
	"ER_UNKNOWN_COM_ERROR": mysql.ER_UNKNOWN_COM_ERROR, "ER_OUT_OF_RESOURCES": mysql.ER_OUT_OF_RESOURCES,
	"ER_NET_PACKET_TOO_LARGE": mysql.ER_NET_PACKET_TOO_LARGE, "ER_NO_SUCH_THREAD": mysql.ER_NO_SUCH_THREAD,
	"ER_HANDSHAKE_ERROR": mysql.ER_HANDSHAKE_ERROR, "ER_CON_COUNT_ERROR": mysql.ER_CON_COUNT_ERROR,
	"ER_HOST_IS_BLOCKED": mysql.ER_HOST_IS_BLOCKED, "erNoSuchQuery": 1957, "errBackendLost": 1158,
	"errBackendUnreachable": 1429, "ErrCodeWrongArguments": 1210, "ErrCodeUnknownSequence": 4091,
	"ErrCodeExhausted": 1105, "ErrCodeRunOut": 4084, "ErrCodeBadOptions": 4085,
}

// fixedCodes are the codes of the error types whose code is not a field.
var fixedCodes = map[string]string{"notSupportedError": "1235", "planMemoryError": "1041", "wrongArgumentsError": "1210"}

// message is one error text a constructor in the source makes.
type message struct {
	pos  string
	code uint16 // 0: not known here
	text string // its leading literal, verbs as x
}

var verb = regexp.MustCompile(`%[-+# 0-9.*]*[a-zA-Z]`)

// TestEveryMessageFollowsTheRule scans the error constructors of the
// packages whose errors reach clients (mysql.MyError, the engine's
// notSupportedError and its other errors, errstyle.NewCoded, login errors, WriteError,
// writeErrFlush, errPacket, badArgument, warnOK, the ID API's fail) and
// checks the literal text of each against errstyle's rule: MariaDB's
// words for its code, or "leafproxy: " first. Texts built elsewhere (a
// variable, "%s: ...") are checked where they are built, or by the
// table tests of the error types.
func TestEveryMessageFollowsTheRule(t *testing.T) {
	var msgs []message
	for _, dir := range scanned {
		msgs = append(msgs, scan(t, filepath.Join("..", "..", dir))...)
	}
	t.Logf("%d messages", len(msgs))
	if len(msgs) < 60 {
		t.Fatalf("found %d messages: the scan no longer sees the constructors", len(msgs))
	}
	for _, m := range msgs {
		var err error
		if m.code != 0 {
			err = errstyle.Check(m.code, m.text)
		} else if !strings.HasPrefix(m.text, errstyle.Prefix) && !anyTemplate(m.text) {
			err = errstyle.Check(1105, m.text)
		}
		if err != nil {
			t.Errorf("%s: %v", m.pos, err)
		}
	}
}

func anyTemplate(text string) bool {
	for code := uint16(1); code < 5000; code++ {
		if errstyle.ServerWorded(code, text) {
			return true
		}
	}
	return false
}

func scan(t *testing.T, dir string) []message {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	consts := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if v, ok := leading(vs.Values[i], nil); ok {
								consts[n.Name] = v
							}
						}
					}
				}
			}
		}
	}
	var out []message
	add := func(n ast.Node, code ast.Expr, text ast.Expr) {
		s, ok := leading(text, consts)
		if !ok || s == "" || strings.HasPrefix(s, "\x00") {
			return // built elsewhere
		}
		out = append(out, message{pos: fset.Position(n.Pos()).String(), code: codeOf(code), text: s})
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				switch typeName(n.Type) {
				case "MyError", "notSupportedError", "planMemoryError", "wrongArgumentsError":
					var code, text ast.Expr
					for _, el := range n.Elts {
						kv, ok := el.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						switch kv.Key.(*ast.Ident).Name {
						case "Code", "code":
							code = kv.Value
						case "Message", "msg":
							text = kv.Value
						}
					}
					if text != nil {
						if c, ok := fixedCodes[typeName(n.Type)]; ok {
							code = &ast.BasicLit{Kind: token.INT, Value: c}
						}
						add(n, code, text)
					}
				case "loginError", "Error": // proxy/login's Error{code, state, msg}
					if len(n.Elts) != 3 {
						break
					}
					if _, keyed := n.Elts[0].(*ast.KeyValueExpr); !keyed {
						add(n, n.Elts[0], n.Elts[2])
						break
					}
					var code, text ast.Expr
					for _, el := range n.Elts {
						kv := el.(*ast.KeyValueExpr)
						switch kv.Key.(*ast.Ident).Name {
						case "Code":
							code = kv.Value
						case "Msg":
							text = kv.Value
						}
					}
					if text != nil {
						add(n, code, text)
					}
				}
			case *ast.CallExpr:
				switch name := typeName(n.Fun); {
				case (name == "WriteError" || name == "writeErrFlush" || name == "errPacket" || name == "NewCoded") && len(n.Args) == 3:
					add(n, n.Args[0], n.Args[2])
				case name == "badArgument" && len(n.Args) == 1:
					add(n, &ast.BasicLit{Kind: token.INT, Value: "1210"}, n.Args[0])
				case name == "warnOK" && len(n.Args) == 4:
					add(n, n.Args[2], n.Args[3])
				case name == "fail" && len(n.Args) == 5:
					add(n, nil, n.Args[3])
				}
			}
			return true
		})
	}
	return out
}

func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

func codeOf(e ast.Expr) uint16 {
	switch e := e.(type) {
	case *ast.BasicLit:
		n, _ := strconv.Atoi(e.Value)
		return uint16(n)
	case *ast.Ident, *ast.SelectorExpr:
		return codes[typeName(e)]
	}
	return 0
}

// leading is the literal start of a message expression: a string, the
// format of fmt.Sprintf, the left of a +, a constant; verbs become x. A
// text that starts with a verb ("%s: ...") is "\x00" (built elsewhere).
func leading(e ast.Expr, consts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		if err != nil {
			return "", false
		}
		if verb.FindStringIndex(s) != nil && verb.FindStringIndex(s)[0] == 0 {
			return "\x00", true
		}
		return verb.ReplaceAllString(s, "x"), true
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return leading(e.X, consts)
		}
	case *ast.ParenExpr:
		return leading(e.X, consts)
	case *ast.CallExpr:
		if typeName(e.Fun) == "Sprintf" && len(e.Args) > 0 {
			return leading(e.Args[0], consts)
		}
	case *ast.Ident:
		s, ok := consts[e.Name]
		return s, ok
	}
	return "", false
}
