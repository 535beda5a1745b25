package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/leafproxy/leafproxy/internal/nearname"
)

// Problem is one thing wrong with a configuration: the key to fix (as a
// path such as tables[0].column), the line it is on when the file is known,
// and what is wrong.
type Problem struct {
	Key  string
	Line int // 1-based; 0 when unknown (defaults, flags)
	Msg  string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error lists every problem found in a configuration at once.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	s := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}

// yamlLine matches the position yaml.v3 puts in its messages.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// parseNode reads b into a node tree. A syntax error is reported at the line
// where the text stops being YAML: yaml.v3 names the line where the
// enclosing block started (and counts from 0 for parser errors), so the
// line is found again by parsing ever longer prefixes of the text.
func parseNode(b []byte) (*yaml.Node, error) {
	var root yaml.Node
	err := yaml.Unmarshal(b, &root)
	if err == nil {
		return &root, nil
	}
	msg := yamlLine.ReplaceAllString(err.Error(), "")
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := syntaxErrorLine(b)
	p := Problem{Line: line, Msg: "invalid YAML: " + msg}
	if line > 0 {
		lines := bytes.Split(b, []byte("\n"))
		if text := strings.TrimRight(string(lines[line-1]), "\r"); strings.TrimSpace(text) != "" {
			if len(text) > 60 {
				text = text[:57] + "..."
			}
			p.Msg += fmt.Sprintf(" (the line reads %q)", text)
		}
	}
	return nil, &Error{Problems: []Problem{p}}
}

// syntaxErrorLine is the 1-based line after the longest prefix of whole
// lines that still parses, i.e. the first line the parser could not take.
func syntaxErrorLine(b []byte) int {
	lines := bytes.SplitAfter(b, []byte("\n"))
	good, end := 0, 0
	for i, l := range lines {
		end += len(l)
		var n yaml.Node
		if yaml.Unmarshal(b[:end], &n) == nil {
			good = i + 1
		}
	}
	if good >= len(lines) {
		return 0
	}
	return good + 1
}

// checkKeys walks the node tree against the Config struct and reports every
// key that names no field, with a suggestion when one is close.
func checkKeys(root *yaml.Node) []Problem {
	var probs []Problem
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	walkKeys(root, reflect.TypeFor[Config](), "", &probs)
	return probs
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func walkKeys(n *yaml.Node, t reflect.Type, path string, probs *[]Problem) {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil {
		return
	}
	t, ok := keyed(t)
	if !ok {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // the decoder reports the wrong kind of value
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				walkKeys(v, t, path, probs) // a YAML merge key
				continue
			}
			f, ok := fields[k.Value]
			if !ok {
				*probs = append(*probs, unknownKey(k, path, fields))
				continue
			}
			walkKeys(v, f.Type, join(path, k.Value), probs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), probs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, item := range n.Content {
			walkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), probs)
		}
	}
}

// keyed is t without its pointers, and whether the file's keys go on
// inside it: not for a type that decodes itself (a yaml.Unmarshaler, such
// as Duration or StoreList), whose value its decoder checks.
func keyed(t reflect.Type) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t, !reflect.PointerTo(t).Implements(unmarshalerType)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps the YAML keys of struct type t to its fields.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	m := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			maps.Copy(m, yamlFields(f.Type))
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f
	}
	return m
}

func unknownKey(k *yaml.Node, path string, fields map[string]reflect.StructField) Problem {
	msg := fmt.Sprintf("unknown key %q", k.Value)
	if s := suggest(k.Value, slices.Sorted(mapKeys(fields))); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	} else if where := elsewhere(k.Value); where != "" && where != join(path, k.Value) {
		msg += fmt.Sprintf(" (did you mean %s, indented under its section?)", where)
	}
	return Problem{Key: path, Line: k.Line, Msg: msg}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// suggest is the candidate one typo away from key ("" if none is close
// enough): the did-you-mean of every message about a key.
func suggest(key string, candidates []string) string { return nearname.Suggest(key, candidates) }

