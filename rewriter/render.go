package rewriter

import (
	"math/bits"
	"slices"
	"strconv"
)

// What Render needs beyond the edits: the exact output length (sized at
// once for a many-row INSERT) and the IDs' digits written in place.

// bigEdits: past this many edits Render sizes its output exactly first
// (growing by a quarter at a time allocated five times the text).
const bigEdits = 4096

// renderedLen is the length of Render's output.
func (p *Plan) renderedLen(sql string, ids []int64) int {
	n := len(sql)
	for i := range p.edits {
		e := &p.edits[i]
		n += len(p.texts[e.pre]) + len(p.texts[e.post]) - (e.end - e.start)
		if e.slot < 0 {
			continue
		}
		switch {
		case e.param && e.wrap:
			n += len("COALESCE(?,") + len(p.wrapOpen()) + 2
		case e.param:
			n += len("COALESCE(?,") + 1
		case e.wrap:
			n += len(p.wrapOpen()) + 1
		}
		if p.prepared {
			n++
		} else {
			n += intLen(ids[e.slot])
		}
	}
	return n
}

// appendID is strconv.AppendInt(dst, v, 10), written in place: the
// digits go straight into dst (AppendInt formats into a buffer of its
// own and copies, a third of a many-row Render).
func appendID(dst []byte, v int64) []byte {
	if v < 0 {
		return strconv.AppendInt(dst, v, 10)
	}
	n := intLen(v)
	l := len(dst)
	if cap(dst)-l < n {
		dst = slices.Grow(dst, n)
	}
	dst = dst[:l+n]
	i := l + n
	u := uint64(v)
	for u >= 100 {
		q := u / 100
		j := (u - q*100) * 2
		i -= 2
		dst[i], dst[i+1] = twoDigits[j], twoDigits[j+1]
		u = q
	}
	if u >= 10 {
		dst[i-2], dst[i-1] = twoDigits[u*2], twoDigits[u*2+1]
	} else {
		dst[i-1] = byte('0' + u)
	}
	return dst
}

const twoDigits = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// intLen is the length of strconv.AppendInt(nil, v, 10).
func intLen(v int64) int {
	if v < 0 {
		if v == -1<<63 {
			return 20
		}
		return 1 + intLen(-v)
	}
	u := uint64(v)
	if u < 10 {
		return 1
	}
	t := bits.Len64(u) * 1233 >> 12 // about log10(u)
	if u >= pow10[t] {
		t++
	}
	return t
}

var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// editsSorted reports whether edits are in text order already.
func editsSorted(edits []edit) bool {
	for i := 1; i < len(edits); i++ {
		if edits[i].start < edits[i-1].start {
			return false
		}
	}
	return true
}
