package allocator

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// Snowflake tags made in SQL are rows "tag:<tag>" of leaf_snowflake_layout:
// a proxy learns them at start, on first use of a tag it does not know,
// and compares what it learned with the store every DefaultTagSync.

// loadStoreTags learns the snowflake tags of the store (rows "tag:<tag>"
// of leaf_snowflake_layout) that this proxy's configuration does not
// declare, so that a rule's tag created as snowflake in SQL is routed (and
// its key column checked) as snowflake from the start. Failures are
// logged: a tag is also learned on first use.
func (s *Sequences) loadStoreTags(ctx context.Context) {
	cctx, cancel := s.storeCtx(ctx)
	recs, err := s.leaser.TagLayouts(cctx)
	cancel()
	if err != nil {
		s.log.Debug("could not read the snowflake tags of the store (leaf_snowflake_layout)", "err", err)
		return
	}
	for tag, rec := range recs {
		if t, ok := s.cfg.Tags[tag]; ok {
			if t.Generator != GeneratorSnowflake {
				s.log.Warn("tag is a segment tag in this proxy's configuration but a snowflake tag in the store (leaf_snowflake_layout); "+
					"this proxy serves it as segment: make the two agree", "tag", tag, "store_layout", rec.Layout.String())
			}
			continue
		}
		if err := rec.Layout.Validate(); err != nil {
			s.log.Warn("snowflake tag in the store with an invalid layout, not served", "tag", tag, "err", err)
			continue
		}
		s.addTag(tag, rec.Layout, false)
	}
}

// DefaultTagSync is how often the snowflake tags learned from the store
// are compared with it again.
const DefaultTagSync = 30 * time.Second

// syncLoop runs syncStoreTags every d until Close.
func (s *Sequences) syncLoop(d time.Duration) {
	defer close(s.syncDone)
	ctx, cancel := s.untilClose()
	defer cancel()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.syncStoreTags(ctx)
	}
}

// syncStoreTags compares the snowflake tags learned from the store with
// its rows: a tag whose row was deleted (DROP LEAFPROXY SEQUENCE on any
// proxy) is forgotten, one whose layout changed (dropped and created
// again) is forgotten and learned again with the new layout, so that
// within one sync no proxy issues a tag's IDs under a layout the store no
// longer records. Rows of tags not learned yet are learned.
func (s *Sequences) syncStoreTags(ctx context.Context) {
	learned := false
	for _, t := range *s.snowflakeTags.Load() {
		learned = learned || !t.config
	}
	if !learned {
		return // tags are learned on first use; nothing to compare
	}
	cctx, cancel := s.storeCtx(ctx)
	recs, err := s.leaser.TagLayouts(cctx)
	cancel()
	if err != nil {
		s.log.Debug("could not compare the learned snowflake tags with the store", "err", err)
		return
	}
	for tag, t := range *s.snowflakeTags.Load() {
		if t.config {
			continue
		}
		rec, ok := recs[tag]
		switch {
		case !ok:
			s.log.Info("snowflake tag dropped from the store: no longer served", "tag", tag)
			s.removeTag(tag)
		case snowflake.LayoutKey(rec.Layout) != t.gen.key:
			s.log.Warn("snowflake tag's layout changed in the store (dropped and created again): served with the new one from now on",
				"tag", tag, "was", t.gen.layout.String(), "now", rec.Layout.String())
			s.removeTag(tag)
		}
	}
	s.loadStoreTags(ctx)
}

// missTTL is how long a tag found without a leaf_snowflake_layout row is
// answered from memory.
const missTTL = time.Second

// learn looks tag up in leaf_snowflake_layout after the segment allocator
// found no leaf_alloc row for it (cause): a tag created as snowflake in SQL
// (here or on another proxy) is then served, under its recorded layout.
// (nil, nil) when cause is another error or there is no row.
func (s *Sequences) learn(ctx context.Context, tag string, cause error) (*snowTag, error) {
	var unknown *segment.UnknownTagError
	if !errors.As(cause, &unknown) || schema.CheckTag(tag) != nil {
		return nil, nil
	}
	now := time.Now()
	s.mu.Lock()
	until, missed := s.snowflakeMisses[tag]
	closed := s.closed
	s.mu.Unlock()
	if closed || missed && now.Before(until) {
		return nil, nil
	}
	if nonblock.Requested(ctx) {
		return nil, nonblock.ErrWouldBlock
	}
	cctx, cancel := s.storeCtx(ctx)
	rec, found, err := s.leaser.TagLayout(cctx, tag)
	cancel()
	if err != nil {
		s.log.Debug("look up a snowflake tag in leaf_snowflake_layout", "tag", tag, "err", err)
		return nil, nil
	}
	if !found || rec.Layout.Validate() != nil {
		s.mu.Lock()
		if len(s.snowflakeMisses) >= 4096 {
			clear(s.snowflakeMisses)
		}
		s.snowflakeMisses[strings.Clone(tag)] = now.Add(missTTL)
		s.mu.Unlock()
		return nil, nil
	}
	return s.addTag(strings.Clone(tag), rec.Layout, false), nil
}
