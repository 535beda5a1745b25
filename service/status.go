package service

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// Status is what /status.json answers and the status page shows.
type Status struct {
	Version       string     `json:"version"`
	StartedAt     time.Time  `json:"started_at"`
	UptimeSeconds float64    `json:"uptime_seconds"`
	Listen        string     `json:"listen"`
	Backend       string     `json:"backend"`
	Store         string     `json:"store"` // host:port/database, no credentials
	Sessions      Sessions   `json:"sessions"`
	Health        Health     `json:"health"`
	Tags          []TagState `json:"tags"`
	// Problems: tags at or near the end of their key column (the status
	// page's health card says "degraded" while one is at its end).
	Problems []string `json:"problems,omitempty"`
	// Snowflake is the generator of the snowflake section's layout (or,
	// when no tag uses it, of the first other one); SnowflakeLayouts is
	// every layout's, one generator and worker id each.
	Snowflake        *Snowflake  `json:"snowflake,omitempty"`
	SnowflakeLayouts []Snowflake `json:"snowflake_layouts,omitempty"`
	// Rules: what each table rule filled and left alone on the backend
	// when it was last read (start, reload).
	Rules []RuleCoverage `json:"rules,omitempty"`
}

// Sessions counts client connections.
type Sessions struct {
	Current  int64  `json:"current"`
	Accepted uint64 `json:"accepted"`
}

// TagState is one tag: configured ones (also those named only by table
// rules) and any segment tag that has served or failed.
type TagState struct {
	Tag       string   `json:"tag"`
	Generator string   `json:"generator"`
	Tables    []string `json:"tables,omitempty"` // rules filling keys from this tag
	// State: serving, not used yet, error (segment tags) or snowflake;
	// "near end" (under 10% of the key column's range left) or "at end"
	// (no ID left that the column holds: inserts fail with 167) instead.
	State   string        `json:"state"`
	Segment *SegmentState `json:"segment,omitempty"`
	// Layout is a snowflake tag's (name, bits, tick, epoch); WorkerID the
	// worker id its layout's generator holds (absent while it holds none).
	Layout   string  `json:"layout,omitempty"`
	WorkerID *int64  `json:"worker_id,omitempty"`
	Runway   *Runway `json:"runway,omitempty"`
}

// Runway is how long a tag's IDs last (allocator/runway): IDs left before
// the smallest key column filled from it (or a snowflake layout's time
// bits) ends, the rate of the last hour, and when they run out at it.
type Runway struct {
	IDsLeft      int64   `json:"ids_left"`
	IDsPerSecond float64 `json:"ids_per_second,omitempty"`
	ExhaustedAt  string  `json:"exhausted_at,omitempty"` // RFC 3339; absent: not at the current rate
	LimitedBy    string  `json:"limited_by"`
	// LessThanAYear: what the log warns about daily.
	LessThanAYear bool `json:"less_than_a_year"`
	// Level: ok, low (under 10% of the range left), critical (under 1%)
	// or exhausted; RangeLeft the share left.
	Level     string  `json:"level,omitempty"`
	RangeLeft float64 `json:"range_left"`
}

