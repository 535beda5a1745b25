package allocator_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/internal/testkit/fakestore"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// Unit tests of Sequences over the in-memory store of internal/testkit/fakestore:
// routing, store-tag sync, adoption, lifecycle, decode and key limits,
// without MariaDB (the integration tests cover the MySQL store).

// config is a proxy's configuration: segment tag "seg" (step 10),
// snowflake tag "snow" (the global layout), leased worker ids.
func config() allocator.Config {
	return allocator.Config{
		Owner: "test",
		Tags: map[string]allocator.Tag{
			"seg":  {Generator: allocator.GeneratorSegment, Step: 10},
			"snow": {Generator: allocator.GeneratorSnowflake, Layout: snowflake.DefaultLayout()},
		},
		Snowflake: allocator.Snowflake{Layout: snowflake.DefaultLayout(), LeaseWorkerID: true},
	}
}

// open opens Sequences over st (its rows put first: "seg" at 1, step 10).
func open(t *testing.T, cfg allocator.Config, st *fakestore.Store, opts ...allocator.Option) *allocator.Sequences {
	t.Helper()
	if _, ok := st.Segments.Get("seg"); !ok {
		st.Segments.Put("seg", fakestore.Row{MaxID: 1, Step: 10})
	}
	s, err := allocator.Open(context.Background(), cfg, nil, append(st.Options(), opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eventually waits for cond (testwait's deadline).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, what, cond)
}

func code(err error) uint16 {
	var c interface{ Code() uint16 }
	if errors.As(err, &c) {
		return c.Code()
	}
	return 0
}

// TestRouting: segment tags are drawn from leaf_alloc, consecutively;
// snowflake tags from the snowflake generator, which never touches
// leaf_alloc; an unknown tag is 4091 with the tag one typo away.
func TestRouting(t *testing.T) {
	ctx := context.Background()
	st := fakestore.New()
	s := open(t, config(), st)
	if g := s.Generator("seg"); g != "segment" {
		t.Errorf("seg: %s", g)
	}
	if g := s.Generator("snow"); g != "snowflake" {
		t.Errorf("snow: %s", g)
	}
	for want := int64(1); want <= 3; want++ {
		if v, err := s.Next(ctx, "seg"); err != nil || v != want {
			t.Fatalf("seg: %d %v, want %d", v, err, want)
		}
	}
	ids, err := s.NextN(ctx, "seg", 3, nil)
	if err != nil || len(ids) != 3 || ids[0] != 4 || ids[2] != 6 {
		t.Fatalf("NextN seg: %v %v", ids, err)
	}
	if r, _ := st.Segments.Get("seg"); r.MaxID < 11 {
		t.Errorf("leaf_alloc max_id %d: no segment fetched", r.MaxID)
	}
	a, err := s.Next(ctx, "snow")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Next(ctx, "snow")
	if err != nil || b <= a {
		t.Fatalf("snow: %d then %d, %v", a, b, err)
	}
	if n := st.Segments.Fetches("snow"); n != 0 {
		t.Errorf("snowflake tag fetched from leaf_alloc %d times", n)
	}
	if held, _ := st.Snowflakes.Held(snowflake.DefaultLayout(), true); held != 1 {
		t.Errorf("worker ids held: %d, want 1", held)
	}
	first, run, _, err := s.Block(ctx, "seg", 5)
	if err != nil || run != 0 || first < 7 {
		t.Errorf("Block seg: %d run %d %v", first, run, err)
	}
	if _, run, _, err := s.Block(ctx, "snow", 5); err != nil || run == 0 {
		t.Errorf("Block snow: run %d %v", run, err)
	}

	cfg := config()
	cfg.Tags["order"] = allocator.Tag{Generator: allocator.GeneratorSegment, Step: 10}
	s2 := open(t, cfg, fakestore.New())
	_, err = s2.Next(ctx, "ordr")
	var ut *allocator.UnknownTagError
	if !errors.As(err, &ut) || ut.Near != "order" || code(err) != segment.ErrCodeUnknownSequence {
		t.Errorf("ordr: %v", err)
	}
	if known, err := s2.Known(ctx, "ordr"); known || err != nil {
		t.Errorf("Known(ordr): %v %v", known, err)
	}
	if known, err := s2.Known(ctx, "order"); !known || err != nil {
		t.Errorf("Known(order): %v %v", known, err)
	}
}

// TestStoreTagSync: snowflake tags made in SQL on another proxy are
// learned at Open, on first use, and by the sync; a tag dropped from the
// store is forgotten, one created again with another layout is served
// with the new one.
func TestStoreTagSync(t *testing.T) {
	ctx := context.Background()
	st := fakestore.New()
	st.Snowflakes.PutTag("early", snowflake.DefaultLayout(), "another proxy")
	s := open(t, config(), st, allocator.WithTagSync(10*time.Millisecond))
	if g := s.Generator("early"); g != "snowflake" {
		t.Fatalf("a store's snowflake tag not learned at Open: %s", g)
	}
	st.Snowflakes.PutTag("late", snowflake.DefaultLayout(), "another proxy")
	if _, err := s.Next(ctx, "late"); err != nil {
		t.Fatalf("a store's snowflake tag on first use: %v", err)
	}
	if s.Generator("late") != "snowflake" || st.Segments.Fetches("late") != 1 {
		t.Errorf("late: %s, %d fetches", s.Generator("late"), st.Segments.Fetches("late"))
	}
	st.Snowflakes.PutTag("added", snowflake.JSSafeLayout(), "another proxy")
	eventually(t, "a tag added to the store learned by the sync", func() bool { return s.Generator("added") == "snowflake" })
	if l, _ := s.Layout("added"); !snowflake.SameLayout(l, snowflake.JSSafeLayout()) {
		t.Errorf("added: layout %s", l)
	}
	st.Snowflakes.DeleteTag("early")
	eventually(t, "a tag dropped from the store forgotten", func() bool { return s.Generator("early") == "segment" })
	st.Snowflakes.DeleteTag("late")
	st.Snowflakes.PutTag("late", snowflake.JSSafeLayout(), "again")
	eventually(t, "a tag created again with another layout served with it", func() bool {
		l, ok := s.Layout("late")
		return ok && snowflake.SameLayout(l, snowflake.JSSafeLayout())
	})
	if _, err := s.Next(ctx, "late"); err != nil {
		t.Fatal(err)
	}
	if held, _ := st.Snowflakes.Held(snowflake.JSSafeLayout(), false); held != 1 {
		t.Errorf("js_safe worker ids held: %d, want 1 (a space of its own)", held)
	}
	// Configured tags are never dropped by the sync.
	if g := s.Generator("snow"); g != "snowflake" {
		t.Errorf("configured snow: %s", g)
	}
}

// TestAdoption: a tag created for rule tables that hold keys starts above
// the largest of them on every server; one that cannot be read creates
// nothing and says which table, where and why; snowflake tags read none.
func TestAdoption(t *testing.T) {
	ctx := context.Background()
	cfg := config()
	cfg.AutoCreate = true
	cfg.Rules = []allocator.Rule{
		{Table: "orders", Column: "id", Tag: "ord"},
		{Table: "shop.orders_old", Column: "id", Tag: "ord"},
		{Table: "events", Column: "id", Tag: "snow"},
		{Table: "bad", Column: "id", Tag: "broken"},
	}
	backend, store := &fakestore.Keys{}, &fakestore.Keys{}
	backend.Put("orders", 3000)
	store.Put("shop.orders_old", 5000)
	st := fakestore.New()
	st.Segments.Put("seg", fakestore.Row{MaxID: 1, Step: 10})
	s, err := allocator.Open(ctx, cfg, nil, st.Options(
		allocator.KeyServer{Addr: "backend:3306", Keys: backend}, allocator.KeyServer{Addr: "store:3306", Keys: store})...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.Next(ctx, "ord"); err != nil || v != 5001 {
		t.Fatalf("ord (auto_create): %d %v, want 5001", v, err)
	}
	if r, _ := st.Segments.Get("ord"); r.MaxID <= 5001 {
		t.Errorf("ord row: %+v", r)
	}
	// CREATE LEAFPROXY SEQUENCE: START WITH below the keys is raised, above is kept.
	st.Segments.Delete(ctx, "ord")
	s.Segments().Forget("ord")
	if ok, err := s.CreateSegment(ctx, "ord", 10, 100, 0, "d"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if r, _ := st.Segments.Get("ord"); r.MaxID != 5001 {
		t.Errorf("START WITH 100 under keys up to 5000: max_id %d", r.MaxID)
	}
	st.Segments.Delete(ctx, "ord")
	if ok, err := s.CreateSegment(ctx, "ord", 10, 9000, 0, "d"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if r, _ := st.Segments.Get("ord"); r.MaxID != 9000 {
		t.Errorf("START WITH 9000: max_id %d", r.MaxID)
	}
	reads := backend.Reads()
	if _, err := s.Next(ctx, "snow"); err != nil {
		t.Fatal(err)
	}
	if backend.Reads() != reads {
		t.Errorf("a snowflake tag read the keys of its tables")
	}
	store.SetFail(errors.New("access denied"))
	if _, err = s.Next(ctx, "broken"); err == nil {
		t.Errorf("a tag whose tables' keys cannot be read served")
	}
	stats, _ := s.Segments().Stats("broken")
	if err := stats.LastErr; err == nil || !strings.Contains(err.Error(), "table bad on store:3306") || !strings.Contains(err.Error(), "access denied") ||
		!strings.Contains(err.Error(), `tag "broken"`) {
		t.Errorf("unreadable keys: %v", err)
	}
	if _, ok := st.Segments.Get("broken"); ok {
		t.Errorf("a tag created though its tables' keys could not be read")
	}
}

// TestLifecycle: CREATE / ALTER / DROP of both kinds through Sequences,
// and the store's failures wrapped with what was being done.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	st := fakestore.New()
	s := open(t, config(), st)

	if ok, err := s.CreateSegment(ctx, "a", 5, 100, 0, "by test"); !ok || err != nil {
		t.Fatalf("create a: %v %v", ok, err)
	}
	if ok, err := s.CreateSegment(ctx, "a", 5, 0, 0, ""); ok || err != nil {
		t.Errorf("create a again: %v %v", ok, err)
	}
	if r, _ := st.Segments.Get("a"); r.MaxID != 100 || r.Step != 5 || r.Description != "by test" {
		t.Errorf("a: %+v", r)
	}
	if k, err := s.TagKind(ctx, "a"); k != "segment" || err != nil {
		t.Errorf("TagKind a: %q %v", k, err)
	}
	if v, err := s.Next(ctx, "a"); v != 100 || err != nil {
		t.Fatalf("a: %d %v", v, err)
	}
	if ok, err := s.CreateSegment(ctx, "b", 5, 50, 10, ""); ok || code(err) != segment.ErrCodeBadOptions {
		t.Errorf("START WITH above MAXVALUE: %v %v", ok, err)
	}
	if err := s.AlterStep(ctx, "a", 50); err != nil {
		t.Fatal(err)
	}
	if r, _ := st.Segments.Get("a"); r.Step != 50 {
		t.Errorf("ALTER STEP: row step %d", r.Step)
	}
	if err := s.AlterMaxValue(ctx, "a", 101); code(err) != segment.ErrCodeBadOptions {
		t.Errorf("MAXVALUE below issued IDs: %v", err)
	}
	if err := s.AlterMaxValue(ctx, "a", 1000); err != nil {
		t.Fatal(err)
	}
	if rows, err := s.StoreRows(ctx); err != nil || rows["a"].MaxValue != 1000 || rows["a"].Step != 50 {
		t.Errorf("StoreRows: %+v %v", rows["a"], err)
	}
	if err := s.AlterStep(ctx, "nope", 5); code(err) != segment.ErrCodeUnknownSequence {
		t.Errorf("ALTER of an unknown tag: %v", err)
	}

	if ok, err := s.CreateSnowflake(ctx, "s", nil, "by test"); !ok || err != nil {
		t.Fatalf("create s: %v %v", ok, err)
	}
	if ok, err := s.CreateSnowflake(ctx, "a", nil, ""); ok || err != nil {
		t.Errorf("snowflake over a segment tag: %v %v", ok, err)
	}
	if k, _ := s.TagKind(ctx, "s"); k != "snowflake" {
		t.Errorf("TagKind s: %q", k)
	}
	if recs, _ := st.Snowflakes.TagLayouts(ctx); recs["s"].Description != "by test" {
		t.Errorf("s's row: %+v", recs["s"])
	}
	if _, err := s.Next(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := s.AlterStep(ctx, "s", 5); code(err) != 1235 {
		t.Errorf("ALTER STEP of a snowflake tag: %v", err)
	}
	if err := s.SetVal(ctx, "s", 5, true); code(err) != 1235 {
		t.Errorf("SETVAL of a snowflake tag: %v", err)
	}
	if ok, err := s.Drop(ctx, "s"); !ok || err != nil {
		t.Fatalf("drop s: %v %v", ok, err)
	}
	if s.Generator("s") != "segment" {
		t.Errorf("s still served as snowflake after DROP")
	}
	if ok, err := s.Drop(ctx, "a"); !ok || err != nil {
		t.Fatalf("drop a: %v %v", ok, err)
	}
	if _, err := s.Next(ctx, "a"); code(err) != segment.ErrCodeUnknownSequence {
		t.Errorf("a after DROP (its buffered IDs kept?): %v", err)
	}
	if ok, err := s.Drop(ctx, "a"); ok || err != nil {
		t.Errorf("drop a again: %v %v", ok, err)
	}

	boom := errors.New("store down")
	st.Segments.SetFail(boom)
	if _, err := s.TagKind(ctx, "x"); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "read leaf_alloc: ") {
		t.Errorf("TagKind with leaf_alloc down: %v", err)
	}
	if _, err := s.StoreRows(ctx); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "read leaf_alloc: ") {
		t.Errorf("StoreRows with leaf_alloc down: %v", err)
	}
	st.Segments.SetFail(nil)
	st.Snowflakes.SetFail(boom)
	if _, err := s.TagKind(ctx, "x"); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "read leaf_snowflake_layout: ") {
		t.Errorf("TagKind with leaf_snowflake_layout down: %v", err)
	}
	st.Snowflakes.PutTag("gone", snowflake.DefaultLayout(), "")
	if _, err := s.CreateSnowflake(ctx, "t2", nil, ""); !errors.Is(err, boom) {
		t.Errorf("CreateSnowflake with the store down: %v", err)
	}
}

// TestSetVal: SETVAL raises a segment tag here at once, and refuses to
// go below IDs handed out.
func TestSetVal(t *testing.T) {
	ctx := context.Background()
	st := fakestore.New()
	s := open(t, config(), st)
	if v, err := s.Next(ctx, "seg"); v != 1 || err != nil {
		t.Fatal(v, err)
	}
	if err := s.SetVal(ctx, "seg", 100, true); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Next(ctx, "seg"); v != 101 || err != nil {
		t.Errorf("after SETVAL 100: %d %v", v, err)
	}
	if err := s.SetVal(ctx, "seg", 5, true); err == nil {
		t.Errorf("SETVAL below issued IDs accepted")
	}
}

// TestStartAndClose: a store that cannot be reached fences the snowflake
// tags (segment tags serve) until the background retry gets a worker id;
// a store's definitive answer (another layout, a fixed worker id held)
// fails Open; Close releases the worker ids.
func TestStartAndClose(t *testing.T) {
	ctx := context.Background()
	st := fakestore.New()
	st.Snowflakes.SetFail(snowflake.ErrStoreUnavailable)
	s := open(t, config(), st)
	_, err := s.Next(ctx, "snow")
	var ue *allocator.UnavailableError
	if !errors.As(err, &ue) || !ue.Pending || ue.Tag != "snow" || code(err) != 1105 {
		t.Fatalf("snow with the store unreachable: %v", err)
	}
	if pending, why := s.SnowflakePending(); !pending || !errors.Is(why, snowflake.ErrStoreUnavailable) {
		t.Errorf("SnowflakePending: %v %v", pending, why)
	}
	if _, err := s.Next(ctx, "seg"); err != nil {
		t.Errorf("segment tag while snowflake is fenced: %v", err)
	}
	st.Snowflakes.SetFail(nil)
	eventually(t, "snowflake served once the store answers", func() bool {
		_, err := s.Next(ctx, "snow")
		return err == nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if held, _ := st.Snowflakes.Held(snowflake.DefaultLayout(), true); held != 0 {
		t.Errorf("worker ids held after Close: %d", held)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	other := fakestore.New()
	other.Snowflakes.PutDefault(snowflake.JSSafeLayout())
	if _, err := allocator.Open(ctx, config(), nil, other.Options()...); !errors.Is(err, snowflake.ErrLayoutMismatch) {
		t.Errorf("Open against another recorded layout: %v", err)
	}

	cfg := config()
	cfg.Snowflake.LeaseWorkerID, cfg.Snowflake.WorkerID = false, 3
	shared := fakestore.New()
	a := open(t, cfg, shared)
	if g := a.Snowflake(); g == nil || g.Worker() != 3 {
		t.Fatalf("fixed worker id 3: %v", g)
	}
	if _, err := allocator.Open(ctx, cfg, nil, shared.Options()...); !errors.Is(err, snowflake.ErrWorkerHeld) {
		t.Errorf("a second proxy with the same fixed worker id: %v", err)
	}
}

// TestDecode: an ID is taken apart under its tag's layout; an ID the
// layout cannot make is 1210, a segment tag 1235; a snowflake tag's
// largest block is one tick.
func TestDecode(t *testing.T) {
	ctx := context.Background()
	st := fakestore.New()
	st.Snowflakes.PutTag("js", snowflake.JSSafeLayout(), "")
	s := open(t, config(), st)
	before := time.Now().Add(-time.Second)
	for _, tag := range []string{"snow", "js"} {
		id, err := s.Next(ctx, tag)
		if err != nil {
			t.Fatal(err)
		}
		created, worker, seq, err := s.DecodeSnowflake(tag, id)
		if err != nil || worker != 0 || seq < 0 || created.Before(before) || created.After(time.Now().Add(time.Second)) {
			t.Errorf("%s: decode %d: %v worker %d seq %d %v", tag, id, created, worker, seq, err)
		}
	}
	if _, _, _, err := s.DecodeSnowflake("js", 1<<60); code(err) != segment.ErrCodeWrongArguments {
		t.Errorf("an ID above js_safe's bits: %v", err)
	}
	if _, _, _, err := s.DecodeSnowflake("snow", -1); code(err) != segment.ErrCodeWrongArguments {
		t.Errorf("a negative ID: %v", err)
	}
	if _, _, _, err := s.DecodeSnowflake("seg", 1); code(err) != 1235 {
		t.Errorf("a segment tag: %v", err)
	}
	if n, why := s.BlockLimit("snow"); n != 1<<snowflake.DefaultLayout().SequenceBits || why == "" {
		t.Errorf("BlockLimit snow: %d %q", n, why)
	}
	if n, _ := s.BlockLimit("js"); n != 1<<snowflake.JSSafeLayout().SequenceBits {
		t.Errorf("BlockLimit js: %d", n)
	}
	if n, _ := s.BlockLimit("seg"); n != 0 {
		t.Errorf("BlockLimit seg: %d", n)
	}
}

// TestKeyLimits: past its widest key column's end a segment tag answers
// 167 and fetches nothing more; a wider column serves it again.
func TestKeyLimits(t *testing.T) {
	ctx := context.Background()
	st := fakestore.New()
	s := open(t, config(), st)
	s.SetKeyLimits(map[string]allocator.KeyLimit{"seg": {Max: 15, By: "t.id TINYINT"}})
	last := int64(0)
	var err error
	for range 1000 {
		var v int64
		if v, err = s.Next(ctx, "seg"); err != nil {
			break
		}
		if v != last+1 {
			t.Fatalf("%d after %d", v, last)
		}
		last = v
	}
	var pe *segment.PastEndError
	if !errors.As(err, &pe) || code(err) != 167 || last != 15 {
		t.Fatalf("past the column's end (last %d, want 15: the segment holding it is cut there): %v", last, err)
	}
	atEnd, _ := st.Segments.Get("seg")
	for range 3 {
		if _, err := s.Next(ctx, "seg"); code(err) != 167 {
			t.Fatalf("again past the end: %v", err)
		}
		if _, err := s.NextN(ctx, "seg", 3, nil); code(err) != 167 {
			t.Fatalf("NextN(3) past the end: %v", err)
		}
	}
	if r, _ := st.Segments.Get("seg"); r.MaxID != atEnd.MaxID {
		t.Errorf("leaf_alloc max_id %d after the end, was %d: a segment fetched past the column's end", r.MaxID, atEnd.MaxID)
	}
	s.SetKeyLimits(map[string]allocator.KeyLimit{"seg": {Max: 1000, By: "t.id SMALLINT"}})
	if v, err := s.Next(ctx, "seg"); v != atEnd.MaxID || err != nil {
		t.Errorf("after widening: %d %v, want %d (the store's max_id)", v, err, atEnd.MaxID)
	}
}
