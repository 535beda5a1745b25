package fakestore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// Snowflakes is leaf_snowflake_layout and the worker-id spaces (an
// allocator.SnowflakeStore). Worker ids are held until released and
// never expire (TTL 0: no fencing). Safe for concurrent use.
type Snowflakes struct {
	mu       sync.Mutex
	rows     map[string]snowflake.LayoutRecord // by row name: "default", "tag:<tag>"
	held     map[string]map[int64]bool         // by space: "" (global) or the layout's key
	acquired map[string]int
	fail     error
}

var _ allocator.SnowflakeStore = (*Snowflakes)(nil)

// SetFail makes every call fail with err (nil: none). A store that cannot
// be reached fails with an error wrapping snowflake.ErrStoreUnavailable.
func (s *Snowflakes) SetFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// PutTag records tag's row as CREATE LEAFPROXY SEQUENCE ... SNOWFLAKE on
// another proxy does.
func (s *Snowflakes) PutTag(tag string, l snowflake.Layout, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows["tag:"+tag] = snowflake.LayoutRecord{Name: "tag:" + tag, Layout: l, RecordedBy: "fakestore", RecordedAt: time.Now(), Description: description}
}

// DeleteTag deletes tag's row as DROP on another proxy does.
func (s *Snowflakes) DeleteTag(tag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rows, "tag:"+tag)
}

// Default is the recorded global layout.
func (s *Snowflakes) Default() (snowflake.Layout, bool) {
	r, ok := s.get(snowflake.DefaultLayoutName)
	return r.Layout, ok
}

// PutDefault records the global layout.
func (s *Snowflakes) PutDefault(l snowflake.Layout) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[snowflake.DefaultLayoutName] = snowflake.LayoutRecord{Name: snowflake.DefaultLayoutName, Layout: l, RecordedBy: "fakestore", RecordedAt: time.Now()}
}

// Held is how many worker ids of layout l's space (global: the global
// layout's) are held now, and how many were ever acquired.
func (s *Snowflakes) Held(l snowflake.Layout, global bool) (held, acquired int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	space := spaceOf(l, global)
	return len(s.held[space]), s.acquired[space]
}

func spaceOf(l snowflake.Layout, global bool) string {
	if global {
		return ""
	}
	return snowflake.LayoutKey(l)
}

func (s *Snowflakes) get(name string) (snowflake.LayoutRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[name]
	return r, ok
}

// check records l under name, or compares it with the row there.
func (s *Snowflakes) check(name string, l snowflake.Layout, description, tag, source string) (snowflake.LayoutCheck, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return snowflake.LayoutCheck{}, s.fail
	}
	if r, ok := s.rows[name]; ok {
		if !snowflake.SameLayout(r.Layout, l) {
			return snowflake.LayoutCheck{}, &snowflake.LayoutMismatchError{Layout: l, Tag: tag, Source: source, Store: r}
		}
		return snowflake.LayoutCheck{Record: r, MaxPriorWorker: -1}, nil
	}
	r := snowflake.LayoutRecord{Name: name, Layout: l, RecordedBy: "fakestore", RecordedAt: time.Now(), Description: description}
	s.rows[name] = r
	return snowflake.LayoutCheck{Record: r, Recorded: true, MaxPriorWorker: -1}, nil
}

// CheckLayout records the global layout or compares it.
func (s *Snowflakes) CheckLayout(ctx context.Context, l snowflake.Layout) (snowflake.LayoutCheck, error) {
	return s.check(snowflake.DefaultLayoutName, l, "", "", "")
}

// CheckTagLayout records tag's layout or compares it.
func (s *Snowflakes) CheckTagLayout(ctx context.Context, tag string, l snowflake.Layout, description, source string, global snowflake.Layout) (snowflake.LayoutCheck, error) {
	return s.check("tag:"+tag, l, description, tag, source)
}

// TagLayout reads tag's row (Name: the tag).
func (s *Snowflakes) TagLayout(ctx context.Context, tag string) (snowflake.LayoutRecord, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return snowflake.LayoutRecord{}, false, s.fail
	}
	r, ok := s.rows["tag:"+tag]
	r.Name = tag
	return r, ok, nil
}

// TagLayouts reads every tag's row, by tag.
func (s *Snowflakes) TagLayouts(ctx context.Context) (map[string]snowflake.LayoutRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	out := map[string]snowflake.LayoutRecord{}
	for name, r := range s.rows {
		if len(name) > 4 && name[:4] == "tag:" {
			r.Name = name[4:]
			out[name[4:]] = r
		}
	}
	return out, nil
}

// DeleteTagLayout deletes tag's row.
func (s *Snowflakes) DeleteTagLayout(ctx context.Context, tag string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return false, s.fail
	}
	_, ok := s.rows["tag:"+tag]
	delete(s.rows, "tag:"+tag)
	return ok, nil
}

// Workers hands out worker ids of l's space: the lowest free one, or the
// fixed one unless another holder has it.
func (s *Snowflakes) Workers(l, global snowflake.Layout, lease bool, fixed int64) snowflake.WorkerSource {
	return &workers{s: s, space: spaceOf(l, snowflake.SameLayout(l, global)), lease: lease, fixed: fixed}
}

type workers struct {
	s     *Snowflakes
	space string
	lease bool
	fixed int64
}

func (w *workers) Acquire(ctx context.Context, maxWorker int64, _ time.Time) (snowflake.Lease, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return snowflake.Lease{}, s.fail
	}
	held := s.held[w.space]
	if held == nil {
		held = map[int64]bool{}
		s.held[w.space] = held
	}
	id := w.fixed
	if w.lease {
		for id = 0; held[id]; id++ {
		}
	}
	switch {
	case id > maxWorker && w.lease:
		return snowflake.Lease{}, snowflake.ErrNoFreeWorker
	case id > maxWorker:
		return snowflake.Lease{}, fmt.Errorf("worker id %d does not fit (0 to %d)", id, maxWorker)
	case held[id]:
		return snowflake.Lease{}, &snowflake.WorkerHeldError{Worker: id, Owner: "fakestore"}
	}
	held[id] = true
	s.acquired[w.space]++
	return snowflake.Lease{Worker: id, Token: fmt.Sprint(id)}, nil
}

func (w *workers) Renew(context.Context, snowflake.Lease, time.Time) error { return nil }

func (w *workers) Release(_ context.Context, l snowflake.Lease, _ time.Time) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	delete(w.s.held[w.space], l.Worker)
	return nil
}

func (w *workers) TTL() time.Duration { return 0 }

// Keys is one server's rule tables' largest keys, by the rules' table
// (an allocator.KeyReader). Safe for concurrent use.
type Keys struct {
	mu      sync.Mutex
	largest map[string]int64
	reads   int
	fail    error
}

var _ allocator.KeyReader = (*Keys)(nil)

// Put sets the largest key of the tables named table (as a rule names them).
func (k *Keys) Put(table string, key int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.largest == nil {
		k.largest = map[string]int64{}
	}
	k.largest[table] = key
}

// SetFail makes every read fail with err (nil: none).
func (k *Keys) SetFail(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fail = err
}

// Reads is how many reads were made.
func (k *Keys) Reads() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reads
}

// LargestKey is the key Put for r.Table (0 when none).
func (k *Keys) LargestKey(ctx context.Context, r allocator.Rule) (int64, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reads++
	if k.fail != nil {
		return 0, "", k.fail
	}
	v, ok := k.largest[r.Table]
	if !ok || v <= 0 {
		return 0, "", nil
	}
	return v, r.Table + "." + r.Column, nil
}
