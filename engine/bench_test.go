package engine

import (
	"context"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy"
	"testing"

	"github.com/leafproxy/leafproxy/rewriter"
)

// discardSession is a fakeSession that keeps nothing it relays, so a
// benchmark measures the engine, not the recording.
type discardSession struct{ fakeSession }

func (d *discardSession) RelayQuery([]byte) error       { return nil }
func (d *discardSession) RelayQueryPacket([]byte) error { return nil }
func (d *discardSession) RelayQueryPacketOr([]byte, proxy.AnswerWatcher) error {
	return nil
}

// BenchmarkQueryFilledInsert is the engine's whole share of one filled
// single-row INSERT as go-sql-driver sends it (bench/haproxy_test.go's
// "1-row INSERT"): plan, key check, draw, render, counted for metrics.
// The relay is not in it.
func BenchmarkQueryFilledInsert(b *testing.B) { benchFilled(b, true) }

// BenchmarkQueryFilledInsertNoStats is BenchmarkQueryFilledInsert with the
// metrics off.
func BenchmarkQueryFilledInsertNoStats(b *testing.B) { benchFilled(b, false) }

func benchFilled(b *testing.B, stats bool) {
	rules, err := rewriter.NewRules([]rewriter.Rule{{Table: "orders", Column: "id", Tag: "order"}})
	if err != nil {
		b.Fatal(err)
	}
	e := New(&counter{next: 1000}, rules)
	if !stats {
		e.DisableStats()
	}
	s := &discardSession{fakeSession{db: "bench", columns: map[string][][2]string{"orders": {{"id", "bigint"}, {"v", "varchar"}}}}}
	ctx := context.Background()
	sql := []byte("INSERT INTO orders (v) VALUES ('x')")
	if handled, err := e.queryText(ctx, s, sql); !handled || err != nil {
		b.Fatalf("handled=%v err=%v", handled, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.queryText(ctx, s, sql); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryNextval is the engine's share of one SELECT NEXTVAL('t'):
// plan, draw, build the one-row answer (the proxy writes it), counted and
// timed for metrics (one clock reading).
func BenchmarkQueryNextval(b *testing.B) { benchNextval(b, true) }

// BenchmarkQueryNextvalNoStats is BenchmarkQueryNextval with the metrics
// off: the difference is what counting and timing a NEXTVAL costs.
func BenchmarkQueryNextvalNoStats(b *testing.B) { benchNextval(b, false) }

func benchNextval(b *testing.B, stats bool) {
	e := New(&counter{next: 1000}, nil)
	if !stats {
		e.DisableStats()
	}
	s := &discardSession{fakeSession{db: "bench"}}
	ctx := context.Background()
	sql := []byte("SELECT NEXTVAL('t')")
	if handled, err := e.queryText(ctx, s, sql); !handled || err != nil {
		b.Fatalf("handled=%v err=%v", handled, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.wrote = s.wrote[:0]
		if _, err := e.queryText(ctx, s, sql); err != nil {
			b.Fatal(err)
		}
	}
}

var ddlSink bool

// BenchmarkQueryHasDDL is the classification every COM_QUERY pays (its
// DDL test included): one statement
// (the common text), two statements, and a ';' in a string followed by a
// DDL word (the quote-aware scan).
func BenchmarkQueryHasDDL(b *testing.B) {
	for i, q := range []string{
		"INSERT INTO orders (item, qty) VALUES ('book', 2)",
		"INSERT INTO orders (item, qty) VALUES ('book', 2); SELECT 1",
		"INSERT INTO notes (body) VALUES ('see you; create later'); SELECT 1",
	} {
		b.Run([]string{"one", "two", "quoted"}[i], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ddlSink = sqltext.ClassifyString(q).DDL()
			}
		})
	}
}