// elsewhere returns the one full key path (maps as tags.<name>) whose last
// part is key, for a key written at the wrong level; "" if none or several.
func elsewhere(key string) string {
	var found []string
	for _, p := range KeyPaths() {
		if p == key || strings.HasSuffix(p, "."+key) || strings.HasSuffix(p, "[]."+key) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

// KeyPaths lists every key the configuration file accepts, as dotted paths:
// list items as name[].key, map entries as name.*.key.
func KeyPaths() []string {
	var out []string
	walkKeyPaths(reflect.TypeFor[Config](), "", func(p string, _ reflect.StructField) { out = append(out, p) })
	return out
}

// walkKeyPaths calls visit for every key below a value of type t at path,
// in KeyPaths' order and words, with the struct field the key sets.
func walkKeyPaths(t reflect.Type, path string, visit func(path string, f reflect.StructField)) {
	t, ok := keyed(t)
	if !ok {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := yamlFields(t)
		for _, name := range slices.Sorted(mapKeys(fields)) {
			p := join(path, name)
			visit(p, fields[name])
			walkKeyPaths(fields[name].Type, p, visit)
		}
	case reflect.Map:
		walkKeyPaths(t.Elem(), path+".*", visit)
	case reflect.Slice:
		walkKeyPaths(t.Elem(), path+"[]", visit)
	}
}

// decodeProblems turns the decoder's errors into problems with lines.
func decodeProblems(err error) []Problem {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		out := make([]Problem, 0, len(te.Errors))
		for _, e := range te.Errors {
			out = append(out, lineProblem(e))
		}
		return out
	}
	return []Problem{lineProblem(err.Error())}
}

func lineProblem(s string) Problem {
	s = strings.TrimPrefix(s, "yaml: ")
	if m := yamlLine.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Problem{Line: n, Msg: s[len(m[0]):]}
	}
	return Problem{Msg: s}
}

// lineOf finds the line of key path p (as Validate names keys, e.g.
// tables[0].column or sequences.tags.order.step) in the node tree; when
// the key itself is absent, the line of its closest present parent. 0 when
// nothing matches.
func lineOf(root *yaml.Node, p string) int {
	if root == nil {
		return 0
	}
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	parts := splitPath(p)
	for i := 0; i < len(parts); i++ {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		part := parts[i]
		switch {
		case strings.HasPrefix(part, "["):
			idx, err := strconv.Atoi(strings.Trim(part, "[]"))
			if err != nil || n.Kind != yaml.SequenceNode || idx < 0 || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		case n.Kind == yaml.MappingNode:
			// A map key may itself contain dots (a tag "a.b"): try the
			// longest run of parts first.
			found := false
			for j := len(parts); j > i && !found; j-- {
				name := strings.Join(parts[i:j], ".")
				for k := 0; k+1 < len(n.Content); k += 2 {
					if n.Content[k].Value == name {
						line = n.Content[k].Line
						n = n.Content[k+1]
						i = j - 1
						found = true
						break
					}
				}
			}
			if !found {
				return line
			}
		default:
			return line
		}
	}
	return line
}

// splitPath splits tables[0].column into tables, [0], column.
func splitPath(p string) []string {
	var parts []string
	for _, dot := range strings.Split(p, ".") {
		for dot != "" {
			i := strings.IndexByte(dot, '[')
			if i < 0 {
				parts = append(parts, dot)
				break
			}
			if i > 0 {
				parts = append(parts, dot[:i])
			}
			j := strings.IndexByte(dot[i:], ']')
			if j < 0 {
				parts = append(parts, dot[i:])
				break
			}
			parts = append(parts, dot[i:i+j+1])
			dot = dot[i+j+1:]
		}
	}
	return parts
}

// keyAtLine is the path of the key written on line (1-based): the deepest
// when keys nest on one line, "" when the line holds none or several
// sibling keys (a flow mapping), since the decoder's error cannot say which.
func keyAtLine(root *yaml.Node, line int) string {
	if root == nil || line <= 0 {
		return ""
	}
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	var onLine []string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := join(path, k.Value)
				if k.Line == line {
					onLine = append(onLine, p)
				}
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if item.Line == line && item.Kind == yaml.ScalarNode {
					onLine = append(onLine, p)
				}
				walk(item, p)
			}
		}
	}
	walk(n, "")
	var leaves []string
	for _, p := range onLine {
		parent := false
		for _, q := range onLine {
			if strings.HasPrefix(q, p+".") || strings.HasPrefix(q, p+"[") {
				parent = true
				break
			}
		}
		if !parent {
			leaves = append(leaves, p)
		}
	}
	if len(leaves) != 1 || strings.HasPrefix(leaves[0], "[") {
		return ""
	}
	return leaves[0]
}
