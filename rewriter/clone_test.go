package rewriter

import (
	"reflect"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// span is a piece of memory a plan's string or slice points into.
type span struct{ from, to uintptr }

// memoryOf appends the memory every non-empty string and slice reachable
// from v points into (unexported fields too: Value.Pointer reads them).
func memoryOf(v reflect.Value, out []span) []span {
	switch v.Kind() {
	case reflect.String:
		if v.Len() > 0 {
			out = append(out, span{v.Pointer(), v.Pointer() + uintptr(v.Len())})
		}
	case reflect.Slice:
		if v.Cap() > 0 {
			out = append(out, span{v.Pointer(), v.Pointer() + uintptr(v.Cap())*v.Type().Elem().Size()})
		}
		for i := range v.Len() {
			out = memoryOf(v.Index(i), out)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			out = memoryOf(v.Elem(), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			out = memoryOf(v.Field(i), out)
		}
	case reflect.Array:
		for i := range v.Len() {
			out = memoryOf(v.Index(i), out)
		}
	case reflect.Map, reflect.Func, reflect.Interface, reflect.Chan:
		panic("memoryOf: a plan holds a " + v.Kind().String() + ": teach Clone and this test about it")
	}
	return out
}

// rendered is what a plan sends for sql, whatever its kind.
func rendered(p *Plan, sql string) string {
	switch {
	case p.Kind == Numbered:
		blocks := make([]Block, len(p.Counters))
		for i := range blocks {
			blocks[i] = Block{First: 1000 + 100*int64(i), N: 50}
		}
		return p.CountQuery() + "|" + p.InitQuery() + "|" + string(p.RenderNumbered(nil, sql, blocks))
	case p.Kind == LoadData:
		return string(p.Load.Render(nil, sql))
	case p.Kind == Rewrite && !p.kept:
		n := 0
		for _, tc := range p.Tags {
			n += tc.N
		}
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = 1001 + int64(i)
		}
		batches := make([][]int64, len(p.Tags))
		for i, tc := range p.Tags {
			batches[i], ids = ids[:tc.N], ids[tc.N:]
		}
		slotIDs, err := p.AssignIDs(nil, batches)
		if err != nil {
			return "AssignIDs: " + err.Error()
		}
		var b strings.Builder
		if _, err := p.WriteTo(&b, nil, sql, slotIDs); err != nil {
			return "WriteTo: " + err.Error()
		}
		return b.String()
	}
	return ""
}

// A plan's Clone shares no memory with the plan, its text or the Planner
// that made it: it renders the same statement after the planner planned
// others and the plan's own slices were overwritten, and equals the plan
// a fresh planner makes of the text. Every kind a loop may hand over.
func TestPlanClone(t *testing.T) {
	large := "INSERT INTO orders (name) VALUES ('x')" + strings.Repeat(", ('x')", LargeRows/6)
	for _, tc := range []struct {
		name, sql string
		prepared  bool
		kind      Kind
	}{
		{"NEXTVAL and LASTVAL", "SELECT NEXTVAL('order') AS n, LASTVAL(shop.order), NEXT VALUE FOR other.item", false, Sequence},
		{"SETVAL", "SELECT SETVAL('order', 5000, 0)", false, Sequence},
		{"NEXTVAL block", "SELECT NEXTVAL('order', 10)", false, Sequence},
		{"filled INSERT", "INSERT INTO orders (name) VALUES ('book')", false, Rewrite},
		{"filled INSERT, rows", "INSERT INTO orders (name, note) VALUES ('a', 'x'), ('b', 'y'), ('c', 'z')", false, Rewrite},
		{"filled INSERT, no column list", "INSERT INTO orders VALUES (NULL, 'a', 'b'), (0, 'c', 'd')", false, Rewrite},
		{"explicit keys among filled", "INSERT INTO orders (id, name) VALUES (NULL, 'a'), (5000, 'b'), (NULL, 'c')", false, Rewrite},
		{"NEXTVAL in values", "INSERT INTO items (name) VALUES (NEXTVAL(order)), ('x')", false, Rewrite},
		{"REPLACE ... SET", "REPLACE orders SET name = 'a'", false, Rewrite},
		{"statements with insert ids", "INSERT INTO orders (name) VALUES ('a'); INSERT INTO orders (id, name) VALUES (7, 'b')", false, Rewrite},
		{"explicit key: pass-through with insert id", "INSERT INTO orders (id, name) VALUES (7, 'x'), (9, 'y')", false, PassThrough},
		{"statements, keys given", "INSERT INTO orders (id, name) VALUES (7, 'x'); INSERT INTO items (item_id, name) VALUES (8, 'y')", false, PassThrough},
		{"numbered INSERT ... SELECT", "INSERT INTO orders (name) SELECT name FROM orders WHERE note = 'a'", false, Numbered},
		{"numbered UPDATE", "UPDATE t SET a = NEXTVAL('s'), b = NEXTVAL(order) WHERE c = 'x'", false, Numbered},
		{"LOAD DATA", "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders FIELDS TERMINATED BY ',' ENCLOSED BY '\"' LINES STARTING BY 'x' TERMINATED BY '\\r\\n' (name, note)", false, LoadData},
		{"large INSERT", large, false, Rewrite},
		{"prepared filled INSERT", "INSERT INTO orders (id, name) VALUES (?, ?), (NULL, 'b')", true, Rewrite},
		{"prepared numbered", "INSERT INTO orders (name) SELECT name FROM orders WHERE note = ?", true, Numbered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t, Mode{})
			// The text, as the engine's is, in a buffer of its own.
			sql := string([]byte(tc.sql))
			var pl Planner
			var p Plan
			var err error
			if tc.prepared {
				p, err = PlanPrepare(sql, env)
			} else {
				pl.PlanQuery("INSERT INTO orders (name) VALUES ('memo')", sqltext.ClassifyString("INSERT INTO orders (name) VALUES ('memo')"), env) // the memo path for the INSERTs
				p, err = pl.PlanQuery(sql, sqltext.ClassifyString(sql), env)
			}
			if err != nil || p.Kind != tc.kind {
				t.Fatalf("plan: %v, %v, want %v", err, p.Kind, tc.kind)
			}
			want := rendered(&p, sql)
			c := p.Clone()
			if !reflect.DeepEqual(c, p) {
				t.Fatalf("clone differs:\n%+v\n%+v", c, p)
			}
			// No string or slice of the clone points into the plan's
			// memory or the text's.
			orig := memoryOf(reflect.ValueOf(p), []span{{reflect.ValueOf(sql).Pointer(), reflect.ValueOf(sql).Pointer() + uintptr(len(sql))}})
			for _, m := range memoryOf(reflect.ValueOf(c), nil) {
				for _, o := range orig {
					if m.from < o.to && o.from < m.to {
						t.Fatalf("the clone shares memory with the plan or its text: %#x-%#x in %#x-%#x", m.from, m.to, o.from, o.to)
					}
				}
			}
			// The planner plans other texts over its scratch, and the
			// plan's own slices are overwritten.
			for _, other := range []string{"INSERT INTO items (name) VALUES ('zzzzzzzz'), ('y'), ('w')", "SELECT NEXTVAL('xxxxx'), NEXTVAL('yyyy')",
				"INSERT INTO orders (name) SELECT 'q' FROM dual", "INSERT INTO orders (name) VALUES ('memo2'), ('qq')"} {
				if _, err := pl.PlanQuery(other, sqltext.ClassifyString(other), env); err != nil {
					t.Fatal(err)
				}
			}
			overwrite(&p)
			if got := rendered(&c, sql); got != want {
				t.Fatalf("the clone renders\n%.300s\nwant\n%.300s", got, want)
			}
			fresh, _ := plan(sql, env, tc.prepared)
			if !reflect.DeepEqual(c, fresh) {
				t.Fatalf("clone %+v\nfresh plan %+v", c, fresh)
			}
		})
	}
}

