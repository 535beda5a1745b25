package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// decodeCols is LEAFPROXY_DECODE's result set: names and MySQL types.
const decodeCols = "tag VARCHAR|generator VARCHAR|id BIGINT|created_at DATETIME(3)|worker_id BIGINT|sequence BIGINT|handed_out INT|max_id BIGINT"

// decodeAll runs a LEAFPROXY_DECODE and returns its columns ("name TYPE")
// and its one row as strings (NULL as "NULL").
func decodeAll(t *testing.T, conn *sql.Conn, q string, args ...any) (string, []string) {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, ct := range types {
		name := ct.Name() + " " + ct.DatabaseTypeName()
		if _, scale, ok := ct.DecimalSize(); ok && scale > 0 {
			name += fmt.Sprintf("(%d)", scale)
		}
		cols = append(cols, name)
	}
	if !rows.Next() {
		t.Fatalf("%s: no row (%v)", q, rows.Err())
	}
	vals := make([]sql.NullString, len(types))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Fatalf("%s: more than one row", q)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = "NULL"
		if v.Valid {
			out[i] = v.String
		}
	}
	return strings.Join(cols, "|"), out
}

// TestDecode: LEAFPROXY_DECODE('tag', id) through go-sql-driver, text and
// prepared (the id bound at EXECUTE): an ID made by NEXTVAL of a
// snowflake tag decodes to the time it was made (within the test's clock
// window, DATETIME(3) in UTC), the proxy's worker id and its sequence; a
// segment tag's ID says whether it is below the store's max_id (handed
// out) and what max_id is; unknown tags are 4091, IDs that are not
// integers or not of the tag's layout 1210.
func TestDecode(t *testing.T) {
	backend := testdb.Start(t)
	backend.Open(t, "app")
	cfg := leafConfig(t, backend, nil)
	// Step 1000: three NEXTVALs never reach 10% of the segment, so no
	// fetch moves max_id while the test compares with it.
	cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 1000}, "snow": {Generator: "snowflake"}}
	cfg.Snowflake.WorkerID = "7"
	lf := startLeaf(t, cfg)
	store := backend.Open(t, "leafproxy")
	ctx := context.Background()
	for _, mode := range []struct {
		name   string
		params map[string]string
	}{
		{"text", map[string]string{"interpolateParams": "true"}},
		{"prepared", nil},
		{"prepared parseTime", map[string]string{"parseTime": "true"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			conn, err := lf.open(t, "app", mode.params).Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()

			before := time.Now().UTC().Truncate(time.Millisecond)
			_, v := queryInt64s(t, conn, "SELECT NEXTVAL('snow')")
			after := time.Now().UTC()
			id := v[0].Int64
			cols, row := decodeAll(t, conn, "SELECT LEAFPROXY_DECODE('snow', ?)", id)
			if cols != decodeCols {
				t.Errorf("columns %s, want %s", cols, decodeCols)
			}
			layout := "2006-01-02 15:04:05.000"
			if mode.params["parseTime"] != "" {
				layout = time.RFC3339Nano
			}
			created, err := time.Parse(layout, row[3])
			if err != nil {
				t.Fatalf("created_at %q: %v", row[3], err)
			}
			if created.Before(before) || created.After(after) {
				t.Errorf("created_at %s outside the clock window [%s, %s] around NEXTVAL", created, before, after)
			}
			if want := fmt.Sprintf("snow snowflake %d", id); strings.Join(row[:3], " ") != want || row[4] != "7" || row[6] != "NULL" || row[7] != "NULL" {
				t.Errorf("row %q: want %s, worker_id 7, no handed_out / max_id", row, want)
			}
			if seq, err := strconv.Atoi(row[5]); err != nil || seq < 0 || seq > 4095 {
				t.Errorf("sequence %q", row[5])
			}

			_, v = queryInt64s(t, conn, "SELECT NEXTVAL('t')")
			seg := v[0].Int64
			maxID := scalar[int64](t, store, "SELECT max_id FROM leaf_alloc WHERE biz_tag = 't'")
			for _, tc := range []struct {
				id     any
				handed string
			}{{seg, "1"}, {maxID - 1, "1"}, {maxID, "0"}, {maxID + 1000, "0"}, {strconv.FormatInt(seg, 10), "1"}} {
				cols, row := decodeAll(t, conn, "SELECT LEAFPROXY_DECODE('t', ?)", tc.id)
				if cols != decodeCols {
					t.Errorf("columns %s", cols)
				}
				want := fmt.Sprintf("t segment %v NULL NULL NULL %s %d", tc.id, tc.handed, maxID)
				if got := strings.Join(row, " "); got != want {
					t.Errorf("decode %v: %s, want %s", tc.id, got, want)
				}
			}

			for _, tc := range []struct {
				q    string
				args []any
				code uint16
				say  string
			}{
				{"SELECT LEAFPROXY_DECODE('nosuch', ?)", []any{1}, 4091, "Unknown SEQUENCE: 'nosuch'"},
				{"SELECT LEAFPROXY_DECODE('t', ?)", []any{"abc"}, 1210, "Incorrect arguments to LEAFPROXY_DECODE"},
				{"SELECT LEAFPROXY_DECODE('t', ?)", []any{1.5}, 1210, "Incorrect arguments to LEAFPROXY_DECODE"},
				{"SELECT LEAFPROXY_DECODE('snow', ?)", []any{-1}, 1210, "is not an ID of snowflake sequence 'snow'"},
				{"SELECT LEAFPROXY_DECODE('t', ?)", []any{-1}, 1210, "is not an ID of sequence 't': its IDs start at 1"},
				{"SELECT LEAFPROXY_DECODE('t', ?)", []any{0}, 1210, "is not an ID of sequence 't': its IDs start at 1"},
				{"SELECT LEAFPROXY_DECODE('t', 1) AS x", nil, 1235, "takes no alias"},
				{"SELECT LEAFPROXY_DECODE('t', id) FROM leafproxy.leaf_alloc", nil, 1235, "statement of its own"},
			} {
				_, err := conn.ExecContext(ctx, tc.q, tc.args...)
				if code, _ := myErr(err); code != tc.code || !strings.Contains(err.Error(), tc.say) {
					t.Errorf("%s %v: %v, want %d saying %q", tc.q, tc.args, err, tc.code, tc.say)
				}
			}
		})
	}
}

