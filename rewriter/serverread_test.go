package rewriter

import (
	"errors"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/internal/errstyle"
)

// planCase is a text planned with PlanQuery: want is the rendered text
// (IDs 1001, ...), "" for PassThrough; code != 0 wants that error, whose
// message mentions mention.
type planCase struct {
	name    string
	sql     string
	mode    Mode
	want    string
	code    uint16
	state   string
	mention string
}

func runPlanCases(t *testing.T, tests []planCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diffFast(t, tt.sql, testEnv(t, tt.mode), false)
			p, err := PlanQuery(tt.sql, testEnv(t, tt.mode))
			if tt.code != 0 {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("%q: plan %v, err %v; want error %d", tt.sql, p.Kind, err, tt.code)
				}
				if e.Code() != tt.code || tt.state != "" && e.SQLState() != tt.state || !strings.Contains(e.Error(), tt.mention) || errstyle.Check(e.Code(), e.Error()) != nil {
					t.Fatalf("%q: got %d %s %q; want %d %s mentioning %q", tt.sql, e.Code(), e.SQLState(), e.Error(), tt.code, tt.state, tt.mention)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.sql, err)
			}
			got := ""
			if p.Kind != PassThrough {
				got = string(p.mustRender(t, nil, tt.sql, ids(len(p.Slots))))
			}
			if got != tt.want {
				t.Fatalf("%q: %v plan\n got %q\nwant %q", tt.sql, p.Kind, got, tt.want)
			}
		})
	}
}

// TestVersionedComments: on a rule table, an executable comment that not
// every server runs is refused, and a row whose value count is not the
// column count is error 1136, never passed through unfilled.
func TestVersionedComments(t *testing.T) {
	runPlanCases(t, []planCase{
		// Run by MySQL and MariaDB alike: filled.
		{name: "bare bang", sql: "INSERT /*! IGNORE */ INTO orders (name) VALUES ('a')",
			want: "INSERT /*! IGNORE */ INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		{name: "old version", sql: "INSERT INTO orders (name /*!40101 , note */) VALUES ('a' /*!50699 , 'b' */)",
			want: "INSERT INTO orders (`id`, name /*!40101 , note */) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a' /*!50699 , 'b' */)"},
		{name: "old version holds the key", sql: "INSERT INTO orders (/*!32302 id, */ name) VALUES (/*!32302 NULL, */ 'a')",
			want: "INSERT INTO orders (/*!32302 id, */ name) VALUES (/*!32302 LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), */ 'a')"},
		// Run or skipped depending on the server: refused on a rule table.
		{name: "hidden value", sql: "INSERT IGNORE INTO orders (name, note) VALUES ('v1', /*!99999 'hidden', */ 'x')", code: 1235, state: "42000", mention: "shop.orders"},
		{name: "50700", sql: "INSERT INTO orders (name) VALUES ('a' /*!50700 , 'b' */)", code: 1235, mention: "shop.orders"},
		{name: "six digits", sql: "INSERT INTO orders (name /*!100100 , note */) VALUES ('a' /*!100100 , 'b' */)", code: 1235, mention: "shop.orders"},
		{name: "seven digits", sql: "INSERT INTO orders (name) VALUES ('a' /*!1001001 */)", code: 1235, mention: "shop.orders"},
		{name: "short version", sql: "INSERT INTO orders (name) VALUES (/*!12 */)", code: 1235, mention: "shop.orders"},
		{name: "mariadb versioned", sql: "INSERT INTO orders (name /*M!100100 , note */) VALUES ('m' /*M!100100 , 'mariadb' */)", code: 1235, mention: "id"},
		{name: "mariadb bare", sql: "INSERT INTO orders (name) VALUES ('m' /*M! , 'x' */)", code: 1235, mention: "shop.orders"},
		{name: "hidden key", sql: "INSERT INTO orders (name) VALUES (/*!99999 NULL, */ 'a')", code: 1235, mention: "shop.orders"},
		{name: "whole statement", sql: "/*!99999 INSERT INTO orders (name) VALUES ('a') */", code: 1235, mention: "shop.orders"},
		{name: "hidden qualifier", sql: "INSERT INTO /*!99999 x. */ items (name) VALUES ('a')", code: 1235, mention: "shop.items"},
		{name: "nextval too", sql: "INSERT INTO orders (name) VALUES (NEXTVAL('s') /*!80000 , 1 */)", code: 1235, mention: "shop.orders"},
		{name: "ansi quotes", sql: `INSERT INTO "orders" ("name") VALUES ('a' /*!99999 , 'b' */)`, mode: Mode{ANSIQuotes: true}, code: 1235, mention: "shop.orders"},
		// Not a rule table, or another statement: untouched.
		{name: "other table", sql: "INSERT INTO t (a) VALUES (1 /*!99999 , 2 */)"},
		{name: "select", sql: "SELECT 1 /*!99999 , 2 */ FROM orders"},
		{name: "other statement", sql: "SELECT 1 /*!99999 , 2 */; INSERT INTO orders (name) VALUES ('a')",
			want: "SELECT 1 /*!99999 , 2 */; INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')"},
		// Value count differs from the column count: 1136, as the server.
		{name: "count short", sql: "INSERT INTO orders (name, note) VALUES ('a')", code: 1136, state: "21S01", mention: "at row 1"},
		{name: "count long second row", sql: "INSERT INTO orders (name) VALUES ('a'), ('b', 'c')", code: 1136, state: "21S01", mention: "at row 2"},
		{name: "count without list", sql: "INSERT INTO orders VALUES (NULL, 'a')", code: 1136, mention: "shop.orders"},
		{name: "count with key", sql: "INSERT IGNORE INTO orders (id, name) VALUES (NULL)", code: 1136, mention: "key column id"},
		{name: "count empty row", sql: "INSERT INTO orders (name) VALUES ()", code: 1136},
		{name: "count other table", sql: "INSERT INTO t (a, b) VALUES (1)"},
	})
}

