package idapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// fake is a Source: tag "seg" a segment tag counting from 100, "snow" a
// snowflake tag with 8-ID ticks, "down" a segment tag whose store is down;
// anything else unknown.
type fake struct {
	next    int64
	created map[string]bool // auto*: made on first draw (auto_create)
}

type codedErr struct {
	code uint16
	msg  string
}

func (e *codedErr) Error() string { return e.msg }
func (e *codedErr) Code() uint16  { return e.code }

func (f *fake) Generator(tag string) string {
	if tag == "snow" {
		return "snowflake"
	}
	return "segment"
}

func (f *fake) Known(_ context.Context, tag string) (bool, error) {
	return tag == "seg" || tag == "snow" || tag == "down" || f.created[tag], nil
}

func (f *fake) Block(_ context.Context, tag string, n int64) (int64, int64, int64, error) {
	switch tag {
	case "seg":
		first := 100 + f.next
		f.next += n
		return first, 0, 0, nil
	case "snow":
		return 1 << 22, 8, 1 << 22, nil
	case "down":
		return 0, 0, 0, &codedErr{1105, "leafproxy: no ID for sequence \"down\" after waiting 2s: the ID store is failing"}
	}
	if strings.HasPrefix(tag, "auto") {
		if f.created == nil {
			f.created = map[string]bool{}
		}
		f.created[tag] = true
		return 1, 0, 0, nil
	}
	return 0, 0, 0, &codedErr{4091, fmt.Sprintf("Unknown SEQUENCE: '%s'", tag)}
}

func (f *fake) BlockLimit(tag string) (int64, string) {
	if tag == "snow" {
		return 8, "one tick"
	}
	return 0, ""
}

// DecodeSnowflake decodes Leaf's layout: epoch 1288834974657 ms,
// 10 worker bits, 12 sequence bits.
func (f *fake) DecodeSnowflake(tag string, id int64) (time.Time, int64, int64, error) {
	if tag != "snow" {
		return time.Time{}, 0, 0, errors.New("unused")
	}
	return time.UnixMilli(id>>22 + 1288834974657), id >> 12 & 1023, id & 4095, nil
}

func (f *fake) MaxID(context.Context, string) (int64, error) { return 0, errors.New("unused") }

