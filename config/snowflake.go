package config

import (
	"fmt"
	"strings"
	"time"
)

// Snowflake configures the snowflake generators: the global bit layout
// (service.SnowflakeLayout turns it into the allocator's, whose limits
// are checked there) and how a generator runs.
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
	// Identity binds the leased worker id to this proxy: "" (off), auto
	// (the host name and the listening port) or a name no other live
	// proxy has. No other identity can take the id while the store
	// records it, so the generator issues through a store outage of any
	// length (needs worker_id auto and state_file).
	Identity string `yaml:"identity"`
}

// validateIdentity checks snowflake.identity against what it needs.
func (s Snowflake) validateIdentity(add func(key, format string, a ...any)) {
	id := s.Identity
	if id == "" {
		return
	}
	if s.WorkerID != "auto" {
		add("snowflake.identity", "binds a leased worker id: it needs snowflake.worker_id: auto (a fixed worker id is already this proxy's alone)")
	}
	if s.StateFile == "" {
		add("snowflake.identity", "needs snowflake.state_file: while the store is down, the state file keeps the high-water mark a restart of the same identity starts above")
	}
	if id != "auto" && (len(id) > MaxIdentity || strings.ContainsAny(id, "|#")) {
		add("snowflake.identity", "%q: auto, or a name of 1 to %d bytes without | or #", id, MaxIdentity)
	}
}

// MaxIdentity is the longest snowflake.identity (snowflake.MaxIdentity).
const MaxIdentity = 32

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
	Layout       string   `yaml:"layout"` // a named layout: default (41/10/12) or js_safe (41/5/7: IDs below 2^53)
	TimeBits     int      `yaml:"time_bits"`
	WorkerBits   int      `yaml:"worker_bits"`
	SequenceBits int      `yaml:"sequence_bits"`
	TimeUnit     Duration `yaml:"time_unit"`
	Epoch        string   `yaml:"epoch"` // RFC 3339; empty: snowflake.epoch
}

// IsSet says the tag sets some layout key.
func (t TagLayout) IsSet() bool { return t != TagLayout{} }