// TestSetStatement: MariaDB's SET STATEMENT ... FOR <statement> plans the
// statement in place.
func TestSetStatement(t *testing.T) {
	runPlanCases(t, []planCase{
		{name: "values", sql: "SET STATEMENT max_statement_time=0 FOR INSERT INTO orders (name) VALUES ('st')",
			want: "SET STATEMENT max_statement_time=0 FOR INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'st')"},
		{name: "set list no val", sql: "set /* c */ statement x=1, y='for' for insert into orders set name='x'",
			want: "set /* c */ statement x=1, y='for' for insert into orders set `id` = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), name='x'"},
		{name: "parens and null key", sql: "SET STATEMENT a=(1), b=CONCAT('a','b') FOR REPLACE INTO orders (id, name) VALUES (NULL, 'a'), (0, 'b')",
			want: "SET STATEMENT a=(1), b=CONCAT('a','b') FOR REPLACE INTO orders (id, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, 'b')"},
		{name: "nextval", sql: "SET STATEMENT x=1 FOR INSERT INTO t VALUES (NEXTVAL('s'))",
			want: "SET STATEMENT x=1 FOR INSERT INTO t VALUES (1001)"},
		{name: "next value for", sql: "SET STATEMENT x=1 FOR SELECT NEXT VALUE FOR s",
			want: "SET STATEMENT x=1 FOR SELECT 1001 AS `NEXT VALUE FOR s`"},
		{name: "multi", sql: "SET STATEMENT x=1 FOR INSERT INTO orders (name) VALUES ('a'); INSERT INTO orders (name) VALUES ('b')",
			want: "SET STATEMENT x=1 FOR INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'); INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1002), 'b')"},
		{name: "explicit key", sql: "SET STATEMENT x=1 FOR INSERT INTO orders (id, name) VALUES (5, 'a')"},
		{name: "other table", sql: "SET STATEMENT sql_mode='' FOR INSERT INTO t (a) VALUES (1)"},
		{name: "select", sql: "SET STATEMENT max_statement_time=1 FOR SELECT * FROM orders"},
		{name: "plain set", sql: "SET x = 1; SET STATEMENT x=1 FOR UPDATE orders SET name = 'a'"},
		{name: "returning", sql: "SET STATEMENT x=1 FOR INSERT INTO orders (name) VALUES ('a') RETURNING id",
			want: "SET STATEMENT x=1 FOR INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a') RETURNING id"},
		{name: "unreadable", sql: "SET STATEMENT x=1 FOR INSERT INTO orders (name) VALUES ('a') AS new ON DUPLICATE KEY UPDATE name = new.name", code: 1235, mention: "shop.orders"},
		{name: "count", sql: "SET STATEMENT x=1 FOR INSERT INTO orders (name) VALUES ('a', 'b')", code: 1136},
		{name: "nextval in variables", sql: "SET STATEMENT x=NEXT VALUE FOR s FOR INSERT INTO orders (name) VALUES ('a')", code: 1235, mention: "NEXT VALUE FOR s"},
		{name: "sql_mode", sql: "SET STATEMENT sql_mode='NO_AUTO_VALUE_ON_ZERO' FOR INSERT INTO orders (id, name) VALUES (0, 'z')", code: 1235, mention: "sql_mode"},
		{name: "sql_mode qualified", sql: "SET STATEMENT @@session.SQL_MODE='' FOR INSERT INTO t VALUES (NEXTVAL('s'))", code: 1235, mention: "sql_mode"},
	})
	for _, q := range []string{
		"SET STATEMENT x=1 FOR INSERT INTO t SET c=1",
		"  set\n/* c */ Statement x=1 for replace t set c=1",
		"SET @a = 1; SET STATEMENT x=1 FOR INSERT INTO t SET c=1",
		"SET /*!99999 STATEMENT x=1 FOR */ INSERT INTO t SET c=1",
	} {
		if !mayRewrite(q) {
			t.Errorf("mayRewrite(%q) = false", q)
		}
	}
	for _, q := range []string{"SET x = 1", "SET STATEMENTS = 1", "SET @statement = 1"} {
		if mayRewrite(q) {
			t.Errorf("mayRewrite(%q) = true", q)
		}
	}
	p, err := PlanPrepare("SET STATEMENT x=1 FOR INSERT INTO orders (name) VALUES (?)", testEnv(t, Mode{}))
	if want := "SET STATEMENT x=1 FOR INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?), ?)"; err != nil || string(p.mustRender(t, nil, "SET STATEMENT x=1 FOR INSERT INTO orders (name) VALUES (?)", nil)) != want {
		t.Errorf("PlanPrepare: %v %v, want %q", p.Kind, err, want)
	}
}
