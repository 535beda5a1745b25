package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// everyRuleField stands for a domain package's Check (the rewriter's rule
// check, run by service.DomainRules): it reports each empty field of a
// table rule by key, as such checks do; Parse adds the line.
func everyRuleField(c *Config) []Problem {
	var probs []Problem
	for i, r := range c.Tables {
		for _, f := range []struct{ key, v string }{{"table", r.Table}, {"column", r.Column}, {"tag", r.Tag}} {
			if f.v == "" {
				probs = append(probs, Problem{Key: fmt.Sprintf("tables[%d].%s", i, f.key), Msg: "empty"})
			}
		}
	}
	return probs
}

// TestProblemsNameLineAndKey: every kind of mistake in the file is reported
// with the line it is on and the key to fix, at any nesting level, those a
// Check finds too.
func TestProblemsNameLineAndKey(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // each must appear in the error, in this order
	}{
		{"unknown top-level key", "listen: 127.0.0.1:3307\ntabels: []\n",
			[]string{`line 2: unknown key "tabels" (did you mean "tables"?)`}},
		{"unknown key in a section", "backend:\n  addr: 127.0.0.1:3306\n  pasword: x\n",
			[]string{`line 3: backend: unknown key "pasword" (did you mean "password"?)`}},
		{"unknown key in a list item", "users:\n  - name: app\n    pasword: x\n",
			[]string{`line 3: users[0]: unknown key "pasword" (did you mean "password"?)`}},
		{"unknown key in a map value", "sequences:\n  tags:\n    order:\n      generatr: segment\n",
			[]string{`line 4: sequences.tags.order: unknown key "generatr" (did you mean "generator"?)`}},
		{"unknown key in a flow mapping", "sequences: {tags: {order: {stpe: 5}}}\n",
			[]string{`line 1: sequences.tags.order: unknown key "stpe" (did you mean "step"?)`}},
		{"three levels deep", "backend:\n  tls:\n    enabeld: true\n",
			[]string{`line 3: backend.tls: unknown key "enabeld" (did you mean "enabled"?)`}},
		{"case slip", "Listen: 127.0.0.1:1\n", []string{`unknown key "Listen" (did you mean "listen"?)`}},
		{"no close match", "colour: blue\n", []string{`line 1: unknown key "colour"`}},
		{"key at the wrong level", "addr: 127.0.0.1:3306\n",
			[]string{`line 1: unknown key "addr" (did you mean backend.addr, indented under its section?)`}},
		{"several unknown keys at once", "tabels: []\nbackend:\n  usr: root\n",
			[]string{`line 1: unknown key "tabels"`, `line 3: backend: unknown key "usr" (did you mean "user"?)`}},
		{"wrong type", "listen: 127.0.0.1:3307\nsequences:\n  default_step: many\n",
			[]string{"line 3: sequences.default_step: cannot unmarshal !!str `many` into int64"}},
		{"bad duration", "sequences:\n  wait_timeout: soon\n",
			[]string{`line 2: sequences.wait_timeout: "soon" is not a duration`}},
		{"duplicate key", "listen: a:1\nlisten: b:2\n",
			[]string{`line 2: `, `"listen" already defined at line 1`}},
		{"validation problem", "listen: 127.0.0.1:3307\ntables:\n  - table: orders\n    column: id\n    tag: order\n  - table: items\n    column: \"\"\n    tag: item\n",
			[]string{`line 7: tables[1].column: empty`}},
		{"validation problem, key absent", "tables:\n  - table: orders\n    column: id\n",
			[]string{`line 2: tables[0].tag: empty`}},
		{"validation in a map", "sequences:\n  tags:\n    order: {generator: uuid}\n",
			[]string{`line 3: sequences.tags.order.generator: "uuid" is not segment or snowflake`}},
		{"store without a database", "sequences:\n  store: \"root@tcp(127.0.0.1:3306)/\"\n",
			[]string{`line 2: sequences.store: names no database`}},
		{"bad indentation", "listen: 127.0.0.1:3307\nbackend:\n  addr: 127.0.0.1:3306\n password: x\nusers: []\n",
			[]string{`line 4: invalid YAML`, `" password: x"`}},
		{"tab indentation", "backend:\n  addr: 127.0.0.1:3306\n\tuser: root\n",
			[]string{`line 3: invalid YAML`}},
		{"unclosed bracket", "listen: 127.0.0.1:3307\ntables: [{table: t, column: id, tag: x}\nlog: {level: info}\n",
			[]string{`line 2: invalid YAML`}},
		{"unclosed quote", "listen: 127.0.0.1:3307\nbackend:\n  password: 'secret\n  user: root\n",
			[]string{`line 3: invalid YAML`}},
		{"mapping value in a scalar", "listen: 127.0.0.1:3307\nlog:\n  level: info\n  format: text: json\n",
			[]string{`line 4: invalid YAML`}},
		{"a list where a mapping belongs", "- a\n- b\n", []string{`line 1: cannot unmarshal !!seq into config.Config`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), everyRuleField)
			if err == nil {
				t.Fatalf("no error for\n%s", tc.yaml)
			}
			msg := err.Error()
			rest := msg
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error %q\nwant it to contain %q", msg, w)
				}
				rest = rest[i+len(w):]
			}
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("error %T is not a *config.Error", err)
			}
		})
	}
}

