package integration

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// TestNextvalBlocks: SELECT NEXTVAL('t', n) answers the first of n
// consecutive IDs, named as MariaDB names the call; LASTVAL is the last
// and the next NEXTVAL follows it; text (interpolateParams) and prepared
// with n bound at EXECUTE; a snowflake block is one tick of consecutive
// IDs (up to 2^12 with the default layout, more is 1210); sizes and
// places the proxy does not take are errors that leave the session
// usable.
func TestNextvalBlocks(t *testing.T) {
	backend, lf := nextvalEnv(t)
	backend.Exec(t, "CREATE TABLE app.items (id BIGINT PRIMARY KEY)")
	ctx := context.Background()
	for _, mode := range []struct {
		name   string
		params map[string]string
	}{
		{"text", map[string]string{"interpolateParams": "true"}},
		{"prepared", nil},
	} {
		t.Run(mode.name, func(t *testing.T) {
			db := lf.open(t, "app", mode.params)
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			prepared := mode.params == nil

			cols, v := queryInt64s(t, conn, "SELECT NEXTVAL('t', ?), LASTVAL('t')", 25)
			first, last := v[0].Int64, v[1].Int64
			wantName := "NEXTVAL('t', 25)"
			if prepared {
				wantName = "NEXTVAL('t', ?)"
			}
			if cols[0] != wantName || first <= 0 || last != first+24 {
				t.Fatalf("block of 25: columns %q, values %d %d; want %q, first > 0, last = first+24", cols, first, last, wantName)
			}
			if _, v := queryInt64s(t, conn, "SELECT LASTVAL('t')"); v[0].Int64 != last {
				t.Fatalf("LASTVAL after the block = %d, want %d", v[0].Int64, last)
			}
			if _, v := queryInt64s(t, conn, "SELECT NEXTVAL('t')"); v[0].Int64 <= last {
				t.Fatalf("NEXTVAL after the block = %d, want above %d", v[0].Int64, last)
			}
			if _, v := queryInt64s(t, conn, "SELECT NEXTVAL('t', 1000000), LASTVAL('t')"); v[1].Int64 != v[0].Int64+999_999 {
				t.Fatalf("block of 1,000,000: %d .. %d", v[0].Int64, v[1].Int64)
			}

			// Snowflake: one tick of this worker, every sequence number.
			_, v = queryInt64s(t, conn, "SELECT NEXTVAL('snow', ?), LASTVAL('snow')", 4096)
			sfirst, slast := v[0].Int64, v[1].Int64
			if slast != sfirst+4095 {
				t.Fatalf("snowflake block of 4096: %d .. %d", sfirst, slast)
			}
			dFirst, dLast := decodeRow(t, conn, "snow", sfirst), decodeRow(t, conn, "snow", slast)
			if dFirst.worker != 7 || dFirst.seq != 0 || dLast.seq != 4095 || dFirst.created != dLast.created {
				t.Fatalf("snowflake block %d..%d decodes to %+v .. %+v: want worker 7, sequence 0 to 4095 of one tick", sfirst, slast, dFirst, dLast)
			}
			if _, v := queryInt64s(t, conn, "SELECT NEXTVAL('snow')"); v[0].Int64 <= slast {
				t.Fatalf("snowflake NEXTVAL after the block = %d, want above %d", v[0].Int64, slast)
			}

			for _, tc := range []struct {
				q    string
				args []any
				code uint16
				say  string
			}{
				{"SELECT NEXTVAL('snow', ?)", []any{4097}, 1210, "at most 4096 consecutive IDs at once (one tick of its layout 41/10/12 x 1ms"},
				{"SELECT NEXTVAL('t', ?)", []any{0}, 1210, "the size must be 1 to 1000000"},
				{"SELECT NEXTVAL('t', ?)", []any{1_000_001}, 1210, "a block of 1000001 IDs"},
				{"SELECT NEXTVAL('t', ?)", []any{"ten"}, 1210, "Incorrect arguments to NEXTVAL"},
				{"SELECT NEXTVAL('t', ?)", []any{nil}, 1210, "Incorrect arguments to NEXTVAL"},
				{"SELECT NEXTVAL('t', 2.5)", nil, 1210, "integer literal"},
				{"INSERT INTO items (id) VALUES (NEXTVAL('t', 5))", nil, 1235, "a block of IDs"},
				{"SELECT NEXTVAL('t', 5) + 1", nil, 1235, "a block of IDs"},
			} {
				_, err := conn.ExecContext(ctx, tc.q, tc.args...)
				if code, _ := myErr(err); code != tc.code || !strings.Contains(err.Error(), tc.say) {
					t.Errorf("%s %v: %v, want %d saying %q", tc.q, tc.args, err, tc.code, tc.say)
				}
				if _, v := queryInt64s(t, conn, "SELECT NEXTVAL('u')"); !v[0].Valid {
					t.Fatal("session unusable after an error")
				}
			}
			if n := scalar[int](t, conn, "SELECT COUNT(*) FROM items"); n != 0 {
				t.Fatalf("a refused INSERT wrote %d row(s)", n)
			}
		})
	}
}

