package allocator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// Snowflake tags and their generators.
//
// Each snowflake tag has a layout: its own (sequences.tags.<tag>.layout or
// bits, or the layout CREATE LEAFPROXY SEQUENCE ... SNOWFLAKE recorded) or
// the snowflake section's. Tags of one layout share one generator, hence
// one worker id and one sequence per tick; each distinct layout has a
// generator of its own, with a worker id leased from that layout's space
// (leaf_worker for the store's global layout, leaf_worker_layout for any
// other). A worker id of one layout cannot serve another: the spaces
// differ in size (41/5/7 has 32 ids, 41/10/12 1024) and uniqueness in one
// says nothing of the other. Uniqueness is what each tag needs, and it
// holds per layout: every process issuing IDs of a layout holds a distinct
// worker id of it, so the IDs of every tag of that layout are unique,
// whichever processes serve it. (IDs of two tags can be equal; they are
// different sequences.)

// snowGen is the generator of one layout.
type snowGen struct {
	layout snowflake.Layout
	key    string // snowflake.LayoutKey
	// config: a configured tag uses it: it is started at Open and retried
	// in the background. Otherwise (tags learned from the store only) it
	// is started on first use.
	config bool
	g      atomic.Pointer[snowflake.Generator]
	start  sync.Mutex // one start at a time

	// Under Sequences.mu: why there is no generator yet, since when.
	err  error
	from time.Time
}

// snowTag is one snowflake tag.
type snowTag struct {
	gen    *snowGen
	config bool // from sequences.tags; else learned from the store
}

// SnowflakeGen describes one snowflake generator (views: status, metrics).
type SnowflakeGen struct {
	Layout snowflake.Layout
	// Global: the store's global layout (worker ids from leaf_worker).
	Global bool
	Tags   []string
	// Generator is nil until a worker id is held; Err says why.
	Generator *snowflake.Generator
	Err       error
}

// snowTag is tag's entry, nil for a tag not known as snowflake.
func (s *Sequences) snowTag(tag string) *snowTag {
	if m := s.snowflakeTags.Load(); m != nil {
		return (*m)[tag]
	}
	return nil
}

// configureSnowflake registers the configured snowflake tags with their
// layouts (nothing is asked of the store yet).
func (s *Sequences) configureSnowflake() error {
	m := map[string]*snowTag{}
	s.snowflakeTags.Store(&m)
	if err := s.cfg.Snowflake.Layout.Validate(); err != nil {
		return fmt.Errorf("snowflake: %w", err)
	}
	s.global = s.cfg.Snowflake.Layout
	for name, t := range s.cfg.Tags {
		if t.Generator != GeneratorSnowflake {
			continue
		}
		if err := t.Layout.Validate(); err != nil {
			return fmt.Errorf("sequences.tags.%s: %w", name, err)
		}
		s.addTag(name, t.Layout, true)
	}
	return nil
}

// configuredSnowflake says some configured tag uses snowflake.
func (s *Sequences) configuredSnowflake() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.snowflakeGens {
		if g.config {
			return true
		}
	}
	return false
}

// addTag registers tag under layout l (its generator created, not
// started, when l is new) and returns its entry.
func (s *Sequences) addTag(tag string, l snowflake.Layout, config bool) *snowTag {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.snowflakeTags.Load()
	if t := old[tag]; t != nil {
		return t
	}
	key := snowflake.LayoutKey(l)
	gen := s.snowflakeGens[key]
	if gen == nil {
		gen = &snowGen{layout: l, key: key, from: time.Now()}
		s.snowflakeGens[key] = gen
	}
	if config {
		gen.config = true // only while configuring, before anything runs
	}
	m := maps.Clone(old)
	t := &snowTag{gen: gen, config: config}
	m[tag] = t
	s.snowflakeTags.Store(&m)
	return t
}

// removeTag forgets a snowflake tag learned from the store (DROP).
func (s *Sequences) removeTag(tag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.snowflakeTags.Load()
	if old[tag] == nil {
		return
	}
	m := maps.Clone(old)
	delete(m, tag)
	s.snowflakeTags.Store(&m)
}