func TestEveryProblemAtOnce(t *testing.T) {
	_, err := Parse([]byte("listen: x\nbackend: {addr: y}\nlog: {level: loud}\n"))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err %v", err)
	}
	var got []string
	for _, p := range ce.Problems {
		got = append(got, p.String())
	}
	want := []string{`line 1: listen: "x" is neither host:port nor a Unix socket path`, `line 2: backend.addr: "y" is neither host:port nor a Unix socket path`,
		`line 3: log.level: "loud" is not debug, info, warn or error`}
	if !slices.Equal(got, want) {
		t.Fatalf("problems\n%q\nwant\n%q", got, want)
	}
}

// TestMergeAndAliases: YAML anchors, aliases and merge keys are walked,
// not flagged.
func TestMergeAndAliases(t *testing.T) {
	c, err := Parse([]byte("users:\n  - &app {name: app, password: x}\n  - <<: *app\n    name: other\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Users) != 2 || c.Users[1].Password != "x" {
		t.Fatalf("users %+v", c.Users)
	}
	if _, err := Parse([]byte("users:\n  - &app {name: app, pasword: x}\n  - *app\n")); err == nil || !strings.Contains(err.Error(), `"pasword"`) {
		t.Fatalf("err %v", err)
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"listen", "backend", "tables", "tls", "users", "log", "limits"}
	for _, tc := range []struct{ in, want string }{
		{"tabels", "tables"}, {"tables", "tables"}, {"lisen", "listen"}, {"backedn", "backend"},
		{"tsl", "tls"}, {"user", "users"}, {"xyz", ""}, {"colour", ""}, {"limit", "limits"},
	} {
		if got := suggest(tc.in, keys); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestExampleListsEveryKey: leafproxy.example.yaml shows every key the
// configuration accepts (list items and map entries included), so the
// example is the reference a person can copy from.
func TestExampleListsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../leafproxy.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				p := join(path, k)
				if isMap(path) {
					p = path + ".*" // a map's entries: any name
				} else {
					present[p] = true
				}
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, path+"[]")
			}
		}
	}
	walk(&root, "")
	if len(present) < 40 {
		t.Fatalf("only %d keys found in the example", len(present))
	}
	for _, k := range KeyPaths() {
		if !present[k] {
			t.Errorf("leafproxy.example.yaml does not show %s", k)
		}
	}
	for k := range present {
		if !slices.Contains(KeyPaths(), k) {
			t.Errorf("leafproxy.example.yaml shows %s, which the configuration does not accept", k)
		}
	}
}

func isMap(path string) bool {
	for _, k := range KeyPaths() {
		if strings.HasPrefix(k, path+".*") {
			return true
		}
	}
	return false
}

func TestSyntaxErrorLine(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		line int
	}{
		{"a: 1\nb: 2\n", 0},
		{"a: 1\n b: 2\n", 2},
		{"a: [1,\n  2]\nb: [3\n", 3},
		{"a: 'x\n", 1},
		{"a: 1\nb:\n  c: 1\n d: 2\n", 4},
	} {
		if got := syntaxErrorLine([]byte(tc.yaml)); got != tc.line {
			t.Errorf("%q: line %d, want %d", tc.yaml, got, tc.line)
		}
	}
}

// TestUnknownKeysAndInvalidValuesAtOnce: an unknown key does not hide the
// other problems (leafproxy check names every problem in one run), and a
// value of the wrong type is reported once, not again by validation.
func TestUnknownKeysAndInvalidValuesAtOnce(t *testing.T) {
	_, err := Parse([]byte("listen: x\nbakend: {addr: y}\nlog: {level: loud}\nlimits: {max_connections: many}\n"))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err %v", err)
	}
	var got []string
	for _, p := range ce.Problems {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, w := range []string{`line 1: listen: "x" is neither host:port`, `line 2: unknown key "bakend"`, `line 3: log.level: "loud"`, "line 4: limits.max_connections"} {
		if !strings.Contains(all, w) {
			t.Errorf("problems lack %q:\n%s", w, all)
		}
	}
	if len(got) != 4 {
		t.Errorf("%d problems, want 4:\n%s", len(got), all)
	}
}
