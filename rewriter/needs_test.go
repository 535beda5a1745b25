package rewriter

import (
	"testing"
)

// TestNeedsSession: which texts the engine may relay without reading the
// session's database and sql_mode.
func TestNeedsSession(t *testing.T) {
	rules := testEnv(t, Mode{}).Rules
	for _, tt := range []struct {
		s              string
		rules, noRules bool // NeedsSession with the test rules, and with none
	}{
		{"SELECT 1", false, false},
		{"INSERT INTO t VALUES (1)", false, false},
		{"insert into `audit` (a) values ('x;y')", true, false}, // ';' in a string: planned (see plainInserts)
		{"INSERT INTO t VALUES ('prepare'); REPLACE t2 VALUES (2)", false, false},
		{"INSERT INTO nodb.t VALUES (1)", false, false},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE t", false, false},
		{"INSERT INTO orders (name) VALUES ('a')", true, false},
		{"INSERT INTO `orders` (name) VALUES ('a')", true, false},
		{`INSERT INTO "orders" (name) VALUES ('a')`, true, false}, // a name under ANSI_QUOTES
		{"INSERT INTO items VALUES (1)", true, false},             // shop.items: the database is not known
		{"INSERT INTO nodb.items VALUES (1)", false, false},       // no rule for nodb.items
		{"INSERT INTO shop.items VALUES (1)", true, false},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders", true, false},
		{"INSERT INTO t VALUES (1); INSERT INTO orders VALUES (1)", true, false},
		{"INSERT INTO t VALUES (1); USE shop", true, false},
		{"INSERT /*!50000 INTO t */ VALUES (1)", true, false},
		{"SELECT NEXTVAL('order')", true, true},
		{"INSERT INTO t VALUES (NEXT VALUE FOR s)", true, true},
		{"PREPARE s FROM 'INSERT INTO t VALUES (1)'", false, false}, // nothing to plan under any sql_mode (issue 39 item 7)
		{"PREPARE s FROM 'INSERT INTO orders VALUES (1)'", true, false},
		{"PREPARE s FROM 'INSERT INTO items VALUES (1)'", true, false}, // shop.items: the database is not known
		{"EXECUTE IMMEDIATE CONCAT('SELECT NEXT', 'VAL(s)')", true, true},
		{"EXECUTE IMMEDIATE 'SELECT NEXTVAL(s)'", true, true},
		{"SET STATEMENT max_statement_time=1 FOR EXECUTE IMMEDIATE 'SELECT 1'", false, false},
		{"PREPARE s FROM @q", true, false}, // with rules: not an INSERT
		{"EXECUTE s", false, false},        // a statement prepared earlier: the server's (issue 39 item 7)
		{"EXECUTE s; INSERT INTO orders VALUES (1)", true, false},
		{"SET STATEMENT max_statement_time=1 FOR INSERT INTO t VALUES (1)", false, false},
		{"SET STATEMENT max_statement_time=1, sql_mode='' FOR SELECT 1", false, false},
		{"SET STATEMENT sql_mode=(SELECT 'FOR') FOR INSERT INTO orders VALUES (1)", true, false},
		{"SET STATEMENT max_statement_time=1 FOR PREPARE s FROM @q", true, false},
		{"SET STATEMENT max_statement_time=1 INSERT INTO t VALUES (1)", true, false},
	} {
		if got := needsSession(tt.s, rules); got != tt.rules {
			t.Errorf("NeedsSession(%q, rules) = %v", tt.s, got)
		}
		if got := needsSession(tt.s, nil); got != tt.noRules {
			t.Errorf("NeedsSession(%q, nil) = %v", tt.s, got)
		}
		empty, _ := NewRules(nil)
		if got := needsSession(tt.s, empty); got != tt.noRules {
			t.Errorf("NeedsSession(%q, no rules) = %v", tt.s, got)
		}
	}
	q := "INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y')"
	if n := testing.AllocsPerRun(100, func() { needsSession(q, rules) }); n != 0 {
		t.Errorf("NeedsSession allocates %v times", n)
	}
}