// SegmentState is a segment tag's double buffer.
type SegmentState struct {
	Start       int64     `json:"start"` // current segment [start, end)
	End         int64     `json:"end"`
	NextID      int64     `json:"next_id"`
	LastIssued  int64     `json:"last_issued,omitempty"` // 0 when none from this segment
	Remaining   int64     `json:"remaining"`
	FillPercent float64   `json:"fill_percent"` // remaining / segment size
	NextReady   bool      `json:"next_ready"`
	NextStart   int64     `json:"next_start,omitempty"`
	NextEnd     int64     `json:"next_end,omitempty"`
	Loading     bool      `json:"loading"`
	Step        int64     `json:"step"`
	TableStep   int64     `json:"table_step"`
	HighWater   int64     `json:"high_water"`
	Fetches     uint64    `json:"fetches"`
	FetchErrors uint64    `json:"fetch_errors"`
	Conflicts   uint64    `json:"fetch_conflicts"` // store write conflicts, retried; not in fetch_errors
	Refused     uint64    `json:"refused"`
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// Snowflake is the snowflake generator's worker and lease.
type Snowflake struct {
	WorkerID        int64   `json:"worker_id"`
	Leased          bool    `json:"leased"` // from leaf_worker (worker_id: auto), else fixed
	LeaseTTLSeconds float64 `json:"lease_ttl_seconds,omitempty"`
	// LeaseExpires is when the worker lease runs out unless renewed
	// (RFC 3339, this process's count); empty for an unregistered id.
	LeaseExpires string `json:"lease_expires,omitempty"`
	// Identity is what the leased worker id is bound to
	// (snowflake.identity; no other proxy takes it while recorded, and
	// the generator issues through a store outage); empty when unbound.
	Identity string `json:"identity,omitempty"`
	Fenced   bool   `json:"fenced"`
	Lost     bool   `json:"lost"`
	Layout   string `json:"layout"`
	Epoch    string `json:"epoch"`
	// Tags are the snowflake tags of this layout (SnowflakeLayouts).
	Tags []string `json:"tags,omitempty"`
	// Error says why the layout's generator holds no worker id.
	Error string `json:"error,omitempty"`
}

// Status gathers the proxy's state now; health comes from the cached probe
// (at most a second old).
func (s *Service) Status(ctx context.Context) Status {
	// The configuration in force: tags and table rules a reload (SIGHUP)
	// added are listed, as a proxy started on the same file lists them.
	cfg := s.current()
	addr, _, db := storeIdentity(cfg)
	if p := s.Sequences.StorePool(); p != nil {
		_, addr = p.InUse() // the node in use, of a list
	}
	st := Status{
		Version:       s.version,
		StartedAt:     s.started,
		UptimeSeconds: time.Since(s.started).Seconds(),
		Listen:        cfg.Listen,
		Backend:       cfg.Backend.Addr,
		Store:         addr + "/" + db,
		Health:        s.health.get(ctx),
		Tags:          []TagState{},
		Rules:         s.ruleCoverage(),
	}
	if a := s.Proxy.Addr(); a != nil {
		st.Listen = a.String()
	}
	st.Sessions.Current, st.Sessions.Accepted = s.Proxy.Sessions()

	tables := map[string][]string{}
	names := map[string]bool{}
	for name := range cfg.Sequences.Tags {
		names[name] = true
	}
	for _, r := range cfg.Tables {
		tables[r.Tag] = append(tables[r.Tag], r.Table)
		names[r.Tag] = true
	}
	for _, tag := range s.Sequences.SnowflakeTags() {
		names[tag] = true // also those created in SQL
	}
	workers := s.snowflakeLayouts(&st)
	segs := s.Sequences.Segments()
	for _, tag := range segs.Tags() {
		if names[tag] || s.Sequences.Generator(tag) != "segment" {
			continue
		}
		if t, ok := segs.Stats(tag); ok && (t.Fetches > 0 || t.FetchErrors > 0 || t.Refused > 0) {
			names[tag] = true // used through NEXTVAL without configuration
		}
	}
	for _, tag := range slices.Sorted(mapKeysOf(names)) {
		ts := TagState{Tag: tag, Generator: s.Sequences.Generator(tag), Tables: tables[tag], Runway: s.runwayState(tag)}
		if ts.Generator == "snowflake" {
			ts.State = "snowflake"
			if l, ok := s.Sequences.Layout(tag); ok {
				ts.Layout = l.Name() + " " + l.String()
			}
			ts.WorkerID = workers[tag]
			st.Tags = append(st.Tags, ts)
			continue
		}
		end, why := s.tagEnd(tag)
		if why != "" {
			st.Problems = append(st.Problems, why)
		}
		s.segmentTagState(&ts, end)
		st.Tags = append(st.Tags, ts)
	}
	if g := s.Sequences.Snowflake(); g != nil {
		sf := s.snowflakeState(g, g.Layout())
		st.Snowflake = &sf
	}
	return st
}

// snowflakeLayouts lists each snowflake layout's generator in
// st.SnowflakeLayouts and returns the worker id of each tag whose
// generator holds one.
func (s *Service) snowflakeLayouts(st *Status) (workers map[string]*int64) {
	workers = map[string]*int64{}
	for _, g := range s.Sequences.SnowflakeGenerators() {
		sf := s.snowflakeState(g.Generator, g.Layout)
		sf.Tags = g.Tags
		if g.Err != nil && g.Generator == nil {
			sf.Error = g.Err.Error()
		}
		st.SnowflakeLayouts = append(st.SnowflakeLayouts, sf)
		if g.Generator != nil {
			w := g.Generator.Worker()
			for _, t := range g.Tags {
				workers[t] = &w
			}
		}
	}
	return workers
}

// segmentTagState fills a segment tag's state and segment from its
// allocator's stats: "not used yet" before any fetch, else "serving", or
// "error" when it has fetched nothing or has run dry failing; end
// (tagEnd's), when set, overrides the state.
func (s *Service) segmentTagState(ts *TagState, end string) {
	t, ok := s.Sequences.Segments().Stats(ts.Tag)
	if !ok || t.Fetches == 0 && t.FetchErrors == 0 && t.Refused == 0 {
		ts.State = "not used yet"
		if end != "" {
			ts.State = end
		}
		return
	}
	size := t.Current.End - t.Current.Start
	seg := &SegmentState{
		Start: t.Current.Start, End: t.Current.End, NextID: t.NextID, Remaining: t.Remaining,
		NextReady: t.NextReady, Loading: t.Loading, Step: t.Step, TableStep: t.TableStep,
		HighWater: t.HighWater, Fetches: t.Fetches, FetchErrors: t.FetchErrors, Conflicts: t.Conflicts, Refused: t.Refused,
	}
	if size > 0 {
		seg.FillPercent = float64(t.Remaining) * 100 / float64(size)
	}
	if t.NextID > t.Current.Start {
		seg.LastIssued = min(t.NextID, t.Current.End) - 1
	}
	if t.NextReady {
		seg.NextStart, seg.NextEnd = t.Next.Start, t.Next.End
	}
	if t.LastErr != nil {
		seg.LastError, seg.LastErrorAt = t.LastErr.Error(), t.LastErrAt
	}
	ts.State = "serving"
	if t.Fetches == 0 || t.Remaining == 0 && !t.NextReady && t.LastErr != nil {
		ts.State = "error"
	}
	if end != "" {
		ts.State = end
	}
	ts.Segment = seg
}

// snowflakeState describes a generator of layout l (g nil: no worker id
// yet: fenced).
func (s *Service) snowflakeState(g *snowflake.Generator, l snowflake.Layout) Snowflake {
	sf := Snowflake{
		Fenced: true, Leased: s.cfg.Snowflake.WorkerID == "auto",
		Layout: fmt.Sprintf("%s: 1 sign + %d time + %d worker + %d sequence bits, tick %v", l.Name(), l.TimeBits, l.WorkerBits, l.SequenceBits, l.Unit),
		Epoch:  l.Epoch.UTC().Format(time.RFC3339),
	}
	if sf.Leased {
		sf.LeaseTTLSeconds = s.cfg.Snowflake.LeaseTTL.D().Seconds()
		if ac := s.liveAlloc.Load(); ac != nil {
			sf.Identity = ac.Snowflake.Identity
		}
	}
	if g == nil {
		return sf
	}
	sf.WorkerID = g.Worker()
	sf.Fenced, sf.Lost = g.Health()
	if exp := g.LeaseExpiry(); !exp.IsZero() {
		sf.LeaseExpires = exp.UTC().Format(time.RFC3339)
	}
	return sf
}

// runwayState is tag's last runway estimate, nil before the first.
func (s *Service) runwayState(tag string) *Runway {
	e, ok := s.Runway.Get(tag)
	if !ok {
		return nil
	}
	r := &Runway{IDsLeft: e.IDsLeft, IDsPerSecond: e.PerSecond, LimitedBy: e.LimitedBy, Level: e.Level,
		LessThanAYear: e.IDsLeft == 0 || !e.ExhaustedAt.IsZero() && e.ExhaustedAt.Sub(e.At) < 365*24*time.Hour}
	if !e.ExhaustedAt.IsZero() {
		r.ExhaustedAt = e.ExhaustedAt.UTC().Format(time.RFC3339)
	}
	if e.Limit > 0 {
		r.RangeLeft = float64(e.IDsLeft) / float64(e.Limit)
	}
	return r
}

func mapKeysOf[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

//go:embed status.html
var statusPage []byte

// handler serves /metrics, the status page, /status.json, /healthz, /livez
// and /readyz.
func (s *Service) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
		w.Write(statusPage)
	})
	mux.HandleFunc("GET /status.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Status(r.Context()))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		h := s.health.get(r.Context())
		code := http.StatusOK
		if !h.OK {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, h)
	})
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		serveProbe(w, s.Live())
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		serveProbe(w, s.Ready(r.Context()))
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// ruleCoverage is what the rules covered when last read.
func (s *Service) ruleCoverage() []RuleCoverage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.coverage
}
