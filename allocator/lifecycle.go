package allocator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/internal/errstyle"
)

// A tag's lifecycle in SQL (CREATE / ALTER / DROP LEAFPROXY SEQUENCE; the
// admin package parses them and checks who may). A segment tag is its
// leaf_alloc row; a snowflake tag created in SQL is its "tag:<tag>" row of
// leaf_snowflake_layout, which is how every proxy sharing the store learns
// it (at start, and on first use of a tag it does not know).

// TagKind is what the store holds for a tag: "segment" (a leaf_alloc
// row), "snowflake" (a leaf_snowflake_layout row "tag:<tag>") or "" (none).
func (s *Sequences) TagKind(ctx context.Context, tag string) (string, error) {
	if s.snowTag(tag) != nil {
		return "snowflake", nil
	}
	if _, found, err := s.leaser.TagLayout(ctx, tag); err != nil && !missingTable(err) {
		return "", fmt.Errorf("read leaf_snowflake_layout: %w", err)
	} else if found {
		return "snowflake", nil
	}
	found, err := s.store.Has(ctx, tag)
	switch {
	case err != nil:
		return "", fmt.Errorf("read leaf_alloc: %w", err)
	case !found:
		return "", nil
	}
	return "segment", nil
}

// CreateSegment creates a segment tag (a leaf_alloc row with step, above
// the keys of the rule tables it fills) with description; false when the
// store already has the tag (either kind: TagKind says which).
// start > 1 is its first ID (START WITH; higher when the keys of its rule
// tables are).
//
// maxValue > 0 is its MAXVALUE (leaf_alloc.max_value): no proxy hands out
// an ID above it; past it NEXTVAL answers 4084 as a MariaDB sequence that
// ran out. A first ID above it is 4085 (segment.OptionsError).
func (s *Sequences) CreateSegment(ctx context.Context, tag string, step, start, maxValue int64, description string) (bool, error) {
	if err := schema.CheckTag(tag); err != nil {
		return false, err
	}
	if maxValue > 0 && start > maxValue {
		return false, &segment.OptionsError{Tag: tag, Why: fmt.Sprintf("START WITH %d is above MAXVALUE %d", start, maxValue)}
	}
	if kind, err := s.TagKind(ctx, tag); err != nil || kind != "" {
		return false, err
	}
	create := s.segments.CreateDescribed
	if start > 1 || maxValue > 0 {
		create = func(ctx context.Context, tag string, step int64, description string) error {
			return s.segments.CreateBounded(ctx, tag, step, start, maxValue, description)
		}
	}
	if err := create(ctx, tag, step, description); err != nil {
		return false, err
	}
	kind, err := s.TagKind(ctx, tag)
	return kind == "segment", err
}

// CreateSnowflake creates a snowflake tag with layout l (nil: the store's
// global layout) by recording it in leaf_snowflake_layout with
// description; false when the store already has the tag. This proxy serves
// it at once; the others learn it on first use.
func (s *Sequences) CreateSnowflake(ctx context.Context, tag string, l *snowflake.Layout, description string) (bool, error) {
	if err := schema.CheckTag(tag); err != nil {
		return false, err
	}
	if kind, err := s.TagKind(ctx, tag); err != nil || kind != "" {
		return false, err
	}
	def, err := s.defaultLayout(ctx)
	if err != nil {
		return false, err
	}
	layout := def
	if l != nil {
		layout = *l
	}
	if err := layout.Validate(); err != nil {
		return false, err
	}
	chk, err := s.leaser.CheckTagLayout(ctx, tag, layout, description, "CREATE LEAFPROXY SEQUENCE", def)
	if errors.Is(err, snowflake.ErrLayoutMismatch) {
		return false, nil // created meanwhile, with another layout
	}
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	delete(s.snowflakeMisses, tag)
	s.mu.Unlock()
	s.addTag(tag, layout, false)
	return chk.Recorded, nil
}

// Drop deletes tag from the store: its leaf_alloc row, or its
// leaf_snowflake_layout row. This proxy forgets it at once (buffered IDs
// are dropped); other proxies keep serving the IDs they hold buffered (a
// segment tag) or the tag (a snowflake tag they learned) until they run
// out or restart. false when the store has no such tag. The caller refuses
// tags that rules or the configuration use.
func (s *Sequences) Drop(ctx context.Context, tag string) (bool, error) {
	kind, err := s.TagKind(ctx, tag)
	if err != nil || kind == "" {
		return false, err
	}
	if kind == "snowflake" {
		found, err := s.leaser.DeleteTagLayout(ctx, tag)
		if err != nil {
			return false, fmt.Errorf("delete tag %q from leaf_snowflake_layout: %w", tag, err)
		}
		s.removeTag(tag)
		return found, nil
	}
	found, err := s.store.Delete(ctx, tag)
	if err != nil {
		return false, err
	}
	s.segments.Forget(tag)
	return found, nil
}

