package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/proxy"
)

// collector reads the allocators' and the proxy's state at scrape time:
// nothing on the ID or statement paths is instrumented.
type collector struct {
	seq   *allocator.Sequences
	proxy *proxy.Server

	remaining, nextReady, step, fetches, fetchErrors, refused *prometheus.Desc
	worker, fenced, lost                                      *prometheus.Desc
	sessions, accepted                                        *prometheus.Desc
}

func newCollector(seq *allocator.Sequences, srv *proxy.Server) *collector {
	tag := []string{"tag"}
	return &collector{
		seq:   seq,
		proxy: srv,
		remaining: prometheus.NewDesc("leafproxy_segment_remaining_ids",
			"IDs left in the tag's current segment.", tag, nil),
		nextReady: prometheus.NewDesc("leafproxy_segment_next_ready",
			"1 if the tag's following segment is already buffered, else 0.", tag, nil),
		step: prometheus.NewDesc("leafproxy_segment_step",
			"Size of the tag's last fetched segment (the dynamic step).", tag, nil),
		fetches: prometheus.NewDesc("leafproxy_segment_fetches_total",
			"Segments fetched from leaf_alloc and accepted for the tag.", tag, nil),
		fetchErrors: prometheus.NewDesc("leafproxy_segment_fetch_errors_total",
			"Failed segment fetches for the tag.", tag, nil),
		refused: prometheus.NewDesc("leafproxy_segment_refused_total",
			"Segments refused for the tag because they lay below its high-water mark (a store that moved back).", tag, nil),
		worker: prometheus.NewDesc("leafproxy_snowflake_worker_id",
			"Snowflake worker id in use.", nil, nil),
		fenced: prometheus.NewDesc("leafproxy_snowflake_fenced",
			"1 if the snowflake generator refuses until a lease renewal succeeds, else 0.", nil, nil),
		lost: prometheus.NewDesc("leafproxy_snowflake_lease_lost",
			"1 if the snowflake worker lease went to another process (no more snowflake IDs until restart), else 0.", nil, nil),
		sessions: prometheus.NewDesc("leafproxy_client_sessions",
			"Client connections open now, including ones in the handshake.", nil, nil),
		accepted: prometheus.NewDesc("leafproxy_client_sessions_accepted_total",
			"Client connections accepted since start.", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.remaining, c.nextReady, c.step, c.fetches, c.fetchErrors, c.refused,
		c.worker, c.fenced, c.lost, c.sessions, c.accepted} {
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
	for _, tag := range segs.Tags() {
		st, ok := segs.Stats(tag)
		if !ok || st.Fetches == 0 && st.FetchErrors == 0 && st.Refused == 0 {
			// Never served and never failed: an unknown tag someone asked
			// for. Left out so made-up names do not become series.
			continue
		}
		gauge(c.remaining, float64(st.Remaining), tag)
		gauge(c.nextReady, b2f(st.NextReady), tag)
		gauge(c.step, float64(st.Step), tag)
		counter(c.fetches, float64(st.Fetches), tag)
		counter(c.fetchErrors, float64(st.FetchErrors), tag)
		counter(c.refused, float64(st.Refused), tag)
	}
	if g := c.seq.Snowflake(); g != nil {
		fenced, lost := g.Health()
		gauge(c.worker, float64(g.Worker()))
		gauge(c.fenced, b2f(fenced))
		gauge(c.lost, b2f(lost))
	}
	cur, accepted := c.proxy.Sessions()
	gauge(c.sessions, float64(cur))
	counter(c.accepted, float64(accepted))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// startMetrics binds metrics.listen and serves /metrics from reg in the
// background. The returned stop shuts the endpoint down.
func startMetrics(addr string, reg *prometheus.Registry, log *slog.Logger) (net.Addr, func(), error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics.listen: cannot serve metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "addr", l.Addr().String(), "err", err)
		}
	}()
	log.Info("metrics listening", "addr", l.Addr().String(), "path", "/metrics")
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
		<-done
	}
	return l.Addr(), stop, nil
}