func do(t *testing.T, h http.Handler, method, target, auth string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestAPI(t *testing.T) {
	const tok = "0123456789abcdef"
	a := New(&fake{}, []Token{{Name: "x", Secret: tok, Tags: []string{"seg", "snow", "down", "nosuch"}}}, Options{MaxCount: 10})
	for _, tc := range []struct {
		method, target, auth string
		code                 int
		body                 string
	}{
		{"GET", "/api/segment/get/seg", "Bearer " + tok, 200, "100"},
		{"GET", "/api/segment/get/seg", "bearer  " + tok + " ", 200, "101"},
		{"GET", "/api/segment/get/seg?count=3", "Bearer " + tok, 200, "102\n103\n104\n"},
		{"GET", "/api/segment/get/seg?count=11", "Bearer " + tok, 400, "a block is 1 to 10 IDs"},
		{"GET", "/api/segment/get/seg", "Basic " + tok, 401, "no bearer token"},
		{"GET", "/api/segment/get/seg", tok, 401, "no bearer token"},
		{"GET", "/api/segment/get/seg", "Bearer", 401, "no bearer token"},
		{"GET", "/api/segment/get/seg", "Bearer " + tok + "x", 401, "not one of id_api.tokens"},
		{"GET", "/api/segment/get/other", "Bearer " + tok, 403, `token "x" may not use sequence 'other'`},
		{"GET", "/api/segment/get/nosuch", "Bearer " + tok, 404, "Unknown SEQUENCE: 'nosuch'"},
		{"GET", "/api/snowflake/get/nosuch", "Bearer " + tok, 404, "Unknown SEQUENCE: 'nosuch'"},
		{"GET", "/api/segment/get/down", "Bearer " + tok, 503, "the ID store is failing"},
		{"GET", "/api/snowflake/get/snow?count=8", "Bearer " + tok, 200, "4194304\n"},
		{"GET", "/api/snowflake/get/snow?count=9", "Bearer " + tok, 400, "at most 8 consecutive IDs"},
		{"GET", "/api/segment/get/snow", "Bearer " + tok, 400, "uses the snowflake generator"},
		{"GET", "/api/snowflake/get/seg", "Bearer " + tok, 400, "uses the segment generator"},
		{"GET", "/api/decode/seg/x1", "Bearer " + tok, 400, `"error":"Incorrect arguments to LEAFPROXY_DECODE: \"x1\" is not an integer ID"`},
		{"PUT", "/api/segment/get/seg", "Bearer " + tok, 405, `leafproxy: method "PUT" not allowed: the ID API answers GET only`},
		{"HEAD", "/api/segment/get/seg?count=5", "Bearer " + tok, 405, ""},
		{"GET", "/api/segment/get/seg?count=", "Bearer " + tok, 400, `leafproxy: count="": a block is 1 to 10 IDs`},
		{"GET", "/api/segment/get/seg?count=1.5", "Bearer " + tok, 400, `leafproxy: count="1.5"`},
		{"GET", "/api/segment/get/", "Bearer " + tok, 404, "leafproxy: no tag in the path: GET /api/segment/get/{tag}"},
		{"GET", "/api//segment/get/seg", "Bearer " + tok, 404, "leafproxy: no such path"},
		{"GET", "/api/segment/get/seg/", "Bearer " + tok, 404, "leafproxy: no such path"},
		{"GET", "/nope", "", 404, "leafproxy: no such path: \"/nope\""},
	} {
		code, body := do(t, a, tc.method, tc.target, tc.auth)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s (%q): %d %q, want %d with %q", tc.method, tc.target, tc.auth, code, body, tc.code, tc.body)
		}
	}
	// HEAD drew nothing: the next ID follows the last GET's.
	if code, body := do(t, a, "GET", "/api/segment/get/seg", "Bearer "+tok); code != 200 || body != "105" {
		t.Errorf("after HEAD: %d %q, want 105", code, body)
	}
	// A request without a valid token closes its connection; one with a
	// token keeps it.
	for _, tc := range []struct {
		target, auth string
		close        bool
	}{
		{"/api/segment/get/seg", "", true},
		{"/nope", "Bearer nope-0123456789abcdef", true},
		{"/api/segment/get/seg", "Bearer " + tok, false},
		{"/api/segment/get/other", "Bearer " + tok, false},
	} {
		req := httptest.NewRequest("GET", tc.target, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if got := rec.Header().Get("Connection") == "close"; got != tc.close {
			t.Errorf("%s (%q): Connection: close %v, want %v", tc.target, tc.auth, got, tc.close)
		}
	}
	// Tokens replaced: the old one is refused at once.
	a.SetTokens([]Token{{Name: "y", Secret: tok + "-new", Tags: []string{AllTags}}})
	if code, _ := do(t, a, "GET", "/api/segment/get/seg", "Bearer "+tok); code != 401 {
		t.Errorf("old token after SetTokens: %d", code)
	}
	if code, body := do(t, a, "GET", "/api/segment/get/seg?access_token="+tok+"-new", ""); code != 200 {
		t.Errorf("new token (query parameter) after SetTokens: %d %q", code, body)
	}
}

// TestAuditLimiter: a burst passes, then lines are suppressed and
// counted, and the next line allowed says how many it stands for.
func TestAuditLimiter(t *testing.T) {
	var l auditLimiter
	now := time.Unix(1000, 0)
	for i := range auditBurst {
		if ok, n := l.allow(now); !ok || n != 0 {
			t.Fatalf("line %d of the burst: %v %d", i, ok, n)
		}
	}
	for range 1000 {
		if ok, _ := l.allow(now); ok {
			t.Fatal("a line past the burst was let through")
		}
	}
	ok, n := l.allow(now.Add(time.Second / auditRate))
	if !ok || n != 1000 {
		t.Fatalf("after 1/rate s: %v, suppressed %d, want 1000", ok, n)
	}
	if got := clip(strings.Repeat("é", 100), 11); got != "ééééé...(200 bytes)" {
		t.Errorf("clip: %q", got)
	}
}

// TestTokenLimits: a token over its rate gets 429; a "*" token creates at
// most max_new_tags tags through auto_create (names that turn out to be
// no sequence, and tags that exist or that it names, do not count), and
// both survive a reload that keeps the token's name.
func TestTokenLimits(t *testing.T) {
	const tok = "0123456789abcdef"
	two := 2
	toks := []Token{{Name: "x", Secret: tok, Tags: []string{AllTags, "autonamed"}, Rate: 1000, MaxNewTags: &two}}
	a := New(&fake{}, toks, Options{})
	for _, tc := range []struct {
		target string
		code   int
		body   string
	}{
		{"/api/segment/get/auto1", 200, "1"},
		{"/api/segment/get/auto1", 200, "1"}, // exists now
		{"/api/segment/get/nosuch", 404, "Unknown SEQUENCE"},
		{"/api/segment/get/autonamed", 200, "1"}, // named: not counted
		{"/api/segment/get/seg", 200, "100"},
		{"/api/segment/get/auto2", 200, "1"},
		{"/api/segment/get/auto3", 403, `leafproxy: token "x" may not create sequence 'auto3': it has created its 2 (id_api.tokens[].max_new_tags)`},
	} {
		if code, body := do(t, a, "GET", tc.target, "Bearer "+tok); code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s: %d %q, want %d with %q", tc.target, code, body, tc.code, tc.body)
		}
	}
	a.SetTokens(toks)
	if code, _ := do(t, a, "GET", "/api/segment/get/auto4", "Bearer "+tok); code != 403 {
		t.Errorf("after a reload: %d, want 403 (the count kept)", code)
	}

	one := []Token{{Name: "r", Secret: tok, Tags: []string{"seg"}, Rate: 3}}
	b := New(&fake{}, one, Options{})
	codes := []int{}
	for range 50 {
		code, _ := do(t, b, "GET", "/api/segment/get/seg", "Bearer "+tok)
		codes = append(codes, code)
	}
	// 3 at once; a few more as time passes (3 a second), far from 50.
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 200 || !slices.Contains(codes, 429) {
		t.Errorf("rate 3: %v", codes)
	}
	code, body := do(t, b, "GET", "/api/segment/get/seg", "Bearer "+tok)
	if code == 429 && !strings.Contains(body, `leafproxy: token "r" is over its rate of 3 requests a second (id_api.tokens[].rate)`) {
		t.Errorf("429 body %q", body)
	}
}

