package service

import (
	"context"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leafproxy/leafproxy/engine"
	"github.com/leafproxy/leafproxy/internal/buildinfo"
	"github.com/leafproxy/leafproxy/internal/metric"
	"github.com/leafproxy/leafproxy/proxy"
)

// trafficCollector reports the statement path (commands, statements,
// errors, latencies, IDs per tag: counted per session by the proxy and
// the engine and added up here, at scrape time), logins, the
// dependencies' health, the build, configuration reloads and the engine's
// recoveries.
type trafficCollector struct {
	proxy  *proxy.Server
	engine *engine.Engine
	health func(context.Context) Health
	reload *reloadState
	build  buildinfo.Info

	commands, statements, errors, relay, nextval, ids *prometheus.Desc
	logins, backendUp, storeUp, buildInfo             *prometheus.Desc
	reloadOK, reloadAt, reloadSuccessAt, reloads      *prometheus.Desc
	retries                                           *prometheus.Desc
}

func newTrafficCollector(srv *proxy.Server, eng *engine.Engine, health func(context.Context) Health, rs *reloadState, version string) *trafficCollector {
	bi := buildinfo.Read(version)
	bi.Version = version
	return &trafficCollector{proxy: srv, engine: eng, health: health, reload: rs, build: bi,
		commands: prometheus.NewDesc("leafproxy_commands_total",
			"Commands received from clients, by protocol command: query (COM_QUERY), prepare, execute (also bulk execute), other (ping, close, reset, init db, ...).", []string{"command"}, nil),
		statements: prometheus.NewDesc("leafproxy_statements_total",
			"Statements the proxy carried out itself, by kind: nextval (a NEXTVAL/LASTVAL/SETVAL/LEAFPROXY_DECODE select it answered), filled_insert (sent with generated IDs spliced in), numbered (INSERT ... SELECT whose rows it numbered), load_data (LOAD DATA LOCAL into a rule table).", []string{"kind"}, nil),
		errors: prometheus.NewDesc("leafproxy_client_errors_total",
			"ERR packets sent to clients, by MySQL error code: relayed from the backend or the proxy's own (refused logins included).", []string{"code"}, nil),
		relay: prometheus.NewDesc("leafproxy_relay_duration_seconds",
			"Time from a command's arrival to the end of the backend's answer relayed to the client, for commands the backend answers (pass-through and rewritten statements, prepares, executes).", nil, nil),
		nextval: prometheus.NewDesc("leafproxy_nextval_duration_seconds",
			"Time from a NEXTVAL statement's arrival to the proxy's answer (it answers without the backend).", nil, nil),
		ids: prometheus.NewDesc("leafproxy_ids_issued_total",
			"IDs this proxy drew for statements, per tag (NEXTVAL, filled keys, numbered rows, LOAD DATA; a block of n counts n).", []string{"tag"}, nil),
		logins: prometheus.NewDesc("leafproxy_login_successes_total",
			"Client logins accepted (failures: leafproxy_login_failures_total).", nil, nil),
		backendUp: prometheus.NewDesc("leafproxy_backend_up",
			"1 if the backend accepted backend.user's login at the last health probe (at most a second old), else 0.", nil, nil),
		storeUp: prometheus.NewDesc("leafproxy_store_up",
			"1 if the allocation store answered a read of leaf_alloc at the last health probe (at most a second old), else 0.", nil, nil),
		buildInfo: prometheus.NewDesc("leafproxy_build_info",
			"Always 1: the running build's version and commit (empty when built without VCS information).", []string{"version", "commit"}, nil),
		reloadOK: prometheus.NewDesc("leafproxy_config_last_reload_successful",
			"1 if the last configuration reload (SIGHUP) was applied, 0 if it was refused; 1 before any.", nil, nil),
		reloadAt: prometheus.NewDesc("leafproxy_config_last_reload_timestamp_seconds",
			"Unix time of the last configuration reload attempt, applied or refused (the start time before any).", nil, nil),
		reloadSuccessAt: prometheus.NewDesc("leafproxy_config_last_reload_success_timestamp_seconds",
			"Unix time the configuration in force was applied (start, or the last applied reload).", nil, nil),
		reloads: prometheus.NewDesc("leafproxy_config_reloads_total",
			"Configuration reloads, by result: applied or refused.", []string{"result"}, nil),
		retries: prometheus.NewDesc("leafproxy_engine_retries_total",
			"Statements the engine sent again to recover, by reason: numbered_recount (an INSERT ... SELECT's rows outgrew the count), duplicate_key (a generated key met a key written around the proxy).", []string{"reason"}, nil),
	}
}

func (c *trafficCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.commands, c.statements, c.errors, c.relay, c.nextval, c.ids,
		c.logins, c.backendUp, c.storeUp, c.buildInfo, c.reloadOK, c.reloadAt, c.reloadSuccessAt, c.reloads, c.retries} {
		ch <- d
	}
}

func (c *trafficCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	histogram := func(d *prometheus.Desc, s *metric.Snapshot) {
		ch <- prometheus.MustNewConstHistogram(d, s.Count(), float64(s.SumNanos)/1e9, s.Cumulative())
	}

	ps := c.proxy.CommandStats()
	for i, name := range proxy.CmdNames {
		counter(c.commands, ps.Commands[i], name)
	}
	for code, n := range ps.Errors {
		counter(c.errors, n, strconv.Itoa(int(code)))
	}
	histogram(c.relay, &ps.Relay)
	counter(c.logins, ps.Logins)

	es := c.engine.Stats()
	for i, name := range engine.StmtNames {
		counter(c.statements, es.Statements[i], name)
	}
	histogram(c.nextval, &es.Nextval)
	for tag, n := range es.IDs {
		if utf8.ValidString(tag) {
			counter(c.ids, n, tag)
		}
	}
	counter(c.retries, es.NumberedRetries, "numbered_recount")
	counter(c.retries, es.DuplicateKeyRetries, "duplicate_key")

	// The probes are bounded (probeTimeout) and shared with /healthz and
	// the status page: a scrape costs at most one probe per second.
	ctx, cancel := context.WithTimeout(context.Background(), 2*probeTimeout)
	h := c.health(ctx)
	cancel()
	gauge(c.backendUp, b2f(h.Backend.OK))
	gauge(c.storeUp, b2f(h.Store.OK))

	gauge(c.buildInfo, 1, c.build.Version, c.build.Commit)

	r := c.reload.get()
	gauge(c.reloadOK, b2f(r.ok))
	gauge(c.reloadAt, unixSeconds(r.at))
	gauge(c.reloadSuccessAt, unixSeconds(r.successAt))
	counter(c.reloads, r.applied, "applied")
	counter(c.reloads, r.refused, "refused")
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// reloadState is what the configuration reloads did (for metrics).
type reloadState struct {
	mu sync.Mutex
	reloadInfo
}

type reloadInfo struct {
	ok               bool
	at, successAt    time.Time
	applied, refused uint64
}

func newReloadState(start time.Time) *reloadState {
	return &reloadState{reloadInfo: reloadInfo{ok: true, at: start, successAt: start}}
}

// note records a reload attempt's outcome (err nil: applied).
func (r *reloadState) note(err error) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at, r.ok = now, err == nil
	if err == nil {
		r.successAt = now
		r.applied++
	} else {
		r.refused++
	}
}

func (r *reloadState) get() reloadInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloadInfo
}
