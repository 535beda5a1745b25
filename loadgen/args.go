package loadgen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// ArgSpec describes how one placeholder argument is generated for each
// request. Parse it from the command-line form with ParseArg.
type ArgSpec struct {
	// Kind is "rand" (uniform integer in [Lo, Hi]), "seq" (distinct
	// increasing integers from Lo across all connections), "conn" (the
	// connection's index) or "const" (Value, as a string).
	Kind   string
	Lo, Hi int64
	Value  string
}

// ParseArg reads "rand:LO:HI", "seq[:START]", "conn" or "const:VALUE".
func ParseArg(s string) (ArgSpec, error) {
	kind, rest, _ := strings.Cut(s, ":")
	switch kind {
	case "rand":
		los, his, ok := strings.Cut(rest, ":")
		if !ok {
			return ArgSpec{}, fmt.Errorf("argument %q: want rand:LO:HI", s)
		}
		lo, err1 := strconv.ParseInt(los, 10, 64)
		hi, err2 := strconv.ParseInt(his, 10, 64)
		if err1 != nil || err2 != nil || hi < lo {
			return ArgSpec{}, fmt.Errorf("argument %q: want rand:LO:HI with integers LO <= HI", s)
		}
		return ArgSpec{Kind: "rand", Lo: lo, Hi: hi}, nil
	case "seq":
		var start int64 = 1
		if rest != "" {
			v, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				return ArgSpec{}, fmt.Errorf("argument %q: want seq[:START]: %w", s, err)
			}
			start = v
		}
		return ArgSpec{Kind: "seq", Lo: start}, nil
	case "conn":
		return ArgSpec{Kind: "conn"}, nil
	case "const":
		return ArgSpec{Kind: "const", Value: rest}, nil
	}
	return ArgSpec{}, fmt.Errorf("argument %q: unknown generator %q (rand:LO:HI, seq[:START], conn, const:VALUE)", s, kind)
}

func (a ArgSpec) String() string {
	switch a.Kind {
	case "rand":
		return fmt.Sprintf("rand:%d:%d", a.Lo, a.Hi)
	case "seq":
		return fmt.Sprintf("seq:%d", a.Lo)
	case "const":
		return "const:" + a.Value
	}
	return a.Kind
}

// argGen fills one worker's argument slice in place before each request.
// Integers go in as int64 so the driver sends them as integers.
type argGen struct {
	specs []ArgSpec
	rng   *rand.Rand
	conn  int64
	conns int64
	n     int64 // requests generated so far by this worker
	vals  []any
	// consts holds the boxed values that never change, so the hot path
	// does not box them again.
	consts []any
}

func newArgGen(specs []ArgSpec, conn, conns int, seed uint64) *argGen {
	g := &argGen{
		specs:  specs,
		rng:    rand.New(rand.NewPCG(seed, uint64(conn)+1)),
		conn:   int64(conn),
		conns:  int64(conns),
		vals:   make([]any, len(specs)),
		consts: make([]any, len(specs)),
	}
	for i, s := range specs {
		switch s.Kind {
		case "conn":
			g.consts[i] = int64(conn)
		case "const":
			g.consts[i] = s.Value
		}
	}
	return g
}

func (g *argGen) next() []any {
	for i, s := range g.specs {
		switch s.Kind {
		case "rand":
			g.vals[i] = s.Lo + g.rng.Int64N(s.Hi-s.Lo+1)
		case "seq":
			// Interleaved by connection: unique across workers without a
			// shared counter on the hot path.
			g.vals[i] = s.Lo + g.n*g.conns + g.conn
		default:
			g.vals[i] = g.consts[i]
		}
	}
	g.n++
	return g.vals
}
