package config

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var updateReference = flag.Bool("update-reference", false, "rewrite docs/configuration.md's key, type, default and reload columns from the code (descriptions are kept)")

const referencePath = "../docs/configuration.md"

// refRow is one row of docs/configuration.md's table.
type refRow struct{ key, typ, def, reload, what string }

func (r refRow) String() string {
	return fmt.Sprintf("| `%s` | %s | %s | %s | %s |", r.key, r.typ, r.def, r.reload, r.what)
}

// fieldTypes maps every key KeyPaths lists to its Go type.
func fieldTypes() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	walkKeyPaths(reflect.TypeFor[Config](), "", func(p string, f reflect.StructField) { out[p] = f.Type })
	return out
}

// typeName is how the reference writes a key's type.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeFor[Duration]():
		return "duration"
	case reflect.TypeFor[ByteSize]():
		return "size"
	case reflect.TypeFor[StoreList]():
		return "string or list of strings"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Struct {
			return "list of entries"
		} else {
			return "list of " + typeName(e) + "s"
		}
	case reflect.Map:
		return "map of names to entries"
	case reflect.Struct:
		return "section"
	}
	return t.String()
}

// defaultOf is a key's default as the reference writes it: its value in
// Default() as YAML ("—" for a section, and for a key inside a list item
// or map entry: the zero value, which is what an item that leaves it out
// gets).
func defaultOf(key string, t reflect.Type) string {
	if typeName(t) == "section" {
		return "—"
	}
	var v reflect.Value
	if strings.Contains(key, "[]") || strings.Contains(key, ".*") {
		v = reflect.Zero(t)
	} else {
		v = reflect.ValueOf(Default()).Elem()
		for _, part := range strings.Split(key, ".") {
			v = yamlField(v, part)
		}
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "none"
		}
		v = v.Elem()
	}
	if _, ok := v.Interface().(StoreList); ok && v.Len() == 0 {
		return "`\"\"`"
	}
	if (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() == 0 {
		if v.Kind() == reflect.Map {
			return "`{}`"
		}
		return "`[]`"
	}
	if bs, ok := v.Interface().(ByteSize); ok && bs > 0 && bs%(1<<20) == 0 {
		return fmt.Sprintf("`%dMiB`", bs>>20)
	}
	b, err := yaml.Marshal(v.Interface())
	if err != nil {
		return "?"
	}
	s := strings.TrimSpace(string(b))
	if s == `""` || s == "" {
		return "`\"\"`"
	}
	return "`" + s + "`"
}

// yamlField is struct v's field with YAML key name (inline fields
// included).
func yamlField(v reflect.Value, name string) reflect.Value {
	f := yamlFields(v.Type())[name]
	return v.FieldByIndex(f.Index)
}

// readReference reads the table rows of docs/configuration.md.
func readReference(t *testing.T) (rows []refRow, before, after string) {
	b, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| ([^|]*) \\| ([^|]*) \\| ([^|]*) \\| (.*) \\|$")
	lines := strings.Split(string(b), "\n")
	first, last := -1, -1
	for i, l := range lines {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		rows = append(rows, refRow{m[1], strings.TrimSpace(m[2]), strings.TrimSpace(m[3]), strings.TrimSpace(m[4]), strings.TrimSpace(m[5])})
	}
	if first < 0 {
		t.Fatalf("%s: no table of keys", referencePath)
	}
	return rows, strings.Join(lines[:first], "\n"), strings.Join(lines[last+1:], "\n")
}

// TestConfigurationReference: docs/configuration.md has one row per key
// the file accepts (KeyPaths), in KeyPaths' order, each with the key's
// type, default (Default()) and reloadability (Reloadability) as the code
// has them, and a description. go test ./config -run
// TestConfigurationReference -update-reference rewrites the first four
// columns from the code.
func TestConfigurationReference(t *testing.T) {
	rows, before, after := readReference(t)
	what := map[string]string{}
	for _, r := range rows {
		what[r.key] = r.what
	}
	types := fieldTypes()
	var want []refRow
	for _, k := range KeyPaths() {
		want = append(want, refRow{k, typeName(types[k]), defaultOf(k, types[k]), string(Reloadability(k)), what[k]})
	}
	if *updateReference {
		var b strings.Builder
		b.WriteString(before + "\n")
		for _, r := range want {
			b.WriteString(r.String() + "\n")
		}
		b.WriteString(after)
		if err := os.WriteFile(referencePath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, _, _ = readReference(t)
	}
	got := map[string]refRow{}
	var order []string
	for _, r := range rows {
		if _, dup := got[r.key]; dup {
			t.Errorf("%s: key %s listed twice", referencePath, r.key)
		}
		got[r.key] = r
		order = append(order, r.key)
	}
	for _, w := range want {
		g, ok := got[w.key]
		switch {
		case !ok:
			t.Errorf("%s: key %s missing (type %s, default %s, reload %s)", referencePath, w.key, w.typ, w.def, w.reload)
		case g.typ != w.typ || g.def != w.def || g.reload != w.reload:
			t.Errorf("%s: key %s: type %q, default %q, reload %q; the code says %q, %q, %q (-update-reference rewrites them)",
				referencePath, w.key, g.typ, g.def, g.reload, w.typ, w.def, w.reload)
		case w.what == "" && g.what == "":
			t.Errorf("%s: key %s has no description", referencePath, w.key)
		}
	}
	for _, r := range rows {
		if !slices.Contains(KeyPaths(), r.key) {
			t.Errorf("%s: key %s is not one the configuration accepts", referencePath, r.key)
		}
	}
	if !t.Failed() && !slices.Equal(order, KeyPaths()) {
		t.Errorf("%s: keys not in the code's order (KeyPaths)", referencePath)
	}
}

// Reloadability: the reloadable keys and everything under them are
// applied, their sections in part, the rest not.
func TestReloadability(t *testing.T) {
	for key, want := range map[string]Reload{
		"users": ReloadYes, "users[].password": ReloadYes, "admins": ReloadYes, "tables[].tag": ReloadYes,
		"sequences.tags": ReloadYes, "sequences.tags.*.step": ReloadYes, "id_api.tokens[].token_file": ReloadYes,
		"sequences": ReloadPart, "id_api": ReloadPart,
		"sequences.store": ReloadNo, "listen": ReloadNo, "id_api.listen": ReloadNo, "backend": ReloadNo, "usersx": ReloadNo,
	} {
		if got := Reloadability(key); got != want {
			t.Errorf("Reloadability(%q) = %q, want %q", key, got, want)
		}
	}
}
