package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/internal/testkit/fakestore"
)

// Unit tests of what InitStore and CheckTags decide, over the in-memory
// store (allocator.WithTagStore): which rules name a tag the store lacks,
// what InitStore creates, raises and reports, in which order. The MySQL
// store's SQL is the integration tests' (cmd/leafproxy's init and check).

// tagsConfig declares segment tag "seg" (step 10) and the rules given,
// auto_create off.
func tagsConfig(rules ...allocator.Rule) allocator.Config {
	return allocator.Config{
		StoreDSN: "leaf:pw@tcp(store:3306)/leafproxy",
		Tags:     map[string]allocator.Tag{"seg": {Generator: allocator.GeneratorSegment, Step: 10}},
		Rules:    rules,
	}
}

func TestCheckTagsOverFake(t *testing.T) {
	down := errors.New("store down")
	for _, tc := range []struct {
		name  string
		cfg   allocator.Config
		store func(*fakestore.Store)
		want  []allocator.UndeclaredTag // nil: no error
		err   error                     // another error
	}{
		{name: "declared tag", cfg: tagsConfig(allocator.Rule{Table: "orders", Column: "id", Tag: "seg"})},
		{name: "tag in leaf_alloc", cfg: tagsConfig(allocator.Rule{Table: "orders", Column: "id", Tag: "order"}),
			store: func(st *fakestore.Store) { st.Segments.Put("order", fakestore.Row{MaxID: 1, Step: 1000}) }},
		{name: "snowflake tag made in SQL", cfg: tagsConfig(allocator.Rule{Table: "events", Column: "id", Tag: "event"}),
			store: func(st *fakestore.Store) { st.Snowflakes.PutTag("event", snowflake.DefaultLayout(), "") }},
		{name: "tag missing from the store", cfg: tagsConfig(allocator.Rule{Table: "orders", Column: "id", Tag: "ordr"}),
			store: func(st *fakestore.Store) { st.Segments.Put("order", fakestore.Row{MaxID: 1, Step: 1000}) },
			want:  []allocator.UndeclaredTag{{Index: 0, Tag: "ordr", Near: "order"}}},
		{name: "pattern rules", cfg: tagsConfig(
			allocator.Rule{Table: "shard_*.orders", Column: "id", Tag: "seg"},
			allocator.Rule{Table: "shard_?.items", Column: "id", Tag: "item"},
			allocator.Rule{Table: "logs_*", Column: "id", Tag: "log"}),
			store: func(st *fakestore.Store) { st.Segments.Put("log", fakestore.Row{MaxID: 1, Step: 1000}) },
			want:  []allocator.UndeclaredTag{{Index: 1, Tag: "item"}}},
		{name: "several missing", cfg: tagsConfig(
			allocator.Rule{Table: "a", Column: "id", Tag: "seg"},
			allocator.Rule{Table: "b", Column: "id", Tag: "sge"},
			allocator.Rule{Table: "c", Column: "id", Tag: "order"},
			allocator.Rule{Table: "d", Column: "id", Tag: "invoice"},
			allocator.Rule{Table: "e", Column: "id", Tag: "sge"}),
			store: func(st *fakestore.Store) { st.Segments.Put("order", fakestore.Row{MaxID: 1, Step: 1000}) },
			want: []allocator.UndeclaredTag{{Index: 1, Tag: "sge", Near: "seg"}, {Index: 3, Tag: "invoice"},
				{Index: 4, Tag: "sge", Near: "seg"}}},
		{name: "auto_create", cfg: func() allocator.Config {
			c := tagsConfig(allocator.Rule{Table: "orders", Column: "id", Tag: "new"})
			c.AutoCreate = true
			return c
		}()},
		{name: "store down", cfg: tagsConfig(allocator.Rule{Table: "orders", Column: "id", Tag: "order"}),
			store: func(st *fakestore.Store) { st.Segments.SetFail(down) }, err: down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := fakestore.New()
			if tc.store != nil {
				tc.store(st)
			}
			before, _ := rowsOf(st)
			err := allocator.CheckTags(context.Background(), &tc.cfg, allocator.WithTagStore(st))
			var ut *allocator.UndeclaredTagError
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) || errors.As(err, &ut) {
					t.Fatalf("CheckTags: %v, want %v", err, tc.err)
				}
			case tc.want == nil:
				if err != nil {
					t.Fatalf("CheckTags: %v, want nil", err)
				}
			default:
				if !errors.As(err, &ut) {
					t.Fatalf("CheckTags: %v, want an *UndeclaredTagError", err)
				}
				if !slices.Equal(ut.Tags, tc.want) {
					t.Fatalf("undeclared %+v, want %+v", ut.Tags, tc.want)
				}
				for _, u := range tc.want { // one error naming each rule
					if !strings.Contains(err.Error(), fmt.Sprintf("tables[%d].tag: tag %q is not declared", u.Index, u.Tag)) {
						t.Errorf("%q does not name tables[%d] (%s)", err, u.Index, u.Tag)
					}
				}
			}
			if after, _ := rowsOf(st); after != before || st.Schema.Created() != 0 {
				t.Fatalf("CheckTags changed the store: rows %s -> %s, schema created %d times", before, after, st.Schema.Created())
			}
		})
	}
}