// TestSelectItemNamesLikeMariaDB: a select item holding a proxy NEXTVAL
// gets the column name MariaDB gives the same text on its own native
// sequence (the item's text), text and prepared.
func TestSelectItemNamesLikeMariaDB(t *testing.T) {
	backend, lf := nextvalEnv(t)
	// A native sequence named like the proxy's tag, in a database of its
	// own: direct, MariaDB answers NEXTVAL(t) itself; through the proxy
	// the tag t wins.
	backend.Exec(t, "CREATE DATABASE names", "CREATE SEQUENCE names.t")
	direct := backend.Open(t, "names")
	directCalls := int64(0)
	ctx := context.Background()
	for _, mode := range []struct {
		name   string
		params map[string]string
		arg    []any
	}{
		{"text", map[string]string{"interpolateParams": "true"}, nil},
		{"prepared", nil, []any{1}},
	} {
		viaProxy := lf.open(t, "names", mode.params)
		for _, item := range []string{
			"NEXTVAL(t) + 1",
			"NEXTVAL(t)   *  2",
			"(NEXTVAL(t)) - 1",
			"NEXT VALUE FOR t + 0",
			"NEXTVAL(t) /* c */ + 1",
			"CONCAT('id-', NEXTVAL(t))",
		} {
			q := "SELECT " + item + ", 2"
			if mode.arg != nil {
				q = "SELECT " + item + " + ?, 2"
			}
			names := func(db *sql.DB) []string {
				rows, err := db.QueryContext(ctx, q, mode.arg...)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				defer rows.Close()
				cols, _ := rows.Columns()
				return cols
			}
			want, got := names(direct), names(viaProxy)
			directCalls++
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s (%s): columns %q through the proxy, MariaDB names them %q", q, mode.name, got, want)
			}
		}
	}
	// And the proxy's tag answered, not the native sequence.
	var v int64
	if err := lf.open(t, "names", nil).QueryRowContext(ctx, "SELECT NEXTVAL(t) + 0").Scan(&v); err != nil || v < 1 {
		t.Fatalf("NEXTVAL(t) + 0 through the proxy: %d %v", v, err)
	}
	if n := scalar[int64](t, direct, "SELECT NEXTVAL(t)"); n != directCalls+1 {
		t.Errorf("the native sequence names.t moved through the proxy: NEXTVAL = %d, want %d", n, directCalls+1)
	}
}

