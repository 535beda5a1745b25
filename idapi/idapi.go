// Package idapi is leafproxy's HTTP ID service: Meituan Leaf's
// GET /api/segment/get/{tag} and GET /api/snowflake/get/{tag} (the body is
// the ID, as Leaf writes it; ?count=n a block of n IDs, one per line, the
// same blocks NEXTVAL('tag', n) takes) and GET /api/decode/{tag}/{id} (what
// LEAFPROXY_DECODE answers, as JSON), behind bearer tokens each limited to
// its tags. IDs come from the same Source as SQL's NEXTVAL (the service
// passes its allocator.Sequences), so SQL and HTTP callers never share an
// ID. Requests are counted in Prometheus collectors (Collectors); refusals
// (401, 403) are written to the audit log, clipped and rate-limited. The
// port has a budget of its own (Limits, applied by Server and Listener),
// so that a flood at it cannot take what the SQL port needs; an address
// sending many requests without a valid token is refused at accept for a
// while (unauthThrottle); each token has a rate and a number of tags it
// may create through auto_create (tokens.go). Options add Leaf's error
// style and Leaf's /decodeSnowflakeId for clients written for Leaf.
package idapi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/leafproxy/leafproxy/internal/errstyle"
)

// Source is what the API draws from and asks about: allocator.Sequences.
type Source interface {
	// Generator names the generator serving tag: segment or snowflake.
	Generator(tag string) string
	// Known reports whether tag is a sequence (and learns a snowflake
	// tag made in SQL elsewhere).
	Known(ctx context.Context, tag string) (bool, error)
	// Block reserves n IDs: first..first+n-1 when run is 0 (segment),
	// else runs of run consecutive IDs stride apart (snowflake ticks).
	Block(ctx context.Context, tag string, n int64) (first, run, stride int64, err error)
	// BlockLimit is the largest consecutive block of tag (0: none) and why.
	BlockLimit(tag string) (limit int64, why string)
	DecodeSnowflake(tag string, id int64) (created time.Time, worker, seq int64, err error)
	MaxID(ctx context.Context, tag string) (int64, error)
}

// Token is one caller's credential: its name (for the audit log), the
// secret it sends as "Authorization: Bearer <secret>", and the tags it
// may use ("*" for every tag).
type Token struct {
	Name   string
	Secret string
	Tags   []string
	// Rate is the requests a second it may make, with bursts of as many
	// (a block counts once); more get 429. 0 means DefaultRate.
	Rate int
	// MaxNewTags is how many tags it may bring into being through
	// auto_create (tags it may use only through "*"; those named in Tags
	// are not counted) while the process runs; nil means
	// DefaultMaxNewTags.
	MaxNewTags *int
}

// AllTags in a Token's Tags lets it use every tag.
const AllTags = "*"

// Options tune the API.
type Options struct {
	// MaxCount is the largest ?count (NEXTVAL's largest block); 0 means
	// DefaultMaxCount.
	MaxCount int64
	// Logger receives the audit lines of refusals; nil discards them.
	Logger *slog.Logger
	// Limits is the port's budget; zero fields take their defaults.
	Limits Limits
	// LeafErrors answers the get endpoints' errors as a Leaf server does
	// (500, Spring Boot's JSON body), for clients written against Leaf.
	LeafErrors bool
	// LeafDecodeTag, when set, serves Leaf's GET
	// /decodeSnowflakeId?snowflakeId=n, decoding under that snowflake
	// tag's layout (the token must be allowed the tag).
	LeafDecodeTag string
}

// DefaultMaxCount is NEXTVAL('tag', n)'s largest n (rewriter.MaxBlock).
const DefaultMaxCount = 1_000_000

// API is the HTTP handler.
type API struct {
	src    Source
	opts   Options
	log    *slog.Logger
	tokens atomic.Pointer[tokenSet]
	m      *metrics
	audits auditLimiter
	unauth unauthThrottle
}

// tokenSet holds the tokens by the SHA-256 of their secret: a lookup
// compares digests, so its timing says nothing about a secret.
type tokenSet struct {
	bySum map[[32]byte]*token
}

type token struct {
	name       string
	all        bool
	tags       map[string]bool
	rate       int
	maxNewTags int
	state      *tokenState
}

// New returns the API over src with tokens.
func New(src Source, tokens []Token, o Options) *API {
	if o.MaxCount <= 0 {
		o.MaxCount = DefaultMaxCount
	}
	o.Limits.applyDefaults()
	a := &API{src: src, opts: o, log: o.Logger, m: newMetrics()}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.SetTokens(tokens)
	return a
}

