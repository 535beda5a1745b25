package rewriter

import (
	"reflect"
	"testing"
)

// TestFilledNamesTablesWhoseKeyIsGenerated: the caller checks these tables'
// key column types, so a table must be listed exactly when an ID goes into
// its key, once per table.
func TestFilledNamesTablesWhoseKeyIsGenerated(t *testing.T) {
	env := testEnv(t, Mode{})
	for _, tc := range []struct {
		sql  string
		want []Filled
	}{
		{"INSERT INTO orders (name) VALUES ('a'), ('b')", []Filled{{"shop", "orders", "id", "order"}}},
		{"INSERT INTO orders (id, name) VALUES (5, 'a')", nil},
		{"INSERT INTO orders (id, name) VALUES (NEXTVAL('x'), 'a')", []Filled{{"shop", "orders", "id", "order"}}},
		{"INSERT INTO items (name) VALUES ('a'); INSERT INTO orders SET name = 'b'; INSERT INTO orders (name) VALUES ('c')",
			[]Filled{{"shop", "items", "item_id", "item"}, {"shop", "orders", "id", "order"}}},
		{"INSERT INTO other.items (name) VALUES ('a')", []Filled{{"other", "items", "sku", "sku"}}},
		{"UPDATE orders SET note = NEXTVAL('x')", nil},
	} {
		diffFast(t, tc.sql, env, false)
		p, err := PlanQuery(tc.sql, env)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if !reflect.DeepEqual(p.Filled, tc.want) {
			t.Errorf("%s: Filled = %v, want %v", tc.sql, p.Filled, tc.want)
		}
	}
}
