package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/runway"
	"github.com/leafproxy/leafproxy/proxy"
)

// collector reads the allocators' and the proxy's state at scrape time:
// nothing on the ID path is instrumented. (The statement path's counts,
// kept per session, are trafficCollector's: metrics_stmt.go.)
type collector struct {
	seq   *allocator.Sequences
	proxy *proxy.Server
	// configured returns the tags the configuration in force names
	// (sequences.tags, tables[].tag; also those a reload added),
	// validated at load: their series show even while their fetches fail.
	configured func() map[string]string
	runway     *runway.Monitor

	remaining, nextReady, step, fetches, fetchErrors, conflicts, refused, repairs *prometheus.Desc
	worker, fenced, lost                                                          *prometheus.Desc
	layoutWorker, layoutFenced                                                    *prometheus.Desc
	idsLeft, exhaustedAt, idsPerSecond                                            *prometheus.Desc
	rangeLeft, atEnd                                                              *prometheus.Desc
	sessions, accepted                                                            *prometheus.Desc
	loops, loopSessions, loopMoves, loopHandoffs                                  *prometheus.Desc
	loginFailures, loginThrottled, blockedHosts, handshakesDropped                *prometheus.Desc
	handshakesPending                                                             *prometheus.Desc
	storeNode, storeFailovers, storeFailbacks                                     *prometheus.Desc
}

