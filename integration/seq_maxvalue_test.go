package integration

import (
	"database/sql"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// nextvals calls next n times and returns the values and the first error
// (its code, SQLSTATE and text).
func nextvals(n int, next func() (int64, error)) ([]int64, *mysql.MySQLError) {
	var vals []int64
	for i := 0; i < n; i++ {
		v, err := next()
		if err != nil {
			var me *mysql.MySQLError
			if !errors.As(err, &me) {
				me = &mysql.MySQLError{Message: err.Error()}
			}
			return vals, me
		}
		vals = append(vals, v)
	}
	return vals, nil
}

// Issue 32: CREATE LEAFPROXY SEQUENCE ... MAXVALUE. A segment tag at its
// MAXVALUE answers as a MariaDB sequence that ran out (4084, HY000, the
// server's words with the tag for the name), compared with a native
// SEQUENCE doing the same through go-sql-driver; two proxies sharing the
// store never pass it; key filling gets 4084 before anything is written;
// ALTER raises it; SHOW shows it.
func TestSequenceMaxValue(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, v INT)",
		"CREATE TABLE shop.items (id BIGINT PRIMARY KEY, v INT)",
		"CREATE DATABASE nat", "CREATE SEQUENCE nat.s MAXVALUE 3")
	cfg := layoutConfig(t, backend)
	cfg.Tables = []config.Table{{Table: "shop.orders", Column: "id", Tag: "ord"}, {Table: "shop.items", Column: "id", Tag: "ld"}}
	b := startLeaf(t, leafConfigLike(t, cfg))
	cfg.IDAPI.Listen = "127.0.0.1:0"
	cfg.IDAPI.Tokens = []config.APIToken{{Name: "all", Token: "token-all-0123456789abcdef", Tags: []string{"*"}}}
	a := startLeaf(t, cfg)
	appA, appB, ops := a.open(t, "", nil), b.open(t, "", nil), opsDB(t, a)
	exec := func(db *sql.DB, q string) error {
		t.Helper()
		_, err := db.Exec(q)
		return err
	}
	must := func(db *sql.DB, q string) {
		t.Helper()
		if err := exec(db, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	wantCode := func(q string, err error, code uint16) {
		t.Helper()
		if c, _ := myErr(err); c != code {
			t.Errorf("%s: %v, want error %d", q, err, code)
		}
	}

	// The native sequence and the proxy's, 4 NEXTVALs each.
	direct := backend.Open(t, "nat")
	natVals, natErr := nextvals(4, func() (v int64, err error) {
		err = direct.QueryRow("SELECT NEXTVAL(s)").Scan(&v)
		return
	})
	must(ops, "CREATE LEAFPROXY SEQUENCE sq MAXVALUE 3 STEP 2")
	proxyVals, proxyErr := nextvals(4, func() (v int64, err error) {
		err = appA.QueryRow("SELECT NEXTVAL('sq')").Scan(&v)
		return
	})
	if !slices.Equal(natVals, []int64{1, 2, 3}) || !slices.Equal(proxyVals, natVals) {
		t.Errorf("NEXTVAL x4: native %v, proxy %v", natVals, proxyVals)
	}
	if natErr == nil || proxyErr == nil || natErr.Number != 4084 || proxyErr.Number != natErr.Number || proxyErr.SQLState != natErr.SQLState {
		t.Fatalf("the 4th NEXTVAL: native %v, proxy %v", natErr, proxyErr)
	}
	if natErr.Message != "Sequence 'nat.s' has run out" || !strings.HasPrefix(proxyErr.Message, "Sequence 'sq' has run out (leafproxy: its MAXVALUE is 3") {
		t.Errorf("the 4th NEXTVAL's text: native %q, proxy %q", natErr.Message, proxyErr.Message)
	}
	if r := seqRow(t, ops, "sq"); r["max_value"] != "3" || r["end"] != "at end: NEXTVAL fails with 4084" {
		t.Errorf("SHOW row of sq: max_value %q, end %q", r["max_value"], r["end"])
	}

	// Two proxies, 4 sessions each, until both run out: never past 200.
	must(ops, "CREATE LEAFPROXY SEQUENCE two MAXVALUE 200 STEP 7")
	var (
		mu  sync.Mutex
		ids []int64
		wg  sync.WaitGroup
	)
	for _, db := range []*sql.DB{appA, appB, appA, appB, appA, appB, appA, appB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var v int64
				if err := db.QueryRow("SELECT NEXTVAL('two')").Scan(&v); err != nil {
					wantCode("NEXTVAL('two')", err, 4084)
					return
				}
				mu.Lock()
				ids = append(ids, v)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(ids)
	if len(ids) == 0 || ids[len(ids)-1] > 200 || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("two proxies up to MAXVALUE 200: %d IDs, the last %v", len(ids), ids[max(len(ids)-1, 0):])
	}
	var blk int64
	err := appB.QueryRow("SELECT NEXTVAL('two', 3)").Scan(&blk)
	wantCode("NEXTVAL('two', 3) after the end", err, 4084)

	// Key filling: the rule's tag with MAXVALUE 3.
	must(ops, "ALTER LEAFPROXY SEQUENCE ord MAXVALUE 3")
	must(appA, "INSERT INTO shop.orders (v) VALUES (1), (2)")
	err = exec(appA, "INSERT INTO shop.orders (v) VALUES (3), (4)")
	wantCode("INSERT of 2 rows with 1 ID left", err, 4084)
	err = exec(appB, "INSERT INTO shop.orders (v) SELECT v + 10 FROM shop.orders")
	wantCode("INSERT ... SELECT past MAXVALUE", err, 4084)
	var rows, top int64
	if err := backend.Open(t, "shop").QueryRow("SELECT COUNT(*), MAX(id) FROM orders").Scan(&rows, &top); err != nil || rows != 2 || top > 3 {
		t.Errorf("shop.orders after 4084: %d rows, max id %d, %v; want the first 2 only", rows, top, err)
	}
	wantCode("ALTER ... MAXVALUE 1", exec(ops, "ALTER LEAFPROXY SEQUENCE ord MAXVALUE 1"), 4085)
	must(ops, "ALTER LEAFPROXY SEQUENCE ord MAXVALUE 5000") // above the segment cut at 3 (max_id 1001)
	must(appA, "INSERT INTO shop.orders (v) VALUES (5)")
	if r := seqRow(t, ops, "ord"); r["max_value"] != "5000" {
		t.Errorf("SHOW row of ord after ALTER: max_value %q", r["max_value"])
	}
	must(ops, "ALTER LEAFPROXY SEQUENCE ord NOMAXVALUE")
	if r := seqRow(t, ops, "ord"); r["max_value"] != "NULL" {
		t.Errorf("SHOW row of ord after NOMAXVALUE: max_value %q", r["max_value"])
	}

	// LOAD DATA: nothing past MAXVALUE is written.
	must(ops, "ALTER LEAFPROXY SEQUENCE ld MAXVALUE 3")
	ld := a.open(t, "shop", map[string]string{"allowAllFiles": "true"})
	err = exec(ld, "LOAD DATA LOCAL INFILE '"+registerReader(t, []byte("1\n2\n3\n4\n5\n"))+"' INTO TABLE items (v)")
	wantCode("LOAD DATA of 5 rows with MAXVALUE 3", err, 4084)
	if err := backend.Open(t, "shop").QueryRow("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM items").Scan(&rows, &top); err != nil || top > 3 {
		t.Errorf("shop.items after LOAD DATA past MAXVALUE: %d rows, max id %d, %v", rows, top, err)
	}

	// The HTTP ID API: blocks and single IDs up to MAXVALUE, then refused.
	must(ops, "CREATE LEAFPROXY SEQUENCE api MAXVALUE 5 STEP 2")
	base := "http://" + a.svc.IDAPIAddr().String() + "/api/segment/get/api"
	get := func(url string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer token-all-0123456789abcdef")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	// Which IDs a block takes depends on the loader's fetch racing the
	// block's (a block drops buffered IDs below it), so: IDs distinct, none
	// above 5, and the API ends refusing as NEXTVAL does.
	var got []int64
	var last string
	for _, u := range []string{base + "?count=3", base, base, base, base + "?count=2", base} {
		code, body := get(u)
		if code != 200 {
			last = strconv.Itoa(code) + " " + body
			continue
		}
		for _, f := range strings.Fields(body) {
			v, _ := strconv.ParseInt(f, 10, 64)
			got = append(got, v)
		}
	}
	slices.Sort(got)
	if len(got) < 3 || got[len(got)-1] > 5 || len(slices.Compact(slices.Clone(got))) != len(got) ||
		!strings.HasPrefix(last, "400 Sequence 'api' has run out (leafproxy: ") {
		t.Errorf("ID API up to MAXVALUE 5: IDs %v, then %q", got, last)
	}

	wantCode("START above MAXVALUE", exec(ops, "CREATE LEAFPROXY SEQUENCE bad START WITH 10 MAXVALUE 5"), 4085)
	wantCode("MAXVALUE 0", exec(ops, "CREATE LEAFPROXY SEQUENCE bad MAXVALUE 0"), 1210)
	wantCode("snowflake MAXVALUE", exec(ops, "ALTER LEAFPROXY SEQUENCE web MAXVALUE 10"), 1235)
}