// SetTokens replaces the tokens (a configuration reload); requests in
// flight finish with the old ones.
func (a *API) SetTokens(tokens []Token) {
	ts := &tokenSet{bySum: make(map[[32]byte]*token, len(tokens))}
	// A token that keeps its name keeps its rate's state and the tags it
	// created.
	states := map[string]*tokenState{}
	if old := a.tokens.Load(); old != nil {
		for _, t := range old.bySum {
			states[t.name] = t.state
		}
	}
	for _, t := range tokens {
		tk := &token{name: t.Name, tags: map[string]bool{}, rate: t.Rate, maxNewTags: DefaultMaxNewTags, state: states[t.Name]}
		if tk.rate <= 0 {
			tk.rate = DefaultRate
		}
		if t.MaxNewTags != nil {
			tk.maxNewTags = max(0, *t.MaxNewTags)
		}
		if tk.state == nil {
			tk.state = &tokenState{created: map[string]bool{}}
		}
		for _, tag := range t.Tags {
			if tag == AllTags {
				tk.all = true
			}
			tk.tags[tag] = true
		}
		ts.bySum[sha256.Sum256([]byte(t.Secret))] = tk
	}
	a.tokens.Store(ts)
}

// ServeHTTP routes a request. Every answer is the proxy's own, in its
// wording (README, "HTTP ID API"): a path the API does not serve is 404
// and a method other than GET 405 (HEAD too: it would draw IDs it cannot
// return), counted as endpoint "other"; no redirects. A request without a
// valid token closes its connection after the answer, whatever it asked.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	tk, sent := a.token(r)
	if tk == nil {
		w.Header().Set("Connection", "close")
		a.unauth.spend(hostOf(r.RemoteAddr), start)
	}
	rt, ok := a.route(r)
	if !ok {
		a.fail(w, r, epOther, http.StatusNotFound, "leafproxy: no such path: "+strconv.Quote(clip(r.URL.Path, auditPathBytes))+
			" (the ID API serves GET /api/segment/get/{tag}, /api/snowflake/get/{tag} and /api/decode/{tag}/{id})", start)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		a.fail(w, r, epOther, http.StatusMethodNotAllowed, "leafproxy: method "+strconv.Quote(clip(r.Method, 16))+
			" not allowed: the ID API answers GET only (HEAD would draw IDs it cannot return)", start)
		return
	}
	if rt.tag == "" {
		a.fail(w, r, rt.ep, http.StatusNotFound, "leafproxy: no tag in the path: GET "+rt.ep.pattern(), start)
		return
	}
	if !a.authorize(w, r, tk, sent, rt.ep, rt.tag, start) {
		return
	}
	if a.overRate(w, r, tk, rt.ep, start) {
		return
	}
	switch rt.ep {
	case epDecode:
		a.decode(w, r, rt.tag, rt.id, start)
	case epLeafDecode:
		a.leafDecode(w, r, rt.tag, rt.id, start)
	default:
		a.get(w, r, tk, rt.ep, rt.tag, start)
	}
}

// routed is what a path asks for.
type routed struct {
	ep      endpoint
	tag, id string
}

// route reads the path: /api/{segment,snowflake}/get/{tag} and
// /api/decode/{tag}/{id}, each part unescaped (a tag may hold any
// character; %2F is a slash within it). An empty tag is routed, to be
// answered as such.
func (a *API) route(r *http.Request) (routed, bool) {
	if a.opts.LeafDecodeTag != "" && r.URL.Path == "/decodeSnowflakeId" {
		return routed{ep: epLeafDecode, tag: a.opts.LeafDecodeTag, id: r.URL.Query().Get("snowflakeId")}, true
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/api/")
	if !ok {
		return routed{}, false
	}
	parts := strings.Split(rest, "/")
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			return routed{}, false
		}
		parts[i] = u
	}
	switch {
	case len(parts) == 3 && parts[0] == "segment" && parts[1] == "get":
		return routed{ep: epSegment, tag: parts[2]}, true
	case len(parts) == 3 && parts[0] == "snowflake" && parts[1] == "get":
		return routed{ep: epSnowflake, tag: parts[2]}, true
	case len(parts) == 3 && parts[0] == "decode" && parts[2] != "":
		return routed{ep: epDecode, tag: parts[1], id: parts[2]}, true
	}
	return routed{}, false
}

// token is the request's valid token (nil when it has none) and whether
// it sent one at all.
func (a *API) token(r *http.Request) (*token, bool) {
	secret, ok := bearer(r)
	if !ok {
		return nil, false
	}
	return a.tokens.Load().bySum[sha256.Sum256([]byte(secret))], true
}

