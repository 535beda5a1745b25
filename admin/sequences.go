package admin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/leafproxy/leafproxy/allocator/runway"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// sequenceColumns are SHOW LEAFPROXY SEQUENCES' columns, in order. After
// lease_lost: the snowflake layout, the runway (IDs left before the
// smallest key column filled from the tag, or the layout, ends; IDs per
// second over the last hour; when they run out at that rate; what sets
// the limit), the store row's description and how near its end the tag is
// (end: ok, "near end: under 10% left", "near end: under 1% left", "at
// end: inserts fail with 167") and its MAXVALUE (NULL: none; at it, "at
// end: NEXTVAL fails with 4084"). Clients read them by name;
// new columns go at the end.
var sequenceColumns = []string{"tag", "generator", "last_value", "next_value", "buffered", "next_ready", "step",
	"store_max_id", "fetches", "fetch_errors", "last_error", "worker_id", "lease_expires", "fenced", "lease_lost",
	"layout", "ids_left", "ids_per_second", "exhausted_at", "limited_by", "description", "end", "max_value"}

const (
	colLayout = 15 + iota
	colIDsLeft
	colRate
	colExhausted
	colLimitedBy
	colDescription
	colEnd
	colMaxValue
)

// LayoutText is how views show a snowflake layout: its name (default,
// js_safe, custom), bits, tick and epoch.
func LayoutText(l snowflake.Layout) string { return l.Name() + " " + l.String() }

// sequences is one row per tag known to this proxy (configured, used, in
// the store's leaf_alloc, or a snowflake tag of the store).
func (a *Interceptor) sequences(ctx context.Context) ([]string, [][]*string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	store, storeErr := a.idSequences.StoreRows(ctx)
	snowRows, _ := a.idSequences.SnowflakeRows(ctx)
	gens := map[string]string{}
	cfg := a.config()
	for _, r := range cfg.Rules {
		gens[r.Tag] = "segment"
	}
	for name, t := range cfg.Tags {
		gens[name] = t.Generator
	}
	segs := a.idSequences.Segments()
	for _, t := range segs.Tags() {
		if _, ok := gens[t]; !ok {
			if st, ok := segs.Stats(t); ok && (st.Fetches > 0 || st.Refused > 0) {
				gens[t] = "segment"
			}
		}
	}
	for t := range store {
		if _, ok := gens[t]; !ok {
			gens[t] = "segment"
		}
	}
	for _, t := range a.idSequences.SnowflakeTags() {
		gens[t] = "snowflake"
	}
	for t := range snowRows {
		if _, ok := gens[t]; !ok {
			gens[t] = "snowflake"
		}
	}
	tags := make([]string, 0, len(gens))
	for t := range gens {
		if utf8.ValidString(t) {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	snowGen := map[string]*snowflake.Generator{}
	for _, g := range a.idSequences.SnowflakeGenerators() {
		for _, t := range g.Tags {
			snowGen[t] = g.Generator
		}
	}
	str := func(v string) *string { return &v }
	num := func(v int64) *string { return str(strconv.FormatInt(v, 10)) }
	yes := func(b bool) *string {
		if b {
			return str("YES")
		}
		return str("NO")
	}
	var rows [][]*string
	for _, t := range tags {
		row := make([]*string, len(sequenceColumns))
		row[0], row[1] = str(t), str(gens[t])
		a.runwayCells(t, row, num, str)
		if gens[t] == "snowflake" {
			if l, ok := a.idSequences.Layout(t); ok {
				row[colLayout] = str(LayoutText(l))
			} else if r, ok := snowRows[t]; ok {
				row[colLayout] = str(LayoutText(r.Layout))
			}
			if r, ok := snowRows[t]; ok && r.Description != "" {
				row[colDescription] = str(r.Description)
			}
			if g := snowGen[t]; g != nil {
				fenced, lost := g.Health()
				row[11], row[13], row[14] = num(g.Worker()), yes(fenced), yes(lost)
				if exp := g.LeaseExpiry(); !exp.IsZero() {
					row[12] = str(exp.UTC().Format("2006-01-02 15:04:05.000"))
				}
			}
			rows = append(rows, row)
			continue
		}
		if st, ok := segs.Stats(t); ok && st.Current.End > 0 {
			if st.NextID > st.Current.Start {
				row[2] = num(st.NextID - 1)
			}
			buffered := st.Remaining
			switch {
			case st.NextID < st.Current.End:
				row[3] = num(st.NextID)
			case st.NextReady:
				row[3] = num(st.Next.Start)
			}
			if st.NextReady {
				buffered += st.Next.End - st.Next.Start
			}
			row[4], row[5], row[6] = num(buffered), yes(st.NextReady), num(st.Step)
			row[8], row[9] = num(int64(st.Fetches)), num(int64(st.FetchErrors))
			if st.LastErr != nil {
				row[10] = str(st.LastErr.Error())
			}
			if err := segs.PastEnd(t); err != nil {
				row[colEnd], row[10] = str(endAt), str(err.Error())
				if se, ok := err.(interface{ Code() uint16 }); ok && se.Code() == segment.ErrCodeRunOut {
					row[colEnd] = str(runOutAt)
				}
			}
		} else if ok {
			row[8], row[9] = num(int64(st.Fetches)), num(int64(st.FetchErrors))
			if st.LastErr != nil {
				row[10] = str(st.LastErr.Error())
			}
		}
		if r, ok := store[t]; ok {
			row[7] = num(r.MaxID)
			if row[6] == nil {
				row[6] = num(r.Step)
			}
			if r.Description != "" {
				row[colDescription] = str(r.Description)
			}
			if r.MaxValue > 0 {
				row[colMaxValue] = num(r.MaxValue)
			}
		} else if storeErr != nil && row[10] == nil {
			row[10] = str(storeErr.Error())
		}
		rows = append(rows, row)
	}
	if storeErr != nil && len(rows) == 0 {
		return nil, nil, storeErr
	}
	return sequenceColumns, rows, nil
}

// runwayCells fills the runway columns from the last estimate (NULL until
// the monitor computed one; exhausted_at NULL when the IDs do not run out
// at the current rate).
func (a *Interceptor) runwayCells(tag string, row []*string, num func(int64) *string, str func(string) *string) {
	if a.runway == nil {
		return
	}
	e, ok := a.runway(tag)
	if !ok {
		return
	}
	row[colIDsLeft] = num(e.IDsLeft)
	if e.Generator == "segment" {
		row[colRate] = str(fmt.Sprintf("%.3f", e.PerSecond))
	}
	if !e.ExhaustedAt.IsZero() {
		row[colExhausted] = str(e.ExhaustedAt.UTC().Format("2006-01-02 15:04:05"))
	}
	row[colLimitedBy] = str(e.LimitedBy)
	switch e.Level {
	case runway.LevelExhausted:
		row[colEnd] = str(endAt)
		if e.LimitedBy == "MAXVALUE" {
			row[colEnd] = str(runOutAt)
		}
	case runway.LevelCritical:
		row[colEnd] = str("near end: under 1% left")
	case runway.LevelLow:
		row[colEnd] = str("near end: under 10% left")
	case runway.LevelOK:
		row[colEnd] = str("ok")
	}
}

// endAt is the end column of a tag with no ID left its key column holds.
const endAt = "at end: inserts fail with 167"

// runOutAt is the end column of a tag at its MAXVALUE.
const runOutAt = "at end: NEXTVAL fails with 4084"
