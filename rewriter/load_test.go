package rewriter

import (
	"errors"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/rewriter/loadfile"
)

// The key's SET items as rendered.
const (
	genSQL    = "IF(@__leaf_g = '0', (SELECT 1 UNION ALL SELECT 2), IF(@__leaf_f IS NULL, LAST_INSERT_ID(@__leaf_f := @__leaf_g), @__leaf_g))"
	absentSet = "`id` = " + genSQL
	listedSet = "`id` = IFNULL(@__leaf_v, 0), `id` = IF(`id` = 0, " + genSQL + ", `id`)"
)

func TestPlanLoad(t *testing.T) {
	tsv := loadfile.Format{FieldTerm: "\t", Enclosed: -1, Escaped: '\\', LineTerm: "\n"}
	with := func(f loadfile.Format, fields int) loadfile.Format { f.Fields = fields; return f }
	tests := []struct {
		name    string
		mode    Mode
		sql     string
		want    string
		format  loadfile.Format
		charset string
		table   string
	}{
		{name: "key absent from the column list",
			sql:    "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (name, note)",
			want:   "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (@__leaf_g, name, note) SET " + absentSet,
			format: with(tsv, 2)},
		{name: "key in the column list, qualified table",
			sql:    "load data local infile '/tmp/x.csv' replace into table shop.orders (`ID`, name) -- trailing",
			want:   "load data local infile '/tmp/x.csv' replace into table shop.orders (@__leaf_g, @__leaf_v, name) SET " + listedSet + " -- trailing",
			format: with(tsv, 2)},
		{name: "no column list: the table's columns",
			sql:    "LOAD DATA LOCAL INFILE 'f' IGNORE INTO TABLE orders FIELDS TERMINATED BY ',' ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES",
			want:   "LOAD DATA LOCAL INFILE 'f' IGNORE INTO TABLE orders FIELDS TERMINATED BY ',' ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES (@__leaf_g, @__leaf_v, `name`, `note`) SET " + listedSet + ";",
			format: loadfile.Format{FieldTerm: ",", Enclosed: '"', Escaped: '\\', LineTerm: "\r\n", Ignore: 1, Fields: 3}},
		{name: "empty column list means every column",
			sql:    "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders () SET note = 'x'",
			want:   "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (@__leaf_g, @__leaf_v, `name`, `note`) SET `id` = IFNULL(@__leaf_v, 0), note = 'x', `id` = IF(`id` = 0, " + genSQL + ", `id`)",
			format: with(tsv, 3)},
		{name: "user variables and an existing SET list",
			sql:    "LOAD DATA LOW_PRIORITY LOCAL INFILE 'f' INTO TABLE orders CHARACTER SET utf8mb4 COLUMNS OPTIONALLY ENCLOSED BY X'22' TERMINATED BY 0x2c ESCAPED BY '' (@a, name, @b) SET note = CONCAT(@a, ',', @b), name = UPPER(name)",
			want:   "LOAD DATA LOW_PRIORITY LOCAL INFILE 'f' INTO TABLE orders CHARACTER SET utf8mb4 COLUMNS OPTIONALLY ENCLOSED BY X'22' TERMINATED BY 0x2c ESCAPED BY '' (@__leaf_g, @a, name, @b) SET note = CONCAT(@a, ',', @b), name = UPPER(name), " + absentSet,
			format: loadfile.Format{FieldTerm: ",", Enclosed: '"', Escaped: -1, LineTerm: "\n", Fields: 3}, charset: "utf8mb4"},
		{name: "PARTITION, CHARSET name as a string, LINES STARTING BY",
			sql:     "LOAD DATA CONCURRENT LOCAL INFILE 'f' INTO TABLE orders PARTITION (p0, p1) CHARSET 'latin1' LINES STARTING BY '>' TERMINATED BY '|' IGNORE 2 ROWS (name)",
			want:    "LOAD DATA CONCURRENT LOCAL INFILE 'f' INTO TABLE orders PARTITION (p0, p1) CHARSET 'latin1' LINES STARTING BY '>' TERMINATED BY '|' IGNORE 2 ROWS (@__leaf_g, name) SET " + absentSet,
			format:  loadfile.Format{FieldTerm: "\t", Enclosed: -1, Escaped: '\\', LineStart: ">", LineTerm: "|", Ignore: 2, Fields: 1},
			charset: "latin1"},
		{name: "NO_BACKSLASH_ESCAPES: the default escape is off, strings are raw",
			mode:   Mode{NoBackslashEscapes: true},
			sql:    `LOAD DATA LOCAL INFILE 'f' INTO TABLE orders FIELDS TERMINATED BY '\t' (name)`,
			want:   `LOAD DATA LOCAL INFILE 'f' INTO TABLE orders FIELDS TERMINATED BY '\t' (@__leaf_g, name) SET ` + absentSet,
			format: loadfile.Format{FieldTerm: `\t`, Enclosed: -1, Escaped: -1, LineTerm: "\n", Fields: 1}},
		{name: "NO_AUTO_VALUE_ON_ZERO keeps an explicit 0",
			mode:   Mode{NoAutoValueOnZero: true},
			sql:    "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (id, name)",
			want:   "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (@__leaf_g, @__leaf_v, name) SET `id` = IFNULL(@__leaf_v, 0), `id` = IF(@__leaf_v IS NULL, " + genSQL + ", `id`)",
			format: with(tsv, 2)},
		{name: "rule with a database, key in a column list as table.column",
			sql:    "LOAD DATA LOCAL INFILE 'f' INTO TABLE items (items.item_id, name)",
			want:   "LOAD DATA LOCAL INFILE 'f' INTO TABLE items (@__leaf_g, @__leaf_v, name) SET `item_id` = IFNULL(@__leaf_v, 0), `item_id` = IF(`item_id` = 0, " + strings.ReplaceAll(genSQL, "`id`", "`item_id`") + ", `item_id`)",
			format: with(tsv, 2), table: "shop.items"},
		{name: "SET with := and a subquery's commas",
			sql:    "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (name) SET note := (SELECT CONCAT('a', 'b'))",
			want:   "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (@__leaf_g, name) SET note := (SELECT CONCAT('a', 'b')), " + absentSet,
			format: with(tsv, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t, tt.mode)
			sql := tt.sql
			if strings.HasSuffix(tt.want, ";") {
				sql += ";"
			}
			p, err := PlanQuery(sql, env)
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind != LoadData || p.Load == nil {
				t.Fatalf("kind %v", p.Kind)
			}
			if got := string(p.Load.Render(nil, sql)); got != tt.want {
				t.Errorf("rendered\n got %s\nwant %s", got, tt.want)
			}
			if p.Load.Format != tt.format {
				t.Errorf("format %+v, want %+v", p.Load.Format, tt.format)
			}
			if p.Load.Charset != tt.charset {
				t.Errorf("charset %q, want %q", p.Load.Charset, tt.charset)
			}
			table := tt.table
			if table == "" {
				table = "shop.orders"
			}
			if f := p.Filled; len(f) != 1 || f[0].DB+"."+f[0].Table != table || f[0] != p.Load.Filled {
				t.Errorf("filled %+v", f)
			}
		})
	}
}