// generator is the running generator of t, started now for a tag learned
// from the store.
func (s *Sequences) generator(ctx context.Context, tag string, t *snowTag) (*snowflake.Generator, error) {
	if g := t.gen.g.Load(); g != nil {
		return g, nil
	}
	if t.gen.config {
		return nil, s.unavailable(tag, t.gen)
	}
	if nonblock.Requested(ctx) {
		return nil, nonblock.ErrWouldBlock // leases a worker id
	}
	gen := t.gen
	gen.start.Lock()
	defer gen.start.Unlock()
	if g := gen.g.Load(); g != nil {
		return g, nil
	}
	// A store write conflict (proxies leasing at once on different Galera
	// nodes) is tried again here rather than answered to the client.
	if err := retryConflicts(ctx, s.log, "leasing a snowflake worker id", func() error { return s.startGen(ctx, gen) }); err != nil {
		s.mu.Lock()
		gen.err, gen.from = err, time.Now()
		s.mu.Unlock()
		return nil, &UnavailableError{Tag: strings.Clone(tag), Err: err}
	}
	return gen.g.Load(), nil
}

// unavailable is the error of a tag whose generator has not started.
func (s *Sequences) unavailable(tag string, gen *snowGen) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fatal *fatalError
	return &UnavailableError{Tag: strings.Clone(tag), Pending: !errors.As(gen.err, &fatal), Since: gen.from, Err: gen.err}
}

// setPendingErr records why the configured generators without a worker id
// have none.
func (s *Sequences) setPendingErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.snowflakeGens {
		if g.config && g.g.Load() == nil {
			g.err = err
		}
	}
}

// storeCtx bounds one store call at start.
func (s *Sequences) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.StoreTimeout)
}

// defaultLayout is the store's global layout, read once: recorded as the
// snowflake section's when the store has none (as the first snowflake
// proxy does), else the recorded one, even when it differs from this
// proxy's (which matters only when a configured tag uses it, and is then
// refused by startSnowflake). A layout's worker ids are leased in
// leaf_worker exactly when it is this one.
func (s *Sequences) defaultLayout(ctx context.Context) (snowflake.Layout, error) {
	s.mu.Lock()
	if d := s.storeDefault; d != nil {
		s.mu.Unlock()
		return *d, nil
	}
	s.mu.Unlock()
	cctx, cancel := s.storeCtx(ctx)
	chk, err := s.leaser.CheckLayout(cctx, s.global)
	cancel()
	if err != nil && !errors.Is(err, snowflake.ErrLayoutMismatch) {
		return snowflake.Layout{}, err
	}
	if err == nil {
		chk.Report(s.log.With("component", "snowflake"), s.global)
	}
	d := chk.Record.Layout
	s.mu.Lock()
	s.storeDefault = &d
	s.mu.Unlock()
	return d, nil
}

// startSnowflake checks the configured snowflake layouts against the
// store (the global row, then each configured tag's row, recording what is
// missing) and starts the configured generators that have no worker id
// yet. Nothing is leased before every check passed.
func (s *Sequences) startSnowflake(ctx context.Context) error {
	if !s.configuredSnowflake() {
		return nil
	}
	// A store write conflict (proxies starting together on different
	// Galera nodes) is tried again at once rather than fencing the tags
	// until the background retry; generators already started are kept.
	return retryConflicts(ctx, s.log, "starting the snowflake generators", func() error { return s.startSnowflakeOnce(ctx) })
}

// startSnowflakeOnce is one try of startSnowflake.
func (s *Sequences) startSnowflakeOnce(ctx context.Context) error {
	cctx, cancel := s.storeCtx(ctx)
	chk, err := s.leaser.CheckLayout(cctx, s.global)
	cancel()
	if err != nil {
		return err
	}
	chk.Report(s.log.With("component", "snowflake"), s.global)
	d := s.global
	s.mu.Lock()
	s.storeDefault = &d
	s.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(s.cfg.Tags)) {
		t := s.cfg.Tags[name]
		if t.Generator != GeneratorSnowflake {
			continue
		}
		l := t.Layout
		cctx, cancel := s.storeCtx(ctx)
		chk, err := s.leaser.CheckTagLayout(cctx, name, l, tagDescription(t.OwnLayout, name), layoutSource(t, name), s.global)
		cancel()
		if err != nil {
			return err
		}
		if chk.Recorded {
			s.log.Info("recorded the snowflake layout of a tag in the store", "tag", name, "layout", l.String())
		}
	}
	var firstErr error
	for _, gen := range s.snowGens() {
		if !gen.config || gen.g.Load() != nil {
			continue
		}
		gen.start.Lock()
		err := error(nil)
		if gen.g.Load() == nil {
			err = s.startGen(ctx, gen)
		}
		gen.start.Unlock()
		if err != nil {
			s.mu.Lock()
			gen.err, gen.from = err, time.Now()
			s.mu.Unlock()
			if !transient(err) {
				return err
			}
			firstErr = cmp.Or(firstErr, err)
		}
	}
	return firstErr
}

