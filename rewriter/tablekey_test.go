package rewriter

import (
	"strings"
	"testing"
)

// What a pattern fills, and what an explicit 0 means (issue 39 items 1,
// 3, 6): the decisions the engine's statements and the service's reports
// share.
func TestTableKeyDecisions(t *testing.T) {
	key := TableKey{Known: true, Column: true, Type: "bigint(20)", Integer: true, Key: true}
	for _, tc := range []struct {
		name string
		k    TableKey
		why  string // "" fills
	}{
		{"integer primary key", key, ""},
		{"auto_increment, not alone the key", TableKey{Known: true, Column: true, Integer: true, AutoIncrement: true}, ""},
		{"unknown table", TableKey{}, "does not show"},
		{"no column", TableKey{Known: true}, "no column id"},
		{"composite key", TableKey{Known: true, Column: true, Integer: true}, "not its primary key"},
		{"DEFAULT NEXTVAL", TableKey{Known: true, Column: true, Integer: true, Key: true, Default: "nextval(`a`.`s`)"}, "DEFAULT nextval"},
		{"varchar", TableKey{Known: true, Column: true, Key: true, Type: "varchar(36)"}, "varchar(36), not an integer"},
	} {
		fill, why := tc.k.FillsPattern("id")
		if fill != (tc.why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%s: fill %v, %q; want %q", tc.name, fill, why, tc.why)
		}
	}
	pattern := Rule{pattern: true}
	for _, tc := range []struct {
		name string
		rule Rule
		k    TableKey
		keep bool
	}{
		{"pattern, no AUTO_INCREMENT", pattern, key, true},
		{"pattern, AUTO_INCREMENT", pattern, TableKey{Known: true, Column: true, AutoIncrement: true}, false},
		{"exact", Rule{}, key, false},
		{"exact, zero: keep", Rule{Zero: ZeroKeep}, key, true},
		{"pattern, zero: fill", Rule{pattern: true, Zero: ZeroFill}, key, false},
	} {
		if got := tc.k.KeepsZero(tc.rule); got != tc.keep {
			t.Errorf("%s: keeps 0 %v, want %v", tc.name, got, tc.keep)
		}
	}
}

// A pattern's exclude leaves tables out by name; exclude and a bad zero
// are refused where they mean nothing.
func TestRuleExclude(t *testing.T) {
	r, err := NewRules([]Rule{{Table: "app.*", Column: "id", Tag: "t", Exclude: []string{"audit", "app.tmp_*"}}})
	if err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]bool{"orders": true, "audit": false, "tmp_1": false, "tmpx": true} {
		if _, ok := r.Lookup("app", table); ok != want {
			t.Errorf("app.%s: rule %v, want %v", table, ok, want)
		}
	}
	problems := CheckRules([]Rule{
		{Table: "orders", Column: "id", Tag: "t", Exclude: []string{"x"}},
		{Table: "o_*", Column: "id", Tag: "t", Zero: "never"},
		{Table: "p_*", Column: "id", Tag: "t", Exclude: []string{"a.b.c"}},
	})
	var fields []string
	for _, p := range problems {
		fields = append(fields, p.Field)
	}
	if strings.Join(fields, ",") != "exclude,zero,exclude[0]" {
		t.Errorf("problems %v; want exclude (exact rule), zero, exclude[0]", problems)
	}
}

// Which DDL restarts a per_table tag: the statements that leave their
// tables without rows.
func TestEmptiesTables(t *testing.T) {
	for text, want := range map[string]bool{
		"DROP TABLE t": true, "drop temporary table if exists t": true, "DROP TABLES a, b": true, "TRUNCATE t": true, "TRUNCATE TABLE db.t": true,
		"CREATE TABLE t (id INT)": false, "CREATE TABLE IF NOT EXISTS t (id INT)": false, "ALTER TABLE t ADD c INT": false,
		"DROP INDEX i ON t": false, "DROP DATABASE d": false, "/* c */ DROP TABLE t": true,
	} {
		if got := EmptiesTables(text); got != want {
			t.Errorf("EmptiesTables(%q) = %v, want %v", text, got, want)
		}
	}
}