// rowsOf is the store's leaf_alloc rows, as text.
func rowsOf(st *fakestore.Store) (string, error) {
	rows, err := st.Segments.Rows(context.Background())
	if err != nil {
		return "", err
	}
	tags := make([]string, 0, len(rows))
	for t := range rows {
		tags = append(tags, t)
	}
	slices.Sort(tags)
	var b strings.Builder
	for _, t := range tags {
		fmt.Fprintf(&b, "%s:%d/%d ", t, rows[t].MaxID, rows[t].Step)
	}
	return b.String(), nil
}

// initStore runs InitStore over st and keys and returns what it reported.
func initStore(t *testing.T, cfg allocator.Config, st *fakestore.Store, keys *fakestore.Keys) ([]string, error) {
	t.Helper()
	var lines []string
	report := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	err := allocator.InitStore(context.Background(), &cfg, report, allocator.WithTagStore(st),
		allocator.WithKeyServers(allocator.KeyServer{Addr: "backend:3306", Keys: keys}))
	return lines, err
}

// InitStore creates the schema once per run, reports its migrations, then
// creates the segment tags in name order (configured ones with their
// step, tags only rules name, with auto_create, with the default step)
// above the largest keys of their tables, and says the store is ready; a
// second run finds them, and raises one whose table holds larger keys
// since. A snowflake tag made in SQL gets no leaf_alloc row.
func TestInitStoreOverFake(t *testing.T) {
	st := fakestore.New()
	st.Schema.SetMigrated("leaf_alloc", "leaf_alloc (max_value)")
	st.Snowflakes.PutTag("event", snowflake.DefaultLayout(), "")
	keys := &fakestore.Keys{}
	keys.Put("orders", 4000)
	cfg := tagsConfig(allocator.Rule{Table: "orders", Column: "id", Tag: "order"}, allocator.Rule{Table: "events", Column: "id", Tag: "event"},
		allocator.Rule{Table: "shard_*.items", Column: "id", Tag: "seg"})
	cfg.AutoCreate = true
	lines, err := initStore(t, cfg, st, keys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"converted leaf_alloc to utf8mb4_bin",
		"migrated leaf_alloc (max_value)",
		`tag "event" is a snowflake tag in the store (leaf_snowflake_layout): no leaf_alloc row`,
		`created tag "order" (step 1000), first ID 4001: above the largest key 4000 (orders.id on backend:3306)`,
		`created tag "seg" (step 10)`,
		"allocation store ready on store:3306/leafproxy",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("first run reported\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if rows, _ := rowsOf(st); rows != "order:4001/1000 seg:1/10 " || st.Schema.Created() != 1 {
		t.Fatalf("after the first run: rows %s, schema created %d times", rows, st.Schema.Created())
	}

	// Again: nothing to create; a table with larger keys raises its tag.
	keys.Put("shard_*.items", 70)
	lines, err = initStore(t, cfg, st, keys)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		`tag "event" is a snowflake tag in the store (leaf_snowflake_layout): no leaf_alloc row`,
		`tag "order" exists (max_id 4001, above the largest key 4000)`,
		`raised tag "seg": max_id 1 -> 71, above the largest key 70 (shard_*.items.id on backend:3306)`,
		"allocation store ready on store:3306/leafproxy",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("second run reported\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if rows, _ := rowsOf(st); rows != "order:4001/1000 seg:71/10 " || st.Schema.Created() != 2 {
		t.Fatalf("after the second run: rows %s, schema created %d times", rows, st.Schema.Created())
	}
}

// Without auto_create, a rule's tag the store lacks stops InitStore after
// the schema and before any tag is created, naming every such rule; a
// schema the store refuses stops it before anything else.
func TestInitStoreRefusesUndeclaredTags(t *testing.T) {
	st := fakestore.New()
	cfg := tagsConfig(allocator.Rule{Table: "orders", Column: "id", Tag: "ordr"}, allocator.Rule{Table: "items", Column: "id", Tag: "item"})
	lines, err := initStore(t, cfg, st, &fakestore.Keys{})
	var ut *allocator.UndeclaredTagError
	if !errors.As(err, &ut) || len(ut.Tags) != 2 || ut.Tags[0].Tag != "ordr" || ut.Tags[1].Tag != "item" {
		t.Fatalf("InitStore: %v, want an *UndeclaredTagError naming both rules", err)
	}
	if rows, _ := rowsOf(st); rows != "" || st.Schema.Created() != 1 || len(lines) != 0 {
		t.Fatalf("refused, yet: rows %q, schema created %d times, reported %q", rows, st.Schema.Created(), lines)
	}

	st.Segments.Put("ordr", fakestore.Row{MaxID: 1, Step: 5})
	st.Segments.Put("item", fakestore.Row{MaxID: 1, Step: 5})
	denied := errors.New("CREATE command denied")
	st.Schema.SetFail(denied)
	if _, err := initStore(t, cfg, st, &fakestore.Keys{}); !errors.Is(err, denied) || !strings.Contains(err.Error(), "store store:3306: ") {
		t.Fatalf("InitStore with the schema refused: %v", err)
	}
	if rows, _ := rowsOf(st); rows != "item:1/5 ordr:1/5 " {
		t.Fatalf("rows %q: a tag was created after the schema failed", rows)
	}
	st.Schema.SetFail(nil)
	lines, err = initStore(t, cfg, st, &fakestore.Keys{})
	if err != nil || !slices.Contains(lines, `created tag "seg" (step 10)`) || !slices.Contains(lines, `tag "ordr" exists`) {
		t.Fatalf("with the tags in the store: %v, reported %q", err, lines)
	}
}
