package idapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Generators, as Source.Generator names them.
const (
	segment   = "segment"
	snowflake = "snowflake"
)

// get answers GET /api/{segment,snowflake}/get/{tag}[?count=n]: the ID as
// Leaf writes it (the decimal number alone), or with count a block of n
// IDs, one per line.
func (a *API) get(w http.ResponseWriter, r *http.Request, tk *token, ep endpoint, tag string, start time.Time) {
	n := int64(1)
	if q := r.URL.Query(); q.Has("count") {
		s := q.Get("count")
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 1 || v > a.opts.MaxCount {
			a.fail(w, r, ep, http.StatusBadRequest, fmt.Sprintf("leafproxy: count=%q: a block is 1 to %d IDs", s, a.opts.MaxCount), start)
			return
		}
		n = v
	}
	want := ep.generator()
	if code, msg := a.checkGenerator(r, tag, want); code != 0 {
		a.fail(w, r, ep, code, msg, start)
		return
	}
	if want == snowflake {
		if max, why := a.src.BlockLimit(tag); max > 0 && n > max {
			a.fail(w, r, ep, http.StatusBadRequest, fmt.Sprintf("leafproxy: count=%d: sequence '%s' gives at most %d consecutive IDs at once (%s); take several blocks",
				n, tag, max, why), start)
			return
		}
	}
	release := a.newTag(w, r, tk, ep, tag, start)
	if release == nil {
		return
	}
	first, run, _, err := a.src.Block(r.Context(), tag, n)
	if err != nil {
		if statusOf(err) == http.StatusNotFound {
			release()
		}
		a.fail(w, r, ep, statusOf(err), message(err), start)
		return
	}
	if want == segment && run != 0 {
		// The tag turned out to be a snowflake tag made in SQL
		// elsewhere, learned by this very draw: never answer a snowflake
		// ID on the segment endpoint.
		a.fail(w, r, ep, http.StatusBadRequest, wrongGenerator(tag, snowflake), start)
		return
	}
	if run != 0 && n > run {
		a.fail(w, r, ep, http.StatusInternalServerError, fmt.Sprintf("leafproxy: sequence '%s': the block came as runs of %d IDs, not %d consecutive", tag, run, n), start)
		return
	}
	// Counted as handed out now, before the answer is written: a client
	// that does not read it still took them.
	a.m.ids(tag, n)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	if n == 1 {
		var b [20]byte
		out := strconv.AppendInt(b[:0], first, 10)
		h.Set("Content-Length", strconv.Itoa(len(out)))
		w.Write(out)
	} else {
		bw := bufio.NewWriterSize(w, 32<<10)
		var b [21]byte
		for id := first; id < first+n; id++ {
			bw.Write(append(strconv.AppendInt(b[:0], id, 10), '\n'))
		}
		bw.Flush()
	}
	a.m.done(ep, http.StatusOK, start)
}

// checkGenerator refuses a tag the endpoint does not serve: 400 when it
// uses the other generator, 404 when it is no sequence at all (0 when the
// endpoint serves it). A segment tag's existence is left to the draw (one
// lookup, cached for known tags); a tag that is not (yet) a snowflake tag
// here is asked about once, which also learns a snowflake tag made
// elsewhere.
func (a *API) checkGenerator(r *http.Request, tag, want string) (int, string) {
	g := a.src.Generator(tag)
	if g == want || want == segment {
		if g != want {
			return http.StatusBadRequest, wrongGenerator(tag, g)
		}
		return 0, ""
	}
	known, err := a.src.Known(r.Context(), tag)
	if err != nil {
		return statusOf(err), message(err)
	}
	if g = a.src.Generator(tag); g == want {
		return 0, ""
	}
	if !known {
		return http.StatusNotFound, fmt.Sprintf("Unknown SEQUENCE: '%s'", tag)
	}
	return http.StatusBadRequest, wrongGenerator(tag, g)
}

func wrongGenerator(tag, g string) string {
	return fmt.Sprintf("leafproxy: sequence '%s' uses the %s generator: ask GET /api/%s/get/%s", tag, g, g, tag)
}

