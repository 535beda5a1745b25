package admin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/leafproxy/leafproxy/allocator"
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
	segs := a.idSequences.Segments()
	gens := a.sequenceGenerators(segs, store, snowRows)
	snowGen := map[string]*snowflake.Generator{}
	for _, g := range a.idSequences.SnowflakeGenerators() {
		for _, t := range g.Tags {
			snowGen[t] = g.Generator
		}
	}
	var rows [][]*string
	for _, t := range validTags(gens) {
		row := make([]*string, len(sequenceColumns))
		row[0], row[1] = cellStr(t), cellStr(gens[t])
		a.runwayCells(t, row, cellNum, cellStr)
		if gens[t] == "snowflake" {
			a.snowflakeCells(t, row, snowRows, snowGen[t])
			rows = append(rows, row)
			continue
		}
		segmentCells(t, row, segs)
		storeCells(row, store, t, storeErr)
		rows = append(rows, row)
	}
	if storeErr != nil && len(rows) == 0 {
		return nil, nil, storeErr
	}
	return sequenceColumns, rows, nil
}

// The cells of the views: a string, a number, YES or NO.
func cellStr(v string) *string { return &v }
func cellNum(v int64) *string  { return cellStr(strconv.FormatInt(v, 10)) }
func cellYes(b bool) *string {
	if b {
		return cellStr("YES")
	}
	return cellStr("NO")
}

// sequenceGenerators names every tag known to this proxy with its
// generator: the rules' tags and the configured ones, segment tags this
// proxy fetched for, the store's leaf_alloc rows, and snowflake tags (its
// own and the store's). A tag configured or in use keeps its generator;
// this proxy's snowflake tags are snowflake whatever else says.
func (a *Interceptor) sequenceGenerators(segs *segment.Allocator, store map[string]allocator.StoreRow,
	snowRows map[string]snowflake.LayoutRecord) map[string]string {
	gens := map[string]string{}
	cfg := a.config()
	for _, r := range cfg.Rules {
		gens[r.Tag] = "segment"
	}
	for name, t := range cfg.Tags {
		gens[name] = t.Generator
	}
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
	return gens
}

// validTags are gens' tags that are valid UTF-8, sorted.
func validTags(gens map[string]string) []string {
	tags := make([]string, 0, len(gens))
	for t := range gens {
		if utf8.ValidString(t) {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	return tags
}

// snowflakeCells fills a snowflake tag's row: its layout (this proxy's, or
// the store's record), the record's description, and the worker id and
// lease of g, this proxy's generator for the tag (nil: none).
func (a *Interceptor) snowflakeCells(t string, row []*string, snowRows map[string]snowflake.LayoutRecord, g *snowflake.Generator) {
	if l, ok := a.idSequences.Layout(t); ok {
		row[colLayout] = cellStr(LayoutText(l))
	} else if r, ok := snowRows[t]; ok {
		row[colLayout] = cellStr(LayoutText(r.Layout))
	}
	if r, ok := snowRows[t]; ok && r.Description != "" {
		row[colDescription] = cellStr(r.Description)
	}
	if g != nil {
		fenced, lost := g.Health()
		row[11], row[13], row[14] = cellNum(g.Worker()), cellYes(fenced), cellYes(lost)
		if exp := g.LeaseExpiry(); !exp.IsZero() {
			row[12] = cellStr(exp.UTC().Format("2006-01-02 15:04:05.000"))
		}
	}
}

// segmentCells fills a segment tag's row from this proxy's allocator:
// the values and buffers once a segment was fetched, the fetch counts and
// last error, and the end when the tag is at it.
func segmentCells(t string, row []*string, segs *segment.Allocator) {
	st, ok := segs.Stats(t)
	if !ok {
		return
	}
	if st.Current.End <= 0 {
		row[8], row[9] = cellNum(int64(st.Fetches)), cellNum(int64(st.FetchErrors))
		if st.LastErr != nil {
			row[10] = cellStr(st.LastErr.Error())
		}
		return
	}
	if st.NextID > st.Current.Start {
		row[2] = cellNum(st.NextID - 1)
	}
	buffered := st.Remaining
	switch {
	case st.NextID < st.Current.End:
		row[3] = cellNum(st.NextID)
	case st.NextReady:
		row[3] = cellNum(st.Next.Start)
	}
	if st.NextReady {
		buffered += st.Next.End - st.Next.Start
	}
	row[4], row[5], row[6] = cellNum(buffered), cellYes(st.NextReady), cellNum(st.Step)
	row[8], row[9] = cellNum(int64(st.Fetches)), cellNum(int64(st.FetchErrors))
	if st.LastErr != nil {
		row[10] = cellStr(st.LastErr.Error())
	}
	if err := segs.PastEnd(t); err != nil {
		row[colEnd], row[10] = cellStr(endAt), cellStr(err.Error())
		if se, ok := err.(interface{ Code() uint16 }); ok && se.Code() == segment.ErrCodeRunOut {
			row[colEnd] = cellStr(runOutAt)
		}
	}
}

// storeCells fills a segment tag's row from its leaf_alloc row in store;
// without one, the store's error (storeErr) goes in last_error unless the
// allocator put one there.
func storeCells(row []*string, store map[string]allocator.StoreRow, t string, storeErr error) {
	r, ok := store[t]
	if !ok {
		if storeErr != nil && row[10] == nil {
			row[10] = cellStr(storeErr.Error())
		}
		return
	}
	row[7] = cellNum(r.MaxID)
	if row[6] == nil {
		row[6] = cellNum(r.Step)
	}
	if r.Description != "" {
		row[colDescription] = cellStr(r.Description)
	}
	if r.MaxValue > 0 {
		row[colMaxValue] = cellNum(r.MaxValue)
	}
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
