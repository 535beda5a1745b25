package rewriter

import (
	"strings"
	"testing"
)

// parseReturning parses one rendered statement as the planner reads it:
// the text before a RETURNING clause if there is one (or the whole text
// when only that parses, MySQL's column named returning).
func parseReturning(t testing.TB, stmt string, mode Mode) error {
	t.Helper()
	if at, inBang := returningAt(stmt, mode); at >= 0 {
		prefix := stmt[:at]
		if inBang {
			prefix += "*/"
		}
		err := tryParse(prefix, mode)
		if err == nil || tryParse(stmt, mode) == nil {
			return nil
		}
		return err
	}
	return tryParse(stmt, mode)
}

// TestReturning: MariaDB's INSERT / REPLACE ... RETURNING on rule tables.
// The keys are filled before RETURNING exactly as without it, the clause
// reaches the server byte for byte, and the rendered text parses once the
// RETURNING clause is cut off.
func TestReturning(t *testing.T) {
	ansi := Mode{ANSIQuotes: true}
	tests := []struct {
		name     string
		sql      string
		mode     Mode
		prepared bool
		want     string // "" means PassThrough
		code     uint16 // error wanted
		mention  string
	}{
		{name: "one row", sql: "INSERT INTO orders (name) VALUES ('a') RETURNING id",
			want: "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a') RETURNING id"},
		{name: "multi row", sql: "INSERT INTO orders (name) VALUES ('a'), ('b'),('c') RETURNING id, name",
			want: "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'), (0*(@__leaf_m:=LAST_INSERT_ID())+1002, 'b'),(1003, 'c') RETURNING id, name"},
		{name: "lower case glued", sql: "insert into orders(name)values('a')returning`id`",
			want: "insert into orders(`id`, name)values(LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a')returning`id`"},
		{name: "set", sql: "INSERT INTO orders SET name = 'a' RETURNING id",
			want: "INSERT INTO orders SET `id` = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), name = 'a' RETURNING id"},
		{name: "set null key last", sql: "INSERT INTO orders SET name = 'a', id = NULL RETURNING id",
			want: "INSERT INTO orders SET name = 'a', id = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001) RETURNING id"},
		{name: "zero key last in row", sql: "INSERT INTO orders (name, id) VALUES ('a', 0), ('b', DEFAULT) RETURNING id",
			want: "INSERT INTO orders (name, id) VALUES ('a', LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001)), ('b', 0*(@__leaf_m:=LAST_INSERT_ID())+1002) RETURNING id"},
		{name: "no column list", sql: "INSERT INTO orders VALUES (NULL, 'a', 'b') RETURNING id, LAST_INSERT_ID()",
			want: "INSERT INTO orders VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a', 'b') RETURNING id, LAST_INSERT_ID()"},
		{name: "empty rows", sql: "INSERT INTO orders VALUES (), () RETURNING id",
			want: "INSERT INTO orders (`id`) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001)), (0*(@__leaf_m:=LAST_INSERT_ID())+1002) RETURNING id"},
		{name: "odku", sql: "INSERT INTO orders (name) VALUES ('a') ON DUPLICATE KEY UPDATE note = 'x' RETURNING id, note",
			want: "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a') ON DUPLICATE KEY UPDATE note = 'x' RETURNING id, note"},
		{name: "replace", sql: "REPLACE INTO orders (id, name) VALUES (0, 'a'), (7, 'b') RETURNING id",
			want: "REPLACE INTO orders (id, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a'), (IF((@__leaf_m:=LAST_INSERT_ID()) IS NULL,NULL,7), 'b') RETURNING id"},
		{name: "returning in strings comments parens", sql: "INSERT INTO orders (name, note) VALUES ('returning', \"x RETURNING y\") /* RETURNING */ -- RETURNING\n" +
			"RETURNING (SELECT 1 FROM dual WHERE 'returning' <> 'RETURNING'), CONCAT(name, ') returning ('), `returning`",
			want: "INSERT INTO orders (`id`, name, note) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'returning', \"x RETURNING y\") /* RETURNING */ -- RETURNING\n" +
				"RETURNING (SELECT 1 FROM dual WHERE 'returning' <> 'RETURNING'), CONCAT(name, ') returning ('), `returning`"},
		{name: "ansi quotes", mode: ansi, sql: `INSERT INTO "orders" ("name") VALUES ('a') RETURNING "id", "name"`,
			want: "INSERT INTO \"orders\" (`id`, \"name\") VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a') RETURNING \"id\", \"name\""},
		{name: "in executable comment", sql: "INSERT INTO orders (name) VALUES ('a') /*! RETURNING id */",
			want: "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a') /*! RETURNING id */"},
		{name: "executable comment with version", sql: "INSERT INTO orders SET id = NULL /*!50500 RETURNING id */",
			want: "INSERT INTO orders SET id = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001) /*!50500 RETURNING id */"},
		{name: "multi statement", sql: "INSERT INTO orders (name) VALUES ('a') RETURNING id; INSERT INTO orders (name) VALUES ('b'); REPLACE orders SET name = 'c' RETURNING id",
			want: "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a') RETURNING id; INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1002), 'b'); REPLACE orders SET `id` = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1003), name = 'c' RETURNING id"},
		{name: "set statement", sql: "SET STATEMENT x=1 FOR INSERT INTO orders (name) VALUES ('a') RETURNING id",
			want: "SET STATEMENT x=1 FOR INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a') RETURNING id"},
		{name: "nextval in values", sql: "INSERT INTO t (a, b) VALUES (NEXTVAL('s'), 1), (NEXT VALUE FOR s, 2) RETURNING a, b",
			want: "INSERT INTO t (a, b) VALUES (1001, 1), (1002, 2) RETURNING a, b"},
		{name: "nextval in key", sql: "INSERT INTO orders (id, name) VALUES (NEXTVAL(o), 'a') RETURNING id",
			want: "INSERT INTO orders (id, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), 'a') RETURNING id"},
		{name: "nextval glued to returning", sql: "INSERT INTO t SET a = NEXTVAL('s')RETURNING a",
			want: "INSERT INTO t SET a = 1001 RETURNING a"},
		// A qualified column named returning is a column; so is an
		// unqualified one where the parser reads the whole text (MySQL,
		// where RETURNING is not reserved; MariaDB rejects this text).
		{name: "qualified column returning", sql: "INSERT INTO orders SET name = 'a', orders.returning = 1",
			want: "INSERT INTO orders SET `id` = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), name = 'a', orders.returning = 1"},
		{name: "mysql column returning", sql: "INSERT INTO orders SET name = 'a', returning = 1",
			want: "INSERT INTO orders SET `id` = LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+1001), name = 'a', returning = 1"},

		{name: "prepared", prepared: true, sql: "INSERT INTO orders (name) VALUES (?), (?) RETURNING id, name",
			want: "INSERT INTO orders (`id`, name) VALUES (LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?), ?), (0*(@__leaf_m:=LAST_INSERT_ID())+?, ?) RETURNING id, name"},
		{name: "prepared key param", prepared: true, sql: "INSERT INTO orders (id, name) VALUES (?, ?) RETURNING id, ? AS p",
			want: "INSERT INTO orders (id, name) VALUES (COALESCE(?,LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?)), ?) RETURNING id, ? AS p"},
		{name: "prepared set", prepared: true, sql: "INSERT INTO orders SET name = ?, id = ? RETURNING id",
			want: "INSERT INTO orders SET name = ?, id = COALESCE(?,LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+?)) RETURNING id"},

		// Pass-through.
		{name: "explicit key", sql: "INSERT INTO orders (id, name) VALUES (5, 'a') RETURNING id"},
		{name: "other table", sql: "INSERT INTO t (a) VALUES (NULL) RETURNING a"},

		// Errors.
		{name: "nextval in returning", sql: "INSERT INTO orders (name) VALUES ('a') RETURNING id, NEXTVAL('s')", code: 1235, mention: "RETURNING"},
		{name: "next value for in returning", sql: "INSERT INTO t (a) VALUES (NEXTVAL(s)) RETURNING a, NEXT VALUE FOR s", code: 1235, mention: "NEXT VALUE FOR s in a RETURNING"},
		{name: "nextval in returning prepared", prepared: true, sql: "INSERT INTO orders (name) VALUES (?) RETURNING NEXTVAL(s)", code: 1235, mention: "RETURNING"},
		{name: "lastval in returning", sql: "INSERT INTO orders (name) VALUES ('a') RETURNING LASTVAL(s)", code: 1235, mention: "LASTVAL(s)"},
		{name: "row alias", sql: "INSERT INTO orders (name) VALUES ('a') AS new ON DUPLICATE KEY UPDATE name = new.name RETURNING id", code: 1235, mention: "shop.orders"},
		{name: "count mismatch", sql: "INSERT INTO orders (name) VALUES ('a', 'b') RETURNING id", code: 1136},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diffFast(t, tt.sql, testEnv(t, tt.mode), tt.prepared)
			p, err := plan(tt.sql, testEnv(t, tt.mode), tt.prepared)
			if tt.code != 0 {
				e, ok := err.(*Error)
				if !ok || e.Code() != tt.code || !strings.Contains(e.Error(), tt.mention) {
					t.Fatalf("%q: plan %v, err %v; want error %d mentioning %q", tt.sql, p.Kind, err, tt.code, tt.mention)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.sql, err)
			}
			if tt.want == "" {
				if p.Kind != PassThrough {
					t.Fatalf("%q: %v plan, want PassThrough", tt.sql, p.Kind)
				}
				return
			}
			if p.Kind != Rewrite {
				t.Fatalf("%q: %v plan, want Rewrite", tt.sql, p.Kind)
			}
			out := string(p.mustRender(t, nil, tt.sql, ids(len(p.Slots))))
			if out != tt.want {
				t.Fatalf("%q:\n got %q\nwant %q", tt.sql, out, tt.want)
			}
			if tt.prepared {
				checkParams(t, tt.sql, tt.mode, p)
			} else if strings.Count(out, "?") != strings.Count(tt.sql, "?") {
				t.Errorf("parameter count changed: %q", out)
			}
			for i, r := range statements(out, tt.mode) {
				stmt := out[r[0]:r[1]]
				if s := strings.TrimSpace(stmt); strings.HasPrefix(strings.ToUpper(s), "SET STATEMENT") {
					stmt = s[strings.Index(strings.ToUpper(s), " FOR ")+5:]
				}
				if err := parseReturning(t, stmt, tt.mode); err != nil {
					t.Errorf("statement %d of %q does not parse without its RETURNING clause: %v", i, out, err)
				}
				// The RETURNING clause is the input's, byte for byte.
				if at, _ := returningAt(stmt, tt.mode); at >= 0 && !strings.Contains(tt.sql, stmt[at:]) {
					t.Errorf("RETURNING clause %q is not in the input", stmt[at:])
				}
			}
		})
	}
}

