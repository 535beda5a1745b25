package integration

import (
	"database/sql"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Issue 38 item 9: the end of a key column holds for NEXTVAL and the ID
// API too, and the top of int64 is an end, not a store failure.

// apiGet is a GET of the ID API through lf with token tok: status, body.
func apiGet(t *testing.T, lf *leaf, path, tok string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+lf.svc.IDAPIAddr().String()+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

const apiToken = "token-all-0123456789abcdef"

// TestNextvalStopsAtColumnEnd: an INT rule table's tag moved to 7 IDs
// before 2^31-1; INSERTs, NEXTVAL('r') and the ID API draw from it in
// turn. Every ID any of them gets fits the column (the segment holding
// 2^31-1 is cut there), 2^31-1 itself is handed out, and afterwards all
// three answer the tag's end: 167 for the statements (NEXTVAL's naming
// the tag), 400 with the same words from the API, also for blocks.
func TestNextvalStopsAtColumnEnd(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.r (id INT PRIMARY KEY, b VARCHAR(10))")
	cfg := layoutConfig(t, backend)
	cfg.Sequences.Tags["r"] = config.Tag{Generator: "segment", Step: 10}
	cfg.Tables = []config.Table{{Table: "shop.r", Column: "id", Tag: "r"}}
	cfg.IDAPI.Listen = "127.0.0.1:0"
	cfg.IDAPI.Tokens = []config.APIToken{{Name: "all", Token: apiToken, Tags: []string{"*"}}}
	lf := startLeaf(t, cfg)
	app, ops := lf.open(t, "shop", nil), opsDB(t, lf)
	testwait.For(t, "the runway of r", func() bool { return seqRow(t, ops, "r")["limited_by"] == "shop.r.id int(11)" })
	if _, err := backend.Open(t, "leafproxy").Exec("UPDATE leaf_alloc SET max_id = ? WHERE biz_tag = 'r'", intMax-6); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]string{}
	take := func(v int64, by string) {
		t.Helper()
		if v > intMax || v < intMax-6 {
			t.Fatalf("%s got %d: outside [2^31-7, 2^31-1]", by, v)
		}
		if seen[v] != "" {
			t.Fatalf("%s got %d, handed out before to %s", by, v, seen[v])
		}
		seen[v] = by
	}
	var insertErr, nextvalErr error
	var apiStatus int
	var apiBody string
	for i := 0; i < 30 && (insertErr == nil || nextvalErr == nil || apiStatus != 400); i++ {
		switch i % 3 {
		case 0:
			res, err := app.Exec("INSERT INTO r (b) VALUES (?)", fmt.Sprint("i", i))
			if err != nil {
				insertErr = err
				continue
			}
			id, _ := res.LastInsertId()
			take(id, "INSERT")
		case 1:
			var v int64
			if err := app.QueryRow("SELECT NEXTVAL('r')").Scan(&v); err != nil {
				nextvalErr = err
				continue
			}
			take(v, "NEXTVAL")
		case 2:
			code, body := apiGet(t, lf, "/api/segment/get/r", apiToken)
			if code != 200 {
				apiStatus, apiBody = code, body
				continue
			}
			v, err := strconv.ParseInt(body, 10, 64)
			if err != nil {
				t.Fatalf("API: %q", body)
			}
			take(v, "API")
		}
	}
	if seen[intMax] == "" {
		t.Errorf("2^31-1 was not handed out: %v", seen)
	}
	if c, _ := myErr(insertErr); c != 167 || !strings.Contains(insertErr.Error(), "Out of range value for column 'id' at row 1") {
		t.Errorf("INSERT at the end: %v", insertErr)
	}
	if c, _ := myErr(nextvalErr); c != 167 || !strings.Contains(nextvalErr.Error(), "sequence 'r' is at its end") {
		t.Errorf("NEXTVAL at the end: %v", nextvalErr)
	}
	if apiStatus != 400 || !strings.HasPrefix(apiBody, "leafproxy: sequence 'r' is at its end") {
		t.Errorf("ID API at the end: %d %q", apiStatus, apiBody)
	}
	var v int64
	if err := app.QueryRow("SELECT NEXTVAL('r', 3)").Scan(&v); err == nil {
		t.Errorf("NEXTVAL('r', 3) at the end: %d", v)
	} else if c, _ := myErr(err); c != 167 {
		t.Errorf("NEXTVAL('r', 3) at the end: %v", err)
	}
	if code, body := apiGet(t, lf, "/api/segment/get/r?count=2", apiToken); code != 400 {
		t.Errorf("ID API block at the end: %d %q", code, body)
	}
	t.Logf("handed out up to 2^31-1: %v; then INSERT %v; NEXTVAL %v; API %d %s", seen, insertErr, nextvalErr, apiStatus, apiBody)
}

// TestKeysToTopOfInt64: two proxies, a BIGINT and a BIGINT UNSIGNED rule
// table whose tags' max_id is 40 below 2^63-1. Single-row and 3-row
// INSERTs and NEXTVAL through both hand out the last IDs, each once, up to
// 2^63-2 (max_id, a signed BIGINT, ends there), then answer 167 naming
// the tag and leaf_alloc.max_id: never 1105 (the store's 1690 on max_id
// + step, which made every request wait and fail), never an ID past it.
func TestKeysToTopOfInt64(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE shop",
		"CREATE TABLE shop.big (id BIGINT PRIMARY KEY, v INT)",
		"CREATE TABLE shop.ubig (id BIGINT UNSIGNED PRIMARY KEY, v INT)")
	var proxies [2]*leaf
	for i := range proxies {
		cfg := leafConfig(t, backend, nil)
		cfg.Sequences.Tags = map[string]config.Tag{"big": {Generator: "segment", Step: 10}, "ubig": {Generator: "segment", Step: 10}}
		cfg.Tables = []config.Table{{Table: "shop.big", Column: "id", Tag: "big"}, {Table: "shop.ubig", Column: "id", Tag: "ubig"}}
		proxies[i] = startLeaf(t, cfg)
	}
	const left = 40
	store := backend.Open(t, "leafproxy")
	if _, err := store.Exec("UPDATE leaf_alloc SET max_id = ? WHERE biz_tag IN ('big', 'ubig')", int64(math.MaxInt64-left)); err != nil {
		t.Fatal(err)
	}
	apps := []*sql.DB{proxies[0].open(t, "shop", nil), proxies[1].open(t, "shop", map[string]string{"interpolateParams": "true"})}
	for _, table := range []string{"big", "ubig"} {
		seen := map[int64]bool{}
		take := func(v int64, by string) {
			t.Helper()
			if v < math.MaxInt64-left || v > math.MaxInt64-1 || seen[v] {
				t.Fatalf("%s %s: %d outside [2^63-1-%d, 2^63-2] or handed out twice", table, by, v, left)
			}
			seen[v] = true
		}
		var ends []error
		var endsOf [2]int // per proxy: what either buffers is used up once both answer 167 to single IDs
		for i := 0; (endsOf[0] < 3 || endsOf[1] < 3) && i < 300; i++ {
			app := apps[i%2]
			var err error
			switch i % 5 {
			case 0, 3:
				var res sql.Result
				if res, err = app.Exec("INSERT INTO "+table+" (v) VALUES (?)", i); err == nil {
					id, _ := res.LastInsertId()
					take(id, "INSERT")
				}
			case 1:
				_, err = app.Exec("INSERT INTO "+table+" (v) VALUES (?), (?), (?)", i, i, i)
			case 2, 4:
				var v int64
				if err = app.QueryRow("SELECT NEXTVAL('" + table + "')").Scan(&v); err == nil {
					take(v, "NEXTVAL")
				}
			}
			if err == nil {
				continue
			}
			if c, state := myErr(err); c != 167 || state != "22003" ||
				!strings.Contains(err.Error(), "sequence '"+table+"' is at its end: leaf_alloc.max_id") {
				t.Fatalf("%s statement %d: %v, want 167 naming the tag and leaf_alloc.max_id", table, i, err)
			}
			if i%5 != 1 {
				ends = append(ends, err)
				endsOf[i%2]++
			}
		}
		rows, err := backend.Open(t, "shop").Query("SELECT CAST(id AS SIGNED) FROM " + table)
		if err != nil {
			t.Fatal(err)
		}
		stored := 0
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			stored++
			if id < math.MaxInt64-left || id > math.MaxInt64-1 {
				t.Errorf("%s: stored key %d outside the last IDs", table, id)
			}
			seen[id] = true
		}
		rows.Close()
		if len(ends) < 6 || !seen[math.MaxInt64-1] {
			t.Errorf("%s: %d answers at the end, 2^63-2 handed out %v (%d IDs)", table, len(ends), seen[math.MaxInt64-1], len(seen))
		}
		t.Logf("%s: %d of the last %d IDs handed out (%d rows stored), then 167: %v", table, len(seen), left, stored, ends[0])
	}
}
