package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// Snowflake configures the snowflake generator.
type Snowflake struct {
	Epoch        string   `yaml:"epoch"`
	WorkerID     string   `yaml:"worker_id"` // a number, or "auto" to lease one from the store
	TimeBits     int      `yaml:"time_bits"`
	WorkerBits   int      `yaml:"worker_bits"`
	SequenceBits int      `yaml:"sequence_bits"`
	TimeUnit     Duration `yaml:"time_unit"`
	RandomStart  *int     `yaml:"random_start"` // each tick's sequence starts in [0, random_start)
	MaxBackward  Duration `yaml:"max_backward"` // longest wait when the clock is behind
	LeaseTTL     Duration `yaml:"lease_ttl"`
	StateFile    string   `yaml:"state_file"` // remembers worker id and last timestamp
}

// Layout is the snowflake bit layout the section describes, checked by
// snowflake.Layout.Validate: the layout's limits are the only ones.
func (s Snowflake) Layout() (snowflake.Layout, error) {
	epoch, err := s.EpochTime()
	if err != nil {
		return snowflake.Layout{}, err
	}
	if s.TimeBits < 0 || s.WorkerBits < 0 || s.SequenceBits < 0 {
		return snowflake.Layout{}, fmt.Errorf("time_bits %d, worker_bits %d, sequence_bits %d: none may be negative", s.TimeBits, s.WorkerBits, s.SequenceBits)
	}
	l := snowflake.Layout{
		TimeBits:     uint(s.TimeBits),
		WorkerBits:   uint(s.WorkerBits),
		SequenceBits: uint(s.SequenceBits),
		Unit:         s.TimeUnit.D(),
		Epoch:        epoch,
	}
	return l, l.Validate()
}

// EpochTime parses snowflake.epoch (RFC 3339).
func (s Snowflake) EpochTime() (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s.Epoch)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time like 2020-01-01T00:00:00Z", s.Epoch)
	}
	return t, nil
}

// TagLayout is a snowflake tag's own layout (sequences.tags.<tag>): a
// named one (layout: js_safe or default) or explicit bits, and the tick
// and epoch. What is not set comes from the snowflake section, so a tag
// without any of these keys uses the global layout. Every proxy sharing
// the store must give a tag the same layout: the first records it in
// leaf_snowflake_layout (row "tag:<tag>"), another is refused at start.
type TagLayout struct {
	Layout       string   `yaml:"layout"` // default (41/10/12) or js_safe (41/5/7: IDs below 2^53)
	TimeBits     int      `yaml:"time_bits"`
	WorkerBits   int      `yaml:"worker_bits"`
	SequenceBits int      `yaml:"sequence_bits"`
	TimeUnit     Duration `yaml:"time_unit"`
	Epoch        string   `yaml:"epoch"` // RFC 3339; empty: snowflake.epoch
}

// IsSet says the tag sets some layout key.
func (t TagLayout) IsSet() bool { return t != TagLayout{} }

// TagLayout is the snowflake layout of tag name (its own, or the
// snowflake section's) and where it comes from, as a mismatch with the
// store names it.
func (c *Config) TagLayout(name string) (layout snowflake.Layout, source string, err error) {
	global, err := c.Snowflake.Layout()
	if err != nil {
		return snowflake.Layout{}, "", fmt.Errorf("snowflake: %w", err)
	}
	t := c.Sequences.Tags[name].TagLayout
	if !t.IsSet() {
		return global, "this proxy's snowflake section, which sequences.tags." + name + " uses", nil
	}
	l, err := t.layout(global)
	return l, "this proxy's sequences.tags." + name, err
}

// layout applies the keys set to base (the global layout).
func (t TagLayout) layout(base snowflake.Layout) (snowflake.Layout, error) {
	l := base
	if t.Epoch != "" {
		e, err := Snowflake{Epoch: t.Epoch}.EpochTime()
		if err != nil {
			return l, fmt.Errorf("epoch: %w", err)
		}
		l.Epoch = e
	}
	bits := t.TimeBits != 0 || t.WorkerBits != 0 || t.SequenceBits != 0
	switch {
	case t.Layout != "" && bits:
		return l, errors.New("layout and time_bits/worker_bits/sequence_bits exclude each other: name a layout or give the bits")
	case t.Layout != "":
		nl, ok := snowflake.NamedLayout(t.Layout, l.Epoch)
		if !ok {
			return l, fmt.Errorf("layout %q is not %s or %s (or give time_bits, worker_bits and sequence_bits)",
				t.Layout, snowflake.LayoutNameDefault, snowflake.LayoutNameJSSafe)
		}
		l = nl
	case bits:
		if t.TimeBits <= 0 || t.WorkerBits < 0 || t.SequenceBits <= 0 {
			return l, fmt.Errorf("time_bits %d, worker_bits %d, sequence_bits %d: set all three (worker_bits may be 0)", t.TimeBits, t.WorkerBits, t.SequenceBits)
		}
		l.TimeBits, l.WorkerBits, l.SequenceBits = uint(t.TimeBits), uint(t.WorkerBits), uint(t.SequenceBits)
	}
	if t.TimeUnit != 0 {
		l.Unit = t.TimeUnit.D()
	}
	return l, l.Validate()
}

// tagLayoutProblems checks the tags' layouts: keys only on snowflake tags,
// valid layouts, and a fixed worker id that fits each.
func (c *Config) tagLayoutProblems() []Problem {
	var probs []Problem
	fixed, fixedErr := strconv.ParseInt(c.Snowflake.WorkerID, 10, 64)
	for _, name := range slices.Sorted(maps.Keys(c.Sequences.Tags)) {
		t := c.Sequences.Tags[name]
		key := "sequences.tags." + name
		if t.Generator != "snowflake" {
			if t.IsSet() {
				probs = append(probs, Problem{Key: key, Msg: "layout, time_bits, worker_bits, sequence_bits, time_unit and epoch apply to snowflake tags only (generator: snowflake)"})
			}
			continue
		}
		l, _, err := c.TagLayout(name)
		if err != nil {
			probs = append(probs, Problem{Key: key, Msg: err.Error()})
			continue
		}
		if fixedErr == nil && fixed > l.MaxWorker() {
			probs = append(probs, Problem{Key: "snowflake.worker_id", Msg: fmt.Sprintf("%d does not fit the layout of sequences.tags.%s (%d worker bits: 0 to %d); use auto or a smaller id",
				fixed, name, l.WorkerBits, l.MaxWorker())})
		}
	}
	return probs
}