// TestQualifiedSequenceNames: what db.name means (README): a qualified
// name is a MariaDB native sequence of that database when it is no proxy
// tag (relayed); a proxy tag's qualifier is ignored (the proxy's tags have
// one namespace), even when the database has a native sequence of the
// same name.
func TestQualifiedSequenceNames(t *testing.T) {
	backend, lf := nextvalEnv(t)
	backend.Exec(t, "CREATE DATABASE other", "CREATE SEQUENCE other.nseq START WITH 900", "CREATE SEQUENCE other.t START WITH 5000000")
	db := lf.open(t, "app", nil)
	if v := scalar[int64](t, db, "SELECT NEXTVAL(other.nseq)"); v != 900 {
		t.Errorf("NEXTVAL(other.nseq) = %d, want the native sequence's 900", v)
	}
	for _, q := range []string{"SELECT NEXTVAL(nosuchdb.t)", "SELECT NEXT VALUE FOR other.t", "SELECT NEXTVAL(app.t)"} {
		if v := scalar[int64](t, db, q); v >= 5000000 || v < 1 {
			t.Errorf("%s = %d, want the proxy tag t's", q, v)
		}
	}
	if v := scalar[int64](t, backend.Open(t, "other"), "SELECT NEXTVAL(t)"); v != 5000000 {
		t.Errorf("other.t moved through the proxy: %d", v)
	}
}

// TestBlocksAndDecodeCLI: the mariadb command-line client (libmariadb,
// MariaDB's extended metadata) gets a block, LASTVAL, a decoded row with
// its column types, and an expression's column named as MariaDB names it.
func TestBlocksAndDecodeCLI(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb client not installed")
	}
	_, lf := nextvalEnv(t)
	host, port, _ := strings.Cut(lf.addr, ":")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(cli, append([]string{"--no-defaults", "-h", host, "-P", port, "-u", "app", "-psecret", "--batch"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("mariadb %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("--skip-column-names", "-e", "SELECT NEXTVAL('t', 100); SELECT LASTVAL('t'); SELECT NEXTVAL('snow', 10), LASTVAL('snow')")
	f := strings.Fields(out)
	if len(f) != 4 {
		t.Fatalf("output %q", out)
	}
	n := make([]int64, 4)
	for i := range f {
		n[i], _ = strconv.ParseInt(f[i], 10, 64)
	}
	if n[0] <= 0 || n[1] != n[0]+99 || n[3] != n[2]+9 {
		t.Fatalf("block %d, LASTVAL %d, snowflake block %d..%d", n[0], n[1], n[2], n[3])
	}

	decode := fmt.Sprintf("SELECT LEAFPROXY_DECODE('snow', %d)", n[2])
	out = run("-t", "--column-type-info", "-e", decode)
	// The metadata as the client library read it: name, type, decimals.
	meta := regexp.MustCompile(`Field\s+\d+:\s+`+"`"+`(\w+)`+"`"+`[\s\S]*?Type:\s+(\w+)[\s\S]*?Decimals:\s+(\d+)`).FindAllStringSubmatch(out, -1)
	var got []string
	for _, m := range meta {
		got = append(got, m[1]+" "+m[2]+" "+m[3])
	}
	if want := "tag VAR_STRING 0|generator VAR_STRING 0|id LONGLONG 0|created_at DATETIME 3|worker_id LONGLONG 0|sequence LONGLONG 0|handed_out LONG 0|max_id LONGLONG 0"; strings.Join(got, "|") != want {
		t.Errorf("decode metadata %q, want %q\n%s", strings.Join(got, "|"), want, out)
	}
	last := strings.Split(strings.TrimSpace(run("--skip-column-names", "-e", decode)), "\t")
	if len(last) != 8 || last[0] != "snow" || last[4] != "7" || last[5] != "0" || last[6] != "NULL" ||
		!regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$`).MatchString(last[3]) {
		t.Errorf("decoded row %q", last)
	}

	out = run("-e", "SELECT NEXTVAL('t') + 1, NEXTVAL('t') AS x")
	if header := strings.SplitN(out, "\n", 2)[0]; header != "NEXTVAL('t') + 1\tx" {
		t.Errorf("header %q, want %q", header, "NEXTVAL('t') + 1\tx")
	}
}