// Decoded is what GET /api/decode/{tag}/{id} answers: LEAFPROXY_DECODE's
// row, null where a part does not apply to the tag's generator.
type Decoded struct {
	Tag       string     `json:"tag"`
	Generator string     `json:"generator"`
	ID        int64      `json:"id"`
	CreatedAt *time.Time `json:"created_at"` // snowflake: the start of its tick, UTC
	WorkerID  *int64     `json:"worker_id"`  // snowflake
	Sequence  *int64     `json:"sequence"`   // snowflake: within the tick
	HandedOut *int       `json:"handed_out"` // segment: 1 when below max_id
	MaxID     *int64     `json:"max_id"`     // segment: leaf_alloc.max_id now
}

// decode answers GET /api/decode/{tag}/{id}.
func (a *API) decode(w http.ResponseWriter, r *http.Request, tag, idText string, start time.Time) {
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		a.fail(w, r, epDecode, http.StatusBadRequest, fmt.Sprintf("Incorrect arguments to LEAFPROXY_DECODE: %q is not an integer ID", idText), start)
		return
	}
	g := a.src.Generator(tag)
	if g != snowflake {
		known, err := a.src.Known(r.Context(), tag)
		if err != nil {
			a.fail(w, r, epDecode, statusOf(err), message(err), start)
			return
		}
		if !known {
			a.fail(w, r, epDecode, http.StatusNotFound, fmt.Sprintf("Unknown SEQUENCE: '%s'", tag), start)
			return
		}
		g = a.src.Generator(tag)
	}
	d := Decoded{Tag: tag, Generator: g, ID: id}
	if g == snowflake {
		created, worker, seq, err := a.src.DecodeSnowflake(tag, id)
		if err != nil {
			a.fail(w, r, epDecode, statusOf(err), message(err), start)
			return
		}
		created = created.UTC()
		d.CreatedAt, d.WorkerID, d.Sequence = &created, &worker, &seq
	} else {
		maxID, err := a.src.MaxID(r.Context(), tag)
		if err != nil {
			a.fail(w, r, epDecode, statusOf(err), message(err), start)
			return
		}
		if id < 1 {
			a.fail(w, r, epDecode, http.StatusBadRequest, fmt.Sprintf("Incorrect arguments to LEAFPROXY_DECODE: %d is not an ID of sequence '%s': its IDs start at 1", id, tag), start)
			return
		}
		handed := 0
		if id >= 1 && id < maxID {
			handed = 1
		}
		d.HandedOut, d.MaxID = &handed, &maxID
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(d)
	a.m.done(epDecode, http.StatusOK, start)
}

// leafDecode answers Leaf's GET /decodeSnowflakeId?snowflakeId=n as Leaf
// does (its LeafMonitorController): a JSON object of strings,
// {"timestamp": "<ms since 1970>(<yyyy-MM-dd HH:mm:ss.SSS>)", "workerId",
// "sequenceId"}, here under the layout of snowflake tag (the time in UTC,
// where Leaf writes its JVM's zone); a bad ID is a 400 with {"errorMsg"}.
func (a *API) leafDecode(w http.ResponseWriter, r *http.Request, tag, idText string, start time.Time) {
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		a.fail(w, r, epLeafDecode, http.StatusBadRequest, fmt.Sprintf("leafproxy: snowflakeId=%q is not an integer ID", clip(idText, 64)), start)
		return
	}
	created, worker, seq, err := a.src.DecodeSnowflake(tag, id)
	if err != nil {
		a.fail(w, r, epLeafDecode, statusOf(err), message(err), start)
		return
	}
	created = created.UTC()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{
		"timestamp":  strconv.FormatInt(created.UnixMilli(), 10) + "(" + created.Format("2006-01-02 15:04:05.000") + ")",
		"workerId":   strconv.FormatInt(worker, 10),
		"sequenceId": strconv.FormatInt(seq, 10),
	})
	a.m.done(epLeafDecode, http.StatusOK, start)
}