// overwrite scribbles over every slice the plan holds.
func overwrite(p *Plan) {
	for i := range p.Calls {
		p.Calls[i] = Call{Tag: "junk", Name: "junk", N: 99}
	}
	for i := range p.Slots {
		p.Slots[i] = Slot{Tag: "junk", Start: 1, End: 2}
	}
	for i := range p.Tags {
		p.Tags[i] = TagCount{Tag: "junk", N: 1}
	}
	for i := range p.Filled {
		p.Filled[i] = Filled{"j", "u", "n", "k"}
	}
	for i := range p.Counters {
		p.Counters[i] = Counter{Tag: "junk"}
	}
	for i := range p.Writes {
		p.Writes[i] = SeqName{"j", "unk"}
	}
	for i := range p.Explicit {
		p.Explicit[i] = ExplicitKey{"junk", 1}
	}
	for i := range p.Advances {
		p.Advances[i] = Advance{Tag: "junk"}
	}
	clear(p.StmtKeys)
	for i := range p.Idents {
		p.Idents[i] = SeqName{"j", "unk"}
	}
	for i := range p.edits {
		p.edits[i] = edit{start: 1, end: 1, slot: -1}
	}
	for i := range p.texts {
		p.texts[i] = "junk"
	}
	if p.Load != nil {
		*p.Load = Load{Charset: "junk", edits: []loadEdit{{0, 1, "junk"}}}
	}
	if p.num != nil {
		for i := range p.num.edits {
			p.num.edits[i] = numberedEdit{pre: "junk", post: "junk"}
		}
		p.num.count, p.num.init = "junk", "junk"
	}
	if p.rows != nil {
		clear(p.rows.at)
		p.rows.tag, p.rows.post = 0, 0
	}
}
