package idapi

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// The per-token limits a zero Token field means (config writes them as
// values; a test in service keeps the two equal).
const (
	// DefaultRate is a token's requests a second (bursts of as many).
	DefaultRate = 5000
	// DefaultMaxNewTags is how many tags a token may bring into being
	// through auto_create.
	DefaultMaxNewTags = 16
)

// tokenState is what a token's limits keep between requests; a reload
// that keeps the token's name keeps it (SetTokens).
type tokenState struct {
	mu      sync.Mutex
	allow   float64 // requests it may make now
	last    time.Time
	created map[string]bool // tags it brought into being (or is drawing first)
}

// take reports whether the token may make one more request at now, at
// rate a second with bursts of rate.
func (s *tokenState) take(now time.Time, rate int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last.IsZero() {
		s.allow = float64(rate)
	} else {
		s.allow = min(float64(rate), s.allow+now.Sub(s.last).Seconds()*float64(rate))
	}
	s.last = now
	if s.allow < 1 {
		return false
	}
	s.allow--
	return true
}

// overRate answers 429 when t is past its rate; it reports whether it did.
func (a *API) overRate(w http.ResponseWriter, r *http.Request, t *token, ep endpoint, start time.Time) bool {
	if t.state.take(start, t.rate) {
		return false
	}
	w.Header().Set("Retry-After", "1")
	a.fail(w, r, ep, http.StatusTooManyRequests, fmt.Sprintf("leafproxy: token %q is over its rate of %d requests a second (id_api.tokens[].rate)", t.name, t.rate), start)
	return true
}

// newTag decides whether t may draw from tag when tag is not (yet) a
// sequence anywhere, so that the draw would create it (auto_create): a
// tag named in t's tags may always be; one t may use only through "*"
// counts against t's max_new_tags. It returns release (non-nil), to call
// when the draw found no such sequence (auto_create off), or answers 403
// and returns nil.
func (a *API) newTag(w http.ResponseWriter, r *http.Request, t *token, ep endpoint, tag string, start time.Time) func() {
	none := func() {}
	if !t.all || t.tags[tag] {
		return none
	}
	// A lookup that fails (the store down) counts the tag as new: the
	// draw then waits for the store as SQL's does, and a tag that existed
	// after all keeps its place among the token's (conservative).
	if known, err := a.src.Known(r.Context(), tag); err == nil && known {
		return none
	}
	s := t.state
	s.mu.Lock()
	if !s.created[tag] {
		if len(s.created) >= t.maxNewTags {
			s.mu.Unlock()
			msg := fmt.Sprintf("token %q may not create sequence '%s': it has created its %d (id_api.tokens[].max_new_tags); declare the tag in sequences.tags or raise max_new_tags",
				t.name, clip(tag, auditPathBytes), t.maxNewTags)
			a.fail(w, r, ep, http.StatusForbidden, "leafproxy: "+msg, start)
			return nil
		}
		s.created[tag] = true
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.created, tag)
		s.mu.Unlock()
	}
}