// span is one block handed to a client: IDs [lo, hi).
type span struct {
	lo, hi int64
	tag    string
}

// TestNextvalBlocksDisjoint: 16 connections on two proxies sharing one
// leaf_alloc take blocks of 1 to 50,000 IDs (and single NEXTVALs) of a
// segment tag with a small step and of a snowflake tag, text and
// prepared, all at once: every range is disjoint from every other and the
// distinct IDs are exactly the sum of the sizes.
func TestNextvalBlocksDisjoint(t *testing.T) {
	backend := testdb.Start(t)
	store := testdb.Start(t)
	var leaves []*leaf
	for range 2 {
		cfg := leafConfig(t, backend, store)
		cfg.Sequences.Tags = map[string]config.Tag{"t": {Generator: "segment", Step: 100}, "s": {Generator: "snowflake"}}
		leaves = append(leaves, startLeaf(t, cfg))
	}
	dur := 4 * time.Second
	if testing.Short() {
		dur = time.Second
	}
	const conns = 16
	var (
		mu    sync.Mutex
		spans []span
		wg    sync.WaitGroup
	)
	errs := make(chan error, conns)
	deadline := time.Now().Add(dur)
	for c := range conns {
		var params map[string]string
		if c%4 < 2 {
			params = map[string]string{"interpolateParams": "true"}
		}
		db := leaves[c%2].open(t, "", params)
		db.SetMaxOpenConns(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 20))
			var mine []span
			defer func() {
				mu.Lock()
				spans = append(spans, mine...)
				mu.Unlock()
			}()
			for time.Now().Before(deadline) {
				tag, n := "t", []int64{1, 7, 100, 1000, 50_000}[rng.IntN(5)]
				if rng.IntN(3) == 0 {
					tag, n = "s", []int64{1, 100, 4096}[rng.IntN(3)]
				}
				var first, last int64
				var err error
				if rng.IntN(4) == 0 {
					err = db.QueryRow("SELECT NEXTVAL('"+tag+"'), LASTVAL('"+tag+"')").Scan(&first, &last)
					n = 1
				} else {
					err = db.QueryRow("SELECT NEXTVAL('"+tag+"', ?), LASTVAL('"+tag+"')", n).Scan(&first, &last)
				}
				if err != nil {
					errs <- fmt.Errorf("conn %d: %w", c, err)
					return
				}
				if last != first+n-1 {
					errs <- fmt.Errorf("conn %d: block of %d of %s from %d, LASTVAL %d", c, n, tag, first, last)
					return
				}
				mine = append(mine, span{first, first + n, tag})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := map[string]int64{}
	count := map[string]int{}
	for _, s := range spans {
		total[s.tag] += s.hi - s.lo
		count[s.tag]++
	}
	if count["t"] < 20 || count["s"] < 10 {
		t.Fatalf("too few blocks to tell anything: %v", count)
	}
	assertDisjoint(t, spans)
	t.Logf("%d blocks, %v IDs per tag, from %d connections on 2 proxies in %v: disjoint", len(spans), total, conns, dur)
}

// assertDisjoint fails unless no two spans (of any tags: a segment and a
// snowflake tag share no IDs either here, as the snowflake IDs are far
// above) overlap; it also counts the distinct IDs against the sizes.
func assertDisjoint(t *testing.T, spans []span) {
	t.Helper()
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	var distinct, sum int64
	end := int64(0)
	for i, s := range spans {
		if s.lo <= 0 || s.hi <= s.lo {
			t.Fatalf("bad block [%d, %d) of %s", s.lo, s.hi, s.tag)
		}
		if i > 0 && s.lo < spans[i-1].hi {
			t.Fatalf("block [%d, %d) of %s overlaps [%d, %d) of %s", s.lo, s.hi, s.tag, spans[i-1].lo, spans[i-1].hi, spans[i-1].tag)
		}
		sum += s.hi - s.lo
		distinct += s.hi - max(s.lo, end)
		end = max(end, s.hi)
	}
	if distinct != sum {
		t.Fatalf("%d distinct IDs in blocks totalling %d", distinct, sum)
	}
}

// decoded is a LEAFPROXY_DECODE row of a snowflake tag.
type decoded struct {
	created string
	worker  int64
	seq     int64
}

// decodeRow decodes id of snowflake tag through the proxy.
func decodeRow(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, tag string, id int64) decoded {
	t.Helper()
	var d decoded
	var gotTag, gen string
	var gotID int64
	var handed, maxID sql.NullInt64
	if err := q.QueryRowContext(context.Background(), "SELECT LEAFPROXY_DECODE('"+tag+"', ?)", id).Scan(&gotTag, &gen, &gotID, &d.created, &d.worker, &d.seq, &handed, &maxID); err != nil {
		t.Fatalf("decode %d of %s: %v", id, tag, err)
	}
	if gotTag != tag || gen != "snowflake" || gotID != id || handed.Valid || maxID.Valid {
		t.Fatalf("decode %d of %s: tag %q generator %q id %d handed_out %v max_id %v", id, tag, gotTag, gen, gotID, handed, maxID)
	}
	return d
}
