package rewriter

import "testing"

func TestAutoIncrementStart(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		ref  SchemaRef
		n    uint64
		want bool
	}{
		{"ALTER TABLE t AUTO_INCREMENT = 5000", SchemaRef{Table: "t"}, 5000, true},
		{"alter table shop.orders auto_increment 77", SchemaRef{DB: "shop", Table: "orders"}, 77, true},
		{"ALTER TABLE `o` ADD COLUMN x INT, AUTO_INCREMENT=9", SchemaRef{Table: "o"}, 9, true},
		{"CREATE TABLE t (id BIGINT PRIMARY KEY) AUTO_INCREMENT=100", SchemaRef{Table: "t"}, 100, true},
		{"ALTER TABLE t MODIFY id BIGINT AUTO_INCREMENT", SchemaRef{}, 0, false},
		{"ALTER TABLE t ADD COLUMN y INT", SchemaRef{}, 0, false},
		{"ALTER TABLE t AUTO_INCREMENT = 5; ALTER TABLE u AUTO_INCREMENT = 6", SchemaRef{}, 0, false},
		{"SELECT 'auto_increment'", SchemaRef{}, 0, false},
	} {
		ref, n, ok := AutoIncrementStart(tc.sql, Mode{})
		if ok != tc.want || ref != tc.ref || n != tc.n {
			t.Errorf("%s: %+v %d %v, want %+v %d %v", tc.sql, ref, n, ok, tc.ref, tc.n, tc.want)
		}
	}
}
