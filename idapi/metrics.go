package idapi

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// endpoint is what a request asked for, a metric label.
type endpoint uint8

const (
	epSegment endpoint = iota
	epSnowflake
	epDecode
	epOther      // a path or method the API does not serve
	epLeafDecode // Leaf's /decodeSnowflakeId (id_api.leaf_decode_tag)
	endpoints
)

var endpointNames = [endpoints]string{"segment", "snowflake", "decode", "other", "leaf_decode"}

// pattern is the endpoint's path, as its messages name it.
func (e endpoint) pattern() string {
	switch e {
	case epSegment:
		return "/api/segment/get/{tag}"
	case epSnowflake:
		return "/api/snowflake/get/{tag}"
	case epDecode:
		return "/api/decode/{tag}/{id}"
	case epLeafDecode:
		return "/decodeSnowflakeId?snowflakeId={id}"
	}
	return "/api/..."
}

func (e endpoint) generator() string {
	if e == epSnowflake {
		return snowflake
	}
	return segment
}

// Metric names: README, "HTTP ID API".
const (
	MetricRequests = "leafproxy_id_api_requests_total"
	MetricIDs      = "leafproxy_id_api_ids_total"
	MetricDuration = "leafproxy_id_api_request_duration_seconds"
	// MetricConnections is the API's open connections (a gauge).
	MetricConnections = "leafproxy_id_api_connections"
	// MetricRefusedConnections counts connections closed at accept, past
	// id_api.max_connections or max_connections_per_host, or from an
	// address over its budget of token-less requests.
	MetricRefusedConnections = "leafproxy_id_api_connections_refused_total"
	// MetricAuditSuppressed counts refusals not written to the audit log
	// (over its rate).
	MetricAuditSuppressed = "leafproxy_id_api_audit_suppressed_total"
)

// statuses are the codes the API answers, counted without a label lookup.
var statuses = [...]int{200, 400, 401, 403, 404, 405, 429, 431, 500, 503}

// metrics counts requests by endpoint and status, IDs by tag and times
// requests by endpoint (buckets 10 us to 10 s, as the proxy's).
type metrics struct {
	requests *prometheus.CounterVec
	idsVec   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	byStatus [endpoints][len(statuses)]prometheus.Counter
	observe  [endpoints]prometheus.Observer

	conns           atomic.Int64 // open connections (capListener)
	connsGauge      prometheus.GaugeFunc
	refusedConns    prometheus.Counter
	auditSuppressed prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRequests,
			Help: "HTTP ID API requests by endpoint (segment, snowflake, decode, leaf_decode, other) and HTTP status (401 no valid token, 403 tag not allowed, 404 unknown sequence)."},
			[]string{"endpoint", "code"}),
		idsVec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricIDs,
			Help: "IDs handed out by the HTTP ID API per tag (a block of n counts n)."}, []string{"tag"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricDuration,
			Help:    "Time from an HTTP ID API request's routing to its answer written, by endpoint.",
			Buckets: []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5, 10}},
			[]string{"endpoint"}),
		refusedConns: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricRefusedConnections,
			Help: "HTTP ID API connections answered and closed at accept: 503 past id_api.max_connections or id_api.max_connections_per_host, 429 from an address over its budget of requests without a valid token."}),
		auditSuppressed: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricAuditSuppressed,
			Help: "HTTP ID API refusals (401, 403) not written to the audit log: over its rate (10 lines a second, bursts of 50)."}),
	}
	m.connsGauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: MetricConnections,
		Help: "HTTP ID API connections open (at most id_api.max_connections)."}, func() float64 { return float64(m.conns.Load()) })
	for e := range endpoints {
		for i, code := range statuses {
			m.byStatus[e][i] = m.requests.WithLabelValues(endpointNames[e], strconv.Itoa(code))
		}
		m.observe[e] = m.duration.WithLabelValues(endpointNames[e])
	}
	return m
}

// done counts one answered request.
func (m *metrics) done(ep endpoint, code int, start time.Time) {
	m.observe[ep].Observe(time.Since(start).Seconds())
	for i, c := range statuses {
		if c == code {
			m.byStatus[ep][i].Inc()
			return
		}
	}
	m.requests.WithLabelValues(endpointNames[ep], strconv.Itoa(code)).Inc()
}

// ids counts n IDs of tag handed out (tags a token may use: a bounded set).
func (m *metrics) ids(tag string, n int64) { m.idsVec.WithLabelValues(tag).Add(float64(n)) }

// Collectors are the API's metrics, for the service's registry.
func (a *API) Collectors() []prometheus.Collector {
	return []prometheus.Collector{a.m.requests, a.m.idsVec, a.m.duration, a.m.connsGauge, a.m.refusedConns, a.m.auditSuppressed}
}

var _ http.Handler = (*API)(nil)