// tagDescription is the description of a configured tag's row.
func tagDescription(own bool, tag string) string {
	if own {
		return "from the configuration: sequences.tags." + tag
	}
	return "from the configuration: the snowflake section, for sequences.tags." + tag
}

// snowGens lists the generators, the global layout's first, then by key.
func (s *Sequences) snowGens() []*snowGen {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Collect(maps.Values(s.snowflakeGens))
	slices.SortFunc(out, func(a, b *snowGen) int {
		ga, gb := snowflake.SameLayout(a.layout, s.global), snowflake.SameLayout(b.layout, s.global)
		if ga != gb {
			if ga {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	return out
}

// startGen starts gen's generator: a worker id of its layout is leased (or
// the configured one registered) in leaf_worker when the layout is the
// store's global one, else in leaf_worker_layout. gen.start must be held.
func (s *Sequences) startGen(ctx context.Context, gen *snowGen) error {
	def, err := s.defaultLayout(ctx)
	if err != nil {
		return err
	}
	global := snowflake.SameLayout(gen.layout, def)
	g, err := openSnowflake(ctx, &s.cfg, s.leaser, def, gen.layout, global, s.log)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		g.Close()
		return snowflake.ErrClosed
	}
	gen.g.Store(g)
	gen.err = nil
	s.mu.Unlock()
	return nil
}

// Layout is the snowflake layout of tag; false for a tag not known (yet)
// as a snowflake tag (Known learns the store's). No I/O.
func (s *Sequences) Layout(tag string) (snowflake.Layout, bool) {
	if t := s.snowTag(tag); t != nil {
		return t.gen.layout, true
	}
	return snowflake.Layout{}, false
}

// SnowflakeTags lists the snowflake tags this proxy knows: configured, and
// learned from the store.
func (s *Sequences) SnowflakeTags() []string {
	return slices.Sorted(maps.Keys(*s.snowflakeTags.Load()))
}

// SnowflakeGenerators describes each generator, the global layout's first.
func (s *Sequences) SnowflakeGenerators() []SnowflakeGen {
	tags := *s.snowflakeTags.Load()
	var out []SnowflakeGen
	for _, gen := range s.snowGens() {
		sg := SnowflakeGen{Layout: gen.layout, Global: snowflake.SameLayout(gen.layout, s.global), Generator: gen.g.Load()}
		for t, st := range tags {
			if st.gen == gen {
				sg.Tags = append(sg.Tags, t)
			}
		}
		slices.Sort(sg.Tags)
		s.mu.Lock()
		sg.Err = gen.err
		s.mu.Unlock()
		out = append(out, sg)
	}
	return out
}

// Snowflake is the generator of the snowflake section's layout, or, when
// no tag uses it, of the first other layout (stats, tests); nil when no
// tag uses snowflake or no worker id is held yet.
func (s *Sequences) Snowflake() *snowflake.Generator {
	gens := s.snowGens()
	if len(gens) == 0 {
		return nil
	}
	return gens[0].g.Load()
}

// UsesSnowflake says some tag is served by a snowflake generator.
func (s *Sequences) UsesSnowflake() bool { return len(*s.snowflakeTags.Load()) > 0 }

// SnowflakePending reports whether configured snowflake tags are fenced
// for want of a worker id, and why.
func (s *Sequences) SnowflakePending() (bool, error) {
	for _, gen := range s.snowGens() {
		if gen.config && gen.g.Load() == nil {
			s.mu.Lock()
			defer s.mu.Unlock()
			return true, gen.err
		}
	}
	return false, nil
}

// closeSnowflake releases every generator's lease.
func (s *Sequences) closeSnowflake() error {
	var errs []error
	for _, gen := range s.snowGens() {
		gen.start.Lock()
		if g := gen.g.Load(); g != nil {
			errs = append(errs, g.Close())
		}
		gen.start.Unlock()
	}
	return errors.Join(errs...)
}
