package rewriter

import (
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"reflect"
	"strings"
	"testing"
)

// memoSeeds are INSERTs whose heads the memo keeps (compareMemo plans
// other texts behind them).
var memoSeeds = []string{
	"INSERT INTO orders (name) VALUES ('x')",
	"insert into `orders` (`id`, `name`) values (NULL, 'x')",
	"REPLACE orders (name, id) VALUE ('x', 0)",
	"INSERT IGNORE INTO items (name) VALUES ('x')",
}

// compareMemo checks the Planner's memo of INSERT heads (memo.go): sql
// planned twice by one Planner (the second time, possibly from the memo),
// and every memoized seed head followed by sql, get exactly the plan and
// error a Planner without a memo gives.
func compareMemo(sql string, env *Env, prepared bool) string {
	check := func(pl *Planner, text string) string {
		got, _, errG := pl.planWith(text, sqltext.ClassifyString(text), env, prepared, true)
		want, _, errW := planWith(text, sqltext.ClassifyString(text), env, prepared, true)
		if errString(errG) != errString(errW) || errW == nil && !reflect.DeepEqual(canon(got), canon(want)) {
			return "the memo changed the plan of " + text + ":\nmemo  " + planString(got) + " " + errString(errG) +
				"\nfresh " + planString(want) + " " + errString(errW)
		}
		// The engine skips NeedsSession for a text HasHead accepts.
		if c := sqltext.ClassifyString(text); MayRewrite(c) && !c.Semicolon() && pl.HasHead(text, env.Rules) && !NeedsSession(text, c, env.Rules) {
			return "HasHead accepts " + text + ", which NeedsSession says needs no session"
		}
		return ""
	}
	var pl Planner
	for range 2 {
		if p := check(&pl, sql); p != "" {
			return p
		}
	}
	for _, seed := range memoSeeds {
		var pl Planner
		if _, _, err := pl.planWith(seed, sqltext.ClassifyString(seed), env, prepared, true); err != nil || len(pl.memo) == 0 {
			continue // prepared, or a mode in which the seed is not a lone INSERT
		}
		head := pl.memo[0].head
		for _, text := range []string{head + sql, head + " " + sql} {
			if p := check(&pl, text); p != "" {
				return p
			}
		}
	}
	return ""
}

// TestMemo: which texts reuse a memoized head, and that their plans are
// the ones planned without it.
func TestMemo(t *testing.T) {
	env := testEnv(t, Mode{})
	var pl Planner
	if _, _, err := pl.planWith("INSERT INTO orders (name) VALUES ('x')", sqltext.ClassifyString("INSERT INTO orders (name) VALUES ('x')"), env, false, true); err != nil {
		t.Fatal(err)
	}
	if len(pl.memo) != 1 || pl.memo[0].head != "INSERT INTO orders (name) VALUES" {
		t.Fatalf("memo %+v", pl.memo)
	}
	for _, tt := range []struct {
		sql string
		hit bool
	}{
		{"INSERT INTO orders (name) VALUES ('y')", true},
		{"INSERT INTO orders (name) VALUES('y'),('z') -- c", true},
		{"INSERT INTO orders (name) VALUES ('y') ON DUPLICATE KEY UPDATE name = 'w'", true},
		{"INSERT INTO orders (name) VALUES ('y') RETURNING id", true},
		{"INSERT INTO orders (name) VALUES ('y');", false},                    // ';': builder.run's path
		{"INSERT INTO orders (name) VALUES ('y'); SELECT 1", false},           //
		{"INSERT INTO orders (name) VALUES (NEXTVAL('t'))", false},            // a sequence call
		{"INSERT INTO orders (name) VALUES (NEXT VALUE FOR t)", false},        // a call the rows' lexing does not stop at
		{"INSERT INTO orders (name) VALUES ('a') /*!99999 , ('b') */", false}, // one not every server runs: error 1235
		{"INSERT INTO orders (name) VALUES ('a') /*! , ('b') */", false},      // an executable comment
		{"INSERT INTO orders (name) VALUES_X ('y')", false},                   // VALUES goes on
		{"INSERT INTO orders (name) VALUES (SELECT 1)", false},                // not the fast path's rows
		{"INSERT INTO orders (name) VALUES ('a', 'b')", false},                // 1136 from the parser path
		{"INSERT INTO orders (name) VALUE ('y')", false},                      // another head
	} {
		_, hit := pl.memoPlan(tt.sql, sqltext.ClassifyString(tt.sql), env)
		if hit != tt.hit {
			t.Errorf("%q: memo hit %v, want %v", tt.sql, hit, tt.hit)
		}
		if p := compareMemo(tt.sql, env, false); p != "" {
			t.Error(p)
		}
	}
	if pl.memoFind("INSERT INTO orders (name) VALUES_X ('y')", env) != nil {
		t.Error("a head matched a text in which its last word goes on")
	}
	// Another database, sql_mode or set of rules: not the same head.
	for name, e := range map[string]*Env{
		"db":    {DB: "other", Mode: env.Mode, Rules: env.Rules, Columns: env.Columns},
		"mode":  {DB: env.DB, Mode: Mode{ANSIQuotes: true}, Rules: env.Rules, Columns: env.Columns},
		"rules": testEnv(t, Mode{}),
	} {
		if _, hit := pl.memoPlan("INSERT INTO orders (name) VALUES ('y')", sqltext.ClassifyString("INSERT INTO orders (name) VALUES ('y')"), e); hit {
			t.Errorf("%s changed: the memo still answered", name)
		}
	}
	// A few heads, the oldest forgotten; a head too long is not kept.
	for i := range memoHeads + 1 {
		sql := "INSERT INTO orders (name" + strings.Repeat(" ", i) + ") VALUES ('x')"
		if _, _, err := pl.planWith(sql, sqltext.ClassifyString(sql), env, false, true); err != nil {
			t.Fatal(err)
		}
	}
	if len(pl.memo) != memoHeads || pl.memoFind("INSERT INTO orders (name) VALUES ('x')", env) != nil {
		t.Errorf("memo holds %d heads, the first among them: %v", len(pl.memo), pl.memoFind("INSERT INTO orders (name) VALUES ('x')", env) != nil)
	}
	long := "INSERT INTO orders (name" + strings.Repeat(" ", memoMaxHead) + ") VALUES ('x')"
	if _, _, err := pl.planWith(long, sqltext.ClassifyString(long), env, false, true); err != nil {
		t.Fatal(err)
	}
	if pl.memoFind(long, env) != nil {
		t.Error("a head longer than memoMaxHead was kept")
	}
}