// FuzzNeedsSession: what NeedsSession lets pass, the planner passes through
// under every database and sql_mode, with the test rules and with none.
func FuzzNeedsSession(f *testing.F) {
	for _, s := range []string{
		"INSERT INTO t VALUES (1)", "SELECT NEXT VALUE /* x */ FOR s", "/*! SELECT NEXT VALUE */ FOR s",
		"INSERT INTO t VALUES (1); INSERT INTO orders (name) VALUES (2)", "USE other; INSERT INTO items (name) VALUES (1)",
		"PREPARE s FROM 'INSERT INTO orders (name) VALUES (?)'", "INSERT INTO t VALUES ('a;INSERT INTO orders VALUES (1)')",
		"SET sql_mode=''; INSERT INTO orders (id) VALUES (0)", "INSERT INTO `ord``ers` VALUES (1)", `INSERT INTO "orders" (a) VALUES (1)`,
		"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (name)", "LOAD DATA INFILE 'f' INTO TABLE t; LOAD XML LOCAL INFILE 'g' INTO TABLE shop.items",
		"LOAD INDEX INTO CACHE orders; LOAD DATA LOCAL INFILE 'f' REPLACE INTO TABLE `orders`", "USE other; LOAD DATA LOCAL INFILE 'f' INTO TABLE items",
		"EXECUTE IMMEDIATE CONCAT('SELECT NEXT', 'VAL(s)')", `PREPARE s FROM 'SELECT NEXT\VAL(s)'`, "INSERT INTO `ev``t` () VALUES ()",
		"INSERT INTO ITEMS VALUES (1)", "REPLACE shop . items SET name = 1", "SET STATEMENT a=1 FOR INSERT INTO orders VALUES ()",
		"SET STATEMENT a='x\\' FOR INSERT INTO orders VALUES (1)' FOR INSERT INTO t VALUES (1)", "SET STATEMENT a=1 FOR EXECUTE IMMEDIATE 'SELECT NEXTVAL(s)'",
		"SET STATEMENT a=(1) FOR LOAD DATA LOCAL INFILE 'f' INTO TABLE items", `SET STATEMENT a="x" FOR INSERT INTO "orders" VALUES ()`,
		`LOAD DATA LOCAL INFILE 'a\' INTO TABLE orders (x)' INTO TABLE t`, `LOAD DATA LOCAL INFILE "f" INTO TABLE orders`,
		`INSERT INTO db."orders" VALUES (1)`, "INSERT INTO t VALUES ('a;LOAD DATA LOCAL INFILE \"f\" INTO TABLE orders')",
	} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, sql string, m uint8) {
		mode := Mode{ANSIQuotes: m&1 != 0, NoBackslashEscapes: m&2 != 0, NoAutoValueOnZero: m&4 != 0}
		withRules := testEnv(t, mode)
		for _, rules := range []*Rules{withRules.Rules, nil} {
			if needsSession(sql, rules) {
				continue
			}
			for _, db := range []string{"shop", "other", "", "nodb", "ITEMS"} {
				env := *withRules
				env.DB, env.Rules = db, rules
				for _, prepared := range []bool{false, true} {
					var p Plan
					var err error
					if prepared {
						p, err = PlanPrepare(sql, &env)
					} else {
						p, err = PlanQuery(sql, &env)
					}
					if err != nil || p.Kind != PassThrough {
						t.Fatalf("NeedsSession(%q) = false, but in database %q with %+v (rules %v, prepared %v) the plan is %v, %v",
							sql, db, mode, rules != nil, prepared, p.Kind, err)
					}
				}
			}
		}
	})
}

// BenchmarkNeedsSession: the engine's look before planning, per text.
func BenchmarkNeedsSession(b *testing.B) {
	rules := testEnv(b, Mode{}).Rules
	for _, c := range []struct {
		name  string
		sql   string
		rules *Rules
	}{
		{"RuleTable1Row", insertRows(1), rules},
		{"OtherTable1Row", otherInsertRows(1), rules},
		{"OtherTable1000Rows", otherInsertRows(1000), rules},
		{"NoRules1000Rows", otherInsertRows(1000), nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.sql)))
			for b.Loop() {
				needsSession(c.sql, c.rules)
			}
		})
	}
}