func newCollector(seq *allocator.Sequences, srv *proxy.Server, configured func() map[string]string, rw *runway.Monitor) *collector {
	tag := []string{"tag"}
	return &collector{
		seq:        seq,
		proxy:      srv,
		configured: configured,
		runway:     rw,
		layoutWorker: prometheus.NewDesc("leafproxy_snowflake_layout_worker_id",
			"Snowflake worker id held for each layout in use (snowflake tags of one layout share a generator and its worker id).", []string{"layout"}, nil),
		layoutFenced: prometheus.NewDesc("leafproxy_snowflake_layout_fenced",
			"1 if the snowflake generator of the layout issues nothing now (no worker id yet, lease not renewed in time, or lost), else 0.", []string{"layout"}, nil),
		idsLeft: prometheus.NewDesc("leafproxy_sequence_ids_left",
			"IDs the tag can still issue before the smallest key column filled from it overflows (segment: from leaf_alloc.max_id; snowflake: from now's tick to the end of the layout or the column).", tag, nil),
		exhaustedAt: prometheus.NewDesc("leafproxy_sequence_exhausted_timestamp_seconds",
			"Unix time when the tag runs out of IDs at the rate of the last hour (snowflake: when its time bits end); absent when it does not at that rate.", tag, nil),
		rangeLeft: prometheus.NewDesc("leafproxy_sequence_range_left_ratio",
			"Share of the tag's range (1 to the largest value of the smallest key column filled from it, or BIGINT's) still left: under 0.1 the tag is near its end (the log warns), 0 at it.", tag, nil),
		atEnd: prometheus.NewDesc("leafproxy_sequence_at_end",
			"1 while the tag has no ID left that its key column holds (inserts that need a key from it fail with 167), else 0.", tag, nil),
		idsPerSecond: prometheus.NewDesc("leafproxy_sequence_ids_per_second",
			"How fast the segment tag's leaf_alloc.max_id moved over the last hour, in IDs per second (all proxies sharing the store).", tag, nil),
		remaining: prometheus.NewDesc("leafproxy_segment_remaining_ids",
			"IDs left in the tag's current segment.", tag, nil),
		nextReady: prometheus.NewDesc("leafproxy_segment_next_ready",
			"1 if the tag's following segment is already buffered, else 0.", tag, nil),
		step: prometheus.NewDesc("leafproxy_segment_step",
			"Size of the tag's last fetched segment (the dynamic step).", tag, nil),
		fetches: prometheus.NewDesc("leafproxy_segment_fetches_total",
			"Segments fetched from leaf_alloc and accepted for the tag.", tag, nil),
		fetchErrors: prometheus.NewDesc("leafproxy_segment_fetch_errors_total",
			"Failed segment fetches for the tag: the store down, slow or refusing (not write conflicts, counted apart).", tag, nil),
		conflicts: prometheus.NewDesc("leafproxy_segment_fetch_conflicts_total",
			"Segment and block fetches for the tag that met a store write conflict (a deadlock, a Galera certification failure, a Galera node not ready: 1213, 1205, 1047, 1020) and were tried again; routine with writers on several Galera nodes, not an outage.", tag, nil),
		refused: prometheus.NewDesc("leafproxy_segment_refused_total",
			"Segments refused for the tag because they lay below its high-water mark (a store that moved back).", tag, nil),
		repairs: prometheus.NewDesc("leafproxy_segment_repairs_total",
			"Times this proxy found leaf_alloc.max_id moved back below IDs it had issued and pushed it past its high-water mark: investigate (stale replica, restored backup); other proxies may have re-issued IDs before it noticed.", tag, nil),
		worker: prometheus.NewDesc("leafproxy_snowflake_worker_id",
			"Snowflake worker id in use.", nil, nil),
		fenced: prometheus.NewDesc("leafproxy_snowflake_fenced",
			"1 if the snowflake generator refuses until a lease renewal succeeds or a first worker id is obtained, else 0.", nil, nil),
		lost: prometheus.NewDesc("leafproxy_snowflake_lease_lost",
			"1 if the snowflake worker lease went to another process (no more snowflake IDs until restart), else 0.", nil, nil),
		sessions: prometheus.NewDesc("leafproxy_client_sessions",
			"Client connections open now, including ones in the handshake.", nil, nil),
		accepted: prometheus.NewDesc("leafproxy_client_sessions_accepted_total",
			"Client connections accepted since start.", nil, nil),
		loops: prometheus.NewDesc("leafproxy_event_loops",
			"Event loops running (event_loops; they start with the first session that can use one).", nil, nil),
		loopSessions: prometheus.NewDesc("leafproxy_event_loop_sessions",
			"Sessions an event loop serves now (the rest run on goroutines of their own: TLS, compression, or for a while after a handoff).", nil, nil),
		loopMoves: prometheus.NewDesc("leafproxy_event_loop_moves_total",
			"Times a session moved onto an event loop: after login, and after its goroutine served commands handed to it.", nil, nil),
		loopHandoffs: prometheus.NewDesc("leafproxy_event_loop_handoffs_total",
			"Commands an event loop handed to the session's goroutine because they may wait (a segment fetch, KILL, admin SQL, a large command); a rate close to the command rate means the loops are bypassed.", nil, nil),
		loginFailures: prometheus.NewDesc("leafproxy_login_failures_total",
			"Logins refused for a wrong user or password (1045), each counted against its client host's budget (limits.login_failures).", nil, nil),
		loginThrottled: prometheus.NewDesc("leafproxy_login_throttled_total",
			"Connections and logins refused (1129) because their client host had spent its failed-login budget.", nil, nil),
		blockedHosts: prometheus.NewDesc("leafproxy_login_blocked_hosts",
			"Client hosts refused now after too many failed logins.", nil, nil),
		handshakesDropped: prometheus.NewDesc("leafproxy_handshakes_dropped_total",
			"Connections closed before logging in to make room in limits.max_handshakes or limits.max_silent_handshakes (the host holding the most pending handshakes gives one up).", nil, nil),
		handshakesPending: prometheus.NewDesc("leafproxy_handshakes_pending",
			"Connections not logged in yet: state=\"under_way\" (limits.max_handshakes), state=\"silent\" greeted and nothing received yet (limits.max_silent_handshakes).", []string{"state"}, nil),
		storeNode: prometheus.NewDesc("leafproxy_store_node_in_use",
			"1 for the node of the allocation store (sequences.store; one of its list) the proxy uses now, 0 for the others; position is its place in the list, from 0.", []string{"addr", "position"}, nil),
		storeFailovers: prometheus.NewDesc("leafproxy_store_failovers_total",
			"Moves of the allocation store's connections to a later node of sequences.store's list (the one in use did not answer, refused or was not ready).", nil, nil),
		storeFailbacks: prometheus.NewDesc("leafproxy_store_failbacks_total",
			"Moves back to an earlier node of sequences.store's list once it answered as ready again (connections to the other closed).", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.remaining, c.nextReady, c.step, c.fetches, c.fetchErrors, c.conflicts, c.refused, c.repairs,
		c.worker, c.fenced, c.lost, c.layoutWorker, c.layoutFenced, c.idsLeft, c.exhaustedAt, c.idsPerSecond, c.rangeLeft, c.atEnd,
		c.sessions, c.accepted, c.loops, c.loopSessions, c.loopMoves, c.loopHandoffs,
		c.loginFailures, c.loginThrottled, c.blockedHosts, c.handshakesDropped, c.handshakesPending,
		c.storeNode, c.storeFailovers, c.storeFailbacks} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	segs := c.seq.Segments()
	configured := c.configured()
	for _, tag := range segs.Tags() {
		st, ok := segs.Stats(tag)
		if !ok || !utf8.ValidString(tag) {
			continue
		}
		if _, named := configured[tag]; !named && st.Fetches == 0 && st.Refused == 0 {
			// Never created as far as this proxy knows (no segment ever
			// came back): an unknown or made-up name someone asked for,
			// perhaps while the store failed. Left out, so that names
			// clients invent do not become series (nor, were they not
			// UTF-8, break the whole scrape).
			continue
		}
		gauge(c.remaining, float64(st.Remaining), tag)
		gauge(c.nextReady, b2f(st.NextReady), tag)
		gauge(c.step, float64(st.Step), tag)
		counter(c.fetches, float64(st.Fetches), tag)
		counter(c.fetchErrors, float64(st.FetchErrors), tag)
		counter(c.conflicts, float64(st.Conflicts), tag)
		counter(c.refused, float64(st.Refused), tag)
		counter(c.repairs, float64(st.Repairs), tag)
	}
	if g := c.seq.Snowflake(); g != nil {
		fenced, lost := g.Health()
		gauge(c.worker, float64(g.Worker()))
		gauge(c.fenced, b2f(fenced))
		gauge(c.lost, b2f(lost))
	} else if c.seq.UsesSnowflake() {
		// No worker id yet (store unreachable at start, or the id refused):
		// fenced, and no worker id to report.
		gauge(c.fenced, 1)
		gauge(c.lost, 0)
	}
	for _, g := range c.seq.SnowflakeGenerators() {
		layout := g.Layout.Name() + " " + g.Layout.String()
		if g.Generator == nil {
			gauge(c.layoutFenced, 1, layout)
			continue
		}
		fenced, lost := g.Generator.Health()
		gauge(c.layoutWorker, float64(g.Generator.Worker()), layout)
		gauge(c.layoutFenced, b2f(fenced || lost), layout)
	}
	if c.runway != nil {
		for _, e := range c.runway.All() {
			if !utf8.ValidString(e.Tag) {
				continue
			}
			gauge(c.idsLeft, float64(e.IDsLeft), e.Tag)
			if e.Limit > 0 {
				gauge(c.rangeLeft, float64(e.IDsLeft)/float64(e.Limit), e.Tag)
			}
			atEnd := e.Level == runway.LevelExhausted
			if e.Generator == "segment" && c.seq.Segments().PastEnd(e.Tag) != nil {
				atEnd = true
			}
			gauge(c.atEnd, b2f(atEnd), e.Tag)
			if !e.ExhaustedAt.IsZero() {
				gauge(c.exhaustedAt, float64(e.ExhaustedAt.UnixMilli())/1000, e.Tag)
			}
			if e.Generator == "segment" {
				gauge(c.idsPerSecond, e.PerSecond, e.Tag)
			}
		}
	}
	cur, accepted := c.proxy.Sessions()
	gauge(c.sessions, float64(cur))
	counter(c.accepted, float64(accepted))
	ls := c.proxy.LoopStats()
	gauge(c.loops, float64(ls.Loops))
	gauge(c.loopSessions, float64(ls.Sessions))
	counter(c.loopMoves, float64(ls.Moves))
	counter(c.loopHandoffs, float64(ls.Handoffs))
	lg := c.proxy.LoginStats()
	counter(c.loginFailures, float64(lg.Failures))
	counter(c.loginThrottled, float64(lg.Refused))
	gauge(c.blockedHosts, float64(lg.BlockedHosts))
	counter(c.handshakesDropped, float64(lg.Dropped))
	gauge(c.handshakesPending, float64(lg.Handshakes), "under_way")
	gauge(c.handshakesPending, float64(lg.Silent), "silent")
	if p := c.seq.StorePool(); p != nil {
		in, _ := p.InUse()
		for i, addr := range p.Addrs() {
			gauge(c.storeNode, b2f(i == in), addr, strconv.Itoa(i))
		}
		fo, fb := p.Moves()
		counter(c.storeFailovers, float64(fo))
		counter(c.storeFailbacks, float64(fb))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// startMetrics binds metrics.listen and serves h (/metrics, the status
// page, /status.json, /healthz) in the background. The returned stop shuts
// the endpoint down.
func startMetrics(addr string, h http.Handler, log *slog.Logger) (net.Addr, func(), error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics.listen: cannot serve metrics on %s: %w", addr, err)
	}
	a, stop := serveMetrics(l, h, log)
	return a, stop, nil
}

// serveMetrics serves h on l in the background until the returned stop.
func serveMetrics(l net.Listener, h http.Handler, log *slog.Logger) (net.Addr, func()) {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		// The server's own messages (a handler's recovered panic with its
		// stack, TLS noise) are debug detail, not operator logs.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "addr", l.Addr().String(), "err", err)
		}
	}()
	log.Info("metrics and status page listening", "addr", l.Addr().String(), "paths", "/ /status.json /healthz /livez /readyz /metrics")
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
		<-done
	}
	return l.Addr(), stop
}