// AlterStep sets a segment tag's step (leaf_alloc.step): every proxy's
// next fetch for it is at least that big (the dynamic step grows from
// there); this proxy's next fetch starts from it. A snowflake tag has no
// step (1235), an unknown one is 4091.
func (s *Sequences) AlterStep(ctx context.Context, tag string, step int64) error {
	if err := s.segmentTag(ctx, tag, "STEP", "which has no step"); err != nil {
		return err
	}
	found, err := s.store.SetStep(ctx, tag, step)
	if err != nil {
		return err
	}
	if !found {
		return &segment.UnknownTagError{Tag: tag}
	}
	s.segments.SetTableStep(tag, step)
	return nil
}

// AlterMaxValue sets a segment tag's MAXVALUE (m <= 0: none) in the
// store, here at once and on other proxies at their next fetch. A
// MAXVALUE below the IDs already handed to proxies (leaf_alloc.max_id-1)
// is 4085; a snowflake tag has none (1235), an unknown one is 4091.
func (s *Sequences) AlterMaxValue(ctx context.Context, tag string, m int64) error {
	if err := s.segmentTag(ctx, tag, "MAXVALUE", "whose IDs come from the clock"); err != nil {
		return err
	}
	return s.segments.SetMaxValue(ctx, tag, m)
}

// segmentTag checks that ALTER ... what applies to tag: a segment tag; a
// snowflake tag is 1235 (why says what it lacks), an unknown one 4091.
func (s *Sequences) segmentTag(ctx context.Context, tag, what, why string) error {
	kind, err := s.TagKind(ctx, tag)
	switch {
	case err != nil:
		return err
	case kind == "snowflake":
		return errstyle.NewCoded(1235, "42000", fmt.Sprintf(
			"leafproxy: ALTER LEAFPROXY SEQUENCE '%s' %s is not supported: the tag uses the snowflake generator, %s", tag, what, why))
	case kind == "":
		return &segment.UnknownTagError{Tag: tag}
	}
	return nil
}

// SnowflakeRows reads the rows of the store's snowflake tags, by tag
// (admin views: who created each and how).
func (s *Sequences) SnowflakeRows(ctx context.Context) (map[string]snowflake.LayoutRecord, error) {
	return s.leaser.TagLayouts(ctx)
}

// missingTable says err is MySQL's "no such table" (a store not prepared
// for snowflake tags has none).
func missingTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}

// GlobalLayout is the store's global snowflake layout (its 'default' row;
// recorded from the snowflake section when there is none): the layout of
// a tag created in SQL without one, and the base (tick, epoch) of one
// created with bits.
func (s *Sequences) GlobalLayout(ctx context.Context) (snowflake.Layout, error) {
	return s.defaultLayout(ctx)
}

// SetRules gives the allocator the table rules in force after a reload:
// which tags are per_table tags (created on first use, restarted by
// RestartPerTable) and which tables a tag starts above.
func (s *Sequences) SetRules(rules []Rule) {
	rules = slices.Clone(rules)
	s.floors.rules.Store(&rules)
}

// RestartPerTable starts a per_table rule's tag of one table again, after
// the table was dropped or truncated: its leaf_alloc row is
// deleted and this proxy's buffers dropped, so the next key is created
// just above the table's largest key (1 for an empty table), as
// AUTO_INCREMENT starts a fresh or truncated table. Another proxy still
// holding a segment of the tag keeps issuing from it, and its watch finds
// the row moved back and pushes it past what it issued: keys stay unique,
// the restart does not take. Other tags are left alone (false).
func (s *Sequences) RestartPerTable(ctx context.Context, tag string) (bool, error) {
	if !s.floors.perTable(tag) || s.snowTag(tag) != nil {
		return false, nil
	}
	s.segments.Forget(tag)
	if _, err := s.store.Delete(ctx, tag); err != nil {
		return false, fmt.Errorf("restart per-table tag %q: %w", tag, err)
	}
	s.segments.Forget(tag) // what a session drew meanwhile
	return true, nil
}