// authorize reports whether token t (nil: none valid; sent: whether the
// request carried one) may use tag; otherwise it answers 401 (no token,
// or an unknown one) or 403 (tag not among the token's) and writes the
// refusal to the audit log.
func (a *API) authorize(w http.ResponseWriter, r *http.Request, t *token, sent bool, ep endpoint, tag string, start time.Time) bool {
	if t == nil {
		why := "no bearer token (send Authorization: Bearer <token>)"
		if sent {
			why = "the bearer token is not one of id_api.tokens"
		}
		a.audit(r, "", tag, http.StatusUnauthorized, why)
		w.Header().Set("WWW-Authenticate", `Bearer realm="leafproxy"`)
		a.fail(w, r, ep, http.StatusUnauthorized, "leafproxy: "+why, start)
		return false
	}
	if !t.all && !t.tags[tag] {
		msg := fmt.Sprintf("token %q may not use sequence '%s' (id_api.tokens[].tags)", t.name, clip(tag, auditPathBytes))
		a.audit(r, t.name, tag, http.StatusForbidden, msg)
		a.fail(w, r, ep, http.StatusForbidden, "leafproxy: "+msg, start)
		return false
	}
	return true
}

// bearer is the token of an "Authorization: Bearer" header, or of an
// access_token query parameter (RFC 6750 2.3, for clients that cannot set
// headers).
func bearer(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", false
		}
		tok = strings.TrimSpace(tok)
		return tok, tok != ""
	}
	if tok := r.URL.Query().Get("access_token"); tok != "" {
		return tok, true
	}
	return "", false
}

// audit writes one refusal: who (the token's name, or "-" without a valid
// one, and the client's host), what and why, as the admin SQL's audit
// lines are written. The path and the tag are clipped to auditPathBytes,
// and lines are rate-limited (auditLimiter): a flood of refusals costs
// the log a bounded number of bounded lines, and a counter.
func (a *API) audit(r *http.Request, name, tag string, code int, why string) {
	ok, suppressed := a.audits.allow(time.Now())
	if !ok {
		a.m.auditSuppressed.Inc()
		return
	}
	if name == "" {
		name = "-"
	}
	args := []any{"who", "id_api:" + name + "@" + hostOf(r.RemoteAddr), "action", "HTTP " + clip(r.Method, 16) + " " + clip(r.URL.Path, auditPathBytes),
		"tag", clip(tag, auditPathBytes), "result", "denied", "code", code, "err", why}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	a.log.Warn("audit", args...)
}

// coded is an error carrying a MySQL error code (the allocator's).
type coded interface{ Code() uint16 }

// statusOf maps an allocator error to an HTTP status: an unknown sequence
// 404, another refusal with a MySQL code (a bad name, a bad argument) 400
// but 1105 (no ID now: the store down with the buffers empty, a fenced
// snowflake generator) 503, and anything else (the store not answering a
// lookup) 503 too.
func statusOf(err error) int {
	var c coded
	if errors.As(err, &c) {
		switch c.Code() {
		case 4091:
			return http.StatusNotFound
		case 1105:
			return http.StatusServiceUnavailable
		}
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}

// message is err's text as the proxy writes it (errstyle's rule: MariaDB's
// words for its code, or "leafproxy: " first; 1105 for an error without
// a code).
func message(err error) string {
	var c interface {
		error
		Code() uint16
	}
	if errors.As(err, &c) {
		return errstyle.Styled(c.Code(), c.Error())
	}
	return errstyle.Styled(1105, err.Error())
}

// fail answers an error in plain text (the get endpoints' form; JSON on
// decode) and counts it. With Options.LeafErrors a get endpoint answers
// as a Leaf server does: 500, with Spring Boot's JSON error body.
func (a *API) fail(w http.ResponseWriter, r *http.Request, ep endpoint, code int, msg string, start time.Time) {
	h := w.Header()
	switch {
	case a.opts.LeafErrors && (ep == epSegment || ep == epSnowflake):
		code = http.StatusInternalServerError
		h.Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(struct {
			Timestamp string `json:"timestamp"`
			Status    int    `json:"status"`
			Error     string `json:"error"`
			Message   string `json:"message"`
			Path      string `json:"path"`
		}{start.UTC().Format("2006-01-02T15:04:05.000+00:00"), code, "Internal Server Error", msg, clip(r.URL.Path, auditPathBytes)})
	case ep == epDecode:
		h.Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(struct {
			Error  string `json:"error"`
			Status int    `json:"status"`
		}{msg, code})
	case ep == epLeafDecode:
		h.Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"errorMsg": msg})
	default:
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(code)
		fmt.Fprintln(w, msg)
	}
	a.m.done(ep, code, start)
}