func TestReturningAt(t *testing.T) {
	for _, tt := range []struct {
		sql    string
		mode   Mode
		at     int
		inBang bool
	}{
		{"INSERT INTO t VALUES (1) RETURNING id", Mode{}, 25, false},
		{"INSERT INTO t VALUES (1)", Mode{}, -1, false},
		{"INSERT INTO t VALUES ('RETURNING') -- RETURNING", Mode{}, -1, false},
		{"INSERT INTO t VALUES ((returning))", Mode{}, -1, false},
		{"INSERT INTO t SET t.returning = 1", Mode{}, -1, false},
		{"INSERT INTO t SET `returning` = 1", Mode{}, -1, false},
		{`INSERT INTO t SET "returning" = 1`, Mode{ANSIQuotes: true}, -1, false},
		{"INSERT INTO t SET @returning = 1", Mode{}, -1, false},
		{"INSERT INTO t VALUES (1) /*! returning id */", Mode{}, 29, true},
		{"INSERT INTO t VALUES (1) /* returning id */ Returning x", Mode{}, 44, false},
		{`INSERT INTO t VALUES ('\') RETURNING x')`, Mode{}, -1, false},
		{`INSERT INTO t VALUES ('\') RETURNING x`, Mode{NoBackslashEscapes: true}, 27, false},
	} {
		at, inBang := returningAt(tt.sql, tt.mode)
		if at != tt.at || inBang != tt.inBang {
			t.Errorf("returningAt(%q) = %d, %v; want %d, %v", tt.sql, at, inBang, tt.at, tt.inBang)
		}
	}
}