// TestLeafCompatibility: with leaf_errors the get endpoints answer errors
// as a Leaf server does (500, Spring Boot's JSON); with leaf_decode_tag,
// Leaf's /decodeSnowflakeId answers what Leaf's LeafMonitorController
// does for the same ID (its own documented example).
func TestLeafCompatibility(t *testing.T) {
	const tok = "0123456789abcdef"
	toks := []Token{{Name: "x", Secret: tok, Tags: []string{"seg", "snow", "down"}}}
	a := New(&fake{}, toks, Options{LeafErrors: true, LeafDecodeTag: "snow"})
	code, body := do(t, a, "GET", "/api/segment/get/down", "Bearer "+tok)
	var spring map[string]any
	if err := json.Unmarshal([]byte(body), &spring); err != nil || code != 500 || spring["status"] != float64(500) ||
		spring["error"] != "Internal Server Error" || spring["path"] != "/api/segment/get/down" ||
		!strings.Contains(spring["message"].(string), "the ID store is failing") || spring["timestamp"] == nil {
		t.Errorf("leaf_errors: %d %q (%v)", code, body, err)
	}
	if code, body := do(t, a, "GET", "/api/segment/get/seg", "Bearer "+tok); code != 200 || body != "100" {
		t.Errorf("leaf_errors, a good request: %d %q", code, body)
	}
	// Leaf's example: 1567733700834(2019-09-06 09:35:00.834), worker 39,
	// sequence 3448 (its zone +08:00: 01:35 UTC).
	id := (int64(1567733700834-1288834974657) << 22) | 39<<12 | 3448
	code, body = do(t, a, "GET", fmt.Sprintf("/decodeSnowflakeId?snowflakeId=%d", id), "Bearer "+tok)
	var got map[string]string
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 ||
		got["timestamp"] != "1567733700834(2019-09-06 01:35:00.834)" || got["workerId"] != "39" || got["sequenceId"] != "3448" {
		t.Errorf("/decodeSnowflakeId: %d %q (%v)", code, body, err)
	}
	if code, body := do(t, a, "GET", "/decodeSnowflakeId?snowflakeId=x", "Bearer "+tok); code != 400 || !strings.Contains(body, `"errorMsg":"leafproxy: snowflakeId=\"x\" is not an integer ID"`) {
		t.Errorf("/decodeSnowflakeId, a bad ID: %d %q", code, body)
	}
	if code, _ := do(t, a, "GET", fmt.Sprintf("/decodeSnowflakeId?snowflakeId=%d", id), ""); code != 401 {
		t.Errorf("/decodeSnowflakeId without a token: %d", code)
	}
	// Off by default.
	b := New(&fake{}, toks, Options{})
	if code, _ := do(t, b, "GET", fmt.Sprintf("/decodeSnowflakeId?snowflakeId=%d", id), "Bearer "+tok); code != 404 {
		t.Errorf("/decodeSnowflakeId without leaf_decode_tag: %d", code)
	}
	if code, _ := do(t, b, "GET", "/api/segment/get/down", "Bearer "+tok); code != 503 {
		t.Errorf("without leaf_errors: %d", code)
	}
}

// TestUnauthThrottle: an address past its burst of token-less requests is
// blocked, regains them at the rate, and other addresses are not touched.
func TestUnauthThrottle(t *testing.T) {
	var u unauthThrottle
	now := time.Unix(1000, 0)
	for range unauthBurst {
		if u.blocked("10.0.0.1", now) {
			t.Fatal("blocked within the burst")
		}
		u.spend("10.0.0.1", now)
	}
	if !u.blocked("10.0.0.1", now) || u.blocked("10.0.0.2", now) {
		t.Fatalf("after the burst: 10.0.0.1 blocked %v, 10.0.0.2 blocked %v", u.blocked("10.0.0.1", now), u.blocked("10.0.0.2", now))
	}
	if u.blocked("10.0.0.1", now.Add(time.Second/unauthRate)) {
		t.Fatal("still blocked after 1/rate s")
	}
	if u.blocked("10.0.0.1", now.Add(time.Hour)); len(u.hosts) != 0 {
		t.Fatalf("a full budget is forgotten: %d hosts kept", len(u.hosts))
	}
}
