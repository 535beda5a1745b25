package config

import (
	"fmt"
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