func TestPlanLoadRefused(t *testing.T) {
	tests := []struct {
		sql  string
		code uint16
		want string
	}{
		{"LOAD DATA INFILE '/var/lib/f' INTO TABLE orders", CodeNotSupported, "use LOAD DATA LOCAL INFILE"},
		{"LOAD XML LOCAL INFILE 'f' INTO TABLE orders", CodeNotSupported, "LOAD XML is not supported"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders; SELECT 1", CodeNotSupported, "only statement"},
		{"SELECT 1; LOAD DATA LOCAL INFILE 'f' INTO TABLE orders", CodeNotSupported, "only statement"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders /*!50700 (name) */", CodeNotSupported, "executable comments"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (name) SET id = 7", CodeNotSupported, "SET list assigns the key column id"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (id, name, ID)", CodeFieldTwice, "Column 'id' specified twice"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders FIELDS TERMINATED BY '' (name)", CodeNotSupported, "fixed-width"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders FIELDS TERMINATED BY '1' (name)", CodeNotSupported, "digit"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders FIELDS ENCLOSED BY 'ab' (name)", CodeNotSupported, "one character"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (name) SET note = NEXTVAL(s)", CodeNotSupported, "one value for every row"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders ROWS IDENTIFIED BY '<r>'", CodeNotSupported, "ROWS IDENTIFIED BY"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (name) WHERE 1", CodeNotSupported, "cannot read it after"},
		{"SET STATEMENT sql_mode='' FOR LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (name)", CodeNotSupported, "SET STATEMENT sql_mode"},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE missing.orders", CodeUnknown, "reading the columns of missing.orders"},
	}
	for _, tt := range tests {
		_, err := PlanQuery(tt.sql, testEnv(t, Mode{}))
		var e *Error
		if !errors.As(err, &e) || e.Code() != tt.code || !strings.Contains(e.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant %d %q", tt.sql, err, tt.code, tt.want)
			continue
		}
		if tt.code == CodeNotSupported && !strings.Contains(e.Error(), "orders") {
			t.Errorf("%s: the error does not name the table: %v", tt.sql, e)
		}
	}
	// Prepared: refused.
	if _, err := PlanPrepare("LOAD DATA LOCAL INFILE 'f' INTO TABLE orders", testEnv(t, Mode{})); err == nil || !strings.Contains(err.Error(), "cannot be prepared") {
		t.Errorf("prepared LOAD DATA: %v", err)
	}
}

// LOAD statements that touch no rule table pass through, read only up to
// their table name.
func TestPlanLoadPassThrough(t *testing.T) {
	env := testEnv(t, Mode{})
	for _, sql := range []string{
		"LOAD DATA LOCAL INFILE 'f' INTO TABLE plain (a, b)",
		"LOAD DATA INFILE 'f' INTO TABLE other.orders_archive",
		"LOAD DATA LOCAL INFILE 'f' INTO TABLE other.plain FIELDS TERMINATED BY ''",
		"LOAD XML LOCAL INFILE 'f' INTO TABLE plain",
		"LOAD INDEX INTO CACHE orders",
		"LOAD DATA LOCAL INFILE 'f' INTO TABLE plain; LOAD DATA LOCAL INFILE 'g' INTO TABLE plain2",
		"load data local infile 'f' into table `pla``in`",
	} {
		if !mayRewrite(sql) {
			t.Errorf("%s: the filter does not look", sql)
		}
		if !plainInserts(sql, env) {
			t.Errorf("%s: not read as plain", sql)
		}
		p, err := PlanQuery(sql, env)
		if err != nil || p.Kind != PassThrough {
			t.Errorf("%s: %v %v", sql, p.Kind, err)
		}
	}
	// A syntax error for the server is its to report.
	if p, err := PlanQuery("LOAD DATA LOCAL INFILE INTO TABLE orders", env); err != nil || p.Kind != PassThrough {
		t.Errorf("syntax error: %v %v", p.Kind, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = PlanQuery("LOAD DATA LOCAL INFILE '/tmp/f.csv' INTO TABLE plain FIELDS TERMINATED BY ','", env)
	})
	if allocs != 0 {
		t.Errorf("a LOAD DATA into a table without a rule allocates %v times", allocs)
	}
}
