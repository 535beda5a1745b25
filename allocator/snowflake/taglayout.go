package snowflake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A snowflake tag's layout is the leaf_snowflake_layout row "tag:<tag>".
// Every proxy that serves the tag compares its layout for it with the row
// (recording it when there is none) before it issues, as the global row is
// compared: IDs of one tag made under two layouts can collide. The row
// also tells proxies that have no configuration for the tag that it is a
// snowflake tag, with that layout (CREATE LEAFPROXY SEQUENCE ... SNOWFLAKE
// makes one).
//
// Worker ids are leased per layout, not per tag: a generator serves every
// tag of its layout in its process, and holds one worker id of that
// layout's space (leaf_worker for the store's global layout,
// leaf_worker_layout for any other, keyed by LayoutKey). Two processes
// issuing IDs of one layout therefore never hold the same worker id, so
// each tag's IDs are unique whichever processes serve it. A worker id of
// one layout cannot serve another: the spaces differ in size (41/5/7 has
// 32 worker ids, 41/10/12 1024), and an id unique in one space says
// nothing about the other.

// LayoutKey is a layout's identity as the store keys worker leases by it:
// bits, tick length in ns and epoch in unix ms, e.g. "41/5/7/1000000/1577836800000".
// Layouts with the same key give the same IDs (SameLayout).
func LayoutKey(l Layout) string {
	return fmt.Sprintf("%d/%d/%d/%d/%d", l.TimeBits, l.WorkerBits, l.SequenceBits, int64(l.Unit), l.Epoch.UnixMilli())
}

// Named layouts: the bits and tick of DefaultLayout and JSSafeLayout; a
// configuration names one (layout: js_safe) and picks the epoch apart.
const (
	LayoutNameDefault = "default"
	LayoutNameJSSafe  = "js_safe"
)

// NamedLayout is the layout of a name (default, js_safe) with the given
// epoch; false for another name.
func NamedLayout(name string, epoch time.Time) (Layout, bool) {
	var l Layout
	switch name {
	case LayoutNameDefault:
		l = DefaultLayout()
	case LayoutNameJSSafe:
		l = JSSafeLayout()
	default:
		return Layout{}, false
	}
	l.Epoch = epoch
	return l, true
}

// Name is the name of the layout's bits and tick (default, js_safe), or
// "custom".
func (l Layout) Name() string {
	for _, n := range []string{LayoutNameDefault, LayoutNameJSSafe} {
		if nl, _ := NamedLayout(n, l.Epoch); SameLayout(nl, l) {
			return n
		}
	}
	return "custom"
}

// MaxID is the largest ID the layout can make (the last tick, every
// worker and sequence bit set).
func (l Layout) MaxID() int64 {
	return l.MaxTicks()<<(l.WorkerBits+l.SequenceBits) | l.MaxWorker()<<l.SequenceBits | l.MaxSequence()
}

// CheckTagLayout records l as the layout of tag when the store has no row
// for it (with description, who made it and how), else compares the row
// with l: a difference is a *LayoutMismatchError naming the tag, source
// (where this process's layout for it comes from, e.g. "this proxy's
// sequences.tags.x"), both layouts and the live holders of the recorded
// layout's worker ids (global is the store's global layout, whose leases
// are in leaf_worker). Run it before any worker id of l is leased.
func (m *MySQLLeaser) CheckTagLayout(ctx context.Context, tag string, l Layout, description, source string, global Layout) (LayoutCheck, error) {
	if description == "" {
		description = "recorded from " + source
	}
	chk, err := m.checkLayout(ctx, tagRowPrefix+tag, l, description, func(stored Layout) *MySQLLeaser {
		return m.leaserOf(stored, global)
	})
	var me *LayoutMismatchError
	if errors.As(err, &me) {
		me.Tag, me.Source = tag, source
	}
	return chk, storeError(err, fmt.Sprintf("check the snowflake layout of tag '%s' in leaf_snowflake_layout", tag))
}

// leaserOf is the leaser of l's worker ids: leaf_worker when l is the
// store's global layout, else l's rows of leaf_worker_layout.
func (m *MySQLLeaser) leaserOf(l, global Layout) *MySQLLeaser {
	if SameLayout(l, global) {
		return m.ForLayout("")
	}
	return m.ForLayout(LayoutKey(l))
}

// LeaserOf is the leaser of layout l's worker ids, given the store's global
// layout (the 'default' row): leaf_worker for it, leaf_worker_layout for
// any other.
func (m *MySQLLeaser) LeaserOf(l, global Layout) *MySQLLeaser { return m.leaserOf(l, global) }

// TagLayout reads the row of tag; false when there is none.
func (m *MySQLLeaser) TagLayout(ctx context.Context, tag string) (LayoutRecord, bool, error) {
	rec, ok, err := m.readLayout(ctx, tagRowPrefix+tag, true)
	if err != nil && unknownColumn(err) {
		rec, ok, err = m.readLayout(ctx, tagRowPrefix+tag, false)
	}
	rec.Name = trimTagPrefix(rec.Name)
	return rec, ok, err
}

// TagLayouts reads the rows of every snowflake tag, by tag.
func (m *MySQLLeaser) TagLayouts(ctx context.Context) (map[string]LayoutRecord, error) {
	out, err := m.tagLayouts(ctx, true)
	if err != nil && unknownColumn(err) {
		out, err = m.tagLayouts(ctx, false)
	}
	return out, err
}

func (m *MySQLLeaser) tagLayouts(ctx context.Context, described bool) (map[string]LayoutRecord, error) {
	q := "SELECT " + layoutCols
	if described {
		q += ", description"
	}
	rows, err := m.db.QueryContext(ctx, q+" FROM leaf_snowflake_layout WHERE name LIKE 'tag:%'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]LayoutRecord{}
	for rows.Next() {
		rec, err := scanLayout(rows, described)
		if err != nil {
			return nil, err
		}
		rec.Name = trimTagPrefix(rec.Name)
		out[rec.Name] = rec
	}
	return out, rows.Err()
}

// DeleteTagLayout deletes the row of tag; false when there was none.
func (m *MySQLLeaser) DeleteTagLayout(ctx context.Context, tag string) (bool, error) {
	res, err := m.db.ExecContext(ctx, "DELETE FROM leaf_snowflake_layout WHERE name = ?", tagRowPrefix+tag)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func trimTagPrefix(name string) string {
	if len(name) >= len(tagRowPrefix) && name[:len(tagRowPrefix)] == tagRowPrefix {
		return name[len(tagRowPrefix):]
	}
	return name
}

func unknownColumn(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1054
}
